//! Garbage collection: removing the objects nothing reaches any more. What a branch, `HEAD` or
//! a reflog entry younger than the grace period reaches stays (reflog entries older than it
//! are expired first, as git's `reflog expire` does); everything runs in one write
//! transaction, so a writer in another process waits for it and nothing it adds can be taken.
//! View checkpoints are derived data: all but the one each branch names go with it.

use crate::error::{Error, Result};
use crate::id::{CommitId, IdHasher};
use crate::object::Commit;
use crate::refs::HeadRef;
use crate::storage::backend::ObjectTable;
use crate::storage::codec;
use crate::storage::store::Store;
use crate::storage::store::verify;
use crate::view::checkpoint;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::time::Duration;

/// How long reflog entries keep what they name when nothing else does: 14 days.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(14 * 24 * 3600);

/// What `gc` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcOutcome {
    /// Commits removed.
    pub commits: u64,
    /// Blobs removed.
    pub blobs: u64,
    /// Chunks removed.
    pub chunks: u64,
    /// Bytes of records removed.
    pub bytes: u64,
    /// Reflog entries expired (older than the grace period).
    pub reflog_entries: u64,
    /// View checkpoints removed: every one but the newest of each branch (only that one is
    /// read), and those of commits removed.
    pub checkpoints: u64,
    /// Checkpoint chunks removed, no kept checkpoint using them.
    pub checkpoint_chunks: u64,
}

type IdSet = HashSet<[u8; 32], BuildHasherDefault<IdHasher>>;

/// Removes the objects nothing reaches: not a branch, not `HEAD`, not a reflog entry younger
/// than `grace` (older entries are expired; [`DEFAULT_GRACE`] is 14 days, zero prunes now). One
/// write transaction: another process's writes wait, and nothing they add is removed. Refuses
/// (changing nothing) on a store where an object it must read does not verify (`fsck` first):
/// a damaged commit could hide what it reaches.
pub fn gc(store: &Store, grace: Duration) -> Result<GcOutcome> {
    let mut w = store.write()?;
    let now = w.clock().now_us();
    let cutoff = now.saturating_sub(u64::try_from(grace.as_micros()).unwrap_or(u64::MAX));
    let mut out = GcOutcome::default();
    let (expired, mut roots) = w.expire_reflog(cutoff)?;
    out.reflog_entries = expired;
    roots.extend(w.branches()?.into_iter().map(|(_, tip)| tip));
    if let HeadRef::Detached(id) = w.head_ref()? {
        roots.push(id);
    }

    let commits = w.scan_objects(ObjectTable::Commits, |id, record| {
        verify::verified_commit(&CommitId::from_bytes(id), record).map(|c| (c, record.len()))
    })?;
    let by_id: std::collections::HashMap<[u8; 32], &Commit, BuildHasherDefault<IdHasher>> =
        commits.iter().map(|(id, (c, _))| (*id, c)).collect();
    let mut reached = IdSet::default();
    let mut blobs_reached = IdSet::default();
    let mut stack = roots;
    while let Some(id) = stack.pop() {
        if !reached.insert(*id.as_bytes()) {
            continue;
        }
        let Some(c) = by_id.get(id.as_bytes()) else {
            return Err(Error::MissingCommit { commit: id });
        };
        stack.extend(c.links());
        if let Some(b) = c.blob {
            blobs_reached.insert(*b.as_bytes());
        }
    }
    let blobs = w.scan_objects(ObjectTable::Blobs, |_, record| {
        Ok((codec::chunk_ids(record, true)?, record.len()))
    })?;
    let chunks_reached: IdSet = blobs
        .iter()
        .filter(|(id, _)| blobs_reached.contains(id))
        .flat_map(|(_, (chunks, _))| chunks.iter().map(|c| *c.as_bytes()))
        .collect();
    let chunks = w.scan_objects(ObjectTable::Chunks, |_, record| Ok(record.len()))?;

    let dead_commits: Vec<([u8; 32], usize)> = commits
        .iter()
        .filter(|(id, _)| !reached.contains(id))
        .map(|(id, (_, n))| (*id, *n))
        .collect();
    let dead_blobs: Vec<([u8; 32], usize)> = blobs
        .iter()
        .filter(|(id, _)| !blobs_reached.contains(id))
        .map(|(id, (_, n))| (*id, *n))
        .collect();
    let dead_chunks: Vec<([u8; 32], usize)> = chunks
        .into_iter()
        .filter(|(id, _)| !chunks_reached.contains(id))
        .collect();
    drop(by_id);
    for (table, dead, count) in [
        (ObjectTable::Commits, &dead_commits, &mut out.commits),
        (ObjectTable::Blobs, &dead_blobs, &mut out.blobs),
        (ObjectTable::Chunks, &dead_chunks, &mut out.chunks),
    ] {
        let ids: Vec<[u8; 32]> = dead.iter().map(|(id, _)| *id).collect();
        w.remove_objects(table, &ids)?;
        *count = ids.len() as u64;
        out.bytes += dead.iter().map(|(_, n)| *n as u64).sum::<u64>();
    }
    let branches: HashSet<String> = w.branches()?.into_iter().map(|(n, _)| n).collect();
    let collected = checkpoint::collect(&mut w, &branches, |c| reached.contains(c.as_bytes()))?;
    out.checkpoints = collected.checkpoints;
    out.checkpoint_chunks = collected.chunks;
    // Counts kept for branches that no longer exist go too.
    for name in w.counted_branches()? {
        if !branches.contains(&name) {
            w.set_branch_stats(&name, None)?;
        }
    }
    if !dead_commits.is_empty() {
        w.count_collection()?;
    }
    let removed: Vec<CommitId> = dead_commits
        .iter()
        .map(|(id, _)| CommitId::from_bytes(*id))
        .collect();
    w.commit()?;
    // Removed text leaves the search index before gc returns.
    if !removed.is_empty() {
        crate::index::keeper::after_removal(store, Some(&removed))?;
    }
    Ok(out)
}
