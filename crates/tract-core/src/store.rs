//! The redb store: tables, opening rules, snapshots for reading and one writer at a time.
//!
//! Every process opens the file in `ConcurrencyMode::MultiWriter`: any number of processes may
//! read and write; redb serializes write transactions across processes and commits them with
//! two-phase, fsync'd durability. A writer reads the branch head inside its own write
//! transaction, so two writers never fork a branch silently. Within one process, every handle
//! on a file shares one open database, and writes arriving together share one transaction
//! (group commit, see [`crate::group`]).

use crate::clock::Clock;
use crate::codec;
use crate::error::LockReason;
use crate::error::{Error, Result};
use crate::group::{GroupCommit, JobError};
use crate::id::{BlobId, ChunkId, CommitId, HexPrefix};
use crate::object::{Commit, Message};
pub use crate::refs::{Head, HeadRef, ReflogEntry};
use crate::stats::BranchStats;
use redb::{
    ConcurrencyMode, Database, DatabaseError, ReadOnlyTable, ReadTransaction, ReadableDatabase,
    ReadableTable, Table, TableDefinition, TransactionError, WriteTransaction,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::{Duration, Instant};

/// The store format written by this build (tables and record layout).
pub const FORMAT_VERSION: u32 = 1;

/// Where a store lives by default, relative to a project directory.
pub const DEFAULT_DIR: &str = ".tract";
/// The store file's name inside [`DEFAULT_DIR`].
pub const DEFAULT_FILE: &str = "store.redb";
/// The branch a new store starts on.
pub const DEFAULT_BRANCH: &str = "main";

const REDB_MAGIC: &[u8] = b"redb";

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const COMMITS: TableDefinition<[u8; 32], &[u8]> = TableDefinition::new("commits");
const BLOBS: TableDefinition<[u8; 32], &[u8]> = TableDefinition::new("blobs");
const CHUNKS: TableDefinition<[u8; 32], &[u8]> = TableDefinition::new("chunks");
const REFS: TableDefinition<&str, [u8; 32]> = TableDefinition::new("refs");
const REFLOG: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("reflog");
/// Branch name to its counts at a tip ([`BranchStats`]); absent in stores made before it.
const BRANCH_STATS: TableDefinition<&str, &[u8]> = TableDefinition::new("branch_stats");

const META_FORMAT: &str = "format";
const META_ENCODING: &str = "encoding";
const META_HEAD: &str = "HEAD";
/// Settings live in `meta` under this prefix (e.g. `setting.tool_summarization`).
const SETTING_PREFIX: &str = "setting.";
/// How many redactions the store has seen: a handle whose cached view is older builds it again
/// (it may hold a redacted message).
const META_REDACTIONS: &str = "redactions";

/// The default wait for another process's write transaction.
const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// How to open a store file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OpenMode {
    /// The file must exist and be a tract store.
    Existing,
    /// Create the file if it does not exist; an existing file must be a tract store.
    #[default]
    CreateIfMissing,
}

/// A tract store: one redb file, or memory, as one handle uses it (its options).
pub struct Store {
    shared: Arc<Shared>,
    options: StoreOptions,
}

/// What every handle on one file in this process shares: the open database (one per file and
/// process) and the queue that groups its writes into shared transactions.
struct Shared {
    db: Db,
    path: Option<PathBuf>,
    group: GroupCommit<Writer>,
}

/// The open database. redb writes its allocator state when the last handle closes it, and on
/// a damaged store that can panic; closing is guarded as opening is (the store is not made
/// worse: the next open rebuilds that state), so dropping a handle never panics.
struct Db(Option<Database>);

impl std::ops::Deref for Db {
    type Target = Database;
    fn deref(&self) -> &Database {
        match &self.0 {
            Some(db) => db,
            None => unreachable!("the database is taken only when it is dropped"),
        }
    }
}

impl std::ops::DerefMut for Db {
    fn deref_mut(&mut self) -> &mut Database {
        match &mut self.0 {
            Some(db) => db,
            None => unreachable!("the database is taken only when it is dropped"),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let db = self.0.take();
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(db)));
    }
}

/// The stores open in this process, by canonical path: a second open of a file shares the
/// first one's database and write queue.
static OPEN: LazyLock<Mutex<HashMap<PathBuf, Weak<Shared>>>> = LazyLock::new(Mutex::default);

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.shared.path)
            .finish()
    }
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::io(path.to_path_buf(), source)
}

/// How a handle uses its store: how long a write waits for another process, and its clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// How long a write waits for another process's write transaction before failing with
    /// [`Error::StoreLocked`].
    pub lock_timeout: Duration,
    /// Where timestamps come from.
    pub clock: Clock,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            clock: Clock::System,
        }
    }
}

impl Clone for Store {
    /// Another handle's view of the same open store (same database, same write queue).
    fn clone(&self) -> Self {
        Store {
            shared: Arc::clone(&self.shared),
            options: self.options,
        }
    }
}

impl Store {
    /// Opens the store file at `path` with default options.
    pub fn open(path: impl AsRef<Path>, mode: OpenMode) -> Result<Self> {
        Self::open_with(path, mode, StoreOptions::default())
    }

    /// Opens the store file at `path`. Every handle on one file in a process shares one open
    /// database (and groups its writes with the others').
    pub fn open_with(
        path: impl AsRef<Path>,
        mode: OpenMode,
        options: StoreOptions,
    ) -> Result<Self> {
        // One open at a time in this process, so two threads opening one new file share it.
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|_, w| w.strong_count() > 0);
        let shared = Self::open_shared(path.as_ref(), mode, &mut open)?;
        let store = Store { shared, options };
        engine(|| store.check_format())?;
        Ok(store)
    }

    fn open_shared(
        path: &Path,
        mode: OpenMode,
        open: &mut HashMap<PathBuf, Weak<Shared>>,
    ) -> Result<Arc<Shared>> {
        let exists = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                return Err(Error::NotAStore {
                    path: path.to_path_buf(),
                    reason: "it is a directory".into(),
                });
            }
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(io_err(path, e)),
        };
        if !exists {
            if mode == OpenMode::Existing {
                return Err(io_err(
                    path,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no tract store here"),
                ));
            }
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if !parent.is_dir() {
                return Err(io_err(
                    parent,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "directory does not exist"),
                ));
            }
            return Self::create_new(path, open);
        }
        let key = path.canonicalize().map_err(|e| io_err(path, e))?;
        if let Some(shared) = open.get(&key).and_then(Weak::upgrade) {
            return Ok(shared);
        }
        check_redb_magic(path)?;
        let db = guard_open(path, || builder().open(path))?;
        let shared = Shared::new(db, Some(path.to_path_buf()));
        open.insert(key, Arc::downgrade(&shared));
        Ok(shared)
    }

    fn create_new(path: &Path, open: &mut HashMap<PathBuf, Weak<Shared>>) -> Result<Arc<Shared>> {
        // create_new fails if another process created the file in between: then open theirs.
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Self::open_shared(path, OpenMode::Existing, open);
            }
            Err(e) => return Err(io_err(path, e)),
        }
        let db = guard_open(path, || builder().create(path))?;
        let shared = Shared::new(db, Some(path.to_path_buf()));
        initialize(&shared.db)?;
        let key = path.canonicalize().map_err(|e| io_err(path, e))?;
        open.insert(key, Arc::downgrade(&shared));
        Ok(shared)
    }

    /// A store in memory, for tests and scratch work.
    pub fn in_memory() -> Result<Self> {
        Self::in_memory_with(StoreOptions::default())
    }

    /// A store in memory with options.
    pub fn in_memory_with(options: StoreOptions) -> Result<Self> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(|e| Error::Storage {
                source: std::sync::Arc::new(e.into()),
            })?;
        let shared = Shared::new(db, None);
        initialize(&shared.db)?;
        Ok(Store { shared, options })
    }

    /// A store over an in-memory copy of a store file's bytes: reads and writes go to the copy,
    /// never to a file. Checked as a file is on open (redb's header, tract's tables, the format
    /// version), so damaged bytes are an error, never a panic. For looking into a copy of a
    /// store, and for fuzzing the open path.
    pub fn from_bytes(bytes: &[u8], options: StoreOptions) -> Result<Self> {
        use redb::StorageBackend;
        let here = Path::new("(bytes in memory)");
        if !bytes.starts_with(REDB_MAGIC) {
            return Err(Error::NotAStore {
                path: here.to_path_buf(),
                reason: "the bytes do not start with a redb header".into(),
            });
        }
        let backend = redb::backends::InMemoryBackend::new();
        backend
            .set_len(bytes.len() as u64)
            .and_then(|()| backend.write(0, bytes))
            .map_err(|e| io_err(here, e))?;
        let db = guard_open(here, || Database::builder().create_with_backend(backend))?;
        let store = Store {
            shared: Shared::new(db, None),
            options,
        };
        engine(|| store.check_format())?;
        Ok(store)
    }

    /// Rewrites the file so it holds only live pages and shrinks it: the space freed by `gc`
    /// goes back to the file system, and the bytes of removed or redacted records, which the
    /// storage engine otherwise keeps in freed pages until it reuses them, are overwritten or
    /// cut off. Needs the only handle on the store in this process, and no transaction of
    /// another process under way ([`Error::StoreLocked`] then; nothing changes).
    pub fn compact(self) -> Result<()> {
        let path = self.shared.path.clone().unwrap_or_default();
        let mut shared = Arc::try_unwrap(self.shared).map_err(|_| {
            Error::invalid_op("other handles in this process have the store open; close them first")
        })?;
        loop {
            match shared.db.compact() {
                Ok(true) => continue,
                Ok(false) => return Ok(()),
                Err(redb::CompactionError::TransactionInProgress) => {
                    return Err(Error::StoreLocked {
                        path,
                        reason: LockReason::Busy {
                            waited: Duration::ZERO,
                        },
                    });
                }
                Err(e) => {
                    let e = Error::Storage {
                        source: Arc::new(redb::Error::from(e)),
                    };
                    return Err(on_file(Some(&path), e));
                }
            }
        }
    }

    /// The file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.shared.path.as_deref()
    }

    /// The options this handle was opened with.
    pub fn options(&self) -> StoreOptions {
        self.options
    }

    fn check_format(&self) -> Result<()> {
        let not_a_store = |reason: &str| Error::NotAStore {
            path: self.shared.path.clone().unwrap_or_default(),
            reason: reason.into(),
        };
        let txn = self.shared.db.begin_read()?;
        let meta = match txn.open_table(META) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => {
                return Err(not_a_store("a redb file without tract's tables"));
            }
            Err(e) => return Err(e.into()),
        };
        let format = meta
            .get(META_FORMAT)?
            .and_then(|v| <[u8; 4]>::try_from(v.value()).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| not_a_store("no format version recorded"))?;
        if format > FORMAT_VERSION {
            return Err(Error::NewerFormat {
                found: format,
                supported: FORMAT_VERSION,
            });
        }
        Ok(())
    }

    /// A consistent read snapshot of everything committed so far, by any process.
    pub fn read(&self) -> Result<Snapshot> {
        engine(|| Snapshot::new(self.shared.db.begin_read()?))
    }

    /// Runs `job` in a write transaction shared with the writes other threads of this
    /// process make at the same moment (group commit: one fsync for all); returns once the
    /// job's writes are durable. A job refused before writing fails alone.
    pub(crate) fn write_grouped<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Writer) -> Result<T, JobError> + Send + 'static,
    ) -> Result<T> {
        self.shared
            .group
            .submit(job, &|| self.write(), &|w: Writer| w.commit())
            .map_err(|e| on_file(self.shared.path.as_deref(), e))
    }

    /// Starts the one write transaction, waiting a bounded time for another process's.
    pub fn write(&self) -> Result<Writer> {
        let deadline = Instant::now() + self.options.lock_timeout;
        let mut pause = Duration::from_micros(200);
        loop {
            match self.shared.db.try_begin_write() {
                Ok(txn) => {
                    return Ok(Writer {
                        txn,
                        clock: self.options.clock,
                        path: self.shared.path.clone(),
                    });
                }
                Err(TransactionError::WouldBlock) => {
                    if Instant::now() >= deadline {
                        return Err(Error::StoreLocked {
                            path: self.shared.path.clone().unwrap_or_default(),
                            reason: LockReason::Busy {
                                waited: self.options.lock_timeout,
                            },
                        });
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

fn initialize(db: &Database) -> Result<()> {
    let txn = db.begin_write()?;
    {
        let mut meta = txn.open_table(META)?;
        if meta.get(META_FORMAT)?.is_none() {
            meta.insert(META_FORMAT, FORMAT_VERSION.to_le_bytes().as_slice())?;
            meta.insert(META_ENCODING, crate::tokens::ENCODING.as_bytes())?;
            let head = encode_small(&HeadRef::Branch(DEFAULT_BRANCH.into()))?;
            meta.insert(META_HEAD, head.as_slice())?;
        }
        txn.open_table(COMMITS)?;
        txn.open_table(BLOBS)?;
        txn.open_table(CHUNKS)?;
        txn.open_table(REFS)?;
        txn.open_table(REFLOG)?;
        txn.open_table(BRANCH_STATS)?;
    }
    txn.commit()?;
    Ok(())
}

fn builder() -> redb::Builder {
    let mut b = Database::builder();
    b.set_concurrency_mode(ConcurrencyMode::MultiWriter);
    b
}

/// Refuses to hand redb a file that is not a redb database, so a mistaken path is never
/// rewritten.
fn check_redb_magic(path: &Path) -> Result<()> {
    use std::io::Read;
    let mut head = [0u8; 4];
    let mut f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
    let n = f.read(&mut head).map_err(|e| io_err(path, e))?;
    if n < head.len() || head != REDB_MAGIC {
        return Err(Error::NotAStore {
            path: path.to_path_buf(),
            reason: if n == 0 {
                "the file is empty".into()
            } else {
                "the file does not start with a redb header".into()
            },
        });
    }
    Ok(())
}

/// Runs a read of the storage engine, turning a panic on a damaged page (redb indexes into
/// the pages it reads without checking them all) into [`Error::Corrupt`], as opening does.
fn engine<T>(read: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|_| {
        Err(Error::corrupt(
            "the store is damaged: the storage engine could not read it",
        ))
    })
}

/// Opens with redb, turning its errors (and a panic on a damaged file) into tract errors.
fn guard_open(
    path: &Path,
    open: impl FnOnce() -> std::result::Result<Database, DatabaseError>,
) -> Result<Database> {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(open)).map_err(|_| {
        Error::Corrupt {
            message: format!(
                "{} is damaged: the storage engine could not read it",
                path.display()
            ),
        }
    })?;
    result.map_err(|e| match e {
        DatabaseError::DatabaseAlreadyOpen => Error::StoreLocked {
            path: path.to_path_buf(),
            reason: LockReason::OpenElsewhere,
        },
        DatabaseError::LockProtocolMismatch => Error::StoreLocked {
            path: path.to_path_buf(),
            reason: LockReason::ProtocolMismatch,
        },
        // A file cut short ends inside redb's header.
        DatabaseError::Storage(redb::StorageError::Io(source))
            if source.kind() == std::io::ErrorKind::UnexpectedEof =>
        {
            Error::Corrupt {
                message: format!("{} is truncated: it ends inside its header", path.display()),
            }
        }
        DatabaseError::Storage(redb::StorageError::Io(source)) => io_err(path, source),
        DatabaseError::Storage(redb::StorageError::Corrupted(message)) => Error::Corrupt {
            message: format!("{}: {message}", path.display()),
        },
        DatabaseError::UpgradeRequired(v) => Error::NotAStore {
            path: path.to_path_buf(),
            reason: format!("redb file format {v} is not supported"),
        },
        other => Error::Storage {
            source: std::sync::Arc::new(other.into()),
        },
    })
}

pub(crate) fn encode_small<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    postcard::to_allocvec(v).map_err(|e| Error::corrupt(format!("cannot encode: {e}")))
}

pub(crate) fn decode_small<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|e| Error::corrupt(format!("cannot decode: {e}")))
}

// Reading helpers shared by snapshots and writers: both table kinds implement ReadableTable.

/// An OS error from the storage engine (a full disk, a file that went read-only) as an error on
/// the store file, keeping its OS error code; other errors as they are.
fn on_file(path: Option<&Path>, e: Error) -> Error {
    match (&e, path) {
        (Error::Storage { source }, Some(path)) => match &**source {
            redb::Error::Io(io) => {
                let copy = match io.raw_os_error() {
                    Some(code) => std::io::Error::from_raw_os_error(code),
                    None => std::io::Error::new(io.kind(), io.to_string()),
                };
                Error::io(path, copy)
            }
            _ => e,
        },
        _ => e,
    }
}

/// What stands where a redacted blob's record was: when, why, and the message the view shows
/// in its place (the original's role and call structure, no content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    /// When it was redacted, in microseconds since the Unix epoch.
    pub redacted_at_us: u64,
    /// Why, as the caller gave it.
    pub reason: String,
    /// What the view shows instead.
    pub placeholder: Message,
}

impl Tombstone {
    fn decode(body: &[u8]) -> Result<Self> {
        decode_small(body)
    }
}

/// The tombstone of a redacted blob record, `None` for a record that is not one.
pub(crate) fn tombstone_of(record: &[u8]) -> Option<Result<Tombstone>> {
    codec::tombstone_body(record).map(Tombstone::decode)
}

/// The object tables, for scans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ObjectTable {
    Commits,
    Blobs,
    Chunks,
}

/// A blob record decoded and verified against its id, with the ids of its chunks: what `fsck`
/// checks of each blob (`chunk` fetches a chunk record).
pub(crate) fn verified_blob_bytes(
    id: &BlobId,
    record: &[u8],
    chunk: impl FnMut(&ChunkId) -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    let bytes = codec::decode(record, true, chunk).map_err(|e| decoding("blob", id.to_hex(), e))?;
    if BlobId::of(&bytes) != *id {
        return Err(damaged(
            "blob",
            id.to_hex(),
            "its bytes do not hash to its id",
        ));
    }
    Ok(bytes)
}

/// A commit record decoded and verified against its id.
pub(crate) fn verified_commit(id: &CommitId, record: &[u8]) -> Result<Commit> {
    Commit::decode(&commit_bytes(id, record)?).map_err(|e| decoding("commit", id.to_hex(), e))
}

/// The error for an object whose record does not decode or whose bytes do not hash to its id.
pub(crate) fn damaged(kind: &'static str, id: String, reason: impl Into<String>) -> Error {
    Error::CorruptObject {
        kind,
        id,
        reason: reason.into(),
    }
}

/// What a damaged record's decoding error says, as the reason of [`Error::CorruptObject`];
/// other errors (the storage engine's, a missing chunk) pass through.
fn decoding(kind: &'static str, id: String, e: Error) -> Error {
    match e {
        Error::Corrupt { message } => damaged(kind, id, message),
        other => other,
    }
}

/// The object bytes of a commit record, verified against the id: a record that changed after
/// it was written is never served.
fn commit_bytes(id: &CommitId, record: &[u8]) -> Result<Vec<u8>> {
    let bytes = codec::decode(record, false, |_| {
        Err(Error::corrupt("commit records are never chunked"))
    })
    .map_err(|e| decoding("commit", id.to_hex(), e))?;
    if CommitId::of(&bytes) != *id {
        return Err(damaged(
            "commit",
            id.to_hex(),
            "its bytes do not hash to its id",
        ));
    }
    Ok(bytes)
}

fn read_commit(t: &impl ReadableTable<[u8; 32], &'static [u8]>, id: &CommitId) -> Result<Commit> {
    let rec = t
        .get(id.as_bytes())?
        .ok_or(Error::MissingCommit { commit: *id })?;
    let bytes = commit_bytes(id, rec.value())?;
    Commit::decode(&bytes).map_err(|e| decoding("commit", id.to_hex(), e))
}

fn read_blob(
    blobs: &impl ReadableTable<[u8; 32], &'static [u8]>,
    chunks: &impl ReadableTable<[u8; 32], &'static [u8]>,
    id: &BlobId,
) -> Result<(Message, u32)> {
    read_blob_checked(blobs, chunks, id, true)
}

fn read_blob_checked(
    blobs: &impl ReadableTable<[u8; 32], &'static [u8]>,
    chunks: &impl ReadableTable<[u8; 32], &'static [u8]>,
    id: &BlobId,
    verify: bool,
) -> Result<(Message, u32)> {
    let rec = blobs
        .get(id.as_bytes())?
        .ok_or_else(|| damaged("blob", id.to_hex(), "its record is missing"))?;
    let rec = rec.value();
    let tokens = codec::tokens(rec).map_err(|e| decoding("blob", id.to_hex(), e))?;
    if let Some(body) = codec::tombstone_body(rec) {
        let t = Tombstone::decode(body).map_err(|e| decoding("blob", id.to_hex(), e))?;
        return Ok((t.placeholder, tokens));
    }
    let bytes = codec::decode(rec, true, |cid| {
        chunks
            .get(cid.as_bytes())?
            .map(|g| g.value().to_vec())
            .ok_or_else(|| Error::corrupt(format!("its chunk {} is missing", cid.short())))
    })
    .map_err(|e| decoding("blob", id.to_hex(), e))?;
    if verify && BlobId::of(&bytes) != *id {
        return Err(damaged(
            "blob",
            id.to_hex(),
            "its bytes do not hash to its id",
        ));
    }
    let message = Message::decode(&bytes).map_err(|e| decoding("blob", id.to_hex(), e))?;
    Ok((message, tokens))
}

fn read_counter(meta: &impl ReadableTable<&'static str, &'static [u8]>, key: &str) -> Result<u64> {
    Ok(meta
        .get(key)?
        .and_then(|g| <[u8; 8]>::try_from(g.value()).ok())
        .map_or(0, u64::from_le_bytes))
}

fn read_head(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    refs: &impl ReadableTable<&'static str, [u8; 32]>,
) -> Result<Head> {
    let raw = meta
        .get(META_HEAD)?
        .ok_or_else(|| Error::corrupt("HEAD is missing"))?;
    let target: HeadRef = decode_small(raw.value())?;
    let commit = match &target {
        HeadRef::Branch(b) => refs
            .get(b.as_str())?
            .map(|g| CommitId::from_bytes(g.value())),
        HeadRef::Detached(id) => Some(*id),
    };
    Ok(Head { target, commit })
}

/// What a position is resolved against: a read snapshot, or a write transaction (which also
/// sees its own writes).
pub(crate) trait RefReader {
    /// `HEAD` and the commit it names.
    fn head(&self) -> Result<Head>;
    /// A branch's tip, `None` when it has none.
    fn branch(&self, name: &str) -> Result<Option<CommitId>>;
    /// A ref's last move, `None` if it never moved.
    fn last_move(&self, name: &str) -> Result<Option<ReflogEntry>>;
}

impl RefReader for Snapshot {
    fn head(&self) -> Result<Head> {
        Snapshot::head(self)
    }
    fn branch(&self, name: &str) -> Result<Option<CommitId>> {
        Snapshot::branch(self, name)
    }
    fn last_move(&self, name: &str) -> Result<Option<ReflogEntry>> {
        Ok(self.reflog(name, Some(1))?.pop())
    }
}

impl RefReader for Writer {
    fn head(&self) -> Result<Head> {
        Writer::head(self)
    }
    fn branch(&self, name: &str) -> Result<Option<CommitId>> {
        Writer::branch(self, name)
    }
    fn last_move(&self, name: &str) -> Result<Option<ReflogEntry>> {
        Writer::last_move(self, name)
    }
}

/// A read snapshot.
pub struct Snapshot {
    meta: ReadOnlyTable<&'static str, &'static [u8]>,
    commits: ReadOnlyTable<[u8; 32], &'static [u8]>,
    blobs: ReadOnlyTable<[u8; 32], &'static [u8]>,
    chunks: ReadOnlyTable<[u8; 32], &'static [u8]>,
    refs: ReadOnlyTable<&'static str, [u8; 32]>,
    reflog: ReadOnlyTable<(&'static str, u64), &'static [u8]>,
    /// `None` in a store made before branch counts were kept.
    stats: Option<ReadOnlyTable<&'static str, &'static [u8]>>,
}

impl Snapshot {
    fn new(txn: ReadTransaction) -> Result<Self> {
        Ok(Snapshot {
            meta: txn.open_table(META)?,
            commits: txn.open_table(COMMITS)?,
            blobs: txn.open_table(BLOBS)?,
            chunks: txn.open_table(CHUNKS)?,
            refs: txn.open_table(REFS)?,
            reflog: txn.open_table(REFLOG)?,
            stats: match txn.open_table(BRANCH_STATS) {
                Ok(t) => Some(t),
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(e.into()),
            },
        })
    }

    /// `HEAD` and the commit it names.
    pub fn head(&self) -> Result<Head> {
        engine(|| read_head(&self.meta, &self.refs))
    }

    /// A commit by id.
    pub fn commit(&self, id: &CommitId) -> Result<Commit> {
        engine(|| read_commit(&self.commits, id))
    }

    /// Whether the store holds this commit.
    pub fn has_commit(&self, id: &CommitId) -> Result<bool> {
        engine(|| Ok(self.commits.get(id.as_bytes())?.is_some()))
    }

    /// A blob's message and payload token count.
    pub fn blob(&self, id: &BlobId) -> Result<(Message, u32)> {
        engine(|| read_blob(&self.blobs, &self.chunks, id))
    }

    /// A blob's message without re-hashing it: only for `fsck`'s replays, which run after its
    /// scan verified every blob record of this same snapshot.
    pub(crate) fn blob_verified_already(&self, id: &BlobId) -> Result<(Message, u32)> {
        engine(|| read_blob_checked(&self.blobs, &self.chunks, id, false))
    }

    /// The tip of a branch, `None` if the branch has no commits or does not exist.
    pub fn branch(&self, name: &str) -> Result<Option<CommitId>> {
        engine(|| {
            Ok(self
                .refs
                .get(name)?
                .map(|g| CommitId::from_bytes(g.value())))
        })
    }

    /// Every branch and its tip, by name.
    pub fn branches(&self) -> Result<Vec<(String, CommitId)>> {
        engine(|| {
            let mut out = Vec::new();
            for item in self.refs.iter()? {
                let (k, v) = item?;
                out.push((k.value().to_string(), CommitId::from_bytes(v.value())));
            }
            Ok(out)
        })
    }

    /// The encoding token counts in this store were made with.
    pub fn encoding(&self) -> Result<String> {
        engine(|| {
            Ok(self
                .meta
                .get(META_ENCODING)?
                .map(|g| String::from_utf8_lossy(g.value()).into_owned())
                .unwrap_or_else(|| crate::tokens::ENCODING.to_string()))
        })
    }

    /// A setting stored in the store (`None` when it was never set).
    pub fn setting(&self, name: &str) -> Result<Option<Vec<u8>>> {
        engine(|| {
            let key = format!("{SETTING_PREFIX}{name}");
            Ok(self.meta.get(key.as_str())?.map(|g| g.value().to_vec()))
        })
    }

    /// The commits whose id starts with `prefix` (at most `limit`).
    pub fn commits_with_prefix(&self, prefix: &HexPrefix, limit: usize) -> Result<Vec<CommitId>> {
        engine(|| {
            let (low, high) = prefix.range();
            let mut out = Vec::new();
            for item in self.commits.range(low..=high)? {
                let (k, _) = item?;
                out.push(CommitId::from_bytes(k.value()));
                if out.len() >= limit {
                    break;
                }
            }
            Ok(out)
        })
    }

    /// Every record of one object table whose key starts with a byte in `first` (so callers
    /// can split a scan across threads), in key order: `f(id, record)`. For `fsck`.
    pub(crate) fn scan(
        &self,
        table: ObjectTable,
        first: std::ops::RangeInclusive<u8>,
        mut f: impl FnMut([u8; 32], &[u8]) -> Result<()>,
    ) -> Result<()> {
        let t = match table {
            ObjectTable::Commits => &self.commits,
            ObjectTable::Blobs => &self.blobs,
            ObjectTable::Chunks => &self.chunks,
        };
        let mut low = [0u8; 32];
        low[0] = *first.start();
        let mut high = [0xffu8; 32];
        high[0] = *first.end();
        for item in t.range(low..=high)? {
            let (k, v) = item?;
            f(k.value(), v.value())?;
        }
        Ok(())
    }

    /// A chunk's record (a missing one is a corrupt store).
    pub(crate) fn chunk_record(&self, id: &ChunkId) -> Result<Vec<u8>> {
        engine(|| {
            self.chunks
                .get(id.as_bytes())?
                .map(|g| g.value().to_vec())
                .ok_or_else(|| Error::corrupt(format!("its chunk {} is missing", id.short())))
        })
    }

    /// How many redactions the store has seen.
    pub(crate) fn redactions(&self) -> Result<u64> {
        engine(|| read_counter(&self.meta, META_REDACTIONS))
    }

    /// A redacted blob's tombstone; `None` for a blob that is not redacted.
    pub fn tombstone(&self, id: &BlobId) -> Result<Option<Tombstone>> {
        engine(|| match self.blobs.get(id.as_bytes())? {
            Some(rec) => tombstone_of(rec.value()).transpose(),
            None => Ok(None),
        })
    }

    /// What `HEAD` names, as stored (not resolved).
    pub(crate) fn head_ref(&self) -> Result<HeadRef> {
        engine(|| {
            let raw = self
                .meta
                .get(META_HEAD)?
                .ok_or_else(|| Error::corrupt("HEAD is missing"))?;
            decode_small(raw.value())
        })
    }

    /// Every reflog entry of every ref, by ref name then oldest first; an entry that does not
    /// decode is an error in its place.
    pub(crate) fn reflog_all(&self) -> Result<Vec<(String, Result<ReflogEntry>)>> {
        engine(|| {
            let mut out = Vec::new();
            for item in self.reflog.iter()? {
                let (k, v) = item?;
                out.push((k.value().0.to_string(), decode_small(v.value())));
            }
            Ok(out)
        })
    }

    /// Every row of branch counts; a row that does not decode is an error in its place.
    pub(crate) fn all_branch_stats(&self) -> Result<Vec<(String, Result<BranchStats>)>> {
        engine(|| {
            let mut out = Vec::new();
            if let Some(t) = &self.stats {
                for item in t.iter()? {
                    let (k, v) = item?;
                    out.push((k.value().to_string(), decode_small(v.value())));
                }
            }
            Ok(out)
        })
    }

    /// The counts kept for a branch (at the tip they name, which may be stale).
    pub fn branch_stats(&self, name: &str) -> Result<Option<BranchStats>> {
        engine(|| match &self.stats {
            Some(t) => t.get(name)?.map(|g| decode_small(g.value())).transpose(),
            None => Ok(None),
        })
    }

    /// The moves of a ref (a branch name or `HEAD`), newest first.
    pub fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<ReflogEntry>> {
        engine(|| {
            let mut out = Vec::new();
            for item in self.reflog.range((name, 0)..=(name, u64::MAX))?.rev() {
                let (_, v) = item?;
                out.push(decode_small(v.value())?);
                if limit.is_some_and(|l| out.len() >= l) {
                    break;
                }
            }
            Ok(out)
        })
    }
}

/// The blob, chunk and commit tables of a write transaction, open for writing objects.
pub struct Objects<'w> {
    blobs: Table<'w, [u8; 32], &'static [u8]>,
    chunks: Table<'w, [u8; 32], &'static [u8]>,
    commits: Table<'w, [u8; 32], &'static [u8]>,
}

impl Objects<'_> {
    /// Stores a blob (once: identical payloads share it) and returns its id.
    pub fn put_blob(&mut self, bytes: &[u8], tokens: u32) -> Result<BlobId> {
        let id = BlobId::of(bytes);
        // A stored copy that no longer verifies is replaced by this good one, chunks included.
        let healing = self.blobs.get(id.as_bytes())?.is_some();
        if healing && read_blob(&self.blobs, &self.chunks, &id).is_ok() {
            return Ok(id);
        }
        let enc = codec::encode(bytes, Some(tokens));
        for (cid, rec) in &enc.chunks {
            if healing || self.chunks.get(cid.as_bytes())?.is_none() {
                self.chunks.insert(cid.as_bytes(), rec.as_slice())?;
            }
        }
        self.blobs.insert(id.as_bytes(), enc.record.as_slice())?;
        Ok(id)
    }

    /// Stores a commit and returns its id.
    pub fn put_commit(&mut self, commit: &Commit) -> Result<CommitId> {
        let bytes = commit.encode()?;
        let id = CommitId::of(&bytes);
        if self.commits.get(id.as_bytes())?.is_none() {
            let enc = codec::encode(&bytes, None);
            self.commits.insert(id.as_bytes(), enc.record.as_slice())?;
        }
        Ok(id)
    }
}

impl Shared {
    fn new(db: Database, path: Option<PathBuf>) -> Arc<Self> {
        Arc::new(Shared {
            db: Db(Some(db)),
            path,
            group: GroupCommit::default(),
        })
    }
}

/// The one write transaction; dropped without [`Writer::commit`], it changes nothing.
pub struct Writer {
    txn: WriteTransaction,
    clock: Clock,
    /// The store file, to name in an OS error (a full disk) at commit.
    path: Option<PathBuf>,
}

impl Writer {
    /// The handle's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// `HEAD` as this transaction sees it (the latest committed state).
    pub fn head(&self) -> Result<Head> {
        let meta = self.txn.open_table(META)?;
        let refs = self.txn.open_table(REFS)?;
        read_head(&meta, &refs)
    }

    /// A commit by id, including ones written in this transaction.
    pub fn commit_object(&self, id: &CommitId) -> Result<Commit> {
        read_commit(&self.txn.open_table(COMMITS)?, id)
    }

    /// A blob by id, including ones written in this transaction.
    pub fn blob(&self, id: &BlobId) -> Result<(Message, u32)> {
        read_blob(
            &self.txn.open_table(BLOBS)?,
            &self.txn.open_table(CHUNKS)?,
            id,
        )
    }

    /// The object tables, opened once for a run of writes (opening and closing a table per
    /// row costs more than the row itself when a transaction writes thousands of commits).
    pub fn objects(&self) -> Result<Objects<'_>> {
        Ok(Objects {
            blobs: self.txn.open_table(BLOBS)?,
            chunks: self.txn.open_table(CHUNKS)?,
            commits: self.txn.open_table(COMMITS)?,
        })
    }

    /// Stores a setting, or removes it with `None`.
    pub fn set_setting(&mut self, name: &str, value: Option<&[u8]>) -> Result<()> {
        let key = format!("{SETTING_PREFIX}{name}");
        let mut meta = self.txn.open_table(META)?;
        match value {
            Some(v) => {
                meta.insert(key.as_str(), v)?;
            }
            None => {
                meta.remove(key.as_str())?;
            }
        }
        Ok(())
    }

    /// Whether a branch exists.
    pub fn branch(&self, name: &str) -> Result<Option<CommitId>> {
        let refs = self.txn.open_table(REFS)?;
        Ok(refs.get(name)?.map(|g| CommitId::from_bytes(g.value())))
    }

    /// Points a branch at `new` (or removes it with `None`), logging the move.
    pub fn set_branch(&mut self, name: &str, new: Option<CommitId>, reason: &str) -> Result<()> {
        let old = {
            let mut refs = self.txn.open_table(REFS)?;
            let old = refs.get(name)?.map(|g| CommitId::from_bytes(g.value()));
            match new {
                Some(id) => {
                    refs.insert(name, *id.as_bytes())?;
                }
                None => {
                    refs.remove(name)?;
                }
            }
            old
        };
        self.log_move(name, old, new, reason)
    }

    /// Points `HEAD` at a branch or a commit, logging the move under `HEAD`.
    pub fn set_head(&mut self, target: &HeadRef, reason: &str) -> Result<()> {
        let old = self.head()?.commit;
        let new = match target {
            HeadRef::Branch(b) => self.branch(b)?,
            HeadRef::Detached(id) => Some(*id),
        };
        {
            let mut meta = self.txn.open_table(META)?;
            meta.insert(META_HEAD, encode_small(target)?.as_slice())?;
        }
        self.log_move("HEAD", old, new, reason)
    }

    /// Moves whatever `HEAD` names (its branch, or itself when detached) to `new`.
    pub fn advance_head(&mut self, head: &Head, new: CommitId, reason: &str) -> Result<()> {
        match &head.target {
            HeadRef::Branch(b) => self.set_branch(b, Some(new), reason),
            HeadRef::Detached(_) => self.set_head(&HeadRef::Detached(new), reason),
        }
    }

    /// The counts kept for a branch (at the tip they name, which may be stale).
    pub fn branch_stats(&self, name: &str) -> Result<Option<BranchStats>> {
        let t = self.txn.open_table(BRANCH_STATS)?;
        t.get(name)?.map(|g| decode_small(g.value())).transpose()
    }

    /// Stores a branch's counts, or removes them with `None`.
    pub fn set_branch_stats(&mut self, name: &str, stats: Option<&BranchStats>) -> Result<()> {
        let mut t = self.txn.open_table(BRANCH_STATS)?;
        match stats {
            Some(s) => {
                t.insert(name, encode_small(s)?.as_slice())?;
            }
            None => {
                t.remove(name)?;
            }
        }
        Ok(())
    }

    /// The last move of a ref (`None` if it never moved).
    pub fn last_move(&self, name: &str) -> Result<Option<ReflogEntry>> {
        let log = self.txn.open_table(REFLOG)?;
        match log.range((name, 0)..=(name, u64::MAX))?.next_back() {
            Some(item) => Ok(Some(decode_small(item?.1.value())?)),
            None => Ok(None),
        }
    }

    fn log_move(
        &mut self,
        name: &str,
        old: Option<CommitId>,
        new: Option<CommitId>,
        reason: &str,
    ) -> Result<()> {
        let mut log = self.txn.open_table(REFLOG)?;
        let next = match log.range((name, 0)..=(name, u64::MAX))?.next_back() {
            Some(item) => item?.0.value().1 + 1,
            None => 0,
        };
        let entry = ReflogEntry {
            old,
            new,
            timestamp_us: self.clock.now_us(),
            reason: reason.to_string(),
        };
        log.insert((name, next), encode_small(&entry)?.as_slice())?;
        Ok(())
    }

    /// Replaces blob `id`'s record with `tombstone` (whose placeholder has `tokens` payload
    /// tokens) and removes the chunks no other blob is made of; counts the redaction so
    /// cached views are built again, and drops the kept per-branch counts. Returns the chunks
    /// removed.
    pub fn redact_blob(
        &mut self,
        id: &BlobId,
        tombstone: &Tombstone,
        tokens: u32,
    ) -> Result<Vec<ChunkId>> {
        let mut blobs = self.txn.open_table(BLOBS)?;
        let chunks = {
            let rec = blobs
                .get(id.as_bytes())?
                .ok_or_else(|| damaged("blob", id.to_hex(), "its record is missing"))?;
            codec::chunk_ids(rec.value(), true).map_err(|e| decoding("blob", id.to_hex(), e))?
        };
        let record = codec::tombstone(tokens, &encode_small(tombstone)?);
        blobs.insert(id.as_bytes(), record.as_slice())?;
        let mut removed = Vec::new();
        if !chunks.is_empty() {
            // A chunk is shared only by blobs with the same megabyte of content: rare, so one
            // pass over the blobs that are chunked decides.
            let mut shared = std::collections::HashSet::new();
            for item in blobs.iter()? {
                let (k, v) = item?;
                if k.value() != *id.as_bytes() {
                    shared.extend(codec::chunk_ids(v.value(), true).unwrap_or_default());
                }
            }
            let mut table = self.txn.open_table(CHUNKS)?;
            for c in chunks.into_iter().filter(|c| !shared.contains(c)) {
                table.remove(c.as_bytes())?;
                removed.push(c);
            }
        }
        drop(blobs);
        // Kept counts may include the blob's tokens: every branch is counted again from its
        // view when next listed or written.
        self.txn.delete_table(BRANCH_STATS)?;
        self.txn.open_table(BRANCH_STATS)?;
        let mut meta = self.txn.open_table(META)?;
        let n = read_counter(&meta, META_REDACTIONS)? + 1;
        meta.insert(META_REDACTIONS, n.to_le_bytes().as_slice())?;
        Ok(removed)
    }

    /// Every key of an object table, with what `keep` makes of its record: for `gc`, which
    /// reads the whole table inside its write transaction.
    pub(crate) fn scan_objects<T>(
        &self,
        table: ObjectTable,
        mut keep: impl FnMut([u8; 32], &[u8]) -> Result<T>,
    ) -> Result<Vec<([u8; 32], T)>> {
        let t = self.txn.open_table(match table {
            ObjectTable::Commits => COMMITS,
            ObjectTable::Blobs => BLOBS,
            ObjectTable::Chunks => CHUNKS,
        })?;
        let mut out = Vec::new();
        for item in t.iter()? {
            let (k, v) = item?;
            let key = k.value();
            out.push((key, keep(key, v.value())?));
        }
        Ok(out)
    }

    /// Removes these objects from an object table.
    pub(crate) fn remove_objects(&mut self, table: ObjectTable, ids: &[[u8; 32]]) -> Result<()> {
        let mut t = self.txn.open_table(match table {
            ObjectTable::Commits => COMMITS,
            ObjectTable::Blobs => BLOBS,
            ObjectTable::Chunks => CHUNKS,
        })?;
        for id in ids {
            t.remove(id)?;
        }
        Ok(())
    }

    /// Every branch and its tip.
    pub(crate) fn branches(&self) -> Result<Vec<(String, CommitId)>> {
        let refs = self.txn.open_table(REFS)?;
        let mut out = Vec::new();
        for item in refs.iter()? {
            let (k, v) = item?;
            out.push((k.value().to_string(), CommitId::from_bytes(v.value())));
        }
        Ok(out)
    }

    /// What `HEAD` names, as stored.
    pub(crate) fn head_ref(&self) -> Result<HeadRef> {
        let meta = self.txn.open_table(META)?;
        let raw = meta
            .get(META_HEAD)?
            .ok_or_else(|| Error::corrupt("HEAD is missing"))?;
        decode_small(raw.value())
    }

    /// Removes the reflog entries made at `cutoff_us` or before and returns the commits the
    /// entries left name.
    pub(crate) fn expire_reflog(&mut self, cutoff_us: u64) -> Result<(u64, Vec<CommitId>)> {
        let mut log = self.txn.open_table(REFLOG)?;
        let mut old_keys = Vec::new();
        let mut kept = Vec::new();
        for item in log.iter()? {
            let (k, v) = item?;
            let entry: ReflogEntry = decode_small(v.value())?;
            if entry.timestamp_us <= cutoff_us {
                let (name, n) = k.value();
                old_keys.push((name.to_string(), n));
            } else {
                kept.extend(entry.old.into_iter().chain(entry.new));
            }
        }
        for (name, n) in &old_keys {
            log.remove((name.as_str(), *n))?;
        }
        Ok((old_keys.len() as u64, kept))
    }

    /// The names of the branches that have kept counts.
    pub(crate) fn counted_branches(&self) -> Result<Vec<String>> {
        let t = self.txn.open_table(BRANCH_STATS)?;
        let mut out = Vec::new();
        for item in t.iter()? {
            out.push(item?.0.value().to_string());
        }
        Ok(out)
    }

    /// Makes everything durable (fsync'd) before returning.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        self.txn
            .commit()
            .map_err(|e| on_file(path.as_deref(), e.into()))
    }
}
