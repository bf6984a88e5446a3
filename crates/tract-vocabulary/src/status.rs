//! [`Status`]: where a branch is and what its view holds, Python's `Tract.status()` as JSON.

use serde::Serialize;

/// A branch's position and counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Status {
    /// The branch (`null` when detached at a commit).
    branch: Option<String>,
    /// Its tip: a full commit id (`null` before the first commit).
    head: Option<String>,
    /// Whether the position is a commit rather than a branch.
    detached: bool,
    /// Messages in the view.
    messages: usize,
    /// Tokens compile would send.
    token_count: u64,
    /// Tool calls in the view without a result.
    unanswered_tool_calls: u64,
    /// Tool calls in the view whose id an earlier call used (sent under new ids).
    reused_call_ids: u64,
    /// Where the store is: its file, or its URL without the password (`null` in memory).
    path: Option<String>,
}

impl From<&tract_core::Status> for Status {
    fn from(s: &tract_core::Status) -> Self {
        Status {
            branch: s.head.branch().map(str::to_string),
            head: s.head.commit.map(|c| c.to_hex()),
            detached: s.head.branch().is_none(),
            messages: s.messages,
            token_count: s.token_count,
            unanswered_tool_calls: s.unanswered_calls,
            reused_call_ids: s.reused_call_ids,
            path: s.store.clone(),
        }
    }
}
