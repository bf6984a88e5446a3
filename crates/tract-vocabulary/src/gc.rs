//! [`GcReport`]: what `tract gc` removed (or, with `--dry-run`, would remove).

use serde::Serialize;
use tract_core::{GcOutcome, RuleOutcome};

/// What a garbage collection removed, after the retention policy's rules.
#[derive(Debug, Clone, Serialize)]
pub struct GcReport {
    /// Whether nothing was removed: the figures say what would be.
    dry_run: bool,
    /// What each retention rule removed, in the policy's order.
    retention: Vec<RuleReport>,
    /// Commits removed.
    commits: u64,
    /// Blobs removed.
    blobs: u64,
    /// Chunks removed.
    chunks: u64,
    /// Bytes of records removed.
    bytes: u64,
    /// Reflog entries expired (older than the grace period).
    reflog_entries: u64,
    /// View checkpoints removed (all but each branch's newest; not counted in a dry run).
    checkpoints: u64,
    /// Checkpoint chunks removed.
    checkpoint_chunks: u64,
}

/// What one retention rule removed.
#[derive(Debug, Clone, Serialize)]
pub struct RuleReport {
    /// The rule's name.
    rule: String,
    /// Branches deleted.
    deleted_branches: Vec<DeletedReport>,
    /// Tool results replaced (one per content: every commit carrying it shows the
    /// replacement).
    replaced_results: Vec<ReplacedReport>,
    /// Bytes freed (a deleted branch's once `gc` collects what only it reached).
    bytes: u64,
    /// What the rule covers but kept, by why.
    kept: KeptReport,
}

/// A branch a rule deleted.
#[derive(Debug, Clone, Serialize)]
pub struct DeletedReport {
    /// Its name.
    branch: String,
    /// Its tip (the deletion's reflog entry names it).
    commit_hash: String,
    /// When it last moved, RFC 3339.
    idle_since: String,
}

/// A tool result a rule replaced.
#[derive(Debug, Clone, Serialize)]
pub struct ReplacedReport {
    /// The commits carrying the content, oldest first.
    commits: Vec<String>,
    /// The summary whose text replaced it (`null`: a placeholder).
    summary: Option<String>,
}

/// What a rule covers but kept.
#[derive(Debug, Clone, Serialize)]
pub struct KeptReport {
    /// Pinned branches.
    pinned: u64,
    /// An idle branch `HEAD` is on.
    current: u64,
    /// Old results a branch the rule does not cover reaches.
    shared: u64,
    /// Old results among the newest messages of a view.
    newest: u64,
    /// Old results without a summary.
    unsummarized: u64,
}

impl From<&RuleOutcome> for RuleReport {
    fn from(r: &RuleOutcome) -> Self {
        RuleReport {
            rule: r.rule.clone(),
            deleted_branches: r
                .deleted
                .iter()
                .map(|d| DeletedReport {
                    branch: d.name.clone(),
                    commit_hash: d.tip.to_hex(),
                    idle_since: tract_core::clock::rfc3339_micros(d.idle_since_us),
                })
                .collect(),
            replaced_results: r
                .replaced
                .iter()
                .map(|x| ReplacedReport {
                    commits: x.commits.iter().map(|c| c.to_hex()).collect(),
                    summary: x.summary.map(|s| s.to_hex()),
                })
                .collect(),
            bytes: r.bytes,
            kept: KeptReport {
                pinned: r.kept.pinned,
                current: r.kept.current,
                shared: r.kept.shared,
                newest: r.kept.newest,
                unsummarized: r.kept.unsummarized,
            },
        }
    }
}

impl From<&GcOutcome> for GcReport {
    fn from(o: &GcOutcome) -> Self {
        GcReport {
            dry_run: o.dry_run,
            retention: o.retention.iter().map(RuleReport::from).collect(),
            commits: o.commits,
            blobs: o.blobs,
            chunks: o.chunks,
            bytes: o.bytes,
            reflog_entries: o.reflog_entries,
            checkpoints: o.checkpoints,
            checkpoint_chunks: o.checkpoint_chunks,
        }
    }
}
