//! Who keeps the index up to date, and when: the processes that write the store, in batches.
//!
//! Each store open in a process has one keeper (attached to the store, dropped with its last
//! handle). For a store file, the write path tells it how many commits it wrote; past a batch
//! (`StoreOptions::index_batch`, 1,024 by default) a thread of the process (at a lower
//! priority, as the journal's folding thread) indexes what is new, while the appends go on. A
//! search indexes the rest itself when it is more than [`SEARCH_BATCH`], and otherwise
//! searches it beside the index from memory. A store in PostgreSQL has its index in the
//! database ([`crate::index::postgres`]), kept the same way by the processes that write it,
//! one at a time (a batch another process is writing is left to it). An index in memory (a
//! store in memory) is brought up to date only by the searches of its process. Store-wide
//! work that removes content (redaction, `gc`) takes it out of an index that exists before it
//! returns.

use crate::error::Result;
use crate::id::CommitId;
use crate::index::catch_up::{self, Caught};
use crate::index::{DIR, Index};
use crate::storage::store::Store;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Commits a search finds unindexed past which it indexes them before it searches.
pub(crate) const SEARCH_BATCH: u64 = 1024;

/// How long store-wide work waits for another process's index writer.
const UPKEEP_WAIT: Duration = Duration::from_secs(30);

/// The index of one store in this process, and its batches.
#[derive(Default)]
pub(crate) struct Keeper {
    index: Mutex<Option<Arc<Index>>>,
    /// Commits written by this process since its last batch.
    written: AtomicU64,
    /// The thread indexing a batch, while it runs.
    worker: Mutex<Option<JoinHandle<()>>>,
}

/// The keeper of `store` in this process.
pub(crate) fn of(store: &Store) -> Arc<Keeper> {
    store.attached(Keeper::default)
}

impl Keeper {
    /// The index, opened on first use: in the journal directory of a store file this process
    /// may write, in memory otherwise (a store open to read only is indexed in memory, once
    /// per process, and nothing of it is written).
    pub(crate) fn index(&self, store: &Store) -> Result<Arc<Index>> {
        let mut slot = self.index.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = &*slot {
            return Ok(Arc::clone(i));
        }
        let index = Arc::new(match store.journal_dir() {
            Some(journal) if !store.opened_read_only() => Index::open_dir(&journal.join(DIR))?,
            _ => Index::in_memory()?,
        });
        *slot = Some(Arc::clone(&index));
        Ok(index)
    }

    /// Brings the index up to the store, waiting up to `wait` for another process's writer
    /// (`None`: it was still busy), telling `indexed` how many commits it has added as it
    /// goes. See [`catch_up::catch_up`].
    pub(crate) fn catch_up(
        &self,
        store: &Store,
        wait: Duration,
        collected: Option<&[CommitId]>,
        rebuild: bool,
        indexed: catch_up::Indexed<'_>,
    ) -> Result<Option<Caught>> {
        #[cfg(feature = "postgres")]
        if store.postgres().is_some() {
            return self.in_database(store, wait, collected, rebuild, true, indexed);
        }
        let index = self.index(store)?;
        let Some(mut w) = index.writer(wait)? else {
            return Ok(None);
        };
        self.written.store(0, Ordering::Release);
        let caught = catch_up::catch_up(&index, &mut w, store, collected, rebuild, indexed)?;
        w.finish()?;
        Ok(Some(caught))
    }
}

#[cfg(feature = "postgres")]
impl Keeper {
    /// [`Keeper::catch_up`] of a store in PostgreSQL ([`crate::index::postgres::catch_up`]),
    /// trying the index writer's lock again for up to `wait`. `create`: make the index's
    /// tables if there are none.
    fn in_database(
        &self,
        store: &Store,
        wait: Duration,
        collected: Option<&[CommitId]>,
        rebuild: bool,
        create: bool,
        indexed: catch_up::Indexed<'_>,
    ) -> Result<Option<Caught>> {
        let start = std::time::Instant::now();
        loop {
            let written = self.written.swap(0, Ordering::AcqRel);
            match crate::index::postgres::catch_up(store, collected, rebuild, create, indexed) {
                Ok(Some(caught)) => return Ok(Some(caught)),
                Ok(None) if start.elapsed() < wait => {
                    self.written.fetch_add(written, Ordering::AcqRel);
                    std::thread::sleep(Duration::from_millis(50));
                }
                other => {
                    // Not indexed by this one: counted toward the next batch.
                    self.written.fetch_add(written, Ordering::AcqRel);
                    return other;
                }
            }
        }
    }
}

/// Whether `store` is in a database (its index is the database's, read in the store's own
/// transactions).
pub(crate) fn in_database(store: &Store) -> bool {
    #[cfg(feature = "postgres")]
    return store.postgres().is_some();
    #[cfg(not(feature = "postgres"))]
    {
        let _ = store;
        false
    }
}

/// Tells `store`'s keeper that `n` commits were written; a full batch (the handle's
/// `index_batch`; 0: none) starts a thread that indexes them.
pub(crate) fn written(store: &Store, n: u64) {
    let batch = store.options().index_batch;
    // An index in memory is this process's alone: a search brings it up to date when it
    // needs to, and a process that never searches pays nothing.
    if batch == 0 || (store.journal_dir().is_none() && !in_database(store)) {
        return;
    }
    let keeper = of(store);
    if keeper.written.fetch_add(n, Ordering::AcqRel) + n < batch {
        return;
    }
    let mut worker = keeper.worker.lock().unwrap_or_else(|e| e.into_inner());
    if worker.as_ref().is_some_and(|h| !h.is_finished()) {
        return;
    }
    if let Some(done) = worker.take() {
        let _ = done.join();
    }
    let store = store.clone();
    let me = Arc::clone(&keeper);
    *worker = std::thread::Builder::new()
        .name("tract-index".into())
        .spawn(move || {
            crate::storage::journaled::yield_to_appends();
            // A batch that fails (a full disk, another process's writer) is indexed with the
            // next one, or by the next search.
            let _ = me.catch_up(&store, Duration::ZERO, None, false, None);
        })
        .ok();
}

/// Brings `store`'s index up to date after store-wide work removed content (`collected`: the
/// commits a collection removed), so removed text leaves it before the work returns. An index
/// writer busy past a while leaves it to the next catch-up, which finds the work by the
/// store's counts.
pub(crate) fn after_removal(store: &Store, collected: Option<&[CommitId]>) -> Result<()> {
    let keeper = of(store);
    // A database's index takes it out if it has tables (none: nothing to take out).
    #[cfg(feature = "postgres")]
    if store.postgres().is_some() {
        return keeper
            .in_database(store, UPKEEP_WAIT, collected, false, false, None)
            .map(drop);
    }
    // Nothing to take out of an index that does not exist yet: a store file's never made, or
    // one in memory this process has not built.
    let exists = match store.journal_dir() {
        Some(journal) => journal.join(DIR).exists(),
        None => keeper
            .index
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some(),
    };
    if !exists {
        return Ok(());
    }
    keeper
        .catch_up(store, UPKEEP_WAIT, collected, false, None)
        .map(drop)
}

/// Waits for the batch this process is indexing in the background, if any (tests, and before
/// a rebuild).
pub(crate) fn settle(store: &Store) {
    let keeper = of(store);
    let handle = keeper
        .worker
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(h) = handle {
        let _ = h.join();
    }
}
