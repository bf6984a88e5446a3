//! Walking the commit graph through every parent (merges have two): ancestors newest first,
//! the merge base of two commits, and the commits whose content was made from others' (what a
//! redaction has to follow).
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

/// The commits reachable from `a` and not from `b`, and those reachable from `b` and not from
/// `a`, each newest first. Walks both histories newest first until every commit still queued
/// is reachable from both: costs the commits newer than where they meet, not the whole
/// history.
pub(crate) fn only_in_each(
    snap: &Snapshot,
    a: Option<CommitId>,
    b: Option<CommitId>,
) -> Result<(Vec<CommitId>, Vec<CommitId>)> {
    const A: u8 = 1;
    const B: u8 = 2;
    let mut walk = Walk::default();
    // How many queued commits are not reachable from both sides (yet).
    let mut apart = 0usize;
    let push = |walk: &mut Walk, id: CommitId, sides: u8, apart: &mut usize| -> Result<()> {
        let before = walk.seen.get(&id).map(|(s, _)| *s);
        walk.push(snap, id, sides)?;
        let after = walk.seen.get(&id).map_or(sides, |(s, _)| *s);
        match before {
            None if after != A | B => *apart += 1,
            Some(s) if s != A | B && after == A | B => *apart -= 1,
            _ => {}
        }
        Ok(())
    };
    for (id, side) in [(a, A), (b, B)] {
        if let Some(id) = id {
            push(&mut walk, id, side, &mut apart)?;
        }
    }
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    while apart > 0 {
        let Some((id, commit, sides)) = walk.pop() else {
            break;
        };
        match sides {
            A => only_a.push(id),
            B => only_b.push(id),
            _ => {}
        }
        if sides != A | B {
            apart -= 1;
        }
        for p in &commit.parents {
            push(&mut walk, *p, sides, &mut apart)?;
        }
    }
    Ok((only_a, only_b))
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

/// The commits among `commits` whose content was made from content in `tainted` blobs, and
/// in turn from theirs: a compression whose sources carried one (in a version no newer than
/// the compression), a hook's summary edit of a version that carried one, a merge whose
/// summary was made of a branch that held one. Returned in timestamp order; a commit carrying
/// a tainted blob itself is not in it.
pub(crate) fn made_from(
    commits: &[(CommitId, &Commit)],
    tainted: &std::collections::HashSet<crate::id::BlobId>,
) -> Vec<CommitId> {
    use crate::object::{HOOK_SUMMARY_NOTE, Op};
    let mut order: Vec<&(CommitId, &Commit)> = commits.iter().collect();
    order.sort_by_key(|(id, c)| (c.timestamp_us, *id));
    let by_id: CommitMap<&Commit> = commits.iter().map(|(id, c)| (*id, *c)).collect();
    let mut edits: CommitMap<Vec<(CommitId, u64)>> = CommitMap::default();
    for (id, c) in commits {
        if let Op::Edit { target } = &c.op {
            edits
                .entry(*target)
                .or_default()
                .push((*id, c.timestamp_us));
        }
    }
    let mut made: CommitMap<()> = CommitMap::default();
    let holds = |id: &CommitId, made: &CommitMap<()>| {
        made.contains_key(id)
            || by_id
                .get(id)
                .is_some_and(|c| c.blob.is_some_and(|b| tainted.contains(&b)))
    };
    // A position as it was at `before`: itself, or any of its edits made by then.
    let version_holds = |p: &CommitId, before: u64, made: &CommitMap<()>| {
        holds(p, made)
            || edits
                .get(p)
                .is_some_and(|es| es.iter().any(|(e, at)| *at < before && holds(e, made)))
    };
    let mut out = Vec::new();
    // Oldest first: what a commit was made from is older than it.
    for (id, c) in order {
        if holds(id, &made) {
            continue;
        }
        let from = match &c.op {
            Op::Compress { sources, .. } => sources
                .iter()
                .any(|s| version_holds(s, c.timestamp_us, &made)),
            Op::Edit { target } => {
                c.message
                    .as_deref()
                    .is_some_and(|n| n.starts_with(HOOK_SUMMARY_NOTE))
                    && version_holds(target, c.timestamp_us, &made)
            }
            Op::Merge {
                base,
                summarizer: Some(_),
                ..
            } => {
                // The merged branch's commits since the base, along its first parents.
                let mut cursor = c.parents.get(1).copied();
                let mut found = false;
                while let Some(at) = cursor.filter(|a| a != base) {
                    if holds(&at, &made) {
                        found = true;
                        break;
                    }
                    cursor = by_id.get(&at).and_then(|c| c.parents.first().copied());
                }
                found
            }
            _ => false,
        };
        if from {
            made.insert(*id, ());
            out.push(*id);
        }
    }
    out
}

#[cfg(test)]
mod made_from_tests {
    use super::*;
    use crate::id::BlobId;
    use crate::object::{HOOK_SUMMARY_NOTE, Op};

    fn commit(parent: Option<CommitId>, op: Op, blob: u8, at: u64, note: Option<&str>) -> Commit {
        Commit {
            parents: parent.into_iter().collect(),
            op,
            blob: Some(BlobId::of(&[blob])),
            timestamp_us: at,
            message: note.map(str::to_string),
        }
    }

    #[test]
    fn summaries_of_redacted_content_and_summaries_of_those_are_found() {
        let id = |n: u8| CommitId::of(&[n, n]);
        let secret = commit(None, Op::Append, 1, 1, None);
        let other = commit(Some(id(1)), Op::Append, 2, 2, None);
        // A hook's summary of the secret, then a manual edit of the other message.
        let summary = commit(
            Some(id(2)),
            Op::Edit { target: id(1) },
            3,
            3,
            Some(&format!("{HOOK_SUMMARY_NOTE}extractive")),
        );
        let manual = commit(
            Some(id(3)),
            Op::Edit { target: id(2) },
            4,
            4,
            Some("fixed a typo"),
        );
        // A compression of the other message only, then of both.
        let compress = |sources: Vec<CommitId>, blob: u8, at: u8| {
            commit(
                Some(id(at - 1)),
                Op::Compress {
                    sources,
                    preserved: Vec::new(),
                    summarizer: "test".into(),
                    params: Default::default(),
                },
                blob,
                at as u64,
                None,
            )
        };
        let clean = compress(vec![id(2)], 5, 5);
        let tainted_one = compress(vec![id(1), id(2)], 6, 6);
        // A compression of that summary (a summary of a summary).
        let again = compress(vec![id(6)], 7, 7);
        let all = [secret, other, summary, manual, clean, tainted_one, again];
        let commits: Vec<(CommitId, &Commit)> = all
            .iter()
            .enumerate()
            .map(|(i, c)| (id(i as u8 + 1), c))
            .collect();
        let tainted: std::collections::HashSet<BlobId> = [BlobId::of(&[1])].into();
        assert_eq!(made_from(&commits, &tainted), [id(3), id(6), id(7)]);
        // Nothing redacted, nothing derived.
        assert!(made_from(&commits, &Default::default()).is_empty());
    }
}
