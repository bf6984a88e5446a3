//! Refs: what `HEAD` points at, and the log of every ref move. Branch tips and `HEAD` are the
//! only mutable state of a store; every move is recorded, so nothing is ever lost.

use crate::id::CommitId;
use serde::{Deserialize, Serialize};

/// What `HEAD` points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeadRef {
    /// A branch, which may not have commits yet.
    Branch(String),
    /// A commit, with no branch (after checking out a commit).
    Detached(CommitId),
}

/// `HEAD` resolved: what it points at and the commit there, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The branch or commit `HEAD` names.
    pub target: HeadRef,
    /// The commit at `HEAD`; `None` on a branch with no commits yet.
    pub commit: Option<CommitId>,
}

impl Head {
    /// The branch name, or `None` when detached.
    pub fn branch(&self) -> Option<&str> {
        match &self.target {
            HeadRef::Branch(b) => Some(b),
            HeadRef::Detached(_) => None,
        }
    }
}

/// The reflog reason of a branch emptied by `Tract::clear_branch` (or a pop of its first
/// message): a branch whose last move is this is empty, not deleted.
pub(crate) const CLEARED: &str = "clear: emptied";

/// One move of a ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReflogEntry {
    /// Where the ref was before.
    pub old: Option<CommitId>,
    /// Where it went.
    pub new: Option<CommitId>,
    /// When, in microseconds since the Unix epoch.
    pub timestamp_us: u64,
    /// Why, e.g. `append`, `reset: moving to 3fa9c1`.
    pub reason: String,
}
