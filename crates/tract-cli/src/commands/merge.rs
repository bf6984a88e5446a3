//! `tract merge`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::Commit;
use clap::ValueEnum;
use std::fmt::Write;
use std::num::NonZeroU32;
use tract_core::{BranchName, MergeRequest, MergeStrategy};

/// Bring another branch back with a merge commit (two parents; its history stays reachable).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The branch to merge into the current one.
    #[arg(value_name = "BRANCH")]
    name: String,
    /// How it comes back: its messages appended, or its answer as the result of a pending
    /// tool call (--call-id).
    #[arg(long, value_enum, default_value_t = Strategy::Append)]
    strategy: Strategy,
    /// With --strategy tool_result: the pending call the branch answers.
    #[arg(long, value_name = "ID")]
    call_id: Option<String>,
    /// With --strategy tool_result: the result is a summary of the branch's work (the
    /// TRACT_LLM_* server if set, else the extractive summarizer), not its final answer.
    #[arg(long)]
    summarize: bool,
    /// With --summarize: the length to aim for, in tokens.
    #[arg(long, value_name = "N", requires = "summarize", value_parser = clap::value_parser!(u32).range(1..))]
    target_tokens: Option<u32>,
    /// A note stored on the merge commit.
    #[arg(short = 'm', long, value_name = "TEXT")]
    note: Option<String>,
    /// The merge commit as JSON.
    #[arg(long)]
    json: bool,
}

/// How `tract merge` brings a branch back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Strategy {
    /// The view continues with the branch's messages since it forked.
    Append,
    /// The branch's final answer (or a summary) is the result of the pending call --call-id.
    #[value(name = "tool_result", alias = "tool-result")]
    ToolResult,
}

/// Runs `tract merge`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let name = BranchName::new(&a.name)?;
    let strategy = match (a.strategy, &a.call_id) {
        (Strategy::ToolResult, Some(id)) => MergeStrategy::ToolResult {
            call_id: id.clone(),
        },
        (Strategy::ToolResult, None) => {
            return Err(CommandError::invalid_input(
                "--strategy tool_result needs --call-id",
            ));
        }
        (Strategy::Append, Some(_)) => {
            return Err(CommandError::invalid_input(
                "--call-id goes with --strategy tool_result",
            ));
        }
        (Strategy::Append, None) => MergeStrategy::Append,
    };
    let t = ctx.open()?;
    let before = t.status()?;
    let req = MergeRequest {
        strategy,
        summarize: a.summarize,
        target_tokens: a.target_tokens.and_then(NonZeroU32::new),
        note: a.note.clone(),
        ..MergeRequest::default()
    };
    let m = t.merge(&name, &req)?;
    if a.json {
        output::print(ui, &Commit::from(&m), false);
        return Ok(());
    }
    let after = t.status()?;
    let into = after.head.branch().unwrap_or("HEAD").to_string();
    let tip = m
        .commit
        .parents
        .get(1)
        .map(|p| p.short())
        .unwrap_or_default();
    match &m.message {
        Some(result) => {
            let call = result.tool_call_id.as_deref().unwrap_or_default();
            let what = match m.summarizer() {
                Some(s) => format!("a summary of its work (by {s})"),
                None => "its final answer".to_string(),
            };
            let _ = writeln!(
                ui,
                "merged {name} ({tip}) into {into} as {}: {what} is the result of call {call} ({})",
                m.id.short(),
                render::count(m.token_count.into(), "token", "tokens")
            );
        }
        None => {
            let _ = writeln!(
                ui,
                "merged {name} ({tip}) into {into} as {}: {} appended, {} in view",
                m.id.short(),
                render::count(
                    after.messages.saturating_sub(before.messages) as u64,
                    "message",
                    "messages"
                ),
                render::count(after.token_count, "token", "tokens")
            );
        }
    }
    Ok(())
}
