//! `tract branch`.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::Branch;
use std::fmt::Write;
use tract_core::BranchName;

/// List branches, or create NAME at REV (default HEAD), or delete NAME with -d.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The branch to create (or, with -d, to delete).
    name: Option<String>,
    /// Where it starts.
    #[arg(conflicts_with = "delete")]
    rev: Option<String>,
    /// Delete branch NAME (not the current one); its reflog keeps the tip.
    #[arg(short = 'd', long, requires = "name")]
    delete: bool,
    /// List as JSON.
    #[arg(long, conflicts_with_all = ["name", "delete"])]
    json: bool,
}

/// Runs `tract branch`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    match &a.name {
        Some(name) if a.delete => {
            let tip = t.delete_branch(&BranchName::new(name)?)?;
            let _ = writeln!(
                ui,
                "deleted branch {name} (was {}; `tract reflog {name}` keeps it)",
                tip.short()
            );
        }
        Some(name) => {
            let at = a.rev.as_deref().map(rev).transpose()?;
            let at = t.create_branch(
                &BranchName::new(name)?,
                &at.unwrap_or_else(tract_core::Rev::head),
            )?;
            let _ = writeln!(ui, "created branch {name} at {}", at.short());
        }
        None => {
            let branches = t.branches()?;
            if a.json {
                let list: Vec<_> = branches.iter().map(Branch::from).collect();
                output::print(ui, &list, false);
                return Ok(());
            }
            let width = branches.iter().map(|b| b.name.len()).max().unwrap_or(0);
            for b in &branches {
                let mark = if b.current { '*' } else { ' ' };
                let line = format!(
                    "{mark} {:<width$} {} {:>6} {:<4} {:>8} tok  {}  {}",
                    b.name,
                    b.head.short(),
                    b.messages,
                    if b.messages == 1 { "msg" } else { "msgs" },
                    b.token_count,
                    render::time_seconds(b.last_activity_us),
                    // Which agent's session it holds, where an import said.
                    b.agent.as_ref().map(|a| a.label()).unwrap_or_default(),
                );
                let _ = writeln!(ui, "{}", line.trim_end());
            }
        }
    }
    Ok(())
}
