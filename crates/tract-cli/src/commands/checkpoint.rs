//! `tract checkpoint`.

use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::fmt::Write;

/// Fold the store file's journal into it, so the file alone holds every commit (before reading
/// it with another tool); a database store has no journal.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `tract checkpoint`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, _a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    t.store().checkpoint()?;
    let _ = writeln!(ui, "the store file holds every commit");
    Ok(())
}
