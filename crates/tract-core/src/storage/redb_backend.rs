//! The embedded backend: one redb file (or memory).
//!
//! Every process opens the file in `ConcurrencyMode::MultiWriter`: any number of processes may
//! read and write; redb serializes write transactions across processes and commits them with
//! two-phase, fsync'd durability, so a writer that reads a branch tip inside its transaction
//! is the only one that can move it until it commits. redb indexes into the pages it reads
//! without checking them all, so every call into it is guarded: a panic on a damaged page is
//! [`Error::Corrupt`], never a crash.

use crate::error::{Error, LockReason, Result};
use crate::storage::backend::{
    Backend, Key, ObjectTable, RawReflogEntry, ReadTx, Row, ScanFn, WriteScope, WriteTx,
};
use redb::{
    ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase, ReadOnlyTable, ReadTransaction,
    ReadableDatabase, ReadableTable, TableDefinition, TransactionError, WriteTransaction,
};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const REDB_MAGIC: &[u8] = b"redb";

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const COMMITS: TableDefinition<Key, &[u8]> = TableDefinition::new("commits");
const BLOBS: TableDefinition<Key, &[u8]> = TableDefinition::new("blobs");
const CHUNKS: TableDefinition<Key, &[u8]> = TableDefinition::new("chunks");
const REFS: TableDefinition<&str, Key> = TableDefinition::new("refs");
const REFLOG: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("reflog");
/// Branch name to its counts at a tip; absent in stores made before it.
const BRANCH_STATS: TableDefinition<&str, &[u8]> = TableDefinition::new("branch_stats");

fn definition(table: ObjectTable) -> TableDefinition<'static, Key, &'static [u8]> {
    match table {
        ObjectTable::Commits => COMMITS,
        ObjectTable::Blobs => BLOBS,
        ObjectTable::Chunks => CHUNKS,
    }
}

/// What a path holds, before opening it.
pub(crate) enum Located {
    /// A file, by its canonical path (the key under which a process shares it).
    Existing(PathBuf),
    /// Nothing yet; the directory exists.
    Missing,
}

/// Checks a path before it is opened: a directory is not a store, a missing file is created
/// only in a directory that exists.
pub(crate) fn locate(path: &Path) -> Result<Located> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(Error::NotAStore {
            path: path.to_path_buf(),
            reason: "it is a directory".into(),
        }),
        Ok(_) => Ok(Located::Existing(
            path.canonicalize().map_err(|e| io_err(path, e))?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
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
            Ok(Located::Missing)
        }
        Err(e) => Err(io_err(path, e)),
    }
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::io(path.to_path_buf(), source)
}

/// An open redb database.
pub(crate) struct RedbBackend {
    db: Db,
    /// The file opened to write, on the first write, when `db` reads a file this process may
    /// write ([`RedbBackend::open`]); then every read goes through it too.
    writer: Option<Deferred>,
    path: Option<PathBuf>,
    /// Why it is open for reading only (`None`: it is open for writing).
    read_only: Option<String>,
}

/// A database opened to write only when a write first needs it. redb opened to write sets its
/// recovery flag in the file's header as it opens (a write and an fdatasync) and records its
/// allocator state and clears the flag as it closes (more writes, four fdatasyncs): a process
/// that only reads a store (a short-lived worker, `tract log`) pays none of that, and leaves
/// every byte of the file as it was.
#[derive(Default)]
struct Deferred {
    db: OnceLock<Db>,
    /// Held while it is opened, so two threads' first writes open it once.
    opening: Mutex<()>,
}

/// The database as redb opened it: to write, or to read only. A database opened to write
/// rewrites the file's header as it opens and closes (its recovery flag), so only one opened
/// to read leaves every byte of the file as it was.
enum Engine {
    Write(Database),
    Read(ReadOnlyDatabase),
}

/// redb writes its allocator state when the last handle closes a database, and on a damaged
/// store that can panic; closing is guarded as opening is (the store is not made worse: the
/// next open rebuilds that state), so dropping a handle never panics.
struct Db(Option<Engine>);

impl Db {
    fn get(&self) -> &Engine {
        match &self.0 {
            Some(db) => db,
            None => unreachable!("the database is taken only when it is dropped"),
        }
    }

    fn begin_read(&self) -> std::result::Result<ReadTransaction, TransactionError> {
        match self.get() {
            Engine::Write(db) => db.begin_read(),
            Engine::Read(db) => db.begin_read(),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let db = self.0.take();
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(db)));
    }
}

impl RedbBackend {
    /// Opens an existing store file to write (checked to be a redb file before redb sees it,
    /// so a mistaken path is never rewritten; an error opening it to write when this process
    /// may not). It is read through a handle that only reads, and opened to write on the first
    /// write ([`Deferred`]); a file a writer left in the middle of a write (a process killed)
    /// is opened to write at once, which recovers it.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        // Whether this process may write the file is found now, as an open to write would.
        check_redb_magic(path, true)?;
        let (db, writer) = match guard_open(path, || builder().open_read_only(path)) {
            Ok(db) => (Engine::Read(db), Some(Deferred::default())),
            Err(Error::Storage { source }) if matches!(&*source, redb::Error::RepairAborted) => (
                Engine::Write(guard_open(path, || builder().open(path))?),
                None,
            ),
            Err(e) => return Err(e),
        };
        Ok(RedbBackend {
            db: Db(Some(db)),
            writer,
            path: Some(path.to_path_buf()),
            read_only: None,
        })
    }

    /// Opens the file to write now, if it was opened to read until a write: what a write
    /// reads through from then on.
    fn open_deferred<'a>(&self, deferred: &'a Deferred) -> Result<&'a Db> {
        if let Some(db) = deferred.db.get() {
            return Ok(db);
        }
        let _opening = deferred.opening.lock().unwrap_or_else(|e| e.into_inner());
        if deferred.db.get().is_none() {
            let path = self.path.as_deref().unwrap_or(Path::new(""));
            let db = guard_open(path, || builder().open(path))?;
            let _ = deferred.db.set(Db(Some(Engine::Write(db))));
        }
        match deferred.db.get() {
            Some(db) => Ok(db),
            None => unreachable!("set above, under the lock, and never taken"),
        }
    }

    /// The handle reads go through: the one opened to write once there is one.
    fn reader(&self) -> &Db {
        self.writer
            .as_ref()
            .and_then(|w| w.db.get())
            .unwrap_or(&self.db)
    }

    /// Opens an existing store file to read only, `reason` saying why (what a write is told):
    /// nothing of the file changes, and it reads beside writers in other processes.
    pub(crate) fn open_read_only(path: &Path, reason: String) -> Result<Self> {
        check_redb_magic(path, false)?;
        let db = guard_open(path, || builder().open_read_only(path))?;
        Ok(RedbBackend {
            db: Db(Some(Engine::Read(db))),
            writer: None,
            path: Some(path.to_path_buf()),
            read_only: Some(reason),
        })
    }

    /// Why the database is open for reading only (`None`: it is open for writing).
    pub(crate) fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// The database open for writing, or the error a write on one open to read gets.
    fn writable(&self) -> Result<&Database> {
        let db = match &self.writer {
            Some(deferred) => self.open_deferred(deferred)?,
            None => &self.db,
        };
        match db.get() {
            Engine::Write(db) => Ok(db),
            Engine::Read(_) => Err(Error::ReadOnly {
                store: self
                    .path
                    .as_deref()
                    .unwrap_or(Path::new(""))
                    .display()
                    .to_string(),
                reason: self.read_only.clone().unwrap_or_default(),
            }),
        }
    }

    /// Creates a new redb file at `path` with tract's tables (an error if anything is there).
    pub(crate) fn create(path: &Path) -> Result<Self> {
        // create_new: a file put there meanwhile is never handed to redb.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| io_err(path, e))?;
        let db = guard_open(path, || builder().create(path))?;
        let backend = RedbBackend {
            db: Db(Some(Engine::Write(db))),
            writer: None,
            path: Some(path.to_path_buf()),
            read_only: None,
        };
        backend.create_tables()?;
        Ok(backend)
    }

    /// A store over an in-memory copy of a store file's bytes.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Self> {
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
        Ok(RedbBackend {
            db: Db(Some(Engine::Write(db))),
            writer: None,
            path: None,
            read_only: None,
        })
    }

    fn create_tables(&self) -> Result<()> {
        let txn = self.writable()?.begin_write()?;
        txn.open_table(META)?;
        txn.open_table(COMMITS)?;
        txn.open_table(BLOBS)?;
        txn.open_table(CHUNKS)?;
        txn.open_table(REFS)?;
        txn.open_table(REFLOG)?;
        txn.open_table(BRANCH_STATS)?;
        txn.commit()?;
        Ok(())
    }

    /// The file, `None` in memory.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// A read transaction. A redb file without tract's tables is not a store.
    pub(crate) fn read_boxed(&self) -> Result<Box<dyn ReadTx + Sync>> {
        Ok(Box::new(self.read_txn()?))
    }

    /// A read transaction, as its own type.
    pub(crate) fn read_txn(&self) -> Result<RedbRead> {
        engine(|| {
            let txn = self.reader().begin_read()?;
            RedbRead::new(&txn).map_err(|e| match e {
                Error::Storage { source }
                    if matches!(&*source, redb::Error::TableDoesNotExist(_)) =>
                {
                    Error::NotAStore {
                        path: self.path.clone().unwrap_or_default(),
                        reason: "a redb file without tract's tables".into(),
                    }
                }
                other => other,
            })
        })
    }

    /// The one write transaction, as its own type.
    pub(crate) fn write_txn(&self, lock_timeout: Duration) -> Result<RedbWrite> {
        let db = self.writable()?;
        let deadline = Instant::now() + lock_timeout;
        let mut pause = Duration::from_micros(200);
        loop {
            match engine(|| Ok(db.try_begin_write()))? {
                Ok(txn) => {
                    return Ok(RedbWrite {
                        txn,
                        path: self.path.clone(),
                    });
                }
                Err(TransactionError::WouldBlock) => {
                    if Instant::now() >= deadline {
                        return Err(Error::StoreLocked {
                            path: self.path.clone().unwrap_or_default(),
                            reason: LockReason::Busy {
                                waited: lock_timeout,
                            },
                        });
                    }
                    std::thread::sleep(pause);
                    // redb has no queue for waiting processes: a short cap keeps the one that
                    // waited longest from sleeping through its turns (p99 measured in
                    // docs/performance.md).
                    pause = (pause * 2).min(Duration::from_millis(2));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Rewrites the file so it holds only live pages and shrinks it.
    pub(crate) fn compact(&mut self) -> Result<()> {
        let path = self.path.clone().unwrap_or_default();
        self.writable()?;
        // Compacted alone: the handle that read until the first write is closed first.
        if let Some(mut deferred) = self.writer.take() {
            match deferred.db.take() {
                Some(writer) => self.db = writer,
                None => unreachable!("opened by `writable` above"),
            }
        }
        let Some(Engine::Write(db)) = self.db.0.as_mut() else {
            unreachable!("the database is taken only when it is dropped, and was open to write")
        };
        loop {
            match db.compact() {
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
}

fn builder() -> redb::Builder {
    let mut b = Database::builder();
    b.set_concurrency_mode(ConcurrencyMode::MultiWriter);
    b
}

/// Refuses to hand redb a file that is not a redb database, so a mistaken path is never
/// rewritten; the file opened to write when `writable` (an error where this process may not).
fn check_redb_magic(path: &Path, writable: bool) -> Result<()> {
    use std::io::Read;
    let mut head = [0u8; 4];
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(writable)
        .open(path)
        .map_err(|e| io_err(path, e))?;
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

/// Runs a call into the storage engine, turning a panic on a damaged page into
/// [`Error::Corrupt`], as opening does.
fn engine<T>(read: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|_| {
        Err(Error::corrupt(
            "the store is damaged: the storage engine could not read it",
        ))
    })
}

/// Opens with redb, turning its errors (and a panic on a damaged file) into tract errors.
fn guard_open<D>(
    path: &Path,
    open: impl FnOnce() -> std::result::Result<D, DatabaseError>,
) -> Result<D> {
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
            source: Arc::new(other.into()),
        },
    })
}

/// A read of the file at `path` that ran past its end as the file being cut short. Opened to
/// read, redb does not check the file's length against the layout it records (opened to
/// write, it does), so a file cut short is found by the first read of a page past its end.
pub(crate) fn on_truncation(path: &Path, e: Error) -> Error {
    match e {
        Error::Storage { source }
            if matches!(&*source, redb::Error::Io(io)
                if io.kind() == std::io::ErrorKind::UnexpectedEof) =>
        {
            Error::Corrupt {
                message: format!(
                    "{}: the file is truncated: it ends before pages it records",
                    path.display()
                ),
            }
        }
        other => other,
    }
}

/// redb alone: a store over a copy of a file's bytes in memory, or a file of a format before
/// the journal open to read only. One writer at a time, whatever it moves.
impl Backend for RedbBackend {
    fn read(&self) -> Result<Box<dyn ReadTx + Sync>> {
        self.read_boxed()
    }

    fn write(&self, _scope: &WriteScope, lock_timeout: Duration) -> Result<Box<dyn WriteTx>> {
        Ok(Box::new(self.write_txn(lock_timeout)?))
    }

    fn read_only(&self) -> Option<&str> {
        RedbBackend::read_only(self)
    }

    fn path(&self) -> Option<&Path> {
        RedbBackend::path(self)
    }

    fn location(&self) -> Option<String> {
        self.path.as_ref().map(|p| p.display().to_string())
    }

    fn at_commit(&self, e: Error) -> Error {
        on_file(self.path.as_deref(), e)
    }

    fn compact(mut self: Box<Self>, _lock_timeout: Duration) -> Result<()> {
        RedbBackend::compact(&mut self)
    }
}

/// An OS error from the storage engine (a full disk, a file that went read-only) as an error on
/// the store file, keeping its OS error code; other errors as they are.
pub(crate) fn on_file(path: Option<&Path>, e: Error) -> Error {
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

// Reading helpers shared by both transaction kinds: both table kinds implement ReadableTable.

fn get_object(t: &impl ReadableTable<Key, &'static [u8]>, key: &Key) -> Result<Option<Vec<u8>>> {
    Ok(t.get(key)?.map(|g| g.value().to_vec()))
}

fn scan_table(
    t: &impl ReadableTable<Key, &'static [u8]>,
    low: &Key,
    high: &Key,
    limit: Option<usize>,
    f: &mut ScanFn<'_>,
) -> Result<()> {
    for (n, item) in t.range::<&Key>(low..=high)?.enumerate() {
        if limit.is_some_and(|l| n >= l) {
            break;
        }
        let (k, v) = item?;
        f(k.value(), v.value())?;
    }
    Ok(())
}

fn get_meta(
    t: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<Vec<u8>>> {
    Ok(t.get(key)?.map(|g| g.value().to_vec()))
}

fn meta_keys(
    t: &impl ReadableTable<&'static str, &'static [u8]>,
    prefix: &str,
) -> Result<Vec<String>> {
    let mut keys = Vec::new();
    for row in t.range(prefix..)? {
        let (k, _) = row?;
        let k = k.value();
        if !k.starts_with(prefix) {
            break;
        }
        keys.push(k.to_string());
    }
    Ok(keys)
}

fn all_tips(t: &impl ReadableTable<&'static str, Key>) -> Result<Vec<(String, Key)>> {
    let mut out = Vec::new();
    for item in t.iter()? {
        let (k, v) = item?;
        out.push((k.value().to_string(), v.value()));
    }
    Ok(out)
}

fn reflog_of(
    t: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    name: &str,
    limit: Option<usize>,
) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for item in t.range((name, 0)..=(name, u64::MAX))?.rev() {
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        out.push(item?.1.value().to_vec());
    }
    Ok(out)
}

fn whole_reflog(
    t: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
) -> Result<Vec<RawReflogEntry>> {
    let mut out = Vec::new();
    for item in t.iter()? {
        let (k, v) = item?;
        let (name, n) = k.value();
        out.push((name.to_string(), n, v.value().to_vec()));
    }
    Ok(out)
}

fn all_rows(t: &impl ReadableTable<&'static str, &'static [u8]>) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for item in t.iter()? {
        let (k, v) = item?;
        out.push((k.value().to_string(), v.value().to_vec()));
    }
    Ok(out)
}

/// A read transaction: its tables, opened once.
pub(crate) struct RedbRead {
    meta: ReadOnlyTable<&'static str, &'static [u8]>,
    commits: ReadOnlyTable<Key, &'static [u8]>,
    blobs: ReadOnlyTable<Key, &'static [u8]>,
    chunks: ReadOnlyTable<Key, &'static [u8]>,
    refs: ReadOnlyTable<&'static str, Key>,
    reflog: ReadOnlyTable<(&'static str, u64), &'static [u8]>,
    /// `None` in a store made before branch counts were kept.
    stats: Option<ReadOnlyTable<&'static str, &'static [u8]>>,
}

impl RedbRead {
    fn new(txn: &ReadTransaction) -> Result<Self> {
        Ok(RedbRead {
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

    /// A ref's reflog entries with their sequence numbers, newest first, at most `limit`.
    pub(crate) fn reflog_numbered(
        &self,
        name: &str,
        limit: Option<usize>,
    ) -> Result<Vec<(u64, Vec<u8>)>> {
        engine(|| {
            let mut out = Vec::new();
            for item in self.reflog.range((name, 0)..=(name, u64::MAX))?.rev() {
                if limit.is_some_and(|l| out.len() >= l) {
                    break;
                }
                let (k, v) = item?;
                out.push((k.value().1, v.value().to_vec()));
            }
            Ok(out)
        })
    }

    fn table(&self, table: ObjectTable) -> &ReadOnlyTable<Key, &'static [u8]> {
        match table {
            ObjectTable::Commits => &self.commits,
            ObjectTable::Blobs => &self.blobs,
            ObjectTable::Chunks => &self.chunks,
        }
    }
}

impl ReadTx for RedbRead {
    fn object(&self, table: ObjectTable, key: &Key) -> Result<Option<Vec<u8>>> {
        engine(|| get_object(self.table(table), key))
    }

    fn scan(
        &self,
        table: ObjectTable,
        low: &Key,
        high: &Key,
        limit: Option<usize>,
        f: &mut ScanFn<'_>,
    ) -> Result<()> {
        engine(|| scan_table(self.table(table), low, high, limit, f))
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        engine(|| get_meta(&self.meta, key))
    }

    fn meta_keys(&self, prefix: &str) -> Result<Vec<String>> {
        engine(|| meta_keys(&self.meta, prefix))
    }

    fn tip(&self, name: &str) -> Result<Option<Key>> {
        engine(|| Ok(self.refs.get(name)?.map(|g| g.value())))
    }

    fn tips(&self) -> Result<Vec<(String, Key)>> {
        engine(|| all_tips(&self.refs))
    }

    fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<Vec<u8>>> {
        engine(|| reflog_of(&self.reflog, name, limit))
    }

    fn reflog_all(&self) -> Result<Vec<RawReflogEntry>> {
        engine(|| whole_reflog(&self.reflog))
    }

    fn stats(&self, name: &str) -> Result<Option<Vec<u8>>> {
        engine(|| match &self.stats {
            Some(t) => get_meta(t, name),
            None => Ok(None),
        })
    }

    fn all_stats(&self) -> Result<Vec<(String, Vec<u8>)>> {
        engine(|| match &self.stats {
            Some(t) => all_rows(t),
            None => Ok(Vec::new()),
        })
    }
}

/// The write transaction. Tables are opened per call: a run of object writes arrives as one
/// `put_objects`, which opens its table once.
pub(crate) struct RedbWrite {
    txn: WriteTransaction,
    /// The store file, to name in an OS error (a full disk) at commit.
    path: Option<PathBuf>,
}

impl ReadTx for RedbWrite {
    fn object(&self, table: ObjectTable, key: &Key) -> Result<Option<Vec<u8>>> {
        engine(|| get_object(&self.txn.open_table(definition(table))?, key))
    }

    fn objects(&self, table: ObjectTable, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>> {
        engine(|| {
            let t = self.txn.open_table(definition(table))?;
            keys.iter().map(|k| get_object(&t, k)).collect()
        })
    }

    fn scan(
        &self,
        table: ObjectTable,
        low: &Key,
        high: &Key,
        limit: Option<usize>,
        f: &mut ScanFn<'_>,
    ) -> Result<()> {
        engine(|| {
            scan_table(
                &self.txn.open_table(definition(table))?,
                low,
                high,
                limit,
                f,
            )
        })
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        engine(|| get_meta(&self.txn.open_table(META)?, key))
    }

    fn meta_keys(&self, prefix: &str) -> Result<Vec<String>> {
        engine(|| meta_keys(&self.txn.open_table(META)?, prefix))
    }

    fn tip(&self, name: &str) -> Result<Option<Key>> {
        engine(|| Ok(self.txn.open_table(REFS)?.get(name)?.map(|g| g.value())))
    }

    fn tips(&self) -> Result<Vec<(String, Key)>> {
        engine(|| all_tips(&self.txn.open_table(REFS)?))
    }

    fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<Vec<u8>>> {
        engine(|| reflog_of(&self.txn.open_table(REFLOG)?, name, limit))
    }

    fn reflog_all(&self) -> Result<Vec<RawReflogEntry>> {
        engine(|| whole_reflog(&self.txn.open_table(REFLOG)?))
    }

    fn stats(&self, name: &str) -> Result<Option<Vec<u8>>> {
        engine(|| get_meta(&self.txn.open_table(BRANCH_STATS)?, name))
    }

    fn all_stats(&self) -> Result<Vec<(String, Vec<u8>)>> {
        engine(|| all_rows(&self.txn.open_table(BRANCH_STATS)?))
    }
}

impl RedbWrite {
    /// Stores reflog entries under the sequence numbers they were given (a journal's frames').
    pub(crate) fn put_reflogs(&mut self, entries: &[(String, u64, Vec<u8>)]) -> Result<()> {
        engine(|| {
            let mut log = self.txn.open_table(REFLOG)?;
            for (name, n, entry) in entries {
                log.insert((name.as_str(), *n), entry.as_slice())?;
            }
            Ok(())
        })
    }
}

impl WriteTx for RedbWrite {
    fn put_objects(&mut self, table: ObjectTable, rows: &[Row<'_>]) -> Result<()> {
        engine(|| {
            let mut t = self.txn.open_table(definition(table))?;
            for row in rows {
                t.insert(&row.key, row.record)?;
            }
            Ok(())
        })
    }

    fn remove_objects(&mut self, table: ObjectTable, keys: &[Key]) -> Result<()> {
        engine(|| {
            let mut t = self.txn.open_table(definition(table))?;
            for key in keys {
                t.remove(key)?;
            }
            Ok(())
        })
    }

    fn set_meta(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
        engine(|| {
            let mut t = self.txn.open_table(META)?;
            match value {
                Some(v) => t.insert(key, v)?,
                None => t.remove(key)?,
            };
            Ok(())
        })
    }

    fn set_tip(&mut self, name: &str, _old: Option<Key>, new: Option<Key>) -> Result<()> {
        // redb lets one write transaction run at a time across processes: the tip this one
        // read is still the tip.
        engine(|| {
            let mut t = self.txn.open_table(REFS)?;
            match new {
                Some(id) => t.insert(name, id)?,
                None => t.remove(name)?,
            };
            Ok(())
        })
    }

    fn push_reflog(&mut self, name: &str, entry: &[u8]) -> Result<()> {
        engine(|| {
            let mut log = self.txn.open_table(REFLOG)?;
            let next = match log.range((name, 0)..=(name, u64::MAX))?.next_back() {
                Some(item) => item?.0.value().1 + 1,
                None => 0,
            };
            log.insert((name, next), entry)?;
            Ok(())
        })
    }

    fn remove_reflog(&mut self, entries: &[(String, u64)]) -> Result<()> {
        engine(|| {
            let mut log = self.txn.open_table(REFLOG)?;
            for (name, n) in entries {
                log.remove((name.as_str(), *n))?;
            }
            Ok(())
        })
    }

    fn set_stats(&mut self, name: &str, stats: Option<&[u8]>) -> Result<()> {
        engine(|| {
            let mut t = self.txn.open_table(BRANCH_STATS)?;
            match stats {
                Some(s) => t.insert(name, s)?,
                None => t.remove(name)?,
            };
            Ok(())
        })
    }

    fn clear_stats(&mut self) -> Result<()> {
        engine(|| {
            self.txn.delete_table(BRANCH_STATS)?;
            self.txn.open_table(BRANCH_STATS)?;
            Ok(())
        })
    }

    fn commit(self: Box<Self>) -> Result<()> {
        let RedbWrite { txn, path } = *self;
        engine(|| txn.commit().map_err(Error::from)).map_err(|e| on_file(path.as_deref(), e))
    }
}
