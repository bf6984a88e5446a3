//! `tract repair`.

use crate::context::Context;
use crate::error::CommandError;
use crate::render;
use crate::ui::Ui;
use std::fmt::Write;

/// Commit a marked error result for every tool call left without one (after a crash).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `tract repair`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, _: &Args) -> Result<(), CommandError> {
    let repaired = ctx.open()?.repair()?;
    for info in &repaired {
        render::log_line(ui, info);
    }
    let _ = writeln!(
        ui,
        "{} without a result answered with a marked error result",
        render::count(repaired.len() as u64, "tool call", "tool calls")
    );
    Ok(())
}
