//! The write transaction: objects collected and handed to the backend per table at commit (a
//! good copy replacing one that no longer verifies), refs moved with every move logged,
//! settings, branch counts, and the store-wide work of redaction and gc.

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::id::{BlobId, ChunkId, CommitId};
use crate::object::{Commit, Message};
use crate::refs::{Head, HeadRef, ReflogEntry};
use crate::stats::BranchStats;
use crate::storage::backend::{Key, ObjectTable, Row, WriteTx};
use crate::storage::codec;
use crate::storage::store::meta::{
    META_COLLECTIONS, META_HEAD, META_REDACTIONS, decode_small, encode_small, read_counter,
    read_head, read_head_ref, redacted_key, setting_key, tips, unknown_branch,
};
use crate::storage::store::verify::{
    BlobCopy, Tombstone, chunk_from, damaged, decoding, read_blob, read_commit, tombstone_in,
    tombstone_of, verified_commit, walk_first_parents, walk_in_one_query,
};
use std::collections::HashMap;

/// What expiring old reflog entries does ([`Writer::reflog_expiry`]).
#[derive(Default)]
pub(crate) struct Expiry {
    /// The entries that go: ref name and number.
    pub expired: Vec<(String, u64)>,
    /// The commits the entries kept name.
    pub kept: Vec<CommitId>,
    /// The records left for refs deleted: each ref's deletion, naming no commit.
    pub markers: Vec<(String, ReflogEntry)>,
}

/// A blob written in this transaction, not yet handed to the backend.
struct PendingBlob {
    record: Vec<u8>,
    chunks: Vec<(ChunkId, Vec<u8>)>,
}

/// The objects a write transaction has made, handed to the backend in one call per table when
/// it commits (or before it scans): reads in the transaction find them here first.
#[derive(Default)]
struct Pending {
    blobs: HashMap<BlobId, PendingBlob>,
    blob_order: Vec<BlobId>,
    commits: HashMap<CommitId, (Vec<u8>, Option<CommitId>)>,
    commit_order: Vec<CommitId>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.blob_order.is_empty() && self.commit_order.is_empty()
    }
}

/// Writing objects in a write transaction.
pub(crate) struct Objects<'w> {
    pending: &'w mut Pending,
}

impl Objects<'_> {
    /// Stores a blob (once: identical payloads share it) and returns its id.
    pub(crate) fn put_blob(&mut self, bytes: &[u8], tokens: u32) -> Result<BlobId> {
        let id = BlobId::of(bytes);
        if let std::collections::hash_map::Entry::Vacant(slot) = self.pending.blobs.entry(id) {
            let enc = codec::encode(bytes, Some(tokens));
            slot.insert(PendingBlob {
                record: enc.record,
                chunks: enc.chunks,
            });
            self.pending.blob_order.push(id);
        }
        Ok(id)
    }

    /// Stores a blob received from another store under `id`: its payload (hashed again here,
    /// and refused unless it hashes to `id`) or its tombstone.
    pub(crate) fn put_copy(&mut self, id: &BlobId, copy: &BlobCopy) -> Result<()> {
        match copy {
            BlobCopy::Payload { bytes, tokens } => {
                if self.put_blob(bytes, *tokens)? != *id {
                    return Err(damaged(
                        "blob",
                        id.to_hex(),
                        "its bytes do not hash to its id",
                    ));
                }
            }
            BlobCopy::Tombstone { record } => {
                tombstone_of(record)
                    .ok_or_else(|| damaged("blob", id.to_hex(), "not a tombstone"))?
                    .map_err(|e| decoding("blob", id.to_hex(), e))?;
                if let std::collections::hash_map::Entry::Vacant(slot) =
                    self.pending.blobs.entry(*id)
                {
                    slot.insert(PendingBlob {
                        record: record.clone(),
                        chunks: Vec::new(),
                    });
                    self.pending.blob_order.push(*id);
                }
            }
        }
        Ok(())
    }

    /// Stores a commit and returns its id.
    pub(crate) fn put_commit(&mut self, commit: &Commit) -> Result<CommitId> {
        let bytes = commit.encode()?;
        let id = CommitId::of(&bytes);
        if let std::collections::hash_map::Entry::Vacant(slot) = self.pending.commits.entry(id) {
            let enc = codec::encode(&bytes, None);
            slot.insert((enc.record, commit.parent()));
            self.pending.commit_order.push(id);
        }
        Ok(id)
    }
}

/// The one write transaction; dropped without [`Writer::commit`], it changes nothing.
pub(crate) struct Writer {
    tx: Box<dyn WriteTx>,
    clock: Clock,
    pending: Pending,
}

impl Writer {
    /// A write transaction on `tx`, its timestamps from `clock`.
    pub(crate) fn new(tx: Box<dyn WriteTx>, clock: Clock) -> Self {
        Writer {
            tx,
            clock,
            pending: Pending::default(),
        }
    }

    /// The handle's clock.
    pub(crate) fn clock(&self) -> Clock {
        self.clock
    }

    /// `HEAD` as this transaction sees it (the latest committed state).
    pub(crate) fn head(&self) -> Result<Head> {
        read_head(&*self.tx)
    }

    /// A commit by id, including ones written in this transaction.
    pub(crate) fn commit_object(&self, id: &CommitId) -> Result<Commit> {
        if let Some((record, _)) = self.pending.commits.get(id) {
            return verified_commit(id, record);
        }
        read_commit(self.tx.object(ObjectTable::Commits, id.as_bytes())?, id)
    }

    /// Whether the store holds this commit, this transaction's included.
    pub(crate) fn has_commit(&self, id: &CommitId) -> Result<bool> {
        Ok(self.pending.commits.contains_key(id)
            || self
                .tx
                .object(ObjectTable::Commits, id.as_bytes())?
                .is_some())
    }

    /// A blob by id, including ones written in this transaction.
    pub(crate) fn blob(&self, id: &BlobId) -> Result<(Message, u32)> {
        if let Some(p) = self.pending.blobs.get(id) {
            let chunks: HashMap<&ChunkId, &Vec<u8>> =
                p.chunks.iter().map(|(c, r)| (c, r)).collect();
            return read_blob(Some(p.record.clone()), id, true, |c| {
                chunks
                    .get(c)
                    .map(|r| (*r).clone())
                    .ok_or_else(|| Error::corrupt(format!("its chunk {} is missing", c.short())))
            });
        }
        let record = self.tx.object(ObjectTable::Blobs, id.as_bytes())?;
        read_blob(record, id, true, |c| chunk_from(&*self.tx, c))
    }

    /// The commits from `head` back along first parents to `stop` (excluded), oldest first,
    /// and whether `stop` was reached: those this transaction wrote from memory, the rest in
    /// one query on a backend across a network.
    pub(crate) fn first_parents(
        &self,
        head: CommitId,
        stop: Option<CommitId>,
    ) -> Result<(Vec<(CommitId, Commit)>, bool)> {
        let mut chain = Vec::new();
        let mut cursor = Some(head);
        while let Some(id) = cursor.filter(|c| Some(*c) != stop) {
            let Some((record, _)) = self.pending.commits.get(&id) else {
                break;
            };
            let commit = verified_commit(&id, record)?;
            cursor = commit.parent();
            chain.push((id, commit));
        }
        if let Some(from) = cursor {
            cursor = walk_in_one_query(&*self.tx, from, stop, &mut chain, |_, _| ())?;
        }
        walk_first_parents(chain, cursor, stop, |id| self.commit_object(id))
    }

    /// Many commits, in order, this transaction's from memory and the rest read at once; `None`
    /// when the backend reads them as quickly one by one.
    pub(crate) fn commits(&self, ids: &[CommitId]) -> Option<Result<Vec<Commit>>> {
        if !self.tx.batched() {
            return None;
        }
        let read = || {
            let missing: Vec<Key> = ids
                .iter()
                .filter(|id| !self.pending.commits.contains_key(id))
                .map(|id| *id.as_bytes())
                .collect();
            let mut records = self.tx.objects(ObjectTable::Commits, &missing)?.into_iter();
            ids.iter()
                .map(|id| match self.pending.commits.get(id) {
                    Some((record, _)) => verified_commit(id, record),
                    None => read_commit(records.next().flatten(), id),
                })
                .collect()
        };
        Some(read())
    }

    /// Many blobs' messages and payload token counts, in order, this transaction's from memory
    /// and the rest read at once; `None` when the backend reads them as quickly one by one.
    pub(crate) fn blobs(&self, ids: &[BlobId]) -> Option<Result<Vec<(Message, u32)>>> {
        if !self.tx.batched() {
            return None;
        }
        let read = || {
            let missing: Vec<Key> = ids
                .iter()
                .filter(|id| !self.pending.blobs.contains_key(id))
                .map(|id| *id.as_bytes())
                .collect();
            let mut records = self.tx.objects(ObjectTable::Blobs, &missing)?.into_iter();
            ids.iter()
                .map(|id| match self.pending.blobs.contains_key(id) {
                    true => self.blob(id),
                    false => read_blob(records.next().flatten(), id, true, |c| {
                        chunk_from(&*self.tx, c)
                    }),
                })
                .collect()
        };
        Some(read())
    }

    /// The tombstone of blob `id` as this transaction sees it, `None` for one not redacted.
    pub(crate) fn tombstone(&self, id: &BlobId) -> Result<Option<Tombstone>> {
        tombstone_in(&*self.tx, id)
    }

    /// Writing objects (blobs and commits) in this transaction.
    pub(crate) fn objects(&mut self) -> Result<Objects<'_>> {
        Ok(Objects {
            pending: &mut self.pending,
        })
    }

    /// Hands the objects written so far to the backend: each one that is not stored yet, or
    /// whose stored copy no longer verifies (this good copy replaces it, chunks included).
    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let tx = &mut *self.tx;
        // Blobs, with their chunks.
        let keys: Vec<Key> = pending.blob_order.iter().map(|id| *id.as_bytes()).collect();
        let stored = tx.objects(ObjectTable::Blobs, &keys)?;
        let mut blob_rows = Vec::new();
        let mut chunk_rows: Vec<(ChunkId, &[u8], bool)> = Vec::new();
        for (id, stored) in pending.blob_order.iter().zip(stored) {
            let healing = match stored {
                None => false,
                Some(rec) => {
                    if read_blob(Some(rec), id, true, |c| chunk_from(&*tx, c)).is_ok() {
                        continue;
                    }
                    true
                }
            };
            let Some(p) = pending.blobs.get(id) else {
                continue;
            };
            blob_rows.push(Row {
                key: *id.as_bytes(),
                record: &p.record,
                parent: None,
            });
            chunk_rows.extend(p.chunks.iter().map(|(c, r)| (*c, r.as_slice(), healing)));
        }
        if !chunk_rows.is_empty() {
            // A payload of repeated text repeats its chunks: each is written once.
            let mut once = std::collections::HashSet::new();
            chunk_rows.retain(|(c, _, _)| once.insert(*c));
            let keys: Vec<Key> = chunk_rows.iter().map(|(c, _, _)| *c.as_bytes()).collect();
            let stored = tx.objects(ObjectTable::Chunks, &keys)?;
            let rows: Vec<Row<'_>> = chunk_rows
                .iter()
                .zip(stored)
                .filter(|((_, _, healing), stored)| *healing || stored.is_none())
                .map(|((c, r, _), _)| Row {
                    key: *c.as_bytes(),
                    record: r,
                    parent: None,
                })
                .collect();
            tx.put_objects(ObjectTable::Chunks, &rows)?;
        }
        tx.put_objects(ObjectTable::Blobs, &blob_rows)?;
        // Commits.
        let keys: Vec<Key> = pending
            .commit_order
            .iter()
            .map(|id| *id.as_bytes())
            .collect();
        let stored = tx.objects(ObjectTable::Commits, &keys)?;
        let mut rows = Vec::new();
        for (id, stored) in pending.commit_order.iter().zip(stored) {
            if stored.is_some_and(|rec| verified_commit(id, &rec).is_ok()) {
                continue;
            }
            if let Some((record, parent)) = pending.commits.get(id) {
                rows.push(Row {
                    key: *id.as_bytes(),
                    record,
                    parent: parent.map(|p| *p.as_bytes()),
                });
            }
        }
        tx.put_objects(ObjectTable::Commits, &rows)
    }

    /// A metadata value (`None` when there is none).
    pub(crate) fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.tx.meta(key)
    }

    /// Many metadata values, in order (one query on a database).
    pub(crate) fn metas(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        self.tx.metas(keys)
    }

    /// The metadata keys starting with `prefix`, in order.
    pub(crate) fn meta_keys(&self, prefix: &str) -> Result<Vec<String>> {
        self.tx.meta_keys(prefix)
    }

    /// Stores a metadata value, or removes it with `None`.
    pub(crate) fn set_meta(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
        self.tx.set_meta(key, value)
    }

    /// A setting's value (`None` when it is not set).
    pub(crate) fn setting(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.tx.meta(&setting_key(name))
    }

    /// Stores a setting, or removes it with `None`.
    pub(crate) fn set_setting(&mut self, name: &str, value: Option<&[u8]>) -> Result<()> {
        self.tx.set_meta(&setting_key(name), value)
    }

    /// A branch's tip.
    pub(crate) fn branch(&self, name: &str) -> Result<Option<CommitId>> {
        Ok(self.tx.tip(name)?.map(CommitId::from_bytes))
    }

    /// A branch's tip; a branch with no commits is [`Error::UnknownBranch`], naming the
    /// existing branches closest to it.
    pub(crate) fn require_branch(&self, name: &str) -> Result<CommitId> {
        match self.branch(name)? {
            Some(tip) => Ok(tip),
            None => Err(unknown_branch(&*self.tx, name)?),
        }
    }

    /// Points a branch at `new` (or removes it with `None`), logging the move.
    pub(crate) fn set_branch(
        &mut self,
        name: &str,
        new: Option<CommitId>,
        reason: &str,
    ) -> Result<()> {
        let old = self.branch(name)?;
        self.tx
            .set_tip(name, old.map(|c| *c.as_bytes()), new.map(|c| *c.as_bytes()))?;
        self.log_move(name, old, new, reason)
    }

    /// Points `HEAD` at a branch or a commit, logging the move under `HEAD`.
    pub(crate) fn set_head(&mut self, target: &HeadRef, reason: &str) -> Result<()> {
        let old = self.head()?.commit;
        let new = match target {
            HeadRef::Branch(b) => self.branch(b)?,
            HeadRef::Detached(id) => Some(*id),
        };
        self.tx
            .set_meta(META_HEAD, Some(encode_small(target)?.as_slice()))?;
        self.log_move("HEAD", old, new, reason)
    }

    /// Moves whatever `HEAD` names (its branch, or itself when detached) to `new`.
    pub(crate) fn advance_head(&mut self, head: &Head, new: CommitId, reason: &str) -> Result<()> {
        match &head.target {
            HeadRef::Branch(b) => self.set_branch(b, Some(new), reason),
            HeadRef::Detached(_) => self.set_head(&HeadRef::Detached(new), reason),
        }
    }

    /// The counts kept for a branch (at the tip they name, which may be stale).
    pub(crate) fn branch_stats(&self, name: &str) -> Result<Option<BranchStats>> {
        self.tx
            .stats(name)?
            .map(|r| crate::storage::store::meta::decode_stats(&r))
            .transpose()
    }

    /// Counts one more collection by `gc` that removed objects.
    pub(crate) fn count_collection(&mut self) -> Result<()> {
        self.flush()?;
        let n = read_counter(&*self.tx, META_COLLECTIONS)? + 1;
        self.tx
            .set_meta(META_COLLECTIONS, Some(n.to_le_bytes().as_slice()))
    }

    /// How many redactions the store has seen, this transaction's included.
    pub(crate) fn redactions(&self) -> Result<u64> {
        read_counter(&*self.tx, META_REDACTIONS)
    }

    /// Stores a branch's counts, or removes them with `None`.
    pub(crate) fn set_branch_stats(
        &mut self,
        name: &str,
        stats: Option<&BranchStats>,
    ) -> Result<()> {
        match stats {
            Some(s) => self.tx.set_stats(name, Some(encode_small(s)?.as_slice())),
            None => self.tx.set_stats(name, None),
        }
    }

    /// The last move of a ref (`None` if it never moved).
    pub(crate) fn last_move(&self, name: &str) -> Result<Option<ReflogEntry>> {
        self.tx
            .reflog(name, Some(1))?
            .first()
            .map(|e| decode_small(e))
            .transpose()
    }

    fn log_move(
        &mut self,
        name: &str,
        old: Option<CommitId>,
        new: Option<CommitId>,
        reason: &str,
    ) -> Result<()> {
        let entry = ReflogEntry {
            old,
            new,
            timestamp_us: self.clock.now_us(),
            reason: reason.to_string(),
        };
        self.tx.push_reflog(name, &encode_small(&entry)?)
    }

    /// Replaces blob `id`'s record with `tombstone` (whose placeholder has `tokens` payload
    /// tokens) and removes the chunks no other blob is made of; counts the redaction so
    /// cached views are built again, and drops the kept per-branch counts. Returns the chunks
    /// removed.
    pub(crate) fn redact_blob(
        &mut self,
        id: &BlobId,
        tombstone: &Tombstone,
        tokens: u32,
    ) -> Result<Vec<ChunkId>> {
        self.flush()?;
        let rec = self
            .tx
            .object(ObjectTable::Blobs, id.as_bytes())?
            .ok_or_else(|| damaged("blob", id.to_hex(), "its record is missing"))?;
        let chunks = codec::chunk_ids(&rec, true).map_err(|e| decoding("blob", id.to_hex(), e))?;
        let record = codec::tombstone(tokens, &encode_small(tombstone)?);
        self.tx.put_objects(
            ObjectTable::Blobs,
            &[Row {
                key: *id.as_bytes(),
                record: &record,
                parent: None,
            }],
        )?;
        let mut removed = Vec::new();
        if !chunks.is_empty() {
            // A chunk is shared only by blobs with the same megabyte of content: rare, so one
            // pass over the blobs decides.
            let mut shared = std::collections::HashSet::new();
            self.tx.scan(
                ObjectTable::Blobs,
                &[0; 32],
                &[0xff; 32],
                None,
                &mut |k, v| {
                    if k != *id.as_bytes() {
                        shared.extend(codec::chunk_ids(v, true).unwrap_or_default());
                    }
                    Ok(())
                },
            )?;
            removed.extend(chunks.into_iter().filter(|c| !shared.contains(c)));
            let keys: Vec<Key> = removed.iter().map(|c| *c.as_bytes()).collect();
            self.tx.remove_objects(ObjectTable::Chunks, &keys)?;
        }
        // Kept counts may include the blob's tokens: every branch is counted again from its
        // view when next listed or written.
        self.tx.clear_stats()?;
        let n = read_counter(&*self.tx, META_REDACTIONS)? + 1;
        self.tx
            .set_meta(META_REDACTIONS, Some(n.to_le_bytes().as_slice()))?;
        self.tx
            .set_meta(&redacted_key(n), Some(id.as_bytes().as_slice()))?;
        Ok(removed)
    }

    /// Every key of an object table, with what `keep` makes of its record: for `gc`, which
    /// reads the whole table inside its write transaction.
    pub(crate) fn scan_objects<T>(
        &mut self,
        table: ObjectTable,
        mut keep: impl FnMut([u8; 32], &[u8]) -> Result<T>,
    ) -> Result<Vec<([u8; 32], T)>> {
        self.flush()?;
        let mut out = Vec::new();
        self.tx
            .scan(table, &[0; 32], &[0xff; 32], None, &mut |k, v| {
                out.push((k, keep(k, v)?));
                Ok(())
            })?;
        Ok(out)
    }

    /// Removes these objects from an object table.
    pub(crate) fn remove_objects(&mut self, table: ObjectTable, ids: &[[u8; 32]]) -> Result<()> {
        self.flush()?;
        self.tx.remove_objects(table, ids)
    }

    /// Every branch and its tip.
    pub(crate) fn branches(&self) -> Result<Vec<(String, CommitId)>> {
        tips(&*self.tx)
    }

    /// What `HEAD` names, as stored.
    pub(crate) fn head_ref(&self) -> Result<HeadRef> {
        read_head_ref(&*self.tx)
    }

    /// What expiring the reflog entries at or before `cutoff_us` does, changing nothing: the
    /// entries that go, the commits the entries kept still name, and the records to leave in
    /// place of the last entry of a ref that no longer exists (its deletion, naming no commit
    /// now) so that the ref stays known as deleted: `tract capture` does not bring a deleted
    /// session back once its commits are collected. An entry naming no commit never expires.
    pub(crate) fn reflog_expiry(&self, cutoff_us: u64) -> Result<Expiry> {
        let mut out = Expiry::default();
        let all = self.tx.reflog_all()?;
        for (i, (name, n, raw)) in all.iter().enumerate() {
            let entry: ReflogEntry = decode_small(raw)?;
            if entry.old.is_none() && entry.new.is_none() {
                continue;
            }
            if entry.timestamp_us > cutoff_us {
                out.kept.extend(entry.old.into_iter().chain(entry.new));
                continue;
            }
            out.expired.push((name.clone(), *n));
            let last = all.get(i + 1).is_none_or(|(next, _, _)| next != name);
            if last && name != "HEAD" && self.branch(name)?.is_none() {
                out.markers.push((
                    name.clone(),
                    ReflogEntry {
                        old: None,
                        new: None,
                        ..entry
                    },
                ));
            }
        }
        Ok(out)
    }

    /// Expires the reflog entries at or before `cutoff_us` ([`Writer::reflog_expiry`]).
    /// Returns how many went and the commits the entries kept name (`gc`'s roots).
    pub(crate) fn expire_reflog(&mut self, cutoff_us: u64) -> Result<(u64, Vec<CommitId>)> {
        let expiry = self.reflog_expiry(cutoff_us)?;
        self.tx.remove_reflog(&expiry.expired)?;
        for (name, marker) in &expiry.markers {
            self.tx.push_reflog(name, &encode_small(marker)?)?;
        }
        Ok((expiry.expired.len() as u64, expiry.kept))
    }

    /// The names of the branches that have kept counts.
    pub(crate) fn counted_branches(&self) -> Result<Vec<String>> {
        Ok(self.tx.all_stats()?.into_iter().map(|(n, _)| n).collect())
    }

    /// Makes everything durable before returning.
    pub(crate) fn commit(mut self) -> Result<()> {
        self.flush()?;
        self.tx.commit()
    }
}
