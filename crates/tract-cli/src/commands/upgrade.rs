//! `tract upgrade`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::ui::Ui;
use crate::vocabulary::UpgradeReport;
use std::fmt::Write;

/// Bring a store an older tract wrote to this build's format, in place (opening it with any
/// command does the same; this says what changed), and checkpoint the view of every branch
/// that has no checkpoint at its tip (a new handle then builds it from there). A store with
/// no secrets policy (an older tract made it) is given the default one: every write then
/// scrubs what looks like a credential.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What changed as JSON.
    #[arg(long)]
    json: bool,
    /// Leave a store that has no secrets policy without one (it goes on storing messages as
    /// they are written).
    #[arg(long)]
    no_secrets: bool,
}

/// Runs `tract upgrade`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    let report = t.store().upgrade()?;
    let checkpointed = t.checkpoint_views()?;
    let secrets_added = !a.no_secrets && t.secrets_policy()?.is_none();
    if secrets_added {
        t.set_secrets_policy(&tract_core::SecretsPolicy::default())?;
    }
    if a.json {
        output::print(
            ui,
            &UpgradeReport::new(&report, checkpointed, secrets_added),
            false,
        );
        return Ok(());
    }
    if report.steps.is_empty() {
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
    if checkpointed > 0 {
        let branches = match checkpointed {
            1 => "1 branch".to_string(),
            n => format!("{n} branches"),
        };
        let _ = writeln!(
            ui,
            "checkpointed the views of {branches} at their tips (new handles start from there)"
        );
    }
    if secrets_added {
        let _ = writeln!(
            ui,
            "turned on secret scrubbing: every write now replaces what looks like a credential \
             with a marker (tract config secrets --off turns it off); what the store holds \
             already is listed by tract secrets scan --all --history"
        );
    }
    Ok(())
}
