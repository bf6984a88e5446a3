//! [`SyncReport`]: what a push, pull or clone did, Python's `Tract.push()` as JSON.

use serde::Serialize;

/// What a transfer between two stores did.
#[derive(Debug, Clone, Serialize)]
pub struct SyncReport {
    /// Every branch moved or found up to date.
    branches: Vec<BranchSync>,
    /// Every branch not moved, and why (its history was not sent).
    refused: Vec<RefusedBranch>,
    /// Commits the receiver did not have.
    commits: u64,
    /// Blobs the receiver did not have.
    blobs: u64,
    /// Whether the settings (the tool-summarization, retention and secrets policies) were sent.
    settings: bool,
}

/// What one branch did.
#[derive(Debug, Clone, Serialize)]
struct BranchSync {
    /// The receiver's branch.
    name: String,
    /// The sender's branch it took (`name` unless sent as SRC:DST).
    source: String,
    /// Its tip in the receiver before (`null`: the receiver had no such branch).
    old: Option<String>,
    /// Its tip now.
    new: String,
    /// Whether the receiver had this tip already.
    up_to_date: bool,
    /// Whether it was moved although it had diverged (`force`; the old tip stays in the
    /// receiver's reflog).
    forced: bool,
    /// The sender's tip, when the receiver's already contained it (`null` otherwise): the
    /// branch stayed where it was.
    ahead_of: Option<String>,
}

/// A branch that was not moved.
#[derive(Debug, Clone, Serialize)]
struct RefusedBranch {
    /// The receiver's branch, which stays where it is.
    name: String,
    /// The sender's branch that was to move it.
    source: String,
    /// Its tip in the receiver.
    receiver: String,
    /// The sender's tip.
    sender: String,
    /// Why: `diverged` (neither tip contains the other).
    reason: &'static str,
}

impl From<&tract_core::SyncReport> for SyncReport {
    fn from(r: &tract_core::SyncReport) -> Self {
        SyncReport {
            branches: r
                .branches
                .iter()
                .map(|b| BranchSync {
                    name: b.name.clone(),
                    source: b.source.clone(),
                    old: b.old.map(|c| c.to_hex()),
                    new: b.new.to_hex(),
                    up_to_date: b.up_to_date(),
                    forced: b.forced,
                    ahead_of: b.ahead_of.map(|c| c.to_hex()),
                })
                .collect(),
            refused: r
                .refused
                .iter()
                .map(|x| RefusedBranch {
                    name: x.name.clone(),
                    source: x.source.clone(),
                    receiver: x.receiver.to_hex(),
                    sender: x.sender.to_hex(),
                    reason: x.reason.as_str(),
                })
                .collect(),
            commits: r.commits,
            blobs: r.blobs,
            settings: r.settings,
        }
    }
}
