//! The store: tract's model (commits, blobs, refs, reflog, settings, branch counts) on a
//! storage backend, with opening rules, snapshots for reading and one writer at a time.
//!
//! Backends ([`crate::storage::backend`]) keep raw records; everything that makes them tract's lives
//! here, once for all of them: objects are decoded and verified against their ids on every
//! read, written once under their ids, and a ref's every move is logged. The embedded backend
//! is a redb file (or memory); with the `postgres` feature, a PostgreSQL database
//! (`postgresql://` URLs). Within one process, every handle on one store shares one open
//! backend, and writes arriving together share one transaction (group commit, see
//! [`crate::storage::group`]).

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::id::{BlobId, ChunkId, CommitId, HexPrefix};
use crate::object::{Commit, Message};
pub use crate::refs::{Head, HeadRef, ReflogEntry};
use crate::stats::BranchStats;
use crate::storage::backend::{Key, ObjectTable, ReadTx, Row, WriteScope, WriteTx};
use crate::storage::codec;
use crate::storage::group::{GroupCommit, JobError};
#[cfg(feature = "postgres")]
use crate::storage::postgres::backend::PgBackend;
use crate::storage::redb_backend::{self, Created, Located, RedbBackend};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

/// The store format written by this build (tables and record layout).
pub const FORMAT_VERSION: u32 = 1;

/// Where a store lives by default, relative to a project directory.
pub const DEFAULT_DIR: &str = ".tract";
/// The store file's name inside [`DEFAULT_DIR`].
pub const DEFAULT_FILE: &str = "store.redb";
/// The branch a new store starts on.
pub const DEFAULT_BRANCH: &str = "main";

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

/// How to open a store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OpenMode {
    /// The store must exist and be a tract store.
    Existing,
    /// Create the store if it does not exist; an existing one must be a tract store.
    #[default]
    CreateIfMissing,
}

/// A tract store: a redb file, memory or a PostgreSQL database, as one handle uses it (its
/// options).
pub struct Store {
    shared: Arc<Shared>,
    options: StoreOptions,
}

/// What every handle on one store in this process shares: the open backend (one per store and
/// process) and the queue that groups its writes into shared transactions.
struct Shared {
    backend: Backend,
    group: GroupCommit<Writer>,
}

/// The open backend.
enum Backend {
    Redb(RedbBackend),
    #[cfg(feature = "postgres")]
    Postgres(Arc<PgBackend>),
}

impl Backend {
    fn read(&self) -> Result<Box<dyn ReadTx + Sync>> {
        match self {
            Backend::Redb(b) => b.read(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => b.read(),
        }
    }

    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    fn write(&self, scope: &WriteScope, lock_timeout: Duration) -> Result<Box<dyn WriteTx>> {
        match self {
            // One writer at a time in a file, whatever it moves.
            Backend::Redb(b) => b.write(lock_timeout),
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => b.write(scope, lock_timeout),
        }
    }

    /// Whether the store is in a database (where its creation takes two transactions).
    fn is_database(&self) -> bool {
        match self {
            Backend::Redb(_) => false,
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => true,
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            Backend::Redb(b) => b.path(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => None,
        }
    }

    /// Where the store is: a file's path, a URL without its password; `None` in memory.
    fn location(&self) -> Option<String> {
        match self {
            Backend::Redb(b) => b.path().map(|p| p.display().to_string()),
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => Some(b.location().to_string()),
        }
    }

    /// An error at commit named after the store (an OS error on the file, with its code).
    fn at_commit(&self, e: Error) -> Error {
        match self {
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
    /// Another handle's view of the same open store (same backend, same write queue).
    fn clone(&self) -> Self {
        Store {
            shared: Arc::clone(&self.shared),
            options: self.options,
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
            None => Self::open_file(path, mode, &mut open)?,
        };
        let store = Store { shared, options };
        match store.check_format() {
            // A database store whose creator stopped between making the tables and recording
            // the format (two transactions, as the format is written through the store's own
            // write path): completed now, under the store's lock, as its creator would have.
            Err(Error::NotAStore { .. })
                if mode == OpenMode::CreateIfMissing && store.shared.backend.is_database() =>
            {
                initialize(&store.shared.backend)?;
                store.check_format()?;
            }
            other => other?,
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
                let shared = Shared::new(Backend::Postgres(Arc::new(backend)));
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
        open: &mut HashMap<String, Weak<Shared>>,
    ) -> Result<Arc<Shared>> {
        match redb_backend::locate(path)? {
            Located::Existing(canonical) => {
                let key = canonical.display().to_string();
                if let Some(shared) = open.get(&key).and_then(Weak::upgrade) {
                    return Ok(shared);
                }
                let shared = Shared::new(Backend::Redb(RedbBackend::open(path)?));
                open.insert(key, Arc::downgrade(&shared));
                Ok(shared)
            }
            Located::Missing if mode == OpenMode::Existing => Err(Error::io(
                path.to_path_buf(),
                std::io::Error::new(std::io::ErrorKind::NotFound, "no tract store here"),
            )),
            Located::Missing => match RedbBackend::create(path)? {
                Created::Raced => Self::open_file(path, OpenMode::Existing, open),
                Created::New(backend) => {
                    let shared = Shared::new(Backend::Redb(backend));
                    initialize(&shared.backend)?;
                    let canonical = path.canonicalize().map_err(|e| Error::io(path, e))?;
                    open.insert(canonical.display().to_string(), Arc::downgrade(&shared));
                    Ok(shared)
                }
            },
        }
    }

    /// A store in memory, for tests and scratch work.
    pub fn in_memory() -> Result<Self> {
        Self::in_memory_with(StoreOptions::default())
    }

    /// A store in memory with options.
    pub fn in_memory_with(options: StoreOptions) -> Result<Self> {
        let shared = Shared::new(Backend::Redb(RedbBackend::in_memory()?));
        initialize(&shared.backend)?;
        Ok(Store { shared, options })
    }

    /// A store over an in-memory copy of a store file's bytes: reads and writes go to the copy,
    /// never to a file. Checked as a file is on open (redb's header, tract's tables, the format
    /// version), so damaged bytes are an error, never a panic. For looking into a copy of a
    /// store, and for fuzzing the open path.
    pub fn from_bytes(bytes: &[u8], options: StoreOptions) -> Result<Self> {
        let store = Store {
            shared: Shared::new(Backend::Redb(RedbBackend::from_bytes(bytes)?)),
            options,
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
        let shared = Arc::try_unwrap(self.shared).map_err(|_| {
            Error::invalid_op("other handles in this process have the store open; close them first")
        })?;
        match shared.backend {
            Backend::Redb(mut b) => b.compact(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(b) => b.compact(),
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

    fn check_format(&self) -> Result<()> {
        let not_a_store = |reason: &str| Error::NotAStore {
            path: PathBuf::from(self.location().unwrap_or_default()),
            reason: reason.into(),
        };
        let tx = self.shared.backend.read()?;
        let format = tx
            .meta(META_FORMAT)?
            .and_then(|v| <[u8; 4]>::try_from(v.as_slice()).ok())
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
        Ok(Snapshot::new(self.shared.backend.read()?))
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
    pub fn write(&self) -> Result<Writer> {
        self.write_scoped(&WriteScope::Store)
    }

    /// Starts a write transaction that moves only `refs` (branch names, or `HEAD`): on a
    /// database, writers of other refs go on beside it, while writers of the same refs wait
    /// a bounded time for each other. A ref it moves without naming it here is locked when
    /// first touched. In a file, every write waits for the one before it.
    pub fn write_refs(&self, refs: &[&str]) -> Result<Writer> {
        let names = refs.iter().map(|r| r.to_string()).collect();
        self.write_scoped(&WriteScope::Refs(names))
    }

    fn write_scoped(&self, scope: &WriteScope) -> Result<Writer> {
        Ok(Writer {
            tx: self
                .shared
                .backend
                .write(scope, self.options.lock_timeout)?,
            clock: self.options.clock,
            pending: Pending::default(),
        })
    }
}

impl Shared {
    fn new(backend: Backend) -> Arc<Self> {
        Arc::new(Shared {
            backend,
            group: GroupCommit::default(),
        })
    }
}

/// Writes the metadata of a new store (format, token encoding, `HEAD`), once.
fn initialize(backend: &Backend) -> Result<()> {
    let mut w = backend.write(&WriteScope::Store, DEFAULT_LOCK_TIMEOUT)?;
    if w.meta(META_FORMAT)?.is_none() {
        w.set_meta(META_FORMAT, Some(FORMAT_VERSION.to_le_bytes().as_slice()))?;
        w.set_meta(META_ENCODING, Some(crate::tokens::ENCODING.as_bytes()))?;
        let head = encode_small(&HeadRef::Branch(DEFAULT_BRANCH.into()))?;
        w.set_meta(META_HEAD, Some(head.as_slice()))?;
    }
    w.commit()
}

pub(crate) fn encode_small<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    postcard::to_allocvec(v).map_err(|e| Error::corrupt(format!("cannot encode: {e}")))
}

pub(crate) fn decode_small<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|e| Error::corrupt(format!("cannot decode: {e}")))
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

/// The commit in a record, verified against its id.
fn read_commit(record: Option<Vec<u8>>, id: &CommitId) -> Result<Commit> {
    let record = record.ok_or(Error::MissingCommit { commit: *id })?;
    verified_commit(id, &record)
}

/// A blob's message and payload tokens from its record (a tombstone's placeholder for a
/// redacted one), its chunks fetched by `chunk`; hashed against its id when `verify`.
fn read_blob(
    record: Option<Vec<u8>>,
    id: &BlobId,
    verify: bool,
    chunk: impl FnMut(&ChunkId) -> Result<Vec<u8>>,
) -> Result<(Message, u32)> {
    let rec = record.ok_or_else(|| damaged("blob", id.to_hex(), "its record is missing"))?;
    let tokens = codec::tokens(&rec).map_err(|e| decoding("blob", id.to_hex(), e))?;
    if let Some(body) = codec::tombstone_body(&rec) {
        let t = Tombstone::decode(body).map_err(|e| decoding("blob", id.to_hex(), e))?;
        return Ok((t.placeholder, tokens));
    }
    let bytes = codec::decode(&rec, true, chunk).map_err(|e| decoding("blob", id.to_hex(), e))?;
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

/// A chunk's record from `tx` (a missing one is a corrupt store).
fn chunk_from(tx: &(impl ReadTx + ?Sized), id: &ChunkId) -> Result<Vec<u8>> {
    tx.object(ObjectTable::Chunks, id.as_bytes())?
        .ok_or_else(|| Error::corrupt(format!("its chunk {} is missing", id.short())))
}

fn read_counter(tx: &(impl ReadTx + ?Sized), key: &str) -> Result<u64> {
    Ok(tx
        .meta(key)?
        .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
        .map_or(0, u64::from_le_bytes))
}

fn read_head_ref(tx: &(impl ReadTx + ?Sized)) -> Result<HeadRef> {
    let raw = tx
        .meta(META_HEAD)?
        .ok_or_else(|| Error::corrupt("HEAD is missing"))?;
    decode_small(&raw)
}

fn read_head(tx: &(impl ReadTx + ?Sized)) -> Result<Head> {
    let target = read_head_ref(tx)?;
    let commit = match &target {
        HeadRef::Branch(b) => tx.tip(b)?.map(CommitId::from_bytes),
        HeadRef::Detached(id) => Some(*id),
    };
    Ok(Head { target, commit })
}

/// The error for branch `name`, which has no tip: the branches there are, the closest named.
fn unknown_branch(tx: &(impl ReadTx + ?Sized), name: &str) -> Result<Error> {
    let tips = tx.tips()?;
    Ok(Error::unknown_branch(
        name,
        tips.iter().map(|(n, _)| n.as_str()),
    ))
}

fn tips(tx: &(impl ReadTx + ?Sized)) -> Result<Vec<(String, CommitId)>> {
    Ok(tx
        .tips()?
        .into_iter()
        .map(|(name, id)| (name, CommitId::from_bytes(id)))
        .collect())
}

/// Goes on from `cursor` along first parents to `stop` (excluded), after the commits already
/// in `chain` (newest first); returns the whole chain oldest first, and whether `stop` was
/// reached.
pub(crate) fn walk_first_parents(
    mut chain: Vec<(CommitId, Commit)>,
    mut cursor: Option<CommitId>,
    stop: Option<CommitId>,
    commit: impl Fn(&CommitId) -> Result<Commit>,
) -> Result<(Vec<(CommitId, Commit)>, bool)> {
    while let Some(id) = cursor {
        if Some(id) == stop {
            break;
        }
        let c = commit(&id)?;
        cursor = c.parent();
        chain.push((id, c));
    }
    chain.reverse();
    Ok((chain, cursor.is_some() && cursor == stop))
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

/// A read snapshot: one consistent state of everything committed.
pub struct Snapshot {
    tx: Box<dyn ReadTx + Sync>,
    /// Commits read in bulk along a branch (backends across a network), so the walks that
    /// follow find them without a round trip each.
    walked: Mutex<HashMap<CommitId, Commit>>,
}

impl Snapshot {
    fn new(tx: Box<dyn ReadTx + Sync>) -> Self {
        Snapshot {
            tx,
            walked: Mutex::default(),
        }
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
        let mut cursor = Some(head);
        if Some(head) != stop {
            let stop_key = stop.map(|s| *s.as_bytes());
            if let Some(records) = self
                .tx
                .first_parent_records(head.as_bytes(), stop_key.as_ref())?
            {
                let mut walked = self.walked();
                for (key, record) in records {
                    let id = CommitId::from_bytes(key);
                    let commit = verified_commit(&id, &record)?;
                    walked.insert(id, commit.clone());
                    chain.push((id, commit));
                }
                // The query follows the parent kept beside each record; the walk below checks
                // it against the verified commits and reads on where the query stopped.
                cursor = Some(head);
                let mut checked = Vec::with_capacity(chain.len());
                for (id, commit) in chain.drain(..) {
                    if cursor != Some(id) {
                        break;
                    }
                    cursor = commit.parent();
                    checked.push((id, commit));
                }
                chain = checked;
            }
        }
        walk_first_parents(chain, cursor, stop, |id| self.commit(id))
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
        ids.iter()
            .zip(records)
            .map(|(id, record)| read_blob(record, id, true, |c| chunk_from(&*self.tx, c)))
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

    /// The tip of branch `name`; a branch with no commits is [`Error::UnknownBranch`], naming
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

    /// A setting stored in the store (`None` when it was never set).
    pub fn setting(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.tx.meta(&format!("{SETTING_PREFIX}{name}"))
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

    /// A redacted blob's tombstone; `None` for a blob that is not redacted.
    pub fn tombstone(&self, id: &BlobId) -> Result<Option<Tombstone>> {
        match self.tx.object(ObjectTable::Blobs, id.as_bytes())? {
            Some(rec) => tombstone_of(&rec).transpose(),
            None => Ok(None),
        }
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
            .map(|(name, row)| (name, decode_small(&row)))
            .collect())
    }

    /// The counts kept for a branch (at the tip they name, which may be stale).
    pub fn branch_stats(&self, name: &str) -> Result<Option<BranchStats>> {
        self.tx.stats(name)?.map(|r| decode_small(&r)).transpose()
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

/// A blob as another store receives it.
pub(crate) enum BlobCopy {
    /// The message's bytes (verified) and its payload tokens.
    Payload {
        /// The encoded message.
        bytes: Vec<u8>,
        /// Its payload tokens.
        tokens: u32,
    },
    /// A redacted blob: its tombstone record, as stored.
    Tombstone {
        /// The record.
        record: Vec<u8>,
    },
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
pub struct Objects<'w> {
    pending: &'w mut Pending,
}

impl Objects<'_> {
    /// Stores a blob (once: identical payloads share it) and returns its id.
    pub fn put_blob(&mut self, bytes: &[u8], tokens: u32) -> Result<BlobId> {
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
    pub fn put_commit(&mut self, commit: &Commit) -> Result<CommitId> {
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
pub struct Writer {
    tx: Box<dyn WriteTx>,
    clock: Clock,
    pending: Pending,
}

impl Writer {
    /// The handle's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// `HEAD` as this transaction sees it (the latest committed state).
    pub fn head(&self) -> Result<Head> {
        read_head(&*self.tx)
    }

    /// A commit by id, including ones written in this transaction.
    pub fn commit_object(&self, id: &CommitId) -> Result<Commit> {
        if let Some((record, _)) = self.pending.commits.get(id) {
            return verified_commit(id, record);
        }
        read_commit(self.tx.object(ObjectTable::Commits, id.as_bytes())?, id)
    }

    /// A blob by id, including ones written in this transaction.
    pub fn blob(&self, id: &BlobId) -> Result<(Message, u32)> {
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

    /// Writing objects (blobs and commits) in this transaction.
    pub fn objects(&mut self) -> Result<Objects<'_>> {
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

    /// Stores a setting, or removes it with `None`.
    pub fn set_setting(&mut self, name: &str, value: Option<&[u8]>) -> Result<()> {
        self.tx.set_meta(&format!("{SETTING_PREFIX}{name}"), value)
    }

    /// A branch's tip.
    pub fn branch(&self, name: &str) -> Result<Option<CommitId>> {
        Ok(self.tx.tip(name)?.map(CommitId::from_bytes))
    }

    /// A branch's tip; a branch with no commits is [`Error::UnknownBranch`], naming the
    /// existing branches closest to it.
    pub fn require_branch(&self, name: &str) -> Result<CommitId> {
        match self.branch(name)? {
            Some(tip) => Ok(tip),
            None => Err(unknown_branch(&*self.tx, name)?),
        }
    }

    /// Points a branch at `new` (or removes it with `None`), logging the move.
    pub fn set_branch(&mut self, name: &str, new: Option<CommitId>, reason: &str) -> Result<()> {
        let old = self.branch(name)?;
        self.tx
            .set_tip(name, old.map(|c| *c.as_bytes()), new.map(|c| *c.as_bytes()))?;
        self.log_move(name, old, new, reason)
    }

    /// Points `HEAD` at a branch or a commit, logging the move under `HEAD`.
    pub fn set_head(&mut self, target: &HeadRef, reason: &str) -> Result<()> {
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
    pub fn advance_head(&mut self, head: &Head, new: CommitId, reason: &str) -> Result<()> {
        match &head.target {
            HeadRef::Branch(b) => self.set_branch(b, Some(new), reason),
            HeadRef::Detached(_) => self.set_head(&HeadRef::Detached(new), reason),
        }
    }

    /// The counts kept for a branch (at the tip they name, which may be stale).
    pub fn branch_stats(&self, name: &str) -> Result<Option<BranchStats>> {
        self.tx.stats(name)?.map(|r| decode_small(&r)).transpose()
    }

    /// How many redactions the store has seen, this transaction's included.
    pub(crate) fn redactions(&self) -> Result<u64> {
        read_counter(&*self.tx, META_REDACTIONS)
    }

    /// Stores a branch's counts, or removes them with `None`.
    pub fn set_branch_stats(&mut self, name: &str, stats: Option<&BranchStats>) -> Result<()> {
        match stats {
            Some(s) => self.tx.set_stats(name, Some(encode_small(s)?.as_slice())),
            None => self.tx.set_stats(name, None),
        }
    }

    /// The last move of a ref (`None` if it never moved).
    pub fn last_move(&self, name: &str) -> Result<Option<ReflogEntry>> {
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
    pub fn redact_blob(
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

    /// Removes the reflog entries made at `cutoff_us` or before and returns the commits the
    /// entries left name.
    pub(crate) fn expire_reflog(&mut self, cutoff_us: u64) -> Result<(u64, Vec<CommitId>)> {
        let mut old_keys = Vec::new();
        let mut kept = Vec::new();
        for (name, n, raw) in self.tx.reflog_all()? {
            let entry: ReflogEntry = decode_small(&raw)?;
            if entry.timestamp_us <= cutoff_us {
                old_keys.push((name, n));
            } else {
                kept.extend(entry.old.into_iter().chain(entry.new));
            }
        }
        self.tx.remove_reflog(&old_keys)?;
        Ok((old_keys.len() as u64, kept))
    }

    /// The names of the branches that have kept counts.
    pub(crate) fn counted_branches(&self) -> Result<Vec<String>> {
        Ok(self.tx.all_stats()?.into_iter().map(|(n, _)| n).collect())
    }

    /// Makes everything durable before returning.
    pub fn commit(mut self) -> Result<()> {
        self.flush()?;
        self.tx.commit()
    }
}
