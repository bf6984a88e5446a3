//! `tract upgrade`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::ui::Ui;
use crate::vocabulary::UpgradeReport;
use std::fmt::Write;

/// Bring a store an older tract wrote to this build's format, in place (opening it with any
/// command does the same; this says what changed).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What changed as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tract upgrade`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    let report = t.store().upgrade()?;
    if a.json {
        output::print(ui, &UpgradeReport::from(&report), false);
    } else if report.steps.is_empty() {
        let _ = writeln!(
            ui,
            "the store is at format {}, the newest this tract writes",
            report.to
        );
    } else {
        let _ = writeln!(
            ui,
            "upgraded the store from format {} to {}",
            report.from, report.to
        );
        for step in &report.steps {
            let _ = writeln!(ui, "  {step}");
        }
    }
    Ok(())
}
