//! [`SearchHit`]: one match of a search, Python's `SearchHit` as JSON.

use super::{Commit, Detail};
use serde::Serialize;

/// One search match: the commit (its fields at the top level, so `commit_hash` is the hit's
/// as in Python) and the matching line.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    /// The commit whose message matched (searching the view: the version in view).
    #[serde(flatten)]
    commit: Commit,
    /// The matching line, cut to the match with some context.
    snippet: String,
}

impl From<&tract_core::SearchHit> for SearchHit {
    fn from(hit: &tract_core::SearchHit) -> Self {
        SearchHit::new(hit, Detail::Full)
    }
}

impl SearchHit {
    /// `hit`, its commit shown with `detail`.
    pub fn new(hit: &tract_core::SearchHit, detail: Detail) -> Self {
        SearchHit {
            commit: Commit::new(&hit.info, detail),
            snippet: hit.snippet.clone(),
        }
    }
}
