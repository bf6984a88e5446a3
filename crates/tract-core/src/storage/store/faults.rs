//! Storage that misbehaves on demand, for tests (the `testing` feature; hidden, not a public
//! API): a store's backend failing at a chosen call, damage done through the backend
//! interface, and a process stopped at a step of making a store file.
//!
//! In a build with the feature, every transaction a store begins goes through its [`Faults`]:
//! each call of the backend interface is counted by kind ([`Call`]), and a test arms a fault
//! for the n-th next call of a kind, which then returns an error ([`Fault`]) instead of
//! reaching the backend. A commit that fails drops the backend's transaction uncommitted, as a
//! commit that fails does. [`Damage`] is a raw write transaction on the backend: records put,
//! changed or removed, and refs, counts and settings set, without any of tract's checks, as a
//! damaged disk, a stray `UPDATE` or a buggy writer would leave them. Both work on every
//! backend: a file, memory and PostgreSQL.

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::id::{BlobId, ChunkId, CommitId};
use crate::object::{Commit, Message};
use crate::refs::ReflogEntry;
use crate::stats::BranchStats;
use crate::storage::backend::{
    Key, ObjectTable, RawReflogEntry, ReadTx, Records, Row, ScanFn, WriteTx,
};
use crate::storage::codec;
pub use crate::storage::store::create::CreationStep;
use crate::storage::store::meta::{encode_small, setting_key};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A call of the backend interface: beginning a transaction, or one of a transaction's
/// methods (reads count in read and write transactions alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    /// Beginning a read transaction (a snapshot).
    BeginRead,
    /// Beginning a write transaction.
    BeginWrite,
    /// Reading one object record.
    Object,
    /// Reading many object records at once.
    Objects,
    /// Asking which objects are stored.
    HasObjects,
    /// Reading a branch's chain of commit records in one call.
    FirstParentRecords,
    /// Scanning an object table.
    Scan,
    /// Reading a metadata value (`HEAD`, settings, counters).
    Meta,
    /// Reading a branch's tip.
    Tip,
    /// Reading every branch's tip.
    Tips,
    /// Reading a ref's moves.
    Reflog,
    /// Reading every reflog entry.
    ReflogAll,
    /// Reading a branch's counts.
    Stats,
    /// Reading every branch's counts.
    AllStats,
    /// Storing object records.
    PutObjects,
    /// Removing object records.
    RemoveObjects,
    /// Setting a metadata value.
    SetMeta,
    /// Moving a branch.
    SetTip,
    /// Logging a ref's move.
    PushReflog,
    /// Removing reflog entries.
    RemoveReflog,
    /// Storing a branch's counts.
    SetStats,
    /// Removing every branch's counts.
    ClearStats,
    /// Committing a write transaction.
    Commit,
}

impl Call {
    /// Every kind of call, in declaration order.
    pub const ALL: [Call; 23] = [
        Call::BeginRead,
        Call::BeginWrite,
        Call::Object,
        Call::Objects,
        Call::HasObjects,
        Call::FirstParentRecords,
        Call::Scan,
        Call::Meta,
        Call::Tip,
        Call::Tips,
        Call::Reflog,
        Call::ReflogAll,
        Call::Stats,
        Call::AllStats,
        Call::PutObjects,
        Call::RemoveObjects,
        Call::SetMeta,
        Call::SetTip,
        Call::PushReflog,
        Call::RemoveReflog,
        Call::SetStats,
        Call::ClearStats,
        Call::Commit,
    ];

    /// The calls of a write transaction that change the store (and its commit).
    pub const WRITES: [Call; 9] = [
        Call::PutObjects,
        Call::RemoveObjects,
        Call::SetMeta,
        Call::SetTip,
        Call::PushReflog,
        Call::RemoveReflog,
        Call::SetStats,
        Call::ClearStats,
        Call::Commit,
    ];
}

/// The error an armed call returns instead of reaching the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// An operating-system error on the store ([`Error::Io`]), as a full or failing disk gives.
    Io,
    /// An error of the storage engine ([`Error::Storage`]).
    Storage,
    /// A database that went away or refused the statement ([`Error::Database`]).
    Database,
}

/// What an injected fault's error says: which call failed, and its number.
#[derive(Debug, Clone, thiserror::Error)]
#[error("fault injected at call {n} of {call:?}")]
pub struct Injected {
    /// The kind of call.
    pub call: Call,
    /// Its number among the calls of its kind since the store opened, from 1.
    pub n: u64,
}

impl Fault {
    fn error(self, location: &str, injected: Injected) -> Error {
        match self {
            Fault::Io => Error::io(PathBuf::from(location), std::io::Error::other(injected)),
            Fault::Storage => Error::Storage {
                source: Arc::new(redb::Error::Backend(Box::new(injected))),
            },
            Fault::Database => Error::Database {
                store: location.to_string(),
                reason: injected.to_string(),
            },
        }
    }
}

/// The faults of one open store: every call of its transactions counted by kind, and the
/// faults armed for calls to come. Shared by every handle on the store in this process.
#[derive(Debug)]
pub struct Faults {
    location: String,
    calls: [AtomicU64; Call::ALL.len()],
    /// How many faults are armed and not hit yet: calls look at `armed` only when some are.
    pending: AtomicUsize,
    armed: Mutex<Vec<(Call, u64, Fault)>>,
}

impl Faults {
    /// The faults of the store at `location` (named in the errors), none armed.
    pub(crate) fn new(location: Option<String>) -> Arc<Self> {
        Arc::new(Faults {
            location: location.unwrap_or_else(|| "memory".into()),
            calls: std::array::from_fn(|_| AtomicU64::new(0)),
            pending: AtomicUsize::new(0),
            armed: Mutex::default(),
        })
    }

    fn armed(&self) -> std::sync::MutexGuard<'_, Vec<(Call, u64, Fault)>> {
        self.armed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes the `nth` next call of `call` (1: the very next one), by any handle or thread on
    /// this store, fail with `fault`.
    pub fn fail(&self, call: Call, nth: u64, fault: Fault) {
        let at = self.calls(call) + nth.max(1);
        self.armed().push((call, at, fault));
        self.pending.fetch_add(1, Ordering::SeqCst);
    }

    /// How many calls of `call` this store's transactions have made since it was opened.
    pub fn calls(&self, call: Call) -> u64 {
        self.calls[call as usize].load(Ordering::SeqCst)
    }

    /// How many armed faults have not been hit yet.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    /// Disarms every fault not hit yet.
    pub fn clear(&self) {
        let mut armed = self.armed();
        self.pending.fetch_sub(armed.len(), Ordering::SeqCst);
        armed.clear();
    }

    /// Counts a call of `call`; its error if a fault is armed for it.
    pub(crate) fn enter(&self, call: Call) -> Result<()> {
        let n = self.calls[call as usize].fetch_add(1, Ordering::SeqCst) + 1;
        if self.pending.load(Ordering::SeqCst) == 0 {
            return Ok(());
        }
        let mut armed = self.armed();
        let Some(i) = armed.iter().position(|&(c, at, _)| c == call && at == n) else {
            return Ok(());
        };
        let (_, _, fault) = armed.swap_remove(i);
        self.pending.fetch_sub(1, Ordering::SeqCst);
        Err(fault.error(&self.location, Injected { call, n }))
    }

    /// A backend's read transaction, its calls counted and failing where armed.
    pub(crate) fn read(self: &Arc<Self>, tx: Box<dyn ReadTx + Sync>) -> Box<dyn ReadTx + Sync> {
        Box::new(Faulty {
            tx,
            faults: Arc::clone(self),
        })
    }

    /// A backend's write transaction, its calls counted and failing where armed.
    pub(crate) fn write(self: &Arc<Self>, tx: Box<dyn WriteTx>) -> Box<dyn WriteTx> {
        Box::new(Faulty {
            tx,
            faults: Arc::clone(self),
        })
    }
}

/// A transaction whose every call is counted, and fails where a fault is armed.
struct Faulty<T: ?Sized> {
    tx: Box<T>,
    faults: Arc<Faults>,
}

/// The read calls, forwarded (the default methods too, so a backend's own ways are kept).
macro_rules! forward_reads {
    () => {
        fn object(&self, table: ObjectTable, key: &Key) -> Result<Option<Vec<u8>>> {
            self.faults.enter(Call::Object)?;
            self.tx.object(table, key)
        }

        fn objects(&self, table: ObjectTable, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>> {
            self.faults.enter(Call::Objects)?;
            self.tx.objects(table, keys)
        }

        fn has_objects(&self, table: ObjectTable, keys: &[Key]) -> Result<Vec<bool>> {
            self.faults.enter(Call::HasObjects)?;
            self.tx.has_objects(table, keys)
        }

        fn batched(&self) -> bool {
            self.tx.batched()
        }

        fn first_parent_records(&self, head: &Key, stop: Option<&Key>) -> Result<Option<Records>> {
            self.faults.enter(Call::FirstParentRecords)?;
            self.tx.first_parent_records(head, stop)
        }

        fn first_parent_records_upto(&self, head: &Key, limit: usize) -> Result<Option<Records>> {
            self.faults.enter(Call::FirstParentRecords)?;
            self.tx.first_parent_records_upto(head, limit)
        }

        fn scan(
            &self,
            table: ObjectTable,
            low: &Key,
            high: &Key,
            limit: Option<usize>,
            f: &mut ScanFn<'_>,
        ) -> Result<()> {
            self.faults.enter(Call::Scan)?;
            self.tx.scan(table, low, high, limit, f)
        }

        fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
            self.faults.enter(Call::Meta)?;
            self.tx.meta(key)
        }

        fn read_ahead(
            &self,
            tip: &str,
            keys: &[String],
            named: Option<(&str, &str)>,
        ) -> Result<()> {
            self.faults.enter(Call::Meta)?;
            self.tx.read_ahead(tip, keys, named)
        }

        fn metas(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
            self.faults.enter(Call::Meta)?;
            self.tx.metas(keys)
        }

        fn want_metas(&self, keys: &[String]) {
            self.tx.want_metas(keys)
        }

        fn meta_keys(&self, prefix: &str) -> Result<Vec<String>> {
            self.faults.enter(Call::Meta)?;
            self.tx.meta_keys(prefix)
        }

        fn tip(&self, name: &str) -> Result<Option<Key>> {
            self.faults.enter(Call::Tip)?;
            self.tx.tip(name)
        }

        fn tips(&self) -> Result<Vec<(String, Key)>> {
            self.faults.enter(Call::Tips)?;
            self.tx.tips()
        }

        fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<Vec<u8>>> {
            self.faults.enter(Call::Reflog)?;
            self.tx.reflog(name, limit)
        }

        fn reflog_all(&self) -> Result<Vec<RawReflogEntry>> {
            self.faults.enter(Call::ReflogAll)?;
            self.tx.reflog_all()
        }

        fn stats(&self, name: &str) -> Result<Option<Vec<u8>>> {
            self.faults.enter(Call::Stats)?;
            self.tx.stats(name)
        }

        fn all_stats(&self) -> Result<Vec<(String, Vec<u8>)>> {
            self.faults.enter(Call::AllStats)?;
            self.tx.all_stats()
        }
    };
}

impl ReadTx for Faulty<dyn ReadTx + Sync> {
    forward_reads!();

    fn wrapped(&self) -> Option<&(dyn ReadTx + Sync)> {
        Some(&*self.tx)
    }
}

impl ReadTx for Faulty<dyn WriteTx> {
    forward_reads!();
}

impl WriteTx for Faulty<dyn WriteTx> {
    fn put_objects(&mut self, table: ObjectTable, rows: &[Row<'_>]) -> Result<()> {
        self.faults.enter(Call::PutObjects)?;
        self.tx.put_objects(table, rows)
    }

    fn remove_objects(&mut self, table: ObjectTable, keys: &[Key]) -> Result<()> {
        self.faults.enter(Call::RemoveObjects)?;
        self.tx.remove_objects(table, keys)
    }

    fn set_meta(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
        self.faults.enter(Call::SetMeta)?;
        self.tx.set_meta(key, value)
    }

    fn set_tip(&mut self, name: &str, old: Option<Key>, new: Option<Key>) -> Result<()> {
        self.faults.enter(Call::SetTip)?;
        self.tx.set_tip(name, old, new)
    }

    fn push_reflog(&mut self, name: &str, entry: &[u8]) -> Result<()> {
        self.faults.enter(Call::PushReflog)?;
        self.tx.push_reflog(name, entry)
    }

    fn remove_reflog(&mut self, entries: &[(String, u64)]) -> Result<()> {
        self.faults.enter(Call::RemoveReflog)?;
        self.tx.remove_reflog(entries)
    }

    fn set_stats(&mut self, name: &str, stats: Option<&[u8]>) -> Result<()> {
        self.faults.enter(Call::SetStats)?;
        self.tx.set_stats(name, stats)
    }

    fn clear_stats(&mut self) -> Result<()> {
        self.faults.enter(Call::ClearStats)?;
        self.tx.clear_stats()
    }

    fn commit(self: Box<Self>) -> Result<()> {
        // A failed commit drops the backend's transaction: nothing of it is kept.
        self.faults.enter(Call::Commit)?;
        self.tx.commit()
    }
}

/// A stored object, by table and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Object {
    /// A commit record.
    Commit(CommitId),
    /// A blob record (a message, or a redacted blob's tombstone).
    Blob(BlobId),
    /// A chunk of a large blob.
    Chunk(ChunkId),
}

impl Object {
    fn place(self) -> (ObjectTable, Key) {
        match self {
            Object::Commit(id) => (ObjectTable::Commits, *id.as_bytes()),
            Object::Blob(id) => (ObjectTable::Blobs, *id.as_bytes()),
            Object::Chunk(id) => (ObjectTable::Chunks, *id.as_bytes()),
        }
    }
}

/// A raw write transaction on a store's backend, for damaging it: nothing written here is
/// checked, counted or verified. Dropped without [`Damage::commit`], it changes nothing.
pub struct Damage {
    tx: Box<dyn WriteTx>,
    clock: Clock,
}

impl Damage {
    /// A raw write transaction on `tx`, its reflog entries stamped by `clock`.
    pub(crate) fn new(tx: Box<dyn WriteTx>, clock: Clock) -> Self {
        Damage { tx, clock }
    }

    /// Stores `message` as a blob with `tokens` payload tokens, as the store would (chunks
    /// included), reached by nothing; returns its id.
    pub fn put_blob(&mut self, message: &Message, tokens: u32) -> Result<BlobId> {
        let bytes = message.encode()?;
        let id = BlobId::of(&bytes);
        let enc = codec::encode(&bytes, Some(tokens));
        let chunks: Vec<Row<'_>> = enc
            .chunks
            .iter()
            .map(|(c, record)| Row {
                key: *c.as_bytes(),
                record,
                parent: None,
            })
            .collect();
        self.tx.put_objects(ObjectTable::Chunks, &chunks)?;
        self.put(Object::Blob(id), &enc.record, None)?;
        Ok(id)
    }

    /// Stores `commit` as the store would, whatever its parents and blob; returns its id.
    pub fn put_commit(&mut self, commit: &Commit) -> Result<CommitId> {
        let bytes = commit.encode()?;
        let id = CommitId::of(&bytes);
        let record = codec::encode(&bytes, None).record;
        self.put(Object::Commit(id), &record, commit.parent())?;
        Ok(id)
    }

    fn put(&mut self, object: Object, record: &[u8], parent: Option<CommitId>) -> Result<()> {
        let (table, key) = object.place();
        let row = Row {
            key,
            record,
            parent: parent.map(|p| *p.as_bytes()),
        };
        self.tx.put_objects(table, &[row])
    }

    /// An object's record as stored (`None` if it is not).
    pub fn record(&self, object: Object) -> Result<Option<Vec<u8>>> {
        let (table, key) = object.place();
        self.tx.object(table, &key)
    }

    /// Replaces an object's record with `record`, as it is (a commit's parent, which a backend
    /// may keep beside the record, taken from `record` when it decodes).
    pub fn put_record(&mut self, object: Object, record: &[u8]) -> Result<()> {
        self.put(object, record, parent_in(object, record))
    }

    /// Changes one bit of an object's stored record: the byte `from_end` bytes before its end
    /// (0: the last one), which is payload in every record; a commit keeps the parent stored
    /// beside it. An error if the object is not stored.
    pub fn flip_byte(&mut self, object: Object, from_end: usize) -> Result<()> {
        let mut record = self
            .record(object)?
            .ok_or_else(|| Error::invalid_input(format!("{object:?} is not stored")))?;
        let parent = parent_in(object, &record);
        let at = record
            .len()
            .checked_sub(from_end + 1)
            .ok_or_else(|| Error::invalid_input(format!("{object:?}'s record is shorter")))?;
        record[at] ^= 1;
        self.put(object, &record, parent)
    }

    /// Removes an object's record.
    pub fn remove(&mut self, object: Object) -> Result<()> {
        let (table, key) = object.place();
        self.tx.remove_objects(table, &[key])
    }

    /// The chunks a blob's stored record is made of (none for a small blob).
    pub fn chunks_of(&self, blob: &BlobId) -> Result<Vec<ChunkId>> {
        let record = self
            .record(Object::Blob(*blob))?
            .ok_or_else(|| Error::invalid_input(format!("blob {} is not stored", blob.short())))?;
        codec::chunk_ids(&record, true)
    }

    /// A branch's tip.
    pub fn tip(&self, name: &str) -> Result<Option<CommitId>> {
        Ok(self.tx.tip(name)?.map(CommitId::from_bytes))
    }

    /// Points branch `name` at `tip` (or removes it with `None`), whether the store holds the
    /// commit or not, and logs the move with `reason` as the store logs one.
    pub fn set_branch(&mut self, name: &str, tip: Option<CommitId>, reason: &str) -> Result<()> {
        let old = self.tip(name)?;
        self.tx
            .set_tip(name, old.map(|c| *c.as_bytes()), tip.map(|c| *c.as_bytes()))?;
        let entry = ReflogEntry {
            old,
            new: tip,
            timestamp_us: self.clock.now_us(),
            reason: reason.to_string(),
        };
        self.tx.push_reflog(name, &encode_small(&entry)?)
    }

    /// The counts kept for a branch.
    pub fn branch_stats(&self, name: &str) -> Result<Option<BranchStats>> {
        self.tx
            .stats(name)?
            .map(|r| crate::storage::store::meta::decode_stats(&r))
            .transpose()
    }

    /// Stores counts for a branch, whatever its view holds (or removes them with `None`).
    pub fn set_branch_stats(&mut self, name: &str, stats: Option<&BranchStats>) -> Result<()> {
        match stats {
            Some(s) => self.tx.set_stats(name, Some(&encode_small(s)?)),
            None => self.tx.set_stats(name, None),
        }
    }

    /// A raw metadata value (a view checkpoint's manifest or chunk, for one).
    pub fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.tx.meta(key)
    }

    /// The metadata keys starting with `prefix`, in order.
    pub fn meta_keys(&self, prefix: &str) -> Result<Vec<String>> {
        self.tx.meta_keys(prefix)
    }

    /// Sets (or, with `None`, removes) a raw metadata value: the format version, the store's
    /// id, whatever an older or damaged store would hold.
    pub fn set_meta(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
        self.tx.set_meta(key, value)
    }

    /// Stores `value` as setting `name`, as it is (or removes it with `None`).
    pub fn set_setting(&mut self, name: &str, value: Option<&[u8]>) -> Result<()> {
        self.tx.set_meta(&setting_key(name), value)
    }

    /// Makes the damage durable.
    pub fn commit(self) -> Result<()> {
        self.tx.commit()
    }
}

/// A commit record's first parent, when `object` is a commit and its record decodes.
fn parent_in(object: Object, record: &[u8]) -> Option<CommitId> {
    let Object::Commit(_) = object else {
        return None;
    };
    let bytes = codec::decode(record, false, |_| {
        Err(Error::corrupt("commit records are never chunked"))
    })
    .ok()?;
    Commit::decode(&bytes).ok()?.parent()
}

/// Makes a store file's journal segments full at `bytes` in this process (4 MiB otherwise),
/// so a test folds often with little data. Each test runs in its own process.
pub fn set_journal_segment_limit(bytes: u64) {
    crate::storage::journal::set_segment_limit(bytes);
}

/// Makes the next fdatasync of a journal segment under `dir` (a store's journal directory) in
/// this process fail as a disk error would (EIO), once.
pub fn fail_next_journal_sync(dir: &std::path::Path) {
    crate::storage::journal::fail_next_sync(dir);
}

/// Makes this process kill itself with SIGKILL, as `kill -9` would, when it reaches `step` of
/// making a store file: what a crash there leaves on the disk, for a test that runs this in a
/// process of its own.
pub fn kill_at_creation_step(step: CreationStep) {
    crate::storage::store::create::stop_at(step, None);
}

/// Makes this process wait `pause` when it reaches `step` of making a store file, once: another
/// process making the same store meanwhile finds this one under way.
pub fn pause_at_creation_step(step: CreationStep, pause: std::time::Duration) {
    crate::storage::store::create::stop_at(step, Some(pause));
}
