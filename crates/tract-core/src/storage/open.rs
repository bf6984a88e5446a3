//! Opening a store: the one place that picks a kind of store (a file, memory, a database by
//! its URL's scheme) and the search index that goes with it, and shares one open backend
//! between the handles of a process.
//!
//! A new kind of store is added here: its backend ([`crate::storage::backend::Backend`]) and
//! its [`SearchIndex`] (its own, or a [`TantivyIndex`] in memory or in a directory), opened
//! for its paths or URLs (docs/architecture.md, "A new kind of store").

use crate::error::{Error, Result};
use crate::storage::backend::Backend;
use crate::storage::journaled::{JournaledRedb, folded_of};
use crate::storage::memory::MemoryBackend;
#[cfg(feature = "postgres")]
use crate::storage::postgres::{backend::PgBackend, search::PgSearch};
use crate::storage::redb_backend::{self, Located, RedbBackend};
use crate::storage::search::SearchIndex;
use crate::storage::search::keeper::Keeper;
use crate::storage::search::tantivy_index::TantivyIndex;
use crate::storage::search::tantivy_index::index::DIR;
use crate::storage::store::upgrade::{self, FORMAT_VERSION, UpgradeReport, format_of, store_id_of};
use crate::storage::store::{
    DEFAULT_LOCK_TIMEOUT, JournalSalvage, OPEN, OpenMode, Shared, Store, StoreOptions, create,
    initial_meta, initialize, is_url,
};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A backend shared by the handles of this process, with its search index's keeper.
fn shared(
    backend: Box<dyn Backend>,
    upgraded: Option<UpgradeReport>,
    search: Arc<dyn SearchIndex>,
) -> Arc<Shared> {
    let shared = Shared::new(backend, upgraded);
    shared.attach(Keeper::new(search));
    shared
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
                initialize(&*store.shared.backend)?;
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
                    .filter(|s| s.backend.shareable());
                if let Some(shared) = reused {
                    return Ok(shared);
                }
                let backend = Arc::new(backend);
                let search = Arc::new(PgSearch::new(Arc::clone(&backend)));
                let shared = shared(Box::new(backend), None, search);
                if created {
                    initialize(&*shared.backend)?;
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
                // A store file's index is beside it, in its journal directory, where this
                // process may write it; in this process's memory otherwise.
                let search: Arc<dyn SearchIndex> = match backend.journal_dir() {
                    Some(journal) if backend.read_only().is_none() => {
                        Arc::new(TantivyIndex::in_dir(journal.join(DIR)))
                    }
                    _ => Arc::new(TantivyIndex::in_memory()),
                };
                let shared = shared(backend, upgraded, search);
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
        let shared = shared(
            Box::new(MemoryBackend::new()),
            None,
            Arc::new(TantivyIndex::in_memory()),
        );
        initialize(&*shared.backend)?;
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
            shared: shared(
                Box::new(RedbBackend::from_bytes(bytes)?),
                None,
                Arc::new(TantivyIndex::in_memory()),
            ),
            options,
            read_only: None,
        };
        store.check_format()?;
        Ok(store)
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
}

/// A store file opened with its journal. A store an older build wrote is upgraded first, in
/// one redb transaction that makes the journal (or, from format 3, its next segment, in the
/// journal format this build writes) and moves the objects of redb's tables into a pack before
/// it records the new format; what is not a store this build can open is left to
/// [`Store::check_format`] to name.
fn open_journaled(
    redb: RedbBackend,
    path: &Path,
) -> Result<(Box<dyn Backend>, Option<UpgradeReport>)> {
    // The first read of the file: where one opened to read finds it cut short.
    let format = redb
        .read_txn()
        .and_then(|tx| format_of(&tx))
        .map_err(|e| redb_backend::on_truncation(path, e))?;
    let report = match format {
        // A store open to read is read in the format it is in (from 3, with its journal).
        Some(f) if redb.read_only().is_some() => match f {
            ..3 => return Ok((Box::new(redb), None)),
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
        _ => return Ok((Box::new(redb), None)),
    };
    let id = store_id_of(&redb.read_txn()?)?;
    // Before format 5 the objects were in the file's tables: a store open to read only is
    // read as it is (one open to write was upgraded above).
    let tables = redb.read_only().is_some() && format.is_some_and(|f| f < 5);
    let backend = JournaledRedb::open(redb, path, &id, tables)?;
    Ok((Box::new(backend), report))
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
