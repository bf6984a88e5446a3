//! `tract gc`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::ui::Ui;
use crate::vocabulary::GcReport;
use std::fmt::Write;
use std::time::Duration;

/// Remove objects nothing reaches (no branch, no HEAD, no reflog entry younger than the grace
/// period); older reflog entries are expired, and view checkpoints but each branch's newest.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How long reflog entries keep what they name, in days.
    #[arg(
        long,
        value_name = "DAYS",
        default_value_t = 14,
        conflicts_with = "prune_now"
    )]
    grace_days: u64,
    /// No grace period: expire every reflog entry and remove all that is unreachable now.
    #[arg(long)]
    prune_now: bool,
    /// Then compact the file: it shrinks, and no freed page keeps removed bytes.
    #[arg(long)]
    compact: bool,
    /// What was removed as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tract gc`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    let grace = if a.prune_now {
        Duration::ZERO
    } else {
        Duration::from_secs(a.grace_days.saturating_mul(24 * 3600))
    };
    let out = tract_core::gc(t.store(), grace)?;
    if a.json {
        output::print(ui, &GcReport::from(&out), false);
    } else {
        let _ = writeln!(
            ui,
            "removed {} commit(s), {} blob(s), {} chunk(s) ({} bytes), {} view checkpoint(s); \
             expired {} reflog entr{}",
            out.commits,
            out.blobs,
            out.chunks,
            out.bytes,
            out.checkpoints,
            out.reflog_entries,
            if out.reflog_entries == 1 { "y" } else { "ies" },
        );
    }
    if a.compact {
        t.into_store().compact()?;
        if !a.json {
            let _ = writeln!(ui, "compacted the store");
        }
    }
    Ok(())
}
