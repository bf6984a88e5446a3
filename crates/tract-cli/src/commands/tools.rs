//! `tract tools`: tool calls, results and turns of the current view.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::{Commit, ToolTurn};
use clap::ValueEnum;
use std::fmt::Write;

/// Tool calls, results and turns in the current view.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to list.
    #[arg(value_enum)]
    what: What,
    /// Only this tool.
    #[arg(long)]
    name: Option<String>,
    /// Only results after this commit (results only).
    #[arg(long, value_name = "REV")]
    after: Option<String>,
    /// Only results before this commit (results only).
    #[arg(long, value_name = "REV")]
    before: Option<String>,
    /// As JSON.
    #[arg(long)]
    json: bool,
}

/// What `tract tools` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum What {
    /// Assistant commits that call tools.
    Calls,
    /// Tool result commits.
    Results,
    /// Calls with their results, state, duration and sizes.
    Turns,
}

/// Runs `tract tools`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open_to_read()?;
    let name = a.name.as_deref();
    if a.what != What::Results && (a.after.is_some() || a.before.is_some()) {
        return Err(CommandError::invalid_input(
            "--after and --before apply to `tract tools results`",
        ));
    }
    match a.what {
        What::Calls | What::Results => {
            let infos = if a.what == What::Calls {
                t.find_tool_calls(name)?
            } else {
                t.find_tool_results(&tract_core::ResultQuery {
                    name: name.map(str::to_string),
                    after: a.after.as_deref().map(rev).transpose()?,
                    before: a.before.as_deref().map(rev).transpose()?,
                })?
            };
            if a.json {
                let list: Vec<_> = infos.iter().map(Commit::from).collect();
                output::print(ui, &list, false);
            } else {
                for info in &infos {
                    render::position_line(ui, info);
                }
            }
        }
        What::Turns => {
            let turns = t.find_tool_turns(name)?;
            if a.json {
                let list: Vec<_> = turns.iter().map(ToolTurn::from).collect();
                output::print(ui, &list, false);
                return Ok(());
            }
            for turn in &turns {
                for (i, c) in turn.calls.iter().enumerate() {
                    let id = if i == 0 {
                        turn.call.id.short()
                    } else {
                        String::new()
                    };
                    let duration = c.duration_us.map_or_else(|| "-".into(), render::duration);
                    let tokens = c
                        .result_tokens
                        .map_or_else(|| "-".into(), |n| n.to_string());
                    let bytes = c.result_bytes.map_or_else(|| "-".into(), |n| n.to_string());
                    let _ = writeln!(
                        ui,
                        "{id:<10} {:<12} {:<7} {duration:>10} {tokens:>7} tok {bytes:>8} B  {}",
                        render::cut(&c.name, 12),
                        c.state.as_str(),
                        render::cut(&c.arguments, 60)
                    );
                }
            }
        }
    }
    Ok(())
}
