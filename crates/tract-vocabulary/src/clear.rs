//! What clearing old tool results did ([`ClearReport`]) or would do ([`ClearPlan`]), Python's
//! `Tract.clear_tool_results()` as JSON.

use super::Commit;
use serde::Serialize;
use tract_core::ClearOutcome;

/// What a clear did.
#[derive(Debug, Clone, Serialize)]
pub struct ClearReport {
    /// The edit commits, one per result replaced by its placeholder.
    cleared: Vec<Commit>,
    /// The request's tokens before.
    tokens_before: u64,
    /// The request's tokens after.
    tokens_after: u64,
}

impl From<&ClearOutcome> for ClearReport {
    fn from(o: &ClearOutcome) -> Self {
        ClearReport {
            cleared: o.cleared.iter().map(Commit::from).collect(),
            tokens_before: o.tokens_before,
            tokens_after: o.tokens_after,
        }
    }
}

/// What a clear would do (a dry run): nothing is committed.
#[derive(Debug, Clone, Serialize)]
pub struct ClearPlan {
    /// The positions of the results it would clear, in view order.
    cleared: Vec<String>,
    /// The request's tokens now.
    tokens_before: u64,
    /// The request's tokens once they are cleared.
    tokens_after: u64,
    /// The cached tokens it invalidates: those of the view from the first result it clears
    /// on, which a provider's cache takes in again at the next request (against the
    /// `tokens_before - tokens_after` it saves each request).
    cached_tokens_invalidated: u64,
}

impl From<&tract_core::ClearPlan> for ClearPlan {
    fn from(p: &tract_core::ClearPlan) -> Self {
        ClearPlan {
            cleared: p.candidates.iter().map(|c| c.position.to_hex()).collect(),
            tokens_before: p.tokens_before,
            tokens_after: p.tokens_after,
            cached_tokens_invalidated: p.cached_tokens_invalidated,
        }
    }
}
