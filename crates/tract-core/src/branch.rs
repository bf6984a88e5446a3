//! Branches and `HEAD`: listing, creating (a fork at any commit), switching, checking out a
//! commit (detached), resetting. Every move is in the reflog.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::refs::{Head, HeadRef};
use crate::repo::Repo;
use crate::revision::{BranchName, Rev};

/// A branch and whether `HEAD` is on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchInfo {
    /// Its name.
    pub name: String,
    /// Its tip.
    pub head: CommitId,
    /// Whether `HEAD` names it.
    pub current: bool,
}

/// Every branch, by name.
pub(crate) fn branches(repo: &Repo) -> Result<Vec<BranchInfo>> {
    let snap = repo.read()?;
    let head = snap.head()?;
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
    let target = at.resolve(&repo.read()?)?;
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

/// Points `HEAD` at branch `name`, which must exist (or be the unborn branch `HEAD` is on).
pub(crate) fn switch(repo: &Repo, name: &str) -> Result<Head> {
    let mut w = repo.store.write()?;
    let exists = w.branch(name)?.is_some();
    let unborn_current = w.head()?.branch() == Some(name);
    if !exists && !unborn_current {
        return Err(Error::UnknownBranch {
            name: name.to_string(),
        });
    }
    w.set_head(
        &HeadRef::Branch(name.to_string()),
        &format!("switch: to {name}"),
    )?;
    let head = w.head()?;
    w.commit()?;
    Ok(head)
}

/// A branch name switches to it; anything else detaches `HEAD` at the commit it names.
pub(crate) fn checkout(repo: &Repo, rev: &Rev) -> Result<Head> {
    let snap = repo.read()?;
    if let Some(name) = rev.as_branch_name()
        && snap.branch(name)?.is_some()
    {
        return switch(repo, name);
    }
    let id = rev.resolve(&snap)?;
    let mut w = repo.store.write()?;
    w.set_head(
        &HeadRef::Detached(id),
        &format!("checkout: detached at {}", id.short()),
    )?;
    let head = w.head()?;
    w.commit()?;
    Ok(head)
}

/// Moves the current branch (or detached `HEAD`) to `rev`.
pub(crate) fn reset(repo: &Repo, rev: &Rev) -> Result<Head> {
    let target = rev.resolve(&repo.read()?)?;
    let mut w = repo.store.write()?;
    let head = w.head()?;
    w.advance_head(
        &head,
        target,
        &format!("reset: moving to {}", target.short()),
    )?;
    let new = w.head()?;
    w.commit()?;
    Ok(new)
}
