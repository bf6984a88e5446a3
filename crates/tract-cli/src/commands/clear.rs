//! `tract clear`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::{ClearPlan, ClearReport};
use std::fmt::Write;
use tract_core::{ClearOptions, Tract};

/// Replace old tool results with a placeholder naming the original (kept in history).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The most recent tool turns to leave untouched.
    #[arg(long, default_value_t = 3)]
    keep: usize,
    /// A tool whose results are never cleared (repeatable).
    #[arg(long = "exclude-tool", value_name = "NAME")]
    exclude_tools: Vec<String>,
    /// Clear nothing unless at least this many tokens are freed.
    #[arg(long, default_value_t = 0, value_name = "TOKENS")]
    clear_at_least: u64,
    /// The placeholder; {tool}, {commit}, {tokens} and {bytes} are filled in.
    #[arg(long, value_name = "TEXT")]
    placeholder: Option<String>,
    /// Keep the stable prefix: clear no result up to the newest summary in view, so what a
    /// provider has cached before it stays as it is.
    #[arg(long)]
    keep_prefix: bool,
    /// Show what would be cleared, the saving and the cached tokens it invalidates; commit
    /// nothing.
    #[arg(long)]
    dry_run: bool,
    /// What was cleared (or would be) as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tract clear`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let opts = ClearOptions {
        keep: a.keep,
        exclude_tools: a.exclude_tools.clone(),
        clear_at_least: a.clear_at_least,
        placeholder: a.placeholder.clone(),
        keep_prefix: a.keep_prefix,
    };
    clear(&ctx.open()?, ui, &opts, a.dry_run, a.json)
}

/// Clears (or, with `dry_run`, shows what would be cleared) and prints the tokens saved.
pub(super) fn clear(
    t: &Tract,
    ui: &mut Ui<'_>,
    opts: &ClearOptions,
    dry_run: bool,
    json: bool,
) -> Result<(), CommandError> {
    if dry_run {
        let plan = t.plan_clear_tool_results(opts)?;
        if json {
            output::print(ui, &ClearPlan::from(&plan), false);
            return Ok(());
        }
        for c in &plan.candidates {
            let _ = writeln!(
                ui,
                "would clear {} {:<12} {:>7} -> {}",
                c.position.short(),
                render::cut(&c.tool, 12),
                c.tokens,
                render::count(c.placeholder_tokens.into(), "token", "tokens")
            );
        }
        let _ = writeln!(
            ui,
            "{}: tokens {} -> {} (dry run, nothing committed)",
            render::count(plan.candidates.len() as u64, "result", "results"),
            plan.tokens_before,
            plan.tokens_after
        );
        let _ = writeln!(
            ui,
            "prompt cache: invalidates {}, saves {} a request",
            render::count(
                plan.cached_tokens_invalidated,
                "cached token",
                "cached tokens"
            ),
            render::count(
                plan.tokens_before.saturating_sub(plan.tokens_after),
                "token",
                "tokens"
            ),
        );
        return Ok(());
    }
    let done = t.clear_tool_results(opts)?;
    if json {
        output::print(ui, &ClearReport::from(&done), false);
        return Ok(());
    }
    render::outcome(
        ui,
        &done.cleared,
        ("cleared", "result", "results"),
        done.tokens_before,
        done.tokens_after,
    );
    Ok(())
}
