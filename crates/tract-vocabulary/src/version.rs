//! [`Version`]: one version of a message in view.

use super::{Commit, Detail};
use serde::Serialize;
use tract_core::CommitInfo;

/// One version of a position of the view: the original or one of its edits, and whether it
/// is the one in view (Python's `Tract.edit_history()`, whose last entry is).
#[derive(Debug, Clone, Serialize)]
pub struct Version {
    /// The commit of this version.
    #[serde(flatten)]
    commit: Commit,
    /// Whether it is the version in view (the newest).
    current: bool,
}

impl Version {
    /// The versions of a position (its edit history, oldest first), shown with `detail`.
    pub fn list(versions: &[CommitInfo], detail: Detail) -> Vec<Version> {
        let last = versions.len().saturating_sub(1);
        versions
            .iter()
            .enumerate()
            .map(|(i, v)| Version {
                commit: Commit::new(v, detail),
                current: i == last,
            })
            .collect()
    }
}
