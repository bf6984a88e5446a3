//! [`SearchHit`]: one match of a search, Python's `SearchHit` as JSON.

use super::{Commit, Detail};
use serde::Serialize;

/// One search match: the commit (its fields at the top level, so `commit_hash` is the hit's
/// as in Python), where it matched, how well, and the branches that hold it.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    /// The commit whose message matched (searching the view: the version in view).
    #[serde(flatten)]
    commit: Commit,
    /// Where it matched, on one line: a ranked hit's best passage (up to 160 characters), a
    /// regular expression's matching line cut to the match with some context.
    snippet: String,
    /// The parts of `snippet` that matched, as `[start, end]` byte offsets into its UTF-8
    /// (end exclusive), in order.
    highlights: Vec<[usize; 2]>,
    /// How well it matched (BM25 on a store file, `ts_rank_cd` in PostgreSQL: higher is
    /// better; comparable within one search only);
    /// `null` for a regular expression's hit, which is not ranked.
    score: Option<f32>,
    /// Every branch whose history holds the commit, sorted (a fork shares its source's
    /// commits: one hit names them all).
    branches: Vec<String>,
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
            highlights: hit.highlights.iter().map(|&(a, b)| [a, b]).collect(),
            score: hit.score,
            branches: hit.branches.clone(),
        }
    }
}
