//! `tract gc`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render::count;
use crate::ui::Ui;
use crate::vocabulary::GcReport;
use std::fmt::Write;
use std::time::Duration;
use tract_core::{GcOutcome, RuleOutcome};

/// Apply the retention policy's rules (`tract config retention`: old tool results replaced,
/// idle branches deleted; nothing without a rule), then remove objects nothing reaches (no
/// branch, no HEAD, no reflog entry younger than the grace period); older reflog entries are
/// expired, and view checkpoints but each branch's newest. Nothing runs on its own: schedule
/// it (cron, a systemd timer) to keep a store's size in check.
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
    /// List what each retention rule and the collection would remove, and the bytes they
    /// would free, changing nothing.
    #[arg(long, conflicts_with = "compact")]
    dry_run: bool,
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
    let options = tract_core::GcOptions {
        grace,
        dry_run: a.dry_run,
    };
    let out = tract_core::gc_with(t.store(), &options)?;
    if a.json {
        output::print(ui, &GcReport::from(&out), false);
    } else {
        report(ui, &out);
    }
    if a.compact {
        t.into_store().compact()?;
        if !a.json {
            let _ = writeln!(ui, "compacted the store");
        }
    }
    Ok(())
}

/// The outcome in words: each rule's part, then the collection's.
fn report(ui: &mut Ui<'_>, out: &GcOutcome) {
    let (verb, expire) = match out.dry_run {
        true => ("would remove", "would expire"),
        false => ("removed", "expired"),
    };
    for rule in &out.retention {
        rule_report(ui, rule, out.dry_run);
    }
    let checkpoints = match out.dry_run {
        true => String::new(),
        false => format!(
            ", {}",
            count(out.checkpoints, "view checkpoint", "view checkpoints")
        ),
    };
    let _ = writeln!(
        ui,
        "{verb} {}, {}, {} ({}){checkpoints}; {expire} {}",
        count(out.commits, "commit", "commits"),
        count(out.blobs, "blob", "blobs"),
        count(out.chunks, "chunk", "chunks"),
        count(out.bytes, "byte", "bytes"),
        count(out.reflog_entries, "reflog entry", "reflog entries"),
    );
}

/// One rule's part: what it deletes and replaces, the bytes, and what it kept.
fn rule_report(ui: &mut Ui<'_>, r: &RuleOutcome, dry_run: bool) {
    let (delete, replace) = match dry_run {
        true => ("would delete", "would replace"),
        false => ("deleted", "replaced"),
    };
    let _ = write!(ui, "rule '{}': ", r.rule);
    let mut parts = Vec::new();
    if !r.deleted.is_empty() {
        parts.push(format!(
            "{delete} {} ({} once collected)",
            count(r.deleted.len() as u64, "branch", "branches"),
            count(r.bytes, "byte", "bytes")
        ));
    } else if !r.replaced.is_empty() {
        let summarized = r.replaced.iter().filter(|x| x.summary.is_some()).count();
        let by = match summarized {
            0 => String::new(),
            1 => ", 1 by its summary".to_string(),
            n => format!(", {n} by their summary"),
        };
        parts.push(format!(
            "{replace} {}{by} ({})",
            count(r.replaced.len() as u64, "tool result", "tool results"),
            count(r.bytes, "byte", "bytes")
        ));
    } else {
        parts.push("nothing due".to_string());
    }
    let k = &r.kept;
    for (n, one, many) in [
        (k.pinned, "pinned branch", "pinned branches"),
        (
            k.current,
            "idle branch HEAD is on",
            "idle branches HEAD is on",
        ),
        (
            k.shared,
            "result another branch reaches",
            "results another branch reaches",
        ),
        (
            k.newest,
            "result among a view's newest messages",
            "results among a view's newest messages",
        ),
        (
            k.unsummarized,
            "result without a summary",
            "results without a summary",
        ),
    ] {
        if n > 0 {
            parts.push(format!("kept {}", count(n, one, many)));
        }
    }
    let _ = writeln!(ui, "{}", parts.join("; "));
    for d in &r.deleted {
        let _ = writeln!(
            ui,
            "  branch {} at {} (idle since {})",
            d.name,
            d.tip.short(),
            tract_core::clock::rfc3339_micros(d.idle_since_us)
        );
    }
    // The JSON lists every one; a person reads the first few.
    for x in r.replaced.iter().take(LISTED) {
        let commits: Vec<String> = x.commits.iter().map(|c| c.short()).collect();
        let by = x.summary.map_or_else(
            || "a placeholder".to_string(),
            |s| format!("summary {}", s.short()),
        );
        let _ = writeln!(ui, "  result {} by {by}", commits.join(" "));
    }
    if r.replaced.len() > LISTED {
        let _ = writeln!(
            ui,
            "  and {} more (--json lists them all)",
            r.replaced.len() - LISTED
        );
    }
}

/// Replaced results listed by name in the text report.
const LISTED: usize = 20;
