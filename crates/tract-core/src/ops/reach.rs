//! What the store's objects reach: every commit, blob and chunk read once in a write
//! transaction (their sizes, and what each commit links to), and the walks over them that
//! `gc` and retention share.

use crate::error::{Error, Result};
use crate::id::{BlobId, ChunkId, CommitId, IdHasher};
use crate::object::Commit;
use crate::storage::backend::ObjectTable;
use crate::storage::codec;
use crate::storage::store::verify;
use crate::storage::store::writer::Writer;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

/// A set of object ids.
pub(crate) type IdSet = HashSet<[u8; 32], BuildHasherDefault<IdHasher>>;
/// A map keyed by object id.
pub(crate) type IdMap<T> = HashMap<[u8; 32], T, BuildHasherDefault<IdHasher>>;

/// A blob's record as the scan found it.
pub(crate) struct BlobRecord {
    /// The chunks it is made of (none for a small blob or a tombstone).
    pub chunks: Vec<ChunkId>,
    /// Its record's bytes.
    pub len: usize,
    /// Whether it is a tombstone (its content redacted, or removed by retention).
    pub tombstone: bool,
}

/// Every object of the store, read in one write transaction.
pub(crate) struct Objects {
    /// Every commit, verified against its id, with its record's bytes.
    pub commits: IdMap<(Commit, usize)>,
    /// Every blob record.
    pub blobs: IdMap<BlobRecord>,
    /// Every chunk's record bytes.
    pub chunks: IdMap<usize>,
}

impl Objects {
    /// Reads every object. A commit that does not verify is an error (`fsck` first): a damaged
    /// commit could hide what it reaches.
    pub(crate) fn scan(w: &mut Writer) -> Result<Objects> {
        let commits = w.scan_objects(ObjectTable::Commits, |id, record| {
            verify::verified_commit(&CommitId::from_bytes(id), record).map(|c| (c, record.len()))
        })?;
        let blobs = w.scan_objects(ObjectTable::Blobs, |_, record| {
            Ok(BlobRecord {
                chunks: codec::chunk_ids(record, true)?,
                len: record.len(),
                tombstone: codec::tombstone_body(record).is_some(),
            })
        })?;
        let chunks = w.scan_objects(ObjectTable::Chunks, |_, record| Ok(record.len()))?;
        Ok(Objects {
            commits: commits.into_iter().collect(),
            blobs: blobs.into_iter().collect(),
            chunks: chunks.into_iter().collect(),
        })
    }

    /// The commits `roots` reach through parents and links (an edit's target, a compression's
    /// sources, a merge's base), the roots included. A commit reached but missing is an error.
    pub(crate) fn reach(&self, roots: impl IntoIterator<Item = CommitId>) -> Result<IdSet> {
        let mut reached = IdSet::default();
        self.reach_into(&mut reached, roots, |_| true)?;
        Ok(reached)
    }

    /// Adds to `reached` the commits `roots` reach, not walking past a commit `walk` refuses
    /// (nor adding it). Returns the commits added, in the order reached.
    pub(crate) fn reach_into(
        &self,
        reached: &mut IdSet,
        roots: impl IntoIterator<Item = CommitId>,
        walk: impl Fn(&[u8; 32]) -> bool,
    ) -> Result<Vec<[u8; 32]>> {
        let mut added = Vec::new();
        let mut stack: Vec<CommitId> = roots.into_iter().collect();
        while let Some(id) = stack.pop() {
            let key = *id.as_bytes();
            if !walk(&key) || !reached.insert(key) {
                continue;
            }
            let Some((c, _)) = self.commits.get(&key) else {
                return Err(Error::MissingCommit { commit: id });
            };
            stack.extend(c.links());
            added.push(key);
        }
        Ok(added)
    }

    /// The blobs the commits of `commits` carry.
    pub(crate) fn blobs_of<'a>(&self, commits: impl IntoIterator<Item = &'a [u8; 32]>) -> IdSet {
        commits
            .into_iter()
            .filter_map(|id| self.commits.get(id)?.0.blob)
            .map(|b| *b.as_bytes())
            .collect()
    }

    /// The chunks the blobs of `blobs` are made of.
    pub(crate) fn chunks_of<'a>(&self, blobs: impl IntoIterator<Item = &'a [u8; 32]>) -> IdSet {
        blobs
            .into_iter()
            .filter_map(|b| self.blobs.get(b))
            .flat_map(|r| r.chunks.iter().map(|c| *c.as_bytes()))
            .collect()
    }

    /// The record bytes of blob `b` (its chunks apart).
    pub(crate) fn blob_bytes(&self, b: &BlobId) -> u64 {
        self.blobs.get(b.as_bytes()).map_or(0, |r| r.len as u64)
    }

    /// The record bytes of the chunks of `chunks`.
    pub(crate) fn chunk_bytes<'a>(&self, chunks: impl IntoIterator<Item = &'a [u8; 32]>) -> u64 {
        chunks
            .into_iter()
            .filter_map(|c| self.chunks.get(c))
            .map(|n| *n as u64)
            .sum()
    }
}
