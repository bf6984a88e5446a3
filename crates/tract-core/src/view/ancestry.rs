//! Walking the commit graph through every parent (merges have two): ancestors newest first,
//! and the merge base of two commits.
//!
//! Both walks order commits by timestamp, newest first. Every commit tract writes is newer
//! than each of its parents (the write path makes it so even when the clock steps back), so
//! that order visits a commit only after every descendant the walk started from: the first
//! commit reached from both sides is their newest common ancestor, as in git's
//! `paint_down_to_common`.

use crate::error::Result;
use crate::id::{CommitId, CommitMap};
use crate::object::Commit;
use crate::storage::store::snapshot::Snapshot;
use std::collections::BinaryHeap;

/// Commits reachable from `heads` through every parent, newest first, each once; at most
/// `limit` of them.
pub(crate) fn ancestors(
    snap: &Snapshot,
    heads: &[CommitId],
    limit: Option<usize>,
) -> Result<Vec<(CommitId, Commit)>> {
    let mut walk = Walk::default();
    for h in heads {
        walk.push(snap, *h, 0)?;
    }
    let mut out = Vec::new();
    while let Some((id, commit, _)) = walk.pop() {
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        for p in &commit.parents {
            walk.push(snap, *p, 0)?;
        }
        out.push((id, commit));
    }
    Ok(out)
}

/// The newest commit that is an ancestor of both `a` and `b` (either of them included), or
/// `None` when their histories share nothing. Costs the commits newer than the base on both
/// sides, not the whole history.
pub(crate) fn merge_base(snap: &Snapshot, a: CommitId, b: CommitId) -> Result<Option<CommitId>> {
    merge_base_since(snap, a, b, 0)
}

/// [`merge_base`], looking only at commits made at or after `since_us`: `None` when the base is
/// older. Costs the commits of both sides since then, so asking it of many branches about a
/// recent stretch of history does not walk their whole histories.
pub(crate) fn merge_base_since(
    snap: &Snapshot,
    a: CommitId,
    b: CommitId,
    since_us: u64,
) -> Result<Option<CommitId>> {
    const A: u8 = 1;
    const B: u8 = 2;
    let mut walk = Walk::default();
    walk.push(snap, a, A)?;
    walk.push(snap, b, B)?;
    while let Some((id, commit, sides)) = walk.pop() {
        // Newest first: everything still queued is older too.
        if commit.timestamp_us < since_us {
            return Ok(None);
        }
        if sides == A | B {
            return Ok(Some(id));
        }
        for p in &commit.parents {
            walk.push(snap, *p, sides)?;
        }
    }
    Ok(None)
}

/// Commits to visit, newest first, with the sides (bit flags) each was reached from.
#[derive(Default)]
struct Walk {
    queue: BinaryHeap<(u64, CommitId)>,
    seen: CommitMap<(u8, Option<Commit>)>,
}

impl Walk {
    /// Queues `id` reached from `sides`, or adds those sides to it if it is queued already
    /// (it cannot have been visited: its descendants are newer).
    fn push(&mut self, snap: &Snapshot, id: CommitId, sides: u8) -> Result<()> {
        if let Some((s, _)) = self.seen.get_mut(&id) {
            *s |= sides;
            return Ok(());
        }
        let commit = snap.commit(&id)?;
        self.queue.push((commit.timestamp_us, id));
        self.seen.insert(id, (sides, Some(commit)));
        Ok(())
    }

    /// The newest queued commit, with its sides.
    fn pop(&mut self) -> Option<(CommitId, Commit, u8)> {
        let (_, id) = self.queue.pop()?;
        let (sides, commit) = self.seen.get_mut(&id)?;
        Some((id, commit.take()?, *sides))
    }
}
