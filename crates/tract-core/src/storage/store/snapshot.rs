//! A read snapshot: one consistent state of everything committed, by any process, read
//! through tract's model (every object verified against its id).

use crate::error::Result;
use crate::id::{BlobId, ChunkId, CommitId, HexPrefix};
use crate::object::{Commit, Message};
use crate::refs::{Head, HeadRef, ReflogEntry};
use crate::stats::BranchStats;
use crate::storage::backend::{Key, ObjectTable, ReadTx};
use crate::storage::codec;
use crate::storage::store::meta::{
    META_COLLECTIONS, META_ENCODING, META_REDACTIONS, decode_small, read_counter, read_head,
    read_head_ref, redacted_key, setting_key, tips, unknown_branch,
};
use crate::storage::store::verify::{
    BlobCopy, Tombstone, chunk_from, damaged, decoding, read_blob, read_commit, tombstone_in,
    tombstone_of, verified_blob_bytes, verified_commit, walk_first_parents, walk_in_one_query,
};
use std::collections::HashMap;
use std::sync::Mutex;

/// From this many blobs read together, their records are checked and decoded on several
/// threads: a few microseconds each, against tens for a thread.
const DECODE_PARALLEL_MIN: usize = 256;

/// A read snapshot: one consistent state of everything committed.
pub struct Snapshot {
    tx: Box<dyn ReadTx + Sync>,
    /// Commits read in bulk along a branch (backends across a network), so the walks that
    /// follow find them without a round trip each.
    walked: Mutex<HashMap<CommitId, Commit>>,
}

impl Snapshot {
    /// A snapshot over a backend's read transaction.
    pub(crate) fn new(tx: Box<dyn ReadTx + Sync>) -> Self {
        Snapshot {
            tx,
            walked: Mutex::default(),
        }
    }

    /// The backend's transaction this snapshot reads (a backend's own parts, such as its
    /// search index, read in it: [`crate::storage::backend::own`]). Unused in a build without
    /// a backend that has such parts (the database's).
    #[allow(dead_code)]
    pub(crate) fn tx(&self) -> &(dyn ReadTx + Sync) {
        &*self.tx
    }

    /// The backend's transaction, taken back (a backend's upkeep that wrote beside the store
    /// in it commits it as its own type; as [`Snapshot::tx`]).
    #[allow(dead_code)]
    pub(crate) fn into_tx(self) -> Box<dyn ReadTx + Sync> {
        self.tx
    }

    fn walked(&self) -> std::sync::MutexGuard<'_, HashMap<CommitId, Commit>> {
        self.walked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `HEAD` and the commit it names.
    pub fn head(&self) -> Result<Head> {
        read_head(&*self.tx)
    }

    /// A commit by id.
    pub fn commit(&self, id: &CommitId) -> Result<Commit> {
        if self.tx.batched()
            && let Some(c) = self.walked().get(id)
        {
            return Ok(c.clone());
        }
        read_commit(self.tx.object(ObjectTable::Commits, id.as_bytes())?, id)
    }

    /// The commits from `head` back along first parents to `stop` (excluded), oldest first,
    /// and whether `stop` was reached. A backend across a network reads them in one query.
    pub fn first_parents(
        &self,
        head: CommitId,
        stop: Option<CommitId>,
    ) -> Result<(Vec<(CommitId, Commit)>, bool)> {
        let mut chain = Vec::new();
        let cursor = {
            // Released before the walk below, whose reads look in it.
            let mut walked = self.walked();
            walk_in_one_query(&*self.tx, head, stop, &mut chain, |id, commit| {
                walked.insert(*id, commit.clone());
            })?
        };
        walk_first_parents(chain, cursor, stop, |id| self.commit(id))
    }

    /// Reads ahead, for the walks that follow, up to `limit` commits from `head` back along
    /// first parents in one query, when the store is across a network and `head` was not
    /// read yet; the commits are checked as [`Snapshot::commit`] then reads them.
    pub(crate) fn read_ahead(&self, head: CommitId, limit: usize) -> Result<()> {
        if !self.tx.batched() || limit < 2 || self.walked().contains_key(&head) {
            return Ok(());
        }
        let Some(records) = self.tx.first_parent_records_upto(head.as_bytes(), limit)? else {
            return Ok(());
        };
        let mut walked = self.walked();
        for (key, record) in records {
            let id = CommitId::from_bytes(key);
            walked.insert(id, verified_commit(&id, &record)?);
        }
        Ok(())
    }

    /// Whether the store holds this commit.
    pub fn has_commit(&self, id: &CommitId) -> Result<bool> {
        Ok(self
            .tx
            .object(ObjectTable::Commits, id.as_bytes())?
            .is_some())
    }

    /// Which of these commits the store holds, in order (one query on a database).
    pub(crate) fn has_commits(&self, ids: &[CommitId]) -> Result<Vec<bool>> {
        let keys: Vec<Key> = ids.iter().map(|id| *id.as_bytes()).collect();
        self.tx.has_objects(ObjectTable::Commits, &keys)
    }

    /// Which of these blobs the store holds, in order (one query on a database).
    pub(crate) fn has_blobs(&self, ids: &[BlobId]) -> Result<Vec<bool>> {
        let keys: Vec<Key> = ids.iter().map(|id| *id.as_bytes()).collect();
        self.tx.has_objects(ObjectTable::Blobs, &keys)
    }

    /// Blobs as another store receives them, verified against their ids: each payload with
    /// its token count, or a redacted blob's tombstone record.
    pub(crate) fn blob_copies(&self, ids: &[BlobId]) -> Result<Vec<BlobCopy>> {
        let keys: Vec<Key> = ids.iter().map(|id| *id.as_bytes()).collect();
        let records = self.tx.objects(ObjectTable::Blobs, &keys)?;
        ids.iter()
            .zip(records)
            .map(|(id, record)| {
                let record =
                    record.ok_or_else(|| damaged("blob", id.to_hex(), "its record is missing"))?;
                let tokens =
                    codec::tokens(&record).map_err(|e| decoding("blob", id.to_hex(), e))?;
                if let Some(t) = tombstone_of(&record) {
                    t.map_err(|e| decoding("blob", id.to_hex(), e))?;
                    return Ok(BlobCopy::Tombstone { record });
                }
                let bytes = verified_blob_bytes(id, &record, |c| chunk_from(&*self.tx, c))?;
                Ok(BlobCopy::Payload { bytes, tokens })
            })
            .collect()
    }

    /// A blob's message and payload token count.
    pub fn blob(&self, id: &BlobId) -> Result<(Message, u32)> {
        let record = self.tx.object(ObjectTable::Blobs, id.as_bytes())?;
        read_blob(record, id, true, |c| chunk_from(&*self.tx, c))
    }

    /// Whether many blobs are better read with [`Snapshot::blobs`] than one by one from
    /// several threads.
    pub(crate) fn batched(&self) -> bool {
        self.tx.batched()
    }

    /// Many blobs' messages and payload token counts, in order, their records read at once.
    pub(crate) fn blobs(&self, ids: &[BlobId]) -> Result<Vec<(Message, u32)>> {
        let keys: Vec<Key> = ids.iter().map(|id| *id.as_bytes()).collect();
        let records = self.tx.objects(ObjectTable::Blobs, &keys)?;
        let read = ids.iter().zip(records).collect();
        crate::parallel::map(read, DECODE_PARALLEL_MIN, |(id, record)| {
            read_blob(record, id, true, |c| chunk_from(&*self.tx, c))
        })
    }

    /// Many commits, in order, their records read at once (those a first-parent walk of this
    /// snapshot read already are not read again).
    pub(crate) fn commits(&self, ids: &[CommitId]) -> Result<Vec<Commit>> {
        let walked = self.walked();
        let missing: Vec<Key> = ids
            .iter()
            .filter(|id| !walked.contains_key(id))
            .map(|id| *id.as_bytes())
            .collect();
        let mut records = self.tx.objects(ObjectTable::Commits, &missing)?.into_iter();
        ids.iter()
            .map(|id| match walked.get(id) {
                Some(c) => Ok(c.clone()),
                None => read_commit(records.next().flatten(), id),
            })
            .collect()
    }

    /// A blob's message without re-hashing it: only for `fsck`'s replays, which run after its
    /// scan verified every blob record of this same snapshot.
    pub(crate) fn blob_verified_already(&self, id: &BlobId) -> Result<(Message, u32)> {
        let record = self.tx.object(ObjectTable::Blobs, id.as_bytes())?;
        read_blob(record, id, false, |c| chunk_from(&*self.tx, c))
    }

    /// The tip of a branch, `None` if the branch has no commits or does not exist.
    pub fn branch(&self, name: &str) -> Result<Option<CommitId>> {
        Ok(self.tx.tip(name)?.map(CommitId::from_bytes))
    }

    /// The tip of branch `name`; a branch with no commits is [`crate::Error::UnknownBranch`], naming
    /// the existing branches closest to it.
    pub fn require_branch(&self, name: &str) -> Result<CommitId> {
        match self.branch(name)? {
            Some(tip) => Ok(tip),
            None => Err(unknown_branch(&*self.tx, name)?),
        }
    }

    /// Every branch and its tip, by name.
    pub fn branches(&self) -> Result<Vec<(String, CommitId)>> {
        tips(&*self.tx)
    }

    /// The encoding token counts in this store were made with.
    pub fn encoding(&self) -> Result<String> {
        Ok(self
            .tx
            .meta(META_ENCODING)?
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .unwrap_or_else(|| crate::tokens::ENCODING.to_string()))
    }

    /// A metadata value (`None` when there is none).
    pub(crate) fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.tx.meta(key)
    }

    /// The metadata keys that start with `prefix`.
    pub(crate) fn meta_keys(&self, prefix: &str) -> Result<Vec<String>> {
        self.tx.meta_keys(prefix)
    }

    /// Reads ahead, in one query on a database, branch `tip`'s tip, the metadata `keys` and
    /// the value `named` names (see [`ReadTx::read_ahead`]); later reads of them are answered
    /// from memory.
    pub(crate) fn read_ahead_refs(
        &self,
        tip: &str,
        keys: &[String],
        named: Option<(&str, &str)>,
    ) -> Result<()> {
        self.tx.read_ahead(tip, keys, named)
    }

    /// Asks for the metadata `keys` with the next read (see [`ReadTx::want_metas`]).
    pub(crate) fn want_metas(&self, keys: &[String]) {
        self.tx.want_metas(keys)
    }

    /// Many metadata values, in order (one query on a database).
    pub(crate) fn metas(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        self.tx.metas(keys)
    }

    /// A setting stored in the store (`None` when it was never set).
    pub fn setting(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.tx.meta(&setting_key(name))
    }

    /// The commits whose id starts with `prefix` (at most `limit`).
    pub fn commits_with_prefix(&self, prefix: &HexPrefix, limit: usize) -> Result<Vec<CommitId>> {
        let (low, high) = prefix.range();
        let mut out = Vec::new();
        self.tx.scan(
            ObjectTable::Commits,
            &low,
            &high,
            Some(limit),
            &mut |k, _| {
                out.push(CommitId::from_bytes(k));
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// Every record of one object table whose key starts with a byte in `first` (so callers
    /// can split a scan across threads), in key order: `f(id, record)`. For `fsck`.
    pub(crate) fn scan(
        &self,
        table: ObjectTable,
        first: std::ops::RangeInclusive<u8>,
        mut f: impl FnMut([u8; 32], &[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut low = [0u8; 32];
        low[0] = *first.start();
        let mut high = [0xffu8; 32];
        high[0] = *first.end();
        self.tx.scan(table, &low, &high, None, &mut f)
    }

    /// A chunk's record (a missing one is a corrupt store).
    pub(crate) fn chunk_record(&self, id: &ChunkId) -> Result<Vec<u8>> {
        chunk_from(&*self.tx, id)
    }

    /// How many redactions the store has seen.
    pub(crate) fn redactions(&self) -> Result<u64> {
        read_counter(&*self.tx, META_REDACTIONS)
    }

    /// The blob the `n`-th redaction removed (1 is the first), where this build's redaction
    /// recorded it.
    pub(crate) fn redacted_blob(&self, n: u64) -> Result<Option<BlobId>> {
        Ok(self
            .tx
            .meta(&redacted_key(n))?
            .and_then(|v| <[u8; 32]>::try_from(v.as_slice()).ok())
            .map(BlobId::from_bytes))
    }

    /// How many times `gc` removed objects.
    pub(crate) fn collections(&self) -> Result<u64> {
        read_counter(&*self.tx, META_COLLECTIONS)
    }

    /// A redacted blob's tombstone; `None` for a blob that is not redacted.
    pub fn tombstone(&self, id: &BlobId) -> Result<Option<Tombstone>> {
        tombstone_in(&*self.tx, id)
    }

    /// What `HEAD` names, as stored (not resolved).
    pub(crate) fn head_ref(&self) -> Result<HeadRef> {
        read_head_ref(&*self.tx)
    }

    /// Every reflog entry of every ref, by ref name then oldest first; an entry that does not
    /// decode is an error in its place.
    pub(crate) fn reflog_all(&self) -> Result<Vec<(String, Result<ReflogEntry>)>> {
        Ok(self
            .tx
            .reflog_all()?
            .into_iter()
            .map(|(name, _, entry)| (name, decode_small(&entry)))
            .collect())
    }

    /// Every row of branch counts; a row that does not decode is an error in its place.
    pub(crate) fn all_branch_stats(&self) -> Result<Vec<(String, Result<BranchStats>)>> {
        Ok(self
            .tx
            .all_stats()?
            .into_iter()
            .map(|(name, row)| (name, crate::storage::store::meta::decode_stats(&row)))
            .collect())
    }

    /// The counts kept for a branch (at the tip they name, which may be stale).
    pub fn branch_stats(&self, name: &str) -> Result<Option<BranchStats>> {
        self.tx
            .stats(name)?
            .map(|r| crate::storage::store::meta::decode_stats(&r))
            .transpose()
    }

    /// The moves of a ref (a branch name or `HEAD`), newest first.
    pub fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<ReflogEntry>> {
        self.tx
            .reflog(name, limit)?
            .iter()
            .map(|e| decode_small(e))
            .collect()
    }
}
