//! What a compression did ([`CompressReport`]) or would do ([`CompressPlan`]), Python's
//! `Tract.compress()` as JSON.

use super::{Commit, Detail, hex};
use serde::Serialize;
use tract_core::CompressOutcome;

/// What a compress did.
#[derive(Debug, Clone, Serialize)]
pub struct CompressReport {
    /// The compress commits, one per run summarized.
    commits: Vec<Commit>,
    /// For each of them, the positions it replaced.
    sources: Vec<Vec<String>>,
    /// The runs left as they were because their summary was not shorter: their positions.
    skipped: Vec<Vec<String>>,
    /// What was said about it (each run skipped, and why).
    warnings: Vec<String>,
    /// The request's tokens before.
    tokens_before: u64,
    /// The request's tokens after.
    tokens_after: u64,
}

impl CompressReport {
    /// `o`, its commits shown with `detail`.
    pub fn new(o: &CompressOutcome, detail: Detail) -> Self {
        CompressReport {
            commits: o.commits.iter().map(|c| Commit::new(c, detail)).collect(),
            sources: o.commits.iter().map(|c| hex(c.sources())).collect(),
            skipped: o.skipped.iter().map(|r| hex(&r.sources)).collect(),
            warnings: o.warnings.clone(),
            tokens_before: o.tokens_before,
            tokens_after: o.tokens_after,
        }
    }
}

/// What a compress would replace (a dry run): nothing is summarized or committed.
#[derive(Debug, Clone, Serialize)]
pub struct CompressPlan {
    /// One list of positions per summary it would commit, in view order.
    sources: Vec<Vec<String>>,
    /// The tokens each of those runs holds in view now.
    tokens: Vec<u64>,
    /// The cached tokens it invalidates: those of the view from its first run on, which a
    /// provider's cache takes in again at the next request (against the runs' tokens it
    /// saves each request, less the summaries').
    cached_tokens_invalidated: u64,
}

impl From<&tract_core::CompressPlan> for CompressPlan {
    fn from(p: &tract_core::CompressPlan) -> Self {
        CompressPlan {
            sources: p.runs.iter().map(|r| hex(&r.sources)).collect(),
            tokens: p.runs.iter().map(|r| r.tokens).collect(),
            cached_tokens_invalidated: p.cached_tokens_invalidated,
        }
    }
}
