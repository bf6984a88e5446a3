//! The store: tract's model (commits, blobs, refs, reflog, settings, branch counts) on a
//! storage backend, with opening rules, snapshots for reading and one writer at a time.
//!
//! Backends (`storage::backend`) keep raw records; everything that makes them tract's
//! lives in this folder, once for all of them: objects are decoded and verified against their
//! ids on every read (`verify`), written once under their ids, and a ref's every move is logged
//! (`writer`); `snapshot` reads, `meta` holds the named values beside the objects; `create`
//! makes a store file so that a process stopped part way leaves none or a whole one. This file
//! opens a store: a redb file (or memory) or, with the `postgres` feature, a PostgreSQL database
//! (`postgresql://` URLs). Within one process, every handle on one store shares one open
//! backend, and writes arriving together share one transaction (group commit, see
//! `storage::group`). With the `testing` feature, `faults` makes the backend fail on demand,
//! or damages what it keeps, for tests.

pub(crate) mod create;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod faults;
pub(crate) mod meta;
pub(crate) mod snapshot;
pub(crate) mod upgrade;
pub(crate) mod verify;
pub(crate) mod writer;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::id::CommitId;
pub use crate::refs::{Head, HeadRef, ReflogEntry};
use crate::storage::backend::{ReadTx, WriteScope, WriteTx};
use crate::storage::group::{GroupCommit, JobError};
use crate::storage::journaled::{JournaledRedb, folded_of};
#[cfg(feature = "postgres")]
use crate::storage::postgres::backend::PgBackend;
use crate::storage::redb_backend::{self, Located, RedbBackend};
#[cfg(feature = "testing")]
use crate::storage::store::faults::{Call, Damage, Faults};
use crate::storage::store::meta::{
    META_ENCODING, META_FORMAT, META_HEAD, META_SECRETS_KEY, META_STORE_ID, SECRETS_SETTING,
    encode_small, setting_key,
};
pub use crate::storage::store::snapshot::Snapshot;
use crate::storage::store::upgrade::{format_of, store_id_of};
pub use crate::storage::store::verify::Tombstone;
use crate::storage::store::writer::Writer;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

pub use crate::storage::journaled::JournalSalvage;
pub use crate::storage::store::upgrade::{FORMAT_VERSION, UpgradeReport};

/// Where a store lives by default, relative to a project directory.
pub const DEFAULT_DIR: &str = ".tract";
/// The store file's name inside [`DEFAULT_DIR`].
pub const DEFAULT_FILE: &str = "store.redb";
/// The branch a new store starts on.
pub const DEFAULT_BRANCH: &str = "main";

/// The default wait for another process's write transaction.
const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// How to open a store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OpenMode {
    /// The store must exist and be a tract store.
    Existing,
    /// Create the store if it does not exist; an existing one must be a tract store.
    #[default]
    CreateIfMissing,
    /// The store must exist, and is opened to read only: nothing of it changes (not a byte of
    /// its file, not its format, not its journal), and a write is [`Error::ReadOnly`]. A store
    /// this process cannot write (its file's permissions, a read-only file system, a database
    /// role that may only read) opens this way in the other modes too.
    ReadOnly,
}

/// A tract store: a redb file, memory or a PostgreSQL database, as one handle uses it (its
/// options).
pub struct Store {
    shared: Arc<Shared>,
    options: StoreOptions,
    /// Why this handle may only read (`None`: it may write).
    read_only: Option<Arc<str>>,
}

/// What every handle on one store in this process shares: the open backend (one per store and
/// process) and the queue that groups its writes into shared transactions.
struct Shared {
    backend: Backend,
    group: GroupCommit<Writer>,
    /// The upgrade this process made when it opened the store, if the store was older.
    upgraded: Mutex<Option<UpgradeReport>>,
    /// What higher layers keep per store and process (the search index's keeper), one value
    /// of each type, dropped with the last handle.
    attached: Mutex<Vec<Arc<dyn std::any::Any + Send + Sync>>>,
    /// Every transaction's calls counted, failing where a test armed a fault.
    #[cfg(feature = "testing")]
    faults: Arc<Faults>,
}

/// The open backend.
enum Backend {
    /// A store file, with its journal.
    Journaled(JournaledRedb),
    /// A store in memory.
    Redb(RedbBackend),
    #[cfg(feature = "postgres")]
    Postgres(Arc<PgBackend>),
}

impl Backend {
    fn read(&self) -> Result<Box<dyn ReadTx + Sync>> {
        match self {
            Backend::Journaled(b) => b.read(),
            Backend::Redb(b) => b.read(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => b.read(),
        }
    }

    /// Why the backend is open to read only (`None`: it may write).
    fn read_only(&self) -> Option<&str> {
        match self {
            Backend::Journaled(b) => b.read_only(),
            Backend::Redb(b) => b.read_only(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => b.read_only(),
        }
    }

    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    fn write(&self, scope: &WriteScope, lock_timeout: Duration) -> Result<Box<dyn WriteTx>> {
        if let Some(reason) = self.read_only() {
            return Err(self.read_only_error(reason));
        }
        match self {
            // One writer at a time in a file, whatever it moves.
            Backend::Journaled(b) => b.write(scope, lock_timeout),
            Backend::Redb(b) => b.write(lock_timeout),
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => b.write(scope, lock_timeout),
        }
    }

    /// Whether the store is in a database (where its creation takes two transactions).
    fn is_database(&self) -> bool {
        match self {
            Backend::Journaled(_) | Backend::Redb(_) => false,
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => true,
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            Backend::Journaled(b) => Some(b.path()),
            Backend::Redb(b) => b.path(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => None,
        }
    }

    /// Where the store is: a file's path, a URL without its password; `None` in memory.
    fn location(&self) -> Option<String> {
        match self {
            Backend::Journaled(b) => Some(b.path().display().to_string()),
            Backend::Redb(b) => b.path().map(|p| p.display().to_string()),
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => Some(b.location().to_string()),
        }
    }

    /// The error a write gets on a store open to read only, for `reason`.
    fn read_only_error(&self, reason: &str) -> Error {
        Error::ReadOnly {
            store: self.location().unwrap_or_else(|| "in memory".into()),
            reason: reason.into(),
        }
    }

    /// An error at commit named after the store (an OS error on the file, with its code).
    fn at_commit(&self, e: Error) -> Error {
        match self {
            Backend::Journaled(b) => redb_backend::on_file(Some(b.path()), e),
            Backend::Redb(b) => redb_backend::on_file(b.path(), e),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => e,
        }
    }
}

/// The stores open in this process, by canonical path or URL: a second open of a store
/// shares the first one's backend and write queue.
static OPEN: LazyLock<Mutex<HashMap<String, Weak<Shared>>>> = LazyLock::new(Mutex::default);

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.shared.backend.location())
            .finish()
    }
}

/// How a handle uses its store: how long a write waits for another process, and its clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// How long a write waits for another process's write transaction before failing with
    /// [`Error::StoreLocked`].
    pub lock_timeout: Duration,
    /// Where timestamps come from.
    pub clock: Clock,
    /// The most commits a branch goes past the checkpoint of its view before a write from
    /// this handle checkpoints it again (besides after a compress or a clear): a cold read
    /// walks at most this many commits. A small view is checkpointed sooner, every sixteenth of
    /// its length (at least 16 commits), so the walk stays a small part of the read. 0 writes
    /// none, and new handles replay what follows the last one.
    pub checkpoint_interval: u64,
    /// How many commits this process writes before it adds them to the search index, in the
    /// background (0: it does not; a search then indexes what is new itself).
    pub index_batch: u64,
}

/// The search index's batch when none is set.
pub const DEFAULT_INDEX_BATCH: u64 = 1024;

/// The checkpoint interval when none is set: a new handle folds at most 256 commits on top of
/// the newest checkpoint.
pub const DEFAULT_CHECKPOINT_INTERVAL: u64 = 256;

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            clock: Clock::System,
            checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL,
            index_batch: DEFAULT_INDEX_BATCH,
        }
    }
}

impl Clone for Store {
    /// Another handle's view of the same open store (same backend, same write queue).
    fn clone(&self) -> Self {
        Store {
            shared: Arc::clone(&self.shared),
            options: self.options,
            read_only: self.read_only.clone(),
        }
    }
}

/// Whether `text` names a store by URL (`scheme://...`) rather than by path.
pub fn is_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

impl Store {
    /// Opens the store at `path` with default options.
    pub fn open(path: impl AsRef<Path>, mode: OpenMode) -> Result<Self> {
        Self::open_with(path, mode, StoreOptions::default())
    }

    /// Opens the store at `path`: a file, or a `postgresql://` URL. Every handle on one store
    /// in a process shares one open backend (and groups its writes with the others').
    pub fn open_with(
        path: impl AsRef<Path>,
        mode: OpenMode,
        options: StoreOptions,
    ) -> Result<Self> {
        let path = path.as_ref();
        // One open at a time in this process, so two threads opening one new store share it.
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|_, w| w.strong_count() > 0);
        let shared = match path.to_str().filter(|s| is_url(s)) {
            Some(url) => Self::open_url(url, mode, options, &mut open)?,
            None => Self::open_file(path, mode, options.lock_timeout, &mut open)?,
        };
        let read_only = match mode {
            OpenMode::ReadOnly => Some(Arc::from("it was opened to read")),
            _ => shared.backend.read_only().map(Arc::from),
        };
        let store = Store {
            shared,
            options,
            read_only,
        };
        let format = match store.check_format() {
            // A database store whose creator stopped between making the tables and recording
            // the format (two transactions, as the format is written through the store's own
            // write path): completed now, under the store's lock, as its creator would have.
            Err(Error::NotAStore { .. })
                if mode == OpenMode::CreateIfMissing
                    && store.read_only.is_none()
                    && store.shared.backend.is_database() =>
            {
                initialize(&store.shared.backend)?;
                store.check_format()?
            }
            other => other?,
        };
        // A store an older build wrote is brought to this build's format as it is opened for
        // writing; one open to read is read as it is.
        if format < FORMAT_VERSION && store.read_only.is_none() {
            store.upgrade()?;
        }
        Ok(store)
    }

    fn open_url(
        url: &str,
        mode: OpenMode,
        options: StoreOptions,
        open: &mut HashMap<String, Weak<Shared>>,
    ) -> Result<Arc<Shared>> {
        let scheme = url.split_once("://").map_or("", |(s, _)| s);
        match scheme {
            #[cfg(feature = "postgres")]
            "postgresql" | "postgres" => {
                let (backend, key, created) = PgBackend::connect(
                    url,
                    mode == OpenMode::CreateIfMissing,
                    options.lock_timeout,
                )?;
                let reused = open
                    .get(&key)
                    .and_then(Weak::upgrade)
                    .filter(|s| !matches!(&s.backend, Backend::Postgres(b) if b.forked()));
                if let Some(shared) = reused {
                    return Ok(shared);
                }
                let shared = Shared::new(Backend::Postgres(Arc::new(backend)), None);
                if created {
                    initialize(&shared.backend)?;
                }
                open.insert(key, Arc::downgrade(&shared));
                Ok(shared)
            }
            #[cfg(not(feature = "postgres"))]
            "postgresql" | "postgres" => {
                let _ = (mode, options, open);
                Err(Error::invalid_input(
                    "this build of tract has no PostgreSQL backend (the `postgres` feature)",
                ))
            }
            other => {
                let _ = (mode, options, open);
                Err(Error::invalid_input(format!(
                    "unknown store scheme '{other}://': a store is a file path or a postgresql:// URL"
                )))
            }
        }
    }

    fn open_file(
        path: &Path,
        mode: OpenMode,
        lock_timeout: Duration,
        open: &mut HashMap<String, Weak<Shared>>,
    ) -> Result<Arc<Shared>> {
        match redb_backend::locate(path)? {
            Located::Existing(canonical) => {
                let key = canonical.display().to_string();
                // One open to write serves every handle; one open to read only serves handles
                // that only read, until a handle that writes opens the store.
                if let Some(shared) = open.get(&key).and_then(Weak::upgrade)
                    && (mode == OpenMode::ReadOnly || shared.backend.read_only().is_none())
                {
                    return Ok(shared);
                }
                let redb = match mode {
                    OpenMode::ReadOnly => read_only_file(path, "it was opened to read".into())?,
                    _ => match RedbBackend::open(path) {
                        // A file this process may read and not write is read all the same.
                        Err(Error::Io { source, .. }) if unwritable(&source) => {
                            read_only_file(path, why_unwritable(&source))?
                        }
                        other => other?,
                    },
                };
                let (backend, upgraded) = open_journaled(redb, path)?;
                let shared = Shared::new(backend, upgraded);
                open.insert(key, Arc::downgrade(&shared));
                Ok(shared)
            }
            Located::Missing if mode != OpenMode::CreateIfMissing => Err(no_store_at(path)),
            // Made whole under another name and moved into place, or made meanwhile by another
            // process: either way, then opened as a file that exists.
            Located::Missing => {
                create::make_file(path, lock_timeout, &|w| {
                    initial_meta(w)?;
                    store_id_of(&*w)
                })?;
                Self::open_file(path, OpenMode::Existing, lock_timeout, open)
            }
        }
    }

    /// A store in memory, for tests and scratch work.
    pub fn in_memory() -> Result<Self> {
        Self::in_memory_with(StoreOptions::default())
    }

    /// A store in memory with options.
    pub fn in_memory_with(options: StoreOptions) -> Result<Self> {
        let shared = Shared::new(Backend::Redb(RedbBackend::in_memory()?), None);
        initialize(&shared.backend)?;
        Ok(Store {
            shared,
            options,
            read_only: None,
        })
    }

    /// A store over an in-memory copy of a store file's bytes: reads and writes go to the copy,
    /// never to a file. Checked as a file is on open (redb's header, tract's tables, the format
    /// version), so damaged bytes are an error, never a panic. For looking into a copy of a
    /// store, and for fuzzing the open path. The bytes hold what was folded into the file: a
    /// store's newest commits may still be in its journal ([`Store::fold_journal`] first), and
    /// from store format 5 a store file's objects are in the packs of its journal directory,
    /// so the bytes of the file alone hold its refs, reflog and settings.
    pub fn from_bytes(bytes: &[u8], options: StoreOptions) -> Result<Self> {
        let store = Store {
            shared: Shared::new(Backend::Redb(RedbBackend::from_bytes(bytes)?), None),
            options,
            read_only: None,
        };
        store.check_format()?;
        Ok(store)
    }

    /// Gives the space freed by `gc` back and overwrites what removed or redacted records
    /// left behind: a file is rewritten to hold only live pages and shrinks (the storage
    /// engine otherwise keeps those bytes in freed pages until it reuses them); PostgreSQL
    /// rewrites the object tables (`VACUUM FULL`). Needs the only handle on the store in this
    /// process, and for a file no transaction of another process under way
    /// ([`Error::StoreLocked`] then; nothing changes).
    pub fn compact(self) -> Result<()> {
        self.writable()?;
        let shared = Arc::try_unwrap(self.shared).map_err(|_| {
            Error::invalid_op("other handles in this process have the store open; close them first")
        })?;
        match shared.backend {
            Backend::Journaled(mut b) => b.compact(self.options.lock_timeout),
            Backend::Redb(mut b) => b.compact(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => b.compact(),
        }
    }

    /// Folds the journal into the store file, so the file alone holds every commit (a store
    /// in memory or in a database has no journal: nothing to do). Writers go on meanwhile in
    /// other processes once it returns; it waits for theirs, as a write does.
    pub fn fold_journal(&self) -> Result<()> {
        self.writable()?;
        match &self.shared.backend {
            Backend::Journaled(b) => b.fold(self.options.lock_timeout),
            _ => Ok(()),
        }
    }

    /// Brings back the store file at `path` when its journal is damaged before its last frame
    /// (which every open refuses, naming the segment and the offset): every frame before the
    /// damage is folded into the file, the damaged segment and every later one are copied into
    /// a directory of the journal and left out of the store, which is then as it was when the
    /// last whole frame before the damage was written. `None`, with nothing changed, when no
    /// frame is damaged. A journal missing, of another store, or a database store is an error:
    /// there is nothing to salvage there.
    pub fn salvage_journal(path: impl AsRef<Path>) -> Result<Option<JournalSalvage>> {
        let path = path.as_ref();
        if path.to_str().is_some_and(is_url) {
            return Err(Error::invalid_input(
                "a database store has no journal to salvage",
            ));
        }
        let redb = match redb_backend::locate(path)? {
            Located::Existing(_) => RedbBackend::open(path)?,
            Located::Missing => return Err(no_store_at(path)),
        };
        let tx = redb.read_txn()?;
        if format_of(&tx)? != Some(FORMAT_VERSION) {
            return Err(Error::invalid_input(format!(
                "{} is not a store of format {FORMAT_VERSION}, the format with a journal: open it \
                 with tract first",
                path.display()
            )));
        }
        let id = store_id_of(&tx)?;
        drop(tx);
        JournaledRedb::salvage(&redb, path, &id, DEFAULT_LOCK_TIMEOUT)
    }

    /// Reads every segment of the journal whole, checking each frame and that its ops decode,
    /// and every pack: how many frames there are (0 without a journal), and the packs that do
    /// not check, with what is wrong.
    pub(crate) fn check_journal(&self) -> Result<(u64, Vec<(PathBuf, String)>)> {
        match &self.shared.backend {
            Backend::Journaled(b) => b.check_journal(),
            _ => Ok((0, Vec::new())),
        }
    }

    /// The value of type `T` this process keeps for this store, made by `make` on first use:
    /// how a higher layer keeps per-store state (the search index's keeper) without this
    /// layer knowing it.
    pub(crate) fn attached<T: std::any::Any + Send + Sync>(
        &self,
        make: impl FnOnce() -> T,
    ) -> Arc<T> {
        let mut all = self
            .shared
            .attached
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(found) = all.iter().find_map(|a| Arc::clone(a).downcast::<T>().ok()) {
            return found;
        }
        let made = Arc::new(make());
        all.push(Arc::clone(&made) as Arc<dyn std::any::Any + Send + Sync>);
        made
    }

    /// The journal directory beside a store file (`None` in memory and in a database): where
    /// the file store's derived files live.
    pub(crate) fn journal_dir(&self) -> Option<PathBuf> {
        match &self.shared.backend {
            Backend::Journaled(b) => Some(crate::storage::journal::dir_of(b.path())),
            _ => None,
        }
    }

    /// The database a store in PostgreSQL is in (`None`: a file or memory): where its search
    /// index's tables are.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres(&self) -> Option<&Arc<PgBackend>> {
        match &self.shared.backend {
            Backend::Postgres(b) => Some(b),
            _ => None,
        }
    }

    /// A snapshot of a store in PostgreSQL at read committed that may also write the
    /// database's own tables beside the store's ([`Snapshot::sql`], then
    /// [`Snapshot::commit_sql`]): the search index's upkeep, on one connection.
    #[cfg(feature = "postgres")]
    pub(crate) fn read_write(&self) -> Result<Snapshot> {
        match &self.shared.backend {
            Backend::Postgres(b) => Ok(Snapshot::new(b.read_write()?)),
            _ => Err(Error::invalid_op("not a store in a database")),
        }
    }

    /// The file, or `None` in memory or in a database.
    pub fn path(&self) -> Option<&Path> {
        self.shared.backend.path()
    }

    /// Where the store is, to show: a file's path or a URL without its password; `None` in
    /// memory.
    pub fn location(&self) -> Option<String> {
        self.shared.backend.location()
    }

    /// The options this handle was opened with.
    pub fn options(&self) -> StoreOptions {
        self.options
    }

    /// The store's format version, which this build must be able to read.
    fn check_format(&self) -> Result<u32> {
        let not_a_store = |reason: &str| Error::NotAStore {
            path: PathBuf::from(self.location().unwrap_or_default()),
            reason: reason.into(),
        };
        let tx = self.shared.backend.read()?;
        let format =
            format_of(tx.as_ref())?.ok_or_else(|| not_a_store("no format version recorded"))?;
        if format > FORMAT_VERSION {
            return Err(Error::NewerFormat {
                found: format,
                supported: FORMAT_VERSION,
            });
        }
        Ok(format)
    }

    /// The store's id (32 hex digits): random, made with the store (or by the upgrade to
    /// format 2), so two stores never share one, clones included.
    pub fn id(&self) -> Result<String> {
        let tx = self.shared.read()?;
        let id = tx
            .meta(META_STORE_ID)?
            .filter(|v| v.len() == 16)
            .ok_or_else(|| Error::corrupt("the store's id is missing or not 16 bytes"))?;
        Ok(id.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Brings the store to [`FORMAT_VERSION`] in one store-wide write (a store already there
    /// is left as it is), and says what changed. Opening a store does this: when this process
    /// upgraded the store as it opened it, that upgrade's report is what this returns, so
    /// `tract upgrade` can say what its own open did.
    pub fn upgrade(&self) -> Result<UpgradeReport> {
        let mut made = self
            .shared
            .upgraded
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(report) = made.as_ref() {
            return Ok(report.clone());
        }
        // A store open to read only that is at the newest format has nothing to do.
        if self.read_only.is_some() && self.check_format()? == FORMAT_VERSION {
            return Ok(UpgradeReport {
                from: FORMAT_VERSION,
                to: FORMAT_VERSION,
                steps: Vec::new(),
            });
        }
        self.writable()?;
        let tx = self
            .shared
            .write(&WriteScope::Store, self.options.lock_timeout)?;
        let report = upgrade::upgrade(tx)?;
        if report.from < report.to {
            *made = Some(report.clone());
        }
        Ok(report)
    }

    /// A consistent read snapshot of everything committed so far, by any process.
    pub fn read(&self) -> Result<Snapshot> {
        Ok(Snapshot::new(self.shared.read()?))
    }

    /// Runs `job` in a write transaction shared with the writes other threads of this
    /// process make at the same moment (group commit: one durable commit for all); returns
    /// once the job's writes are durable. A job refused before writing fails alone.
    /// `refs` are the refs the job may move (see [`Store::write_refs`]).
    pub(crate) fn write_grouped<T: Send + 'static>(
        &self,
        refs: Vec<String>,
        job: impl FnOnce(&mut Writer) -> Result<T, JobError> + Send + 'static,
    ) -> Result<T> {
        self.writable()?;
        self.shared
            .group
            .submit(
                job,
                WriteScope::Refs(refs),
                &|scope| self.write_scoped(scope),
                &|w: Writer| w.commit(),
            )
            .map_err(|e| self.shared.backend.at_commit(e))
    }

    /// Starts a write transaction for store-wide work (gc, redaction, sync, settings): it
    /// waits a bounded time for every other writer, in any process, and they for it.
    pub(crate) fn write(&self) -> Result<Writer> {
        self.write_scoped(&WriteScope::Store)
    }

    /// Starts a write transaction that moves only `refs` (branch names, or `HEAD`): on a
    /// database, writers of other refs go on beside it, while writers of the same refs wait
    /// a bounded time for each other. A ref it moves without naming it here is locked when
    /// first touched. In a file, every write waits for the one before it.
    pub(crate) fn write_refs(&self, refs: &[&str]) -> Result<Writer> {
        let names = refs.iter().map(|r| r.to_string()).collect();
        self.write_scoped(&WriteScope::Refs(names))
    }

    /// Whether this handle may write: [`Error::ReadOnly`] when it may only read.
    pub(crate) fn writable(&self) -> Result<()> {
        match &self.read_only {
            Some(reason) => Err(self.shared.backend.read_only_error(reason)),
            None => Ok(()),
        }
    }

    /// Why this handle may only read (`None`: it may write): opened to read, or a store this
    /// process cannot write.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// Whether the store is open in this process to read only, whatever this handle's mode
    /// (what it derives, such as the search index, is then kept in memory).
    pub(crate) fn opened_read_only(&self) -> bool {
        self.shared.backend.read_only().is_some()
    }

    fn write_scoped(&self, scope: &WriteScope) -> Result<Writer> {
        self.writable()?;
        let tx = self.shared.write(scope, self.options.lock_timeout)?;
        Ok(Writer::new(tx, self.options.clock))
    }

    /// The faults of this store's backend, shared by every handle on it in this process: its
    /// calls counted, and faults armed for calls to come (tests only).
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// How many round trips this process has waited for on this store: `None` for a store not
    /// in a database (tests only).
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn round_trips(&self) -> Option<u64> {
        match &self.shared.backend {
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => Some(b.round_trips()),
            _ => None,
        }
    }

    /// A raw write transaction on the backend, for damaging the store (tests only): it waits
    /// for every other writer, as store-wide work does.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn damage(&self) -> Result<Damage> {
        let tx = (self.shared.backend).write(&WriteScope::Store, self.options.lock_timeout)?;
        Ok(Damage::new(tx, self.options.clock))
    }

    /// A raw write transaction on the backend that moves only `refs` (see
    /// [`Store::write_refs`]), for damaging the store (tests only).
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn damage_refs(&self, refs: &[&str]) -> Result<Damage> {
        let scope = WriteScope::Refs(refs.iter().map(|r| r.to_string()).collect());
        let tx = (self.shared.backend).write(&scope, self.options.lock_timeout)?;
        Ok(Damage::new(tx, self.options.clock))
    }
}

impl Shared {
    fn new(backend: Backend, upgraded: Option<UpgradeReport>) -> Arc<Self> {
        Arc::new(Shared {
            #[cfg(feature = "testing")]
            faults: Faults::new(backend.location()),
            backend,
            group: GroupCommit::default(),
            upgraded: Mutex::new(upgraded),
            attached: Mutex::default(),
        })
    }

    /// A read transaction (in a build with the `testing` feature, through the store's faults).
    fn read(&self) -> Result<Box<dyn ReadTx + Sync>> {
        #[cfg(feature = "testing")]
        self.faults.enter(Call::BeginRead)?;
        let tx = self.backend.read()?;
        #[cfg(feature = "testing")]
        let tx = self.faults.read(tx);
        Ok(tx)
    }

    /// A write transaction for `scope` (in a build with the `testing` feature, through the
    /// store's faults).
    fn write(&self, scope: &WriteScope, lock_timeout: Duration) -> Result<Box<dyn WriteTx>> {
        #[cfg(feature = "testing")]
        self.faults.enter(Call::BeginWrite)?;
        let tx = self.backend.write(scope, lock_timeout)?;
        #[cfg(feature = "testing")]
        let tx = self.faults.write(tx);
        Ok(tx)
    }
}

/// Writes the metadata of a new store (format, token encoding, `HEAD`), once.
fn initialize(backend: &Backend) -> Result<()> {
    let mut w = backend.write(&WriteScope::Store, DEFAULT_LOCK_TIMEOUT)?;
    initial_meta(w.as_mut())?;
    w.commit()
}

/// The metadata of a new store, unless `w` finds it there.
fn initial_meta(w: &mut dyn WriteTx) -> Result<()> {
    if w.meta(META_FORMAT)?.is_none() {
        upgrade::initialize(w)?;
        w.set_meta(META_ENCODING, Some(crate::tokens::ENCODING.as_bytes()))?;
        let head = encode_small(&HeadRef::Branch(DEFAULT_BRANCH.into()))?;
        w.set_meta(META_HEAD, Some(head.as_slice()))?;
        // A new store scrubs secrets from its first write (DESIGN §16); an older store is
        // offered the policy by `tract upgrade`, never given it silently.
        let key = crate::secrets::scrub::new_key()?;
        w.set_meta(META_SECRETS_KEY, Some(key.as_slice()))?;
        let policy = serde_json::to_vec(&crate::secrets::policy::SecretsPolicy::default())
            .map_err(|e| Error::invalid_input(format!("the secrets policy: {e}")))?;
        w.set_meta(&setting_key(SECRETS_SETTING), Some(policy.as_slice()))?;
    }
    Ok(())
}

/// A store file opened with its journal. A store an older build wrote is upgraded first, in
/// one redb transaction that makes the journal (or, from format 3, its next segment, in the
/// journal format this build writes) and moves the objects of redb's tables into a pack before
/// it records the new format; what is not a store this build can open is left to
/// [`Store::check_format`] to name.
fn open_journaled(redb: RedbBackend, path: &Path) -> Result<(Backend, Option<UpgradeReport>)> {
    // The first read of the file: where one opened to read finds it cut short.
    let format = redb
        .read_txn()
        .and_then(|tx| format_of(&tx))
        .map_err(|e| redb_backend::on_truncation(path, e))?;
    let report = match format {
        // A store open to read is read in the format it is in (from 3, with its journal).
        Some(f) if redb.read_only().is_some() => match f {
            ..3 => return Ok((Backend::Redb(redb), None)),
            _ => None,
        },
        Some(f) if f < FORMAT_VERSION => {
            let w = redb.write_txn(DEFAULT_LOCK_TIMEOUT)?;
            let report = upgrade::upgrade_then(Box::new(w), &mut |tx, from| {
                let (id, folded) = (store_id_of(&*tx)?, folded_of(&*tx)?);
                match from {
                    ..3 => JournaledRedb::create_journal(path, &id, folded),
                    _ => JournaledRedb::start_next_segment(path, &id, folded, DEFAULT_LOCK_TIMEOUT),
                }?;
                JournaledRedb::pack_objects(tx, path, &id)
            })?;
            (report.from < report.to).then_some(report)
        }
        Some(f) if f == FORMAT_VERSION => None,
        _ => return Ok((Backend::Redb(redb), None)),
    };
    let id = store_id_of(&redb.read_txn()?)?;
    // Before format 5 the objects were in the file's tables: a store open to read only is
    // read as it is (one open to write was upgraded above).
    let tables = redb.read_only().is_some() && format.is_some_and(|f| f < 5);
    let backend = JournaledRedb::open(redb, path, &id, tables)?;
    Ok((Backend::Journaled(backend), report))
}

/// Whether an error opening a file for writing says this process may not write it.
fn unwritable(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    )
}

/// Why a file this process may not write opens to read only, from the error opening it to write.
fn why_unwritable(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ReadOnlyFilesystem => "it is on a read-only file system".into(),
        _ => format!("its file cannot be written ({e})"),
    }
}

/// The store file at `path` opened to read only, `reason` saying why. A file a writer left in
/// the middle of a write (a process killed) needs the storage engine's recovery before it is
/// read, and only an open to write does it: where this process may write the file, it opens it
/// so once (the recovery changes no commit, only the engine's own state), then reads it as
/// asked; where it may not, the read is refused saying so.
fn read_only_file(path: &Path, reason: String) -> Result<RedbBackend> {
    match RedbBackend::open_read_only(path, reason.clone()) {
        Err(Error::Storage { source }) if matches!(&*source, redb::Error::RepairAborted) => {
            match RedbBackend::open(path) {
                Ok(recovered) => drop(recovered),
                Err(Error::Io { source, .. }) if unwritable(&source) => {
                    return Err(Error::ReadOnly {
                        store: path.display().to_string(),
                        reason: format!(
                            "{}, and a writer stopped in the middle of a write, so the file \
                             needs the recovery only an open to write does; open it once \
                             where it can be written (or a copy of it with its -journal \
                             directory)",
                            why_unwritable(&source)
                        ),
                    });
                }
                Err(e) => return Err(e),
            }
            RedbBackend::open_read_only(path, reason)
        }
        other => other,
    }
}

/// The error for a path where a store was asked for and no file is.
fn no_store_at(path: &Path) -> Error {
    Error::io(
        path.to_path_buf(),
        std::io::Error::new(std::io::ErrorKind::NotFound, "no tract store here"),
    )
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
