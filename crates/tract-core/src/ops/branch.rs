//! Branches and a handle's position: listing, creating (a fork at any commit), switching,
//! checking out a commit (detached), resetting. Every ref move is in the reflog.

use crate::agents::{self, AgentSession};
use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::refs::{CLEARED, Head, HeadRef};
use crate::repo::Repo;
use crate::stats::BranchStats;
use crate::storage::store::snapshot::Snapshot;
use crate::view::checkpoint;
use crate::view::revision::{BranchName, Rev};

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
    /// The agent whose session it holds (imported or captured), with its version.
    pub agent: Option<AgentSession>,
}

/// Every branch, by name, with its counts: the ones kept as it moved, or (for a branch whose
/// counts are stale, written by an older tract) counted from its view.
pub(crate) fn branches(repo: &Repo) -> Result<Vec<BranchInfo>> {
    let snap = repo.read()?;
    // Not resolved: listing works on a handle whose own branch was deleted.
    let position = repo.position(&snap)?;
    let mut sessions = agents::all(&snap)?;
    snap.branches()?
        .into_iter()
        .map(|(name, tip)| {
            let stats = match snap.branch_stats(&name)? {
                Some(s) if s.tip == tip => s,
                _ => counted(&snap, &name, tip)?,
            };
            Ok(BranchInfo {
                agent: sessions.remove(&name),
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

/// The counts of the view at `tip`, branch `name`'s tip, from the view itself (built from the
/// branch's checkpoint).
fn counted(snap: &Snapshot, name: &str, tip: CommitId) -> Result<BranchStats> {
    let from = checkpoint::of_branch(snap, name)?;
    Ok(BranchStats {
        tip,
        last_activity_us: snap.commit(&tip)?.timestamp_us,
        tally: checkpoint::build(snap, Some(tip), from)?.tally(),
        since_checkpoint: None,
    })
}

/// Creates branch `name` at `at`.
pub(crate) fn create(repo: &Repo, name: &BranchName, at: &Rev) -> Result<CommitId> {
    let snap = repo.read()?;
    let target = repo.resolve(&snap, at)?;
    let position = repo.position(&snap)?;
    drop(snap);
    let mut w = repo.store.write_refs(&[name.as_str()])?;
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
    let source_branch = source;
    let source = match source {
        Some(b) => w.branch_stats(b)?,
        None => None,
    };
    if let Some(stats) = source.filter(|s| s.tip == target) {
        w.set_branch_stats(name.as_str(), Some(&stats))?;
    }
    // The source's checkpoint is where a view of the fork starts too, when the fork is at or
    // after it (otherwise the fork's first view replays).
    if let Some(b) = source_branch
        && let Some(at) = checkpoint::of_branch(&w, b)?
    {
        w.set_meta(&checkpoint::branch_key(name.as_str()), Some(at.as_bytes()))?;
    }
    w.commit()?;
    Ok(target)
}

/// Deletes branch `name`, which must not be where this handle or the store's `HEAD` is; its
/// reflog keeps the tip. Returns the tip.
pub(crate) fn delete(repo: &Repo, name: &BranchName) -> Result<CommitId> {
    let mut w = repo.store.write_refs(&[name.as_str()])?;
    let tip = w.require_branch(name.as_str())?;
    let current = |h: crate::refs::Head| h.branch() == Some(name.as_str());
    if current(w.head()?) || current(repo.head_in(&w)?) {
        return Err(Error::invalid_op(format!(
            "branch '{name}' is the current branch; switch to another one first"
        )));
    }
    w.set_branch(name.as_str(), None, "branch: deleted")?;
    w.set_branch_stats(name.as_str(), None)?;
    w.set_meta(&checkpoint::branch_key(name.as_str()), None)?;
    agents::set(&mut w, name.as_str(), None)?;
    w.commit()?;
    Ok(tip)
}

/// Empties the handle's branch: it has no commits again, as a new session, and its old tip
/// stays in the reflog. Returns that tip (`None` when it was empty already).
pub(crate) fn clear(repo: &Repo) -> Result<Option<CommitId>> {
    let mut w = repo.write()?;
    let head = repo.head_in(&w)?;
    let HeadRef::Branch(name) = &head.target else {
        return Err(Error::invalid_op(
            "the handle is detached: there is no branch to clear",
        ));
    };
    let Some(tip) = head.commit else {
        return Ok(None);
    };
    w.set_branch(name, None, CLEARED)?;
    w.set_branch_stats(name, None)?;
    w.set_meta(&checkpoint::branch_key(name), None)?;
    agents::set(&mut w, name, None)?;
    w.commit()?;
    repo.written(&head.target, None);
    Ok(Some(tip))
}

/// Takes the handle's last view message off its branch and returns it as the view showed it
/// (`None` for an empty branch). The branch moves back to just before that message was
/// appended; what was committed on it since (edits of earlier messages, a compression or a
/// clear of them, records) is written again on top, so only that message leaves the view.
/// Its own edits go with it. The reflog keeps the old tip, and with it everything. The last
/// message must be an append of this branch's own line, with no merge after it: a summary
/// or a merged-in message is refused, since going back before it would bring back other
/// messages.
pub(crate) fn pop(repo: &Repo) -> Result<Option<std::sync::Arc<crate::object::Message>>> {
    use crate::object::Op;
    let snap = repo.read()?;
    let head = repo.head(&snap)?;
    let Some(tip) = head.commit else {
        return Ok(None);
    };
    let Some(last) = repo.with_view(&snap, Some(tip), |v| v.entries().last().cloned())? else {
        return Ok(None);
    };
    let (message, position) = (repo.text(&snap, &last)?, last.position);
    let not_ours = || {
        Error::invalid_op(format!(
            "the last message ({}) was not appended on this branch (a summary or a merge); \
             reset the branch instead",
            position.short()
        ))
    };
    // The commits after the append, newest first.
    let mut after: Vec<(CommitId, crate::object::Commit)> = Vec::new();
    let mut cursor = Some(tip);
    let origin = loop {
        let Some(id) = cursor else {
            return Err(not_ours());
        };
        let commit = snap.commit(&id)?;
        if id == position {
            break commit;
        }
        cursor = commit.parent();
        after.push((id, commit));
    };
    if !matches!(origin.op, Op::Append) {
        return Err(not_ours());
    }
    // What is written again, oldest first: everything but the popped message's own edits.
    let popped: std::collections::HashSet<CommitId> = last.versions().into_iter().collect();
    let mut moved: Vec<(CommitId, usize)> = Vec::new();
    let mut steps = Vec::new();
    for (id, commit) in after.into_iter().rev() {
        match &commit.op {
            Op::Edit { target } if popped.contains(target) => continue,
            Op::Edit { .. } | Op::Compress { .. } | Op::Record { .. } => {}
            Op::Append | Op::Merge { .. } => return Err(not_ours()),
        }
        let Some(blob) = commit.blob else {
            return Err(Error::corrupt(format!(
                "{} {} has no blob",
                commit.op.name(),
                id.short()
            )));
        };
        let (content, _) = snap.blob(&blob)?;
        let mut prepared = match &commit.op {
            Op::Record { .. } => crate::write::txn::Prepared::uncounted(content)?,
            _ => crate::write::txn::Prepared::stored(content)?,
        };
        prepared.note = commit.message.clone();
        prepared.timestamp_us = Some(commit.timestamp_us);
        let refs = moved.clone();
        moved.push((id, steps.len()));
        steps.push((
            crate::write::txn::ChainStep::Again {
                op: commit.op.clone(),
                moved: refs,
            },
            prepared,
        ));
    }
    let reason = format!("pop: {}", position.short());
    if !steps.is_empty() {
        crate::write::txn::rewrite(repo, tip, origin.parent(), steps, &reason)?;
        return Ok(Some(message));
    }
    let mut w = repo.write()?;
    let now = repo.head_in(&w)?;
    if now.commit != Some(tip) {
        return Err(Error::HeadMoved {
            branch: match &now.target {
                HeadRef::Branch(b) => b.clone(),
                HeadRef::Detached(_) => "HEAD".into(),
            },
            expected: Some(tip),
            actual: now.commit,
        });
    }
    let detached = match (origin.parent(), &now.target) {
        (Some(parent), _) => repo.advance(&mut w, &now, parent, &reason)?,
        (None, HeadRef::Branch(name)) => {
            w.set_branch(name, None, CLEARED)?;
            w.set_branch_stats(name, None)?;
            None
        }
        (None, HeadRef::Detached(_)) => {
            return Err(Error::invalid_op(
                "the handle is detached at the first commit: there is nothing before it",
            ));
        }
    };
    w.commit()?;
    repo.written(&now.target, detached);
    Ok(Some(message))
}

/// Fails with [`Error::UnknownBranch`] unless `name` is a branch with commits or the branch
/// the store's `HEAD` is on (a new store's, before its first commit). A handle bound to any
/// other name reads it as empty, which is right for a session its first message creates but
/// hides a mistyped name from someone reading: surfaces check a name a user gave to read.
pub(crate) fn require(repo: &Repo, name: &BranchName) -> Result<()> {
    let snap = repo.read()?;
    if snap.head_ref()? == HeadRef::Branch(name.to_string()) {
        return Ok(());
    }
    snap.require_branch(name.as_str()).map(drop)
}

/// Puts the handle on branch `name`, which must exist (or be the branch it is on, still
/// without commits).
pub(crate) fn switch(repo: &Repo, name: &str) -> Result<Head> {
    let snap = repo.read()?;
    // Not resolved: leaving a branch that was deleted is how a handle recovers from it.
    let unborn_current = repo.position(&snap)? == HeadRef::Branch(name.to_string());
    if !unborn_current {
        snap.require_branch(name)?;
    }
    repo.set_position(
        HeadRef::Branch(name.to_string()),
        &format!("switch: to {name}"),
    )?;
    repo.head(&repo.read()?)
}

/// Puts the handle on a new branch `name` made at its position; at a position with no commits
/// yet (a new store's `main`), the handle moves to `name`, which its first commit creates, as
/// `git switch -c` does in a new repository. A branch of that name is
/// [`Error::BranchExists`] either way.
pub(crate) fn switch_new(repo: &Repo, name: &BranchName) -> Result<Head> {
    let snap = repo.read()?;
    if repo.head(&snap)?.commit.is_some() {
        drop(snap);
        create(repo, name, &Rev::head())?;
        return switch(repo, name.as_str());
    }
    if snap.branch(name.as_str())?.is_some() {
        return Err(Error::BranchExists {
            name: name.to_string(),
        });
    }
    drop(snap);
    repo.set_position(
        HeadRef::Branch(name.to_string()),
        &format!("switch: to new branch {name}"),
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
    let id = match repo.resolve(&snap, rev) {
        Ok(id) => id,
        // Neither a branch nor a commit: a mistyped branch name is named as `switch` names it,
        // with the close ones, when there are any.
        Err(e @ Error::UnknownRevision { .. }) => {
            return Err(match rev.as_branch_name().map(|n| snap.require_branch(n)) {
                Some(Err(b)) if matches!(&b, Error::UnknownBranch { similar, .. } if !similar.is_empty()) => {
                    b
                }
                _ => e,
            });
        }
        Err(e) => return Err(e),
    };
    repo.set_position(
        HeadRef::Detached(id),
        &format!("checkout: detached at {}", id.short()),
    )?;
    repo.head(&repo.read()?)
}

/// Moves the handle's branch (or its detached position) to `rev`.
pub(crate) fn reset(repo: &Repo, rev: &Rev) -> Result<Head> {
    let target = repo.resolve(&repo.read()?, rev)?;
    let mut w = repo.write()?;
    let head = repo.head_in(&w)?;
    let reason = format!("reset: moving to {}", target.short());
    let detached = repo.advance(&mut w, &head, target, &reason)?;
    w.commit()?;
    repo.written(&head.target, detached);
    repo.head(&repo.read()?)
}

#[cfg(test)]
mod tests {
    use crate::error::Error;
    use crate::repo::Bind;
    use crate::tract::Tract;
    use crate::view::revision::{BranchName, Rev};

    fn name(s: &str) -> BranchName {
        BranchName::new(s).unwrap()
    }

    #[test]
    fn a_branch_to_read_must_exist_or_be_the_current_one() {
        let t = Tract::in_memory().unwrap();
        // A new store's current branch has no commits yet, and reads as empty.
        t.require_branch(&name("main")).unwrap();
        assert!(matches!(
            t.require_branch(&name("nope")),
            Err(Error::UnknownBranch { name, similar }) if name == "nope" && similar.is_empty()
        ));
        t.user("hi").unwrap();
        let side = Tract::from_store(t.store().clone(), &Bind::Branch(name("session-1"))).unwrap();
        // A handle on a branch not born yet reads it as empty; its first message creates it.
        assert!(side.compile().unwrap().is_empty());
        assert!(t.require_branch(&name("session-1")).is_err());
        side.user("on the side").unwrap();
        t.require_branch(&name("session-1")).unwrap();
        assert!(matches!(
            t.require_branch(&name("sesion-1")),
            Err(Error::UnknownBranch { similar, .. }) if similar == ["session-1"]
        ));
        // The other operations that need a branch name the close ones too.
        assert!(matches!(
            t.switch("session1"),
            Err(Error::UnknownBranch { similar, .. }) if similar == ["session-1"]
        ));
    }

    #[test]
    fn checkout_of_a_mistyped_branch_names_the_close_ones() {
        let t = Tract::in_memory().unwrap();
        t.user("hi").unwrap();
        t.create_branch(&name("session-1"), &Rev::head()).unwrap();
        let rev = |s: &str| Rev::parse(s).unwrap();
        assert!(matches!(
            t.checkout(&rev("sesion-1")),
            Err(Error::UnknownBranch { similar, .. }) if similar == ["session-1"]
        ));
        // Nothing close: the revision's own error.
        assert!(matches!(
            t.checkout(&rev("nope")),
            Err(Error::UnknownRevision { .. })
        ));
    }

    #[test]
    fn switch_new_on_a_branch_without_commits_takes_the_name_its_first_commit_creates() {
        let t = Tract::in_memory().unwrap();
        t.switch_new(&name("session-1")).unwrap();
        let head = t.head().unwrap();
        assert_eq!((head.branch(), head.commit), (Some("session-1"), None));
        assert!(t.branches().unwrap().is_empty());
        let first = t.user("hi").unwrap();
        assert_eq!(t.branches().unwrap()[0].name, "session-1");
        assert!(matches!(
            t.switch_new(&name("session-1")),
            Err(Error::BranchExists { .. })
        ));
        // At a commit, the new branch is made there.
        t.switch_new(&name("session-2")).unwrap();
        let head = t.head().unwrap();
        assert_eq!(
            (head.branch(), head.commit),
            (Some("session-2"), Some(first.id))
        );
    }
}
