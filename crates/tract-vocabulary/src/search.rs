//! [`SearchHit`]: one match of a search, Python's `SearchHit` as JSON.

use super::{Commit, Detail};
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// Of those, the ones holding an agent's session, each with the agent and its version
    /// (as in [`Agent`]).
    agents: BTreeMap<String, Agent>,
}

/// The agent whose session a branch holds, and its version (`null` when the session names
/// none).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Agent {
    /// `claude-code`, `codex` or `gemini`.
    agent: String,
    /// Its version, as the session names it.
    version: Option<String>,
}

impl From<&tract_core::AgentSession> for Agent {
    fn from(a: &tract_core::AgentSession) -> Self {
        Agent {
            agent: a.agent.clone(),
            version: a.version.clone(),
        }
    }
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
            agents: BTreeMap::new(),
        }
    }

    /// The hit with the agent of each of its branches that holds one of `agents` (by branch,
    /// as [`tract_core::Tract::agents`] gives them).
    pub fn with_agents(mut self, agents: &BTreeMap<String, tract_core::AgentSession>) -> Self {
        self.agents = self
            .branches
            .iter()
            .filter_map(|b| Some((b.clone(), Agent::from(agents.get(b)?))))
            .collect();
        self
    }
}
