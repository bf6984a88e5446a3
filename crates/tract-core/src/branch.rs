//! Branches and a handle's position: listing, creating (a fork at any commit), switching,
//! checking out a commit (detached), resetting. Every ref move is in the reflog.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::refs::{Head, HeadRef};
use crate::repo::Repo;
use crate::revision::{BranchName, Rev};
use crate::stats::BranchStats;
use crate::store::Snapshot;
use crate::view::View;

/// A branch: its tip, what its view holds, when it last moved, and whether the handle is on
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchInfo {
    /// Its name.
    pub name: String,
    /// Its tip.
    pub head: CommitId,
    /// Whether the handle is on it.
    pub current: bool,
    /// Messages in its view.
    pub messages: u64,
    /// Tokens compile would send for it.
    pub token_count: u64,
    /// When its tip was committed, in microseconds since the Unix epoch.
    pub last_activity_us: u64,
}

/// Every branch, by name, with its counts: the ones kept as it moved, or (for a branch whose
/// counts are stale, written by an older tract) counted from its view.
pub(crate) fn branches(repo: &Repo) -> Result<Vec<BranchInfo>> {
    let snap = repo.read()?;
    // Not resolved: listing works on a handle whose own branch was deleted.
    let position = repo.position(&snap)?;
    snap.branches()?
        .into_iter()
        .map(|(name, tip)| {
            let stats = match snap.branch_stats(&name)? {
                Some(s) if s.tip == tip => s,
                _ => counted(&snap, tip)?,
            };
            Ok(BranchInfo {
                current: position == HeadRef::Branch(name.clone()),
                name,
                head: tip,
                messages: stats.tally.messages,
                token_count: stats.tally.token_count(),
                last_activity_us: stats.last_activity_us,
            })
        })
        .collect()
}

/// The counts of the view at `tip`, from the view itself.
fn counted(snap: &Snapshot, tip: CommitId) -> Result<BranchStats> {
    Ok(BranchStats {
        tip,
        last_activity_us: snap.commit(&tip)?.timestamp_us,
        tally: View::build(snap, Some(tip), None)?.tally(),
    })
}

/// Creates branch `name` at `at`.
pub(crate) fn create(repo: &Repo, name: &BranchName, at: &Rev) -> Result<CommitId> {
    let snap = repo.read()?;
    let target = repo.resolve(&snap, at)?;
    let position = repo.position(&snap)?;
    drop(snap);
    let mut w = repo.store.write()?;
    if w.branch(name.as_str())?.is_some() {
        return Err(Error::BranchExists {
            name: name.to_string(),
        });
    }
    w.set_branch(
        name.as_str(),
        Some(target),
        &format!("branch: created at {}", target.short()),
    )?;
    // A fork at a branch's tip starts with that branch's counts (else they are counted when
    // first listed or written).
    let source = match (at.as_branch_name(), &position) {
        (Some(b), _) => Some(b),
        (None, HeadRef::Branch(b)) => Some(b.as_str()),
        (None, HeadRef::Detached(_)) => None,
    };
    let source = match source {
        Some(b) => w.branch_stats(b)?,
        None => None,
    };
    if let Some(stats) = source.filter(|s| s.tip == target) {
        w.set_branch_stats(name.as_str(), Some(&stats))?;
    }
    w.commit()?;
    Ok(target)
}

/// Deletes branch `name`, which must not be where this handle or the store's `HEAD` is; its
/// reflog keeps the tip. Returns the tip.
pub(crate) fn delete(repo: &Repo, name: &BranchName) -> Result<CommitId> {
    let mut w = repo.store.write()?;
    let Some(tip) = w.branch(name.as_str())? else {
        return Err(Error::UnknownBranch {
            name: name.to_string(),
        });
    };
    let current = |h: crate::refs::Head| h.branch() == Some(name.as_str());
    if current(w.head()?) || current(repo.head_in(&w)?) {
        return Err(Error::invalid_op(format!(
            "branch '{name}' is the current branch; switch to another one first"
        )));
    }
    w.set_branch(name.as_str(), None, "branch: deleted")?;
    w.set_branch_stats(name.as_str(), None)?;
    w.commit()?;
    Ok(tip)
}

/// Puts the handle on branch `name`, which must exist (or be the branch it is on, still
/// without commits).
pub(crate) fn switch(repo: &Repo, name: &str) -> Result<Head> {
    let snap = repo.read()?;
    let exists = snap.branch(name)?.is_some();
    // Not resolved: leaving a branch that was deleted is how a handle recovers from it.
    let unborn_current = repo.position(&snap)? == HeadRef::Branch(name.to_string());
    if !exists && !unborn_current {
        return Err(Error::UnknownBranch {
            name: name.to_string(),
        });
    }
    repo.set_position(
        HeadRef::Branch(name.to_string()),
        &format!("switch: to {name}"),
    )?;
    repo.head(&repo.read()?)
}

/// A branch name puts the handle on that branch; anything else detaches it at the commit it
/// names.
pub(crate) fn checkout(repo: &Repo, rev: &Rev) -> Result<Head> {
    let snap = repo.read()?;
    if let Some(name) = rev.as_branch_name()
        && snap.branch(name)?.is_some()
    {
        return switch(repo, name);
    }
    let id = repo.resolve(&snap, rev)?;
    repo.set_position(
        HeadRef::Detached(id),
        &format!("checkout: detached at {}", id.short()),
    )?;
    repo.head(&repo.read()?)
}

/// Moves the handle's branch (or its detached position) to `rev`.
pub(crate) fn reset(repo: &Repo, rev: &Rev) -> Result<Head> {
    let target = repo.resolve(&repo.read()?, rev)?;
    let mut w = repo.store.write()?;
    let head = repo.head_in(&w)?;
    let reason = format!("reset: moving to {}", target.short());
    let detached = repo.advance(&mut w, &head, target, &reason)?;
    w.commit()?;
    repo.written(&head.target, detached);
    repo.head(&repo.read()?)
}
