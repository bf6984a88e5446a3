//! `tract reset`.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::notes::NewBranch;
use crate::ui::Ui;
use std::fmt::Write;
use tract_core::CommitId;

/// Move the current branch to REV; the old head stays in the reflog.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to move it.
    rev: String,
}

/// Runs `tract reset`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    let new_branch = NewBranch::of_flag(ctx, &t)?;
    let before = t.head()?;
    let after = t.reset(&rev(&a.rev)?)?;
    if let Some(b) = new_branch {
        b.report(&t, ui)?;
    }
    let name = after.branch().unwrap_or("HEAD").to_string();
    let show = |c: Option<CommitId>| c.map_or_else(|| "(none)".into(), |c| c.short());
    let _ = writeln!(
        ui,
        "{name} now at {} (was {}; `tract reflog {name}` keeps the old head)",
        show(after.commit),
        show(before.commit)
    );
    Ok(())
}
