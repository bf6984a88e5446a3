//! The store: tract's model (commits, blobs, refs, reflog, settings, branch counts) on a
//! storage backend, with opening rules, snapshots for reading and one writer at a time.
//!
//! Backends (`storage::backend`) keep raw records; everything that makes them tract's
//! lives in this folder, once for all of them: objects are decoded and verified against their
//! ids on every read (`verify`), written once under their ids, and a ref's every move is logged
//! (`writer`); `snapshot` reads, `meta` holds the named values beside the objects; `create`
//! makes a store file so that a process stopped part way leaves none or a whole one. This file
//! holds the `Store` and what its handles share (`storage::open` opens one: a redb file, memory
//! or, with the `postgres` feature, a PostgreSQL database). Within one process, every handle on
//! one store shares one open backend, and writes arriving together share one transaction (group
//! commit, see `storage::group`). With the `testing` feature, `faults` makes the backend fail on demand,
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
use crate::storage::backend::{Backend, ReadTx, WriteScope, WriteTx};
use crate::storage::group::{GroupCommit, JobError};
#[cfg(feature = "testing")]
use crate::storage::store::faults::{Call, Damage, Faults};
use crate::storage::store::meta::{
    META_ENCODING, META_FORMAT, META_HEAD, META_SECRETS_KEY, META_STORE_ID, SECRETS_SETTING,
    encode_small, setting_key,
};
pub use crate::storage::store::snapshot::Snapshot;
use crate::storage::store::upgrade::format_of;
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
pub(crate) const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);

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
    pub(crate) shared: Arc<Shared>,
    pub(crate) options: StoreOptions,
    /// Why this handle may only read (`None`: it may write).
    pub(crate) read_only: Option<Arc<str>>,
}

/// What every handle on one store in this process shares: the open backend (one per store and
/// process) and the queue that groups its writes into shared transactions.
pub(crate) struct Shared {
    pub(crate) backend: Box<dyn Backend>,
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

/// The stores open in this process, by canonical path or URL: a second open of a store
/// shares the first one's backend and write queue.
pub(crate) static OPEN: LazyLock<Mutex<HashMap<String, Weak<Shared>>>> =
    LazyLock::new(Mutex::default);

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
        shared.backend.compact(self.options.lock_timeout)
    }

    /// Folds the journal into the store file, so the file alone holds every commit (a store
    /// in memory or in a database has no journal: nothing to do). Writers go on meanwhile in
    /// other processes once it returns; it waits for theirs, as a write does.
    pub fn fold_journal(&self) -> Result<()> {
        self.writable()?;
        self.shared.backend.fold(self.options.lock_timeout)
    }

    /// Reads every segment of the journal whole, checking each frame and that its ops decode,
    /// and every pack: how many frames there are (0 without a journal), and the packs that do
    /// not check, with what is wrong.
    pub(crate) fn check_journal(&self) -> Result<(u64, Vec<(PathBuf, String)>)> {
        self.shared.backend.check_journal()
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
    pub(crate) fn check_format(&self) -> Result<u32> {
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
            Some(reason) => Err(read_only_error(&*self.shared.backend, reason)),
            None => Ok(()),
        }
    }

    /// Why this handle may only read (`None`: it may write): opened to read, or a store this
    /// process cannot write.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
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
        self.shared.backend.round_trips()
    }

    /// A raw write transaction on the backend, for damaging the store (tests only): it waits
    /// for every other writer, as store-wide work does.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn damage(&self) -> Result<Damage> {
        let tx = write(
            &*self.shared.backend,
            &WriteScope::Store,
            self.options.lock_timeout,
        )?;
        Ok(Damage::new(tx, self.options.clock))
    }

    /// A raw write transaction on the backend that moves only `refs` (see
    /// [`Store::write_refs`]), for damaging the store (tests only).
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn damage_refs(&self, refs: &[&str]) -> Result<Damage> {
        let scope = WriteScope::Refs(refs.iter().map(|r| r.to_string()).collect());
        let tx = write(&*self.shared.backend, &scope, self.options.lock_timeout)?;
        Ok(Damage::new(tx, self.options.clock))
    }
}

impl Shared {
    pub(crate) fn new(backend: Box<dyn Backend>, upgraded: Option<UpgradeReport>) -> Arc<Self> {
        Arc::new(Shared {
            #[cfg(feature = "testing")]
            faults: Faults::new(backend.location()),
            backend,
            group: GroupCommit::default(),
            upgraded: Mutex::new(upgraded),
            attached: Mutex::default(),
        })
    }

    /// Attaches `value` for the higher layers (see [`Store::attached`]): what the opener of
    /// a store gives every handle on it (the search index's keeper).
    pub(crate) fn attach<T: std::any::Any + Send + Sync>(&self, value: T) {
        let mut all = self.attached.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|a| !a.is::<T>());
        all.push(Arc::new(value));
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
        let tx = write(&*self.backend, scope, lock_timeout)?;
        #[cfg(feature = "testing")]
        let tx = self.faults.write(tx);
        Ok(tx)
    }
}

/// A write transaction on `backend`, or the error a write gets on one open to read only.
fn write(
    backend: &dyn Backend,
    scope: &WriteScope,
    lock_timeout: Duration,
) -> Result<Box<dyn WriteTx>> {
    match backend.read_only() {
        Some(reason) => Err(read_only_error(backend, reason)),
        None => backend.write(scope, lock_timeout),
    }
}

/// The error a write gets on a store open to read only, for `reason`.
fn read_only_error(backend: &dyn Backend, reason: &str) -> Error {
    Error::ReadOnly {
        store: backend.location().unwrap_or_else(|| "in memory".into()),
        reason: reason.into(),
    }
}

/// Writes the metadata of a new store (format, token encoding, `HEAD`), once.
pub(crate) fn initialize(backend: &dyn Backend) -> Result<()> {
    let mut w = write(backend, &WriteScope::Store, DEFAULT_LOCK_TIMEOUT)?;
    initial_meta(w.as_mut())?;
    w.commit()
}

/// The metadata of a new store, unless `w` finds it there.
pub(crate) fn initial_meta(w: &mut dyn WriteTx) -> Result<()> {
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
