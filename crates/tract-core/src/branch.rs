//! Branches and a handle's position: listing, creating (a fork at any commit), switching,
//! checking out a commit (detached), resetting. Every ref move is in the reflog.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::refs::{Head, HeadRef};
use crate::repo::Repo;
use crate::revision::{BranchName, Rev};

/// A branch and whether the handle is on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchInfo {
    /// Its name.
    pub name: String,
    /// Its tip.
    pub head: CommitId,
    /// Whether the handle is on it.
    pub current: bool,
}

/// Every branch, by name.
pub(crate) fn branches(repo: &Repo) -> Result<Vec<BranchInfo>> {
    let snap = repo.read()?;
    let head = repo.head(&snap)?;
    Ok(snap
        .branches()?
        .into_iter()
        .map(|(name, id)| BranchInfo {
            current: head.branch() == Some(name.as_str()),
            name,
            head: id,
        })
        .collect())
}

/// Creates branch `name` at `at`.
pub(crate) fn create(repo: &Repo, name: &BranchName, at: &Rev) -> Result<CommitId> {
    let target = repo.resolve(&repo.read()?, at)?;
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
