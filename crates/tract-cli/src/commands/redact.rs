//! `tract redact`.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::ui::Ui;
use crate::vocabulary::RedactReport;
use std::fmt::Write;

/// Remove a message's content from the store for good; a tombstone keeps when and why.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The commit whose message to remove (every commit carrying the same content shows the
    /// placeholder too).
    rev: String,
    /// Why (kept with the tombstone; not shown to the model).
    #[arg(long, value_name = "TEXT")]
    reason: String,
    /// Also redact every commit whose content was made from the removed content (a summary or a
    /// compression of it, or of such a summary), with the same reason.
    #[arg(long)]
    follow: bool,
    /// Do not compact the file afterwards (the removed bytes may then stay in freed pages
    /// until the store reuses them, or `tract gc --compact` runs).
    #[arg(long)]
    no_compact: bool,
    /// What was removed as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tract redact`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    let options = tract_core::RedactOptions { follow: a.follow };
    let r = t.redact_with(rev(&a.rev)?, &a.reason, &options)?;
    if a.json {
        output::print(ui, &RedactReport::from(&r), false);
    } else {
        report(ui, &r);
    }
    if !a.no_compact {
        // The redaction is committed; compaction only makes sure no freed page keeps the bytes.
        if let Err(e) = t.into_store().compact() {
            ui.warning(&format!(
                "the file was not compacted ({e}); run `tract gc --compact` when the store is not in use"
            ));
        }
    }
    Ok(())
}

/// The redaction in words; the commits made from its content that still hold it as a warning.
fn report(ui: &mut Ui<'_>, r: &tract_core::Redaction) {
    let chunks = match r.chunks_removed.len() {
        0 => String::new(),
        1 => " and 1 chunk".to_string(),
        n => format!(" and {n} chunks"),
    };
    let _ = writeln!(
        ui,
        "redacted the message of {} (blob {}{chunks}); ids are unchanged, views show a placeholder",
        r.commit.short(),
        r.blob.short()
    );
    let short =
        |ids: &[tract_core::CommitId]| ids.iter().map(|c| c.short()).collect::<Vec<_>>().join(", ");
    if !r.followed.is_empty() {
        let _ = writeln!(
            ui,
            "redacted with it, made from its content: {}",
            short(&r.followed)
        );
    }
    if !r.derived.is_empty() {
        ui.warning(&format!(
            "made from its content and still holding it: {} (`--follow` redacts them)",
            short(&r.derived)
        ));
    }
}
