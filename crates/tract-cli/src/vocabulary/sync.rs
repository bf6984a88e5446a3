//! [`SyncReport`]: what a push, pull or clone sent, Python's `Tract.push()` as JSON.

use serde::Serialize;

/// What a transfer between two stores sent.
#[derive(Debug, Clone, Serialize)]
pub struct SyncReport {
    /// Every branch sent.
    branches: Vec<BranchSync>,
    /// Commits the receiver did not have.
    commits: u64,
    /// Blobs the receiver did not have.
    blobs: u64,
    /// Whether the settings (the tool-summarization and retention policies) were sent.
    settings: bool,
}

/// What one branch did.
#[derive(Debug, Clone, Serialize)]
struct BranchSync {
    /// The branch.
    name: String,
    /// Its tip in the receiver before (`null`: the receiver had no such branch).
    old: Option<String>,
    /// Its tip now.
    new: String,
    /// Whether the receiver had this tip already.
    up_to_date: bool,
    /// Whether it was moved although it had diverged (`force`; the old tip stays in the
    /// receiver's reflog).
    forced: bool,
}

impl From<&tract_core::SyncReport> for SyncReport {
    fn from(r: &tract_core::SyncReport) -> Self {
        SyncReport {
            branches: r
                .branches
                .iter()
                .map(|b| BranchSync {
                    name: b.name.clone(),
                    old: b.old.map(|c| c.to_hex()),
                    new: b.new.to_hex(),
                    up_to_date: b.up_to_date(),
                    forced: b.forced,
                })
                .collect(),
            commits: r.commits,
            blobs: r.blobs,
            settings: r.settings,
        }
    }
}
