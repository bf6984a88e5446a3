//! The storage interface: what a backend must keep, in raw bytes, for the store to
//! build tract's model on it.
//!
//! A backend knows tables, keys and records, never commits or messages: objects are records
//! under their 32-byte ids (put, get, get-many, scans), refs are moved with the tip the writer
//! read (compare-and-swap) and every move is logged, settings and counters are small named
//! values, and each branch may keep a row of counts. Decoding, hashing and the checks that an
//! object's bytes hash to its id live above it, once for every backend.
//!
//! A read transaction sees one consistent state of everything committed; a write transaction
//! sees its own writes and is the only one writing the store while it runs (each backend
//! serializes writers its own way), and nothing of it is visible until `commit` returns, when
//! it is durable.

use crate::error::{Error, Result};
use std::any::Any;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A 32-byte object id as stored.
pub(crate) type Key = [u8; 32];

/// The tables of immutable objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ObjectTable {
    /// Commit records.
    Commits,
    /// Blob records (messages, or tombstones of redacted ones).
    Blobs,
    /// Chunks of large blobs.
    Chunks,
}

/// An object record to store: its id, its record and, for a commit, its first parent (which a
/// backend may keep beside the record to walk a branch in one query).
pub(crate) struct Row<'a> {
    /// The object's id.
    pub key: Key,
    /// The record, as `codec` encoded it.
    pub record: &'a [u8],
    /// A commit's first parent (kept by a backend that walks a branch in one query; the
    /// others leave it).
    #[allow(dead_code)]
    pub parent: Option<Key>,
}

/// What a write transaction may move, so a backend that lets writers run side by side knows
/// which of them must wait for each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteScope {
    /// Anything: store-wide work (gc, redaction, sync, settings) waits for every writer.
    Store,
    /// These refs (branch names, or `HEAD`); writers of other refs go on beside it.
    Refs(Vec<String>),
}

impl WriteScope {
    /// The scope of a group of writes: every ref any of them moves, or the store.
    pub(crate) fn union<'a>(scopes: impl IntoIterator<Item = &'a WriteScope>) -> WriteScope {
        let mut names = Vec::new();
        for s in scopes {
            match s {
                WriteScope::Store => return WriteScope::Store,
                WriteScope::Refs(n) => names.extend(n.iter().cloned()),
            }
        }
        names.sort_unstable();
        names.dedup();
        WriteScope::Refs(names)
    }
}

/// A record found by a scan: `f(id, record)`.
pub(crate) type ScanFn<'f> = dyn FnMut(Key, &[u8]) -> Result<()> + 'f;

/// Commit records along a branch: each id with its record.
pub(crate) type Records = Vec<(Key, Vec<u8>)>;

/// A reflog entry as stored: the ref's name, its sequence number and the encoded entry.
pub(crate) type RawReflogEntry = (String, u64, Vec<u8>);

/// Reads of one consistent state of the store.
///
/// A backend's own parts beside the store (a database's search index) read in the same
/// transaction by taking it back as the backend's own type ([`own`]).
pub(crate) trait ReadTx: Any + Send {
    /// One object's record.
    fn object(&self, table: ObjectTable, key: &Key) -> Result<Option<Vec<u8>>>;

    /// Many objects' records, in the order asked (a backend across a network answers in one
    /// round trip).
    fn objects(&self, table: ObjectTable, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.object(table, k)).collect()
    }

    /// Which of these objects are stored, in the order asked.
    fn has_objects(&self, table: ObjectTable, keys: &[Key]) -> Result<Vec<bool>> {
        keys.iter()
            .map(|k| Ok(self.object(table, k)?.is_some()))
            .collect()
    }

    /// Whether reading many objects at once is cheaper than reading them one by one from
    /// several threads (a backend across a network).
    fn batched(&self) -> bool {
        false
    }

    /// The commit records from `head` back along first parents, newest first, stopping before
    /// `stop`; `None` when this backend has no quicker way than reading them one by one.
    fn first_parent_records(&self, _head: &Key, _stop: Option<&Key>) -> Result<Option<Records>> {
        Ok(None)
    }

    /// The commit records from `head` back along first parents, newest first, at most `limit`
    /// of them; `None` when this backend has no quicker way than reading them one by one.
    fn first_parent_records_upto(&self, _head: &Key, _limit: usize) -> Result<Option<Records>> {
        Ok(None)
    }

    /// Every record of `table` with an id from `low` to `high` (inclusive), in id order, at
    /// most `limit` of them.
    fn scan(
        &self,
        table: ObjectTable,
        low: &Key,
        high: &Key,
        limit: Option<usize>,
        f: &mut ScanFn<'_>,
    ) -> Result<()>;

    /// A named value of the store's metadata (format, encoding, `HEAD`, settings, counters).
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>>;

    /// Reads ahead what a read is about to ask, in one round trip on a backend across a network:
    /// branch `tip`'s tip, the metadata values `keys`, and the metadata value whose key is
    /// `named.1` followed by the hex of the value of key `named.0` (a branch's checkpoint,
    /// named by its pointer). This transaction's later reads of them are answered from memory.
    /// Nothing by default: a local read is as quick as a memory one.
    fn read_ahead(&self, _tip: &str, _keys: &[String], _named: Option<(&str, &str)>) -> Result<()> {
        Ok(())
    }

    /// Asks for the metadata values `keys` together with this transaction's next statement, in
    /// the same round trip on a backend across a network; its later reads of them are answered
    /// from memory. Nothing by default: a local read is as quick as a memory one.
    fn want_metas(&self, _keys: &[String]) {}

    /// Many metadata values, in the order asked (a backend across a network answers in one
    /// round trip).
    fn metas(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.meta(k)).collect()
    }

    /// The backend's transaction this one wraps (a test's faults around it), if it wraps one.
    // Asked by [`own`]: unused in a build without a backend that has parts of its own.
    #[allow(dead_code)]
    fn wrapped(&self) -> Option<&(dyn ReadTx + Sync)> {
        None
    }

    /// The metadata keys that start with `prefix`, in order (what `gc` finds derived data by).
    fn meta_keys(&self, prefix: &str) -> Result<Vec<String>>;

    /// A branch's tip.
    fn tip(&self, name: &str) -> Result<Option<Key>>;

    /// Every branch and its tip, by name.
    fn tips(&self) -> Result<Vec<(String, Key)>>;

    /// A ref's moves, newest first, at most `limit`.
    fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<Vec<u8>>>;

    /// Every reflog entry, by ref name, then oldest first.
    fn reflog_all(&self) -> Result<Vec<RawReflogEntry>>;

    /// A branch's row of counts.
    fn stats(&self, name: &str) -> Result<Option<Vec<u8>>>;

    /// Every row of counts, by branch name.
    fn all_stats(&self) -> Result<Vec<(String, Vec<u8>)>>;
}

/// The one write transaction of a store. Dropped without `commit`, it changes nothing.
pub(crate) trait WriteTx: ReadTx + Sync {
    /// Stores records (replacing a record already stored under the same id).
    fn put_objects(&mut self, table: ObjectTable, rows: &[Row<'_>]) -> Result<()>;

    /// Removes records.
    fn remove_objects(&mut self, table: ObjectTable, keys: &[Key]) -> Result<()>;

    /// Sets a metadata value, or removes it with `None`.
    fn set_meta(&mut self, key: &str, value: Option<&[u8]>) -> Result<()>;

    /// Moves a branch from `old` (the tip this transaction read) to `new`, or removes it with
    /// `None`. A backend that cannot hold other writers off between the read and the move
    /// checks `old` and fails with `HeadMoved`.
    fn set_tip(&mut self, name: &str, old: Option<Key>, new: Option<Key>) -> Result<()>;

    /// Appends an encoded entry to a ref's reflog.
    fn push_reflog(&mut self, name: &str, entry: &[u8]) -> Result<()>;

    /// Removes reflog entries by ref name and sequence number.
    fn remove_reflog(&mut self, entries: &[(String, u64)]) -> Result<()>;

    /// Stores a branch's row of counts, or removes it with `None`.
    fn set_stats(&mut self, name: &str, stats: Option<&[u8]>) -> Result<()>;

    /// Removes every row of counts.
    fn clear_stats(&mut self) -> Result<()>;

    /// Makes everything durable before returning.
    fn commit(self: Box<Self>) -> Result<()>;
}

/// `tx` as the backend's own transaction type `T` (through any wrapper around it), so a
/// backend's own parts (its search index) work in the transaction a snapshot reads; `None` for
/// another backend's. Unused in a build without a backend that has parts of its own (the
/// database's).
#[allow(dead_code)]
pub(crate) fn own<T: Any>(mut tx: &(dyn ReadTx + Sync)) -> Option<&T> {
    loop {
        let any: &dyn Any = tx;
        if let Some(t) = any.downcast_ref::<T>() {
            return Some(t);
        }
        tx = tx.wrapped()?;
    }
}

/// An open kind of store: what the store asks of every backend beside its transactions.
/// A new kind of store implements this, [`ReadTx`] and [`WriteTx`] (docs/architecture.md,
/// "A new kind of store").
pub(crate) trait Backend: Send + Sync {
    /// A read transaction: one consistent state of everything committed.
    fn read(&self) -> Result<Box<dyn ReadTx + Sync>>;

    /// The write transaction for `scope`, waiting up to `lock_timeout` for other writers. The
    /// store refuses writes to a backend open to read only before asking.
    fn write(&self, scope: &WriteScope, lock_timeout: Duration) -> Result<Box<dyn WriteTx>>;

    /// Why it is open to read only (`None`: it may write).
    fn read_only(&self) -> Option<&str>;

    /// Whether it is a database, where a new store's making takes two transactions (its
    /// tables, then its first metadata through the store's write path).
    fn is_database(&self) -> bool {
        false
    }

    /// Its file (`None`: memory, a database).
    fn path(&self) -> Option<&Path> {
        None
    }

    /// Where it is, to show: a file's path, a URL without its password; `None` in memory.
    fn location(&self) -> Option<String>;

    /// A commit's error named after the store (an OS error on its file, with its code).
    fn at_commit(&self, e: Error) -> Error {
        e
    }

    /// Gives freed space back and overwrites what removed records left behind; the store's
    /// only handle in this process calls it.
    fn compact(self: Box<Self>, lock_timeout: Duration) -> Result<()>;

    /// Folds what it keeps in front of its file into the file (a journal); nothing without.
    fn fold(&self, _lock_timeout: Duration) -> Result<()> {
        Ok(())
    }

    /// Its journal read whole (`fsck`): the frames it holds and the files that do not check,
    /// with what is wrong; nothing without one.
    fn check_journal(&self) -> Result<(u64, Vec<(PathBuf, String)>)> {
        Ok((0, Vec::new()))
    }

    /// The directory beside its file where the store's derived files live (`None`: memory,
    /// a database).
    fn journal_dir(&self) -> Option<PathBuf> {
        None
    }

    /// Whether another open of the same store in this process may share this one (not: a
    /// database's connections inherited from the process this one forked from). Asked of a
    /// store opened by URL: unused in a build without one.
    #[allow(dead_code)]
    fn shareable(&self) -> bool {
        true
    }

    /// How many round trips this process has waited for (`None`: not across a network; tests
    /// only).
    #[cfg(feature = "testing")]
    fn round_trips(&self) -> Option<u64> {
        None
    }
}
