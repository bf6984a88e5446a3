//! `tract checkout`.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::fmt::Write;

/// Switch to a branch, or detach HEAD at a commit (time travel).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A branch or a commit.
    rev: String,
}

/// Runs `tract checkout`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let head = ctx.open_head()?.checkout(&rev(&a.rev)?)?;
    match (head.branch(), head.commit) {
        (Some(b), _) => {
            let _ = writeln!(ui, "switched to branch {b}");
        }
        (None, Some(c)) => {
            let _ = writeln!(
                ui,
                "HEAD detached at {}; new messages grow from here (`tract switch -c NAME` keeps them on a branch)",
                c.short()
            );
        }
        (None, None) => {}
    }
    Ok(())
}
