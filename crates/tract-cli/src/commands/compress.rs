//! `tract compress`.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::progress::Progress;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::{CompressPlan, CompressReport, Detail};
use clap::ValueEnum;
use std::fmt::Write;
use std::num::NonZeroU32;
use tract_core::{
    ClearOptions, CompressRequest, Extractive, Manual, OpenAiCompatible, Rev, Summarizer,
};

/// Replace runs of messages with summaries; the originals stay in history.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Compress whole tool turns (every turn, or those of --name) with the tool prompt.
    #[arg(long, conflicts_with_all = ["commits", "range"])]
    tool_turns: bool,
    /// With --tool-turns or --strategy clear: only this tool.
    #[arg(long)]
    name: Option<String>,
    /// The positions to compress.
    #[arg(long, num_args = 1.., value_name = "ID", conflicts_with = "range")]
    commits: Vec<String>,
    /// The positions from A to B, both included.
    #[arg(long, value_name = "A..B")]
    range: Option<String>,
    /// Positions to keep (they split the selection into runs).
    #[arg(long, num_args = 1.., value_name = "ID")]
    preserve: Vec<String>,
    /// The length to aim for per summary, in tokens.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    target_tokens: Option<u32>,
    /// Extra instructions for the summarizer.
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    /// The summarizer's system prompt, or @FILE to read it from a file.
    #[arg(long, value_name = "TEXT|@FILE")]
    system_prompt: Option<String>,
    /// Use this text as the summary.
    #[arg(long, value_name = "TEXT", conflicts_with = "strategy")]
    content: Option<String>,
    /// How to summarize.
    #[arg(long, value_enum, default_value_t = Strategy::Extractive)]
    strategy: Strategy,
    /// With --strategy llm: the server's base URL (e.g. http://127.0.0.1:8000/v1).
    #[arg(long, value_name = "URL")]
    llm_base_url: Option<String>,
    /// With --strategy llm: the model.
    #[arg(long, value_name = "NAME")]
    llm_model: Option<String>,
    /// With --strategy clear: the most recent tool turns to leave untouched.
    #[arg(long, default_value_t = 3)]
    keep: usize,
    /// Keep the stable prefix: leave the positions up to the newest summary in view out of the
    /// selection, so the summary goes after what a provider has cached instead of rewriting it.
    #[arg(long)]
    keep_prefix: bool,
    /// Show what would be compressed, the tokens it holds and the cached tokens it
    /// invalidates; commit nothing.
    #[arg(long)]
    dry_run: bool,
    /// What was compressed (or would be) as JSON.
    #[arg(long)]
    json: bool,
}

/// How `tract compress` summarizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Strategy {
    /// An OpenAI-compatible chat-completions server (--llm-base-url, --llm-model, or the
    /// TRACT_LLM_* / OPENAI_* environment).
    Llm,
    /// The built-in extractive summarizer (no network).
    Extractive,
    /// Replace old tool results with a placeholder (like `tract clear`).
    Clear,
}

/// Runs `tract compress`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    if a.strategy == Strategy::Clear {
        let opts = ClearOptions {
            keep: a.keep,
            keep_prefix: a.keep_prefix,
            ..ClearOptions::default()
        };
        return crate::commands::clear::clear(&t, ui, &opts, a.dry_run, a.json);
    }
    let system_prompt = crate::arguments::text_or_file(a.system_prompt.as_deref())?;
    let commits: Option<Vec<Rev>> = match &a.range {
        Some(r) => {
            let (from, to) = r.split_once("..").ok_or_else(|| {
                CommandError::invalid_input(format!("--range takes A..B, not '{r}'"))
            })?;
            let ids = t.positions_between(&rev(from)?, &rev(to)?)?;
            Some(ids.into_iter().map(Rev::from).collect())
        }
        None if !a.commits.is_empty() => {
            Some(a.commits.iter().map(|c| rev(c)).collect::<Result<_, _>>()?)
        }
        None => None,
    };
    let manual = a.content.clone().map(Manual);
    let llm = match a.strategy {
        Strategy::Llm => Some(llm_client(ctx, a)?),
        _ => None,
    };
    let summarizer: &dyn Summarizer = match (&manual, &llm) {
        (Some(m), _) => m,
        (None, Some(l)) => l,
        (None, None) => &Extractive,
    };
    let req = CompressRequest {
        commits: commits.clone(),
        preserve: a
            .preserve
            .iter()
            .map(|p| rev(p))
            .collect::<Result<_, _>>()?,
        system_prompt,
        instructions: a.instructions.clone(),
        target_tokens: a.target_tokens.and_then(NonZeroU32::new),
        summarizer: Some(summarizer),
        on_progress: None,
        keep_prefix: a.keep_prefix,
    };
    let req = if a.tool_turns {
        let turns = tract_core::ToolTurns {
            commits,
            name: a.name.clone(),
            preserve_answer: true,
        };
        t.tool_turn_request(&turns, req)?
    } else {
        req
    };
    if a.dry_run {
        let plan = t.plan_compress(&req)?;
        if a.json {
            output::print(ui, &CompressPlan::from(&plan), false);
            return Ok(());
        }
        for r in &plan.runs {
            let ids: Vec<String> = r.sources.iter().map(|s| s.short()).collect();
            let _ = writeln!(
                ui,
                "would summarize {}, {}: {}",
                render::count(ids.len() as u64, "message", "messages"),
                render::count(r.tokens, "token", "tokens"),
                ids.join(" ")
            );
        }
        let _ = writeln!(
            ui,
            "{}, {} (dry run, nothing committed)",
            render::count(plan.runs.len() as u64, "run", "runs"),
            render::count(plan.tokens(), "token", "tokens")
        );
        let _ = writeln!(
            ui,
            "prompt cache: invalidates {}, saves up to {} a request (less the summaries)",
            render::count(
                plan.cached_tokens_invalidated,
                "cached token",
                "cached tokens"
            ),
            render::count(plan.tokens(), "token", "tokens"),
        );
        return Ok(());
    }
    // A progress bar on a terminal, when there is more than one run to summarize.
    let bar = Progress::new("summarizing {bar:30} {pos}/{len} runs");
    let progress = |done: usize, total: usize| {
        if total > 1 {
            bar.step(done as u64, Some(total as u64), "");
        }
    };
    let req = CompressRequest {
        on_progress: Some(&progress),
        ..req
    };
    let done = t.compress(&req);
    drop(bar);
    let done = done?;
    for w in &done.warnings {
        ui.warning(w);
    }
    if a.json {
        output::print(ui, &CompressReport::new(&done, Detail::Full), false);
        return Ok(());
    }
    render::outcome(
        ui,
        &done.commits,
        ("compressed", "run", "runs"),
        done.tokens_before,
        done.tokens_after,
    );
    Ok(())
}

/// The chat-completions client from the flags, filled in from the environment.
fn llm_client(ctx: &Context, a: &Args) -> Result<OpenAiCompatible, CommandError> {
    ctx.env()
        .llm(a.llm_base_url.clone(), a.llm_model.clone(), None)
        .map_err(|_| {
            CommandError::invalid_input(
                "--strategy llm needs a model: --llm-model, TRACT_LLM_MODEL or OPENAI_MODEL",
            )
        })
}
