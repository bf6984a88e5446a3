//! `tract fsck`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::ui::Ui;
use crate::vocabulary::FsckReport;
use std::fmt::Write;

/// Check the whole store: re-hash every object, check every link, ref and count.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tract fsck`: the report on standard output; exit 1 when anything is wrong.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    // It checks the search index on disk too: opened as a write would be (a store it may not
    // write opens to read all the same).
    let t = ctx.open()?;
    let r = tract_core::fsck(t.store())?;
    if a.json {
        output::print(ui, &FsckReport::from(&r), false);
    } else {
        let plural = |n: u64, one: &str| match (n, one) {
            (1, _) => format!("1 {one}"),
            (_, "branch") => format!("{n} branches"),
            (_, "reflog entry") => format!("{n} reflog entries"),
            _ => format!("{n} {one}s"),
        };
        let _ = writeln!(
            ui,
            "checked {}, {}, {} ({} bytes), {}, {}; counts of {} replayed",
            plural(r.commits, "commit"),
            plural(r.blobs, "blob"),
            plural(r.chunks, "chunk"),
            r.bytes,
            plural(r.branches, "branch"),
            plural(r.reflog_entries, "reflog entry"),
            plural(r.counts_replayed, "branch"),
        );
        if r.checkpoints_checked > 0 {
            let _ = writeln!(
                ui,
                "{} of views read back and compared with a replay",
                plural(r.checkpoints_checked, "checkpoint")
            );
        }
        if r.journal_frames > 0 {
            let _ = writeln!(
                ui,
                "the journal holds {} not yet folded into the store file, each checked",
                plural(r.journal_frames, "frame")
            );
        }
        if r.index_documents > 0 {
            let _ = writeln!(
                ui,
                "the search index holds {}, each checked against the store",
                plural(r.index_documents, "document")
            );
        }
        let unreachable = [
            (r.unreachable_commits.len(), "commit"),
            (r.unreachable_blobs.len(), "blob"),
            (r.unreachable_chunks.len(), "chunk"),
        ];
        let listed: Vec<String> = unreachable
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| plural(*n as u64, what))
            .collect();
        if !listed.is_empty() {
            let _ = writeln!(
                ui,
                "unreachable (kept; nothing refers to them): {}",
                listed.join(", ")
            );
        }
        if !r.redacted.is_empty() {
            let ids = listed_ids(r.redacted.iter().map(|b| b.short()));
            let _ = writeln!(ui, "redacted (payload removed for good, ids kept): {ids}");
        }
        if !r.derived_from_redacted.is_empty() {
            let ids = listed_ids(r.derived_from_redacted.iter().map(|c| c.short()));
            let _ = writeln!(
                ui,
                "made from redacted content (summaries that may still hold it; `tract redact REV --follow`): {ids}"
            );
        }
        for (branch, n) in &r.reused_call_ids {
            let _ = writeln!(
                ui,
                "warning: branch {branch}: {}",
                crate::render::reused_call_ids(*n, "its view")
            );
        }
        for (branch, n) in &r.secrets_in_view {
            let _ = writeln!(
                ui,
                "warning: branch {branch}: {} in its view {} what looks like a credential \
                 (`tract secrets scan --redact` scrubs them)",
                crate::render::count(*n, "message", "messages"),
                if *n == 1 { "holds" } else { "hold" }
            );
        }
        for p in &r.problems {
            let _ = writeln!(ui, "{:<11} {}: {}", p.kind, p.subject, p.detail);
        }
    }
    match r.problems.len() {
        0 => Ok(()),
        n => Err(CommandError::check_failed(format!(
            "fsck found {n} problem{}",
            if n == 1 { "" } else { "s" }
        ))
        .with_hint("keep a copy of the store file before changing anything")),
    }
}

/// The first ids of a list a person reads (retention can leave hundreds of thousands of
/// tombstones), and how many more `--json` lists.
fn listed_ids(ids: impl ExactSizeIterator<Item = String>) -> String {
    const SHOWN: usize = 20;
    let more = ids.len().saturating_sub(SHOWN);
    let mut text = ids.take(SHOWN).collect::<Vec<_>>().join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more (--json lists them all)"));
    }
    text
}
