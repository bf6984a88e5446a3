//! Branches through a handle: its position, listing, creating, forking, merging, deleting,
//! clearing, popping, switching, checking out, resetting, and the reflog.

use crate::agents::AgentSession;
use crate::error::Result;
use crate::id::CommitId;
use crate::object::Message;
use crate::ops::branch::{self, BranchInfo};
use crate::ops::merge::{self, MergeRequest};
use crate::refs::{Head, ReflogEntry};
use crate::repo::Bind;
use crate::view::info::CommitInfo;
use crate::view::revision::{BranchName, Rev};
use std::collections::BTreeMap;
use std::sync::Arc;

use super::Tract;

impl Tract {
    /// The handle's position (its branch, or a commit when detached) and the commit there.
    pub fn head(&self) -> Result<Head> {
        self.repo.head(&self.repo.read()?)
    }

    /// The store's `HEAD`: the command line's current branch. A handle not opened with
    /// [`Bind::StoreHead`] neither follows nor moves it.
    pub fn store_head(&self) -> Result<Head> {
        self.repo.read()?.head()
    }

    /// Every branch, by name.
    pub fn branches(&self) -> Result<Vec<BranchInfo>> {
        branch::branches(&self.repo)
    }

    /// Which agent wrote each branch's session, by branch (only the branches an agent's session
    /// was imported or captured onto): one read, with no branch's counts.
    pub fn agents(&self) -> Result<BTreeMap<String, AgentSession>> {
        crate::agents::all(&self.repo.read()?)
    }

    /// Checks that `name` is there to be read: a branch with commits, or the branch the
    /// store's `HEAD` is on (a new store's, before its first commit). Any other name is
    /// [`Error::UnknownBranch`] naming the existing branches closest to it. A handle bound to
    /// a branch with no commits reads it as empty (its first message creates it); a surface
    /// calls this before reading a branch a user named, so a mistyped name is an error rather
    /// than an empty answer.
    pub fn require_branch(&self, name: &BranchName) -> Result<()> {
        branch::require(&self.repo, name)
    }

    /// Creates a branch at `at` (`Rev::head()`: this handle's position): a fork at any commit.
    pub fn create_branch(&self, name: &BranchName, at: &Rev) -> Result<CommitId> {
        branch::create(&self.repo, name, at)
    }

    /// Forks: creates branch `name` at `at` (`Rev::head()`: this handle's position) and
    /// returns a handle bound to it, on the same open store, with this handle's hooks and
    /// default summarizer. Nothing is copied: the new branch is one ref (O(1) at any history
    /// size).
    pub fn fork(&self, name: &BranchName, at: &Rev) -> Result<Tract> {
        self.create_branch(name, at)?;
        let fork = Tract::from_store(self.repo.store.clone(), &Bind::Branch(name.clone()))?;
        *fork.hooks_mut() = self.hooks.read().unwrap_or_else(|e| e.into_inner()).clone();
        fork.set_summarizer(self.summarizer());
        Ok(fork)
    }

    /// Merges branch `name` into this handle's position with a commit of two parents (this
    /// head, then the branch's tip), so the branch's whole history stays reachable. With
    /// [`crate::MergeStrategy::Append`] the view continues with the branch's messages since
    /// it forked; with [`crate::MergeStrategy::ToolResult`] the merge commit is the result of
    /// that pending call: the branch's final assistant answer, or a summary of its messages
    /// (`req.summarize`). A branch merged into itself, one sharing no history, one with nothing
    /// new, or a call that is not pending is an error, and nothing is committed.
    pub fn merge(&self, name: &BranchName, req: &MergeRequest<'_>) -> Result<CommitInfo> {
        merge::merge(&self.repo, name, req, self.summarizer())
    }

    /// Checkpoints the view of every branch that has no checkpoint at its tip, so a new
    /// handle builds it from there instead of replaying its history (`tract upgrade` does this
    /// for a store older code wrote, a clone or a pull). Returns how many were written.
    pub fn checkpoint_views(&self) -> Result<usize> {
        crate::view::checkpoint::write_all(&self.repo.store)
    }

    /// Deletes branch `name` (not the one this handle or the store's `HEAD` is on); the
    /// reflog keeps its tip, which this returns. A handle elsewhere still bound to it fails
    /// with [`Error::BranchDeleted`] rather than start a new history there.
    pub fn delete_branch(&self, name: &BranchName) -> Result<CommitId> {
        branch::delete(&self.repo, name)
    }

    /// Empties this handle's branch (a session started over): the branch has no commits
    /// again, every handle on it sees it empty, and its old tip stays in the reflog (nothing is
    /// removed). Returns that tip, `None` when the branch was empty already.
    pub fn clear_branch(&self) -> Result<Option<CommitId>> {
        branch::clear(&self.repo)
    }

    /// Takes the last message off the view and returns it as the view showed it, `None` for
    /// an empty branch: the branch moves back to just before it was appended, and what was
    /// committed since (edits, a compression or a clear of earlier messages, records) is
    /// written again on top, so nothing else leaves the view (the reflog keeps the old tip).
    /// Refused when the last message is a summary or came from a merge.
    pub fn pop(&self) -> Result<Option<Arc<Message>>> {
        branch::pop(&self.repo)
    }

    /// Puts this handle on branch `name` (other handles, and the store's `HEAD`, stay where
    /// they are; a handle bound to [`Bind::StoreHead`] moves `HEAD`).
    pub fn switch(&self, name: &str) -> Result<Head> {
        branch::switch(&self.repo, name)
    }

    /// Puts this handle on a new branch `name`, created at its position (as
    /// [`Tract::create_branch`] then [`Tract::switch`]); on a branch with no commits yet (a new
    /// store's `main`) the handle moves to `name`, which its first message creates. An
    /// existing branch of that name is [`Error::BranchExists`].
    pub fn switch_new(&self, name: &BranchName) -> Result<Head> {
        branch::switch_new(&self.repo, name)
    }

    /// Checks out `rev`: a branch name switches this handle to it, anything else detaches the
    /// handle there (time travel: appends then grow from that commit without moving any
    /// branch).
    pub fn checkout(&self, rev: &Rev) -> Result<Head> {
        branch::checkout(&self.repo, rev)
    }

    /// Moves the handle's branch (or its detached position) to `rev`. Nothing is lost: the old
    /// head stays in the reflog.
    pub fn reset(&self, rev: &Rev) -> Result<Head> {
        branch::reset(&self.repo, rev)
    }

    /// The moves of a branch or `HEAD`, newest first: at most `limit` of them (`usize::MAX`
    /// for all).
    pub fn reflog(&self, name: &str, limit: usize) -> Result<Vec<ReflogEntry>> {
        self.repo.read()?.reflog(name, Some(limit))
    }
}
