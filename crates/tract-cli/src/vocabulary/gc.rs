//! [`GcReport`]: what `gc` removed, Python's `Tract.gc()` as JSON.

use serde::Serialize;
use tract_core::GcOutcome;

/// What a garbage collection removed.
#[derive(Debug, Clone, Serialize)]
pub struct GcReport {
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
    /// View checkpoints removed (all but each branch's newest).
    checkpoints: u64,
    /// Checkpoint chunks removed.
    checkpoint_chunks: u64,
}

impl From<&GcOutcome> for GcReport {
    fn from(o: &GcOutcome) -> Self {
        GcReport {
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
