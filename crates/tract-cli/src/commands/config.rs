//! `tract config`: the settings stored in the store.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::ui::Ui;
use crate::vocabulary::Config;
use clap::Subcommand;
use std::fmt::Write;
use tract_core::ToolPolicy;

/// Settings stored in the store, which every process and command applies.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to show or change.
    #[command(subcommand)]
    what: What,
}

/// The `tract config` subcommands.
#[derive(Debug, Subcommand)]
enum What {
    /// Show the stored settings.
    Show {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Change the tool-summarization policy that `tract add` and every process apply to tool
    /// results: per-tool instructions, and a token threshold over which any result is
    /// summarized. Options not given keep their stored value.
    #[command(name = "tool-summarization")]
    ToolSummarization(PolicyArgs),
}

/// `tract config tool-summarization`.
#[derive(Debug, clap::Args)]
struct PolicyArgs {
    /// Summarize results of tool NAME with these instructions (repeatable).
    #[arg(long = "tool", value_name = "NAME=INSTRUCTIONS")]
    tools: Vec<String>,
    /// Stop summarizing results of tool NAME by its instructions (repeatable).
    #[arg(long = "remove-tool", value_name = "NAME")]
    remove_tools: Vec<String>,
    /// Summarize any result over this many tokens.
    #[arg(
        long,
        value_name = "TOKENS",
        allow_negative_numbers = true,
        conflicts_with = "no_auto_threshold"
    )]
    auto_threshold: Option<i64>,
    /// Remove the threshold.
    #[arg(long)]
    no_auto_threshold: bool,
    /// Instructions for results summarized because of the threshold.
    #[arg(long, value_name = "TEXT", conflicts_with = "no_default_instructions")]
    default_instructions: Option<String>,
    /// Remove the default instructions (the tool prompt alone is used).
    #[arg(long)]
    no_default_instructions: bool,
    /// Start from an empty policy instead of the stored one.
    #[arg(long)]
    reset: bool,
}

/// Runs `tract config`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    match &a.what {
        What::Show { json } => {
            let policy = t.tool_policy()?;
            if *json {
                output::print(ui, &Config::from(&policy), false);
            } else {
                show(ui, &policy);
            }
        }
        What::ToolSummarization(args) => {
            let stored = if args.reset {
                ToolPolicy::default()
            } else {
                t.tool_policy()?
            };
            let policy = changed(stored, args)?;
            t.set_tool_policy(&policy)?;
            show(ui, &policy);
        }
    }
    Ok(())
}

/// The stored policy with the options applied.
fn changed(mut p: ToolPolicy, a: &PolicyArgs) -> Result<ToolPolicy, CommandError> {
    for name in &a.remove_tools {
        p.instructions.remove(name);
    }
    for spec in &a.tools {
        let (name, text) = spec.split_once('=').ok_or_else(|| {
            CommandError::invalid_input(format!("--tool takes NAME=INSTRUCTIONS, not '{spec}'"))
        })?;
        p.instructions
            .insert(name.trim().to_string(), text.to_string());
    }
    if let Some(n) = a.auto_threshold {
        p.auto_threshold = Some(u32::try_from(n).map_err(|_| {
            CommandError::invalid_input(format!(
                "--auto-threshold must be a non-negative number of tokens, not {n}"
            ))
        })?);
    }
    if a.no_auto_threshold {
        p.auto_threshold = None;
    }
    if let Some(text) = &a.default_instructions {
        p.default_instructions = Some(text.clone());
    }
    if a.no_default_instructions {
        p.default_instructions = None;
    }
    Ok(p)
}

fn show(ui: &mut Ui<'_>, p: &ToolPolicy) {
    if p.is_empty() {
        let _ = writeln!(
            ui,
            "tool summarization: off (tool results are recorded as they are)"
        );
        return;
    }
    let _ = writeln!(ui, "tool summarization:");
    for (tool, text) in &p.instructions {
        let _ = writeln!(ui, "  {tool}: {text}");
    }
    match p.auto_threshold {
        Some(n) => {
            let text = p
                .default_instructions
                .as_deref()
                .unwrap_or("the tool prompt alone");
            let _ = writeln!(ui, "  any result over {n} tokens: {text}");
        }
        None => {
            let _ = writeln!(ui, "  other tools: recorded as they are (no threshold)");
        }
    }
}
