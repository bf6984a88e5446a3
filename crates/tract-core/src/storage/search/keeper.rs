//! Who keeps the index up to date, and when: the processes that write the store, in batches.
//!
//! Each store open in a process has one keeper (attached to the store where its backend is
//! opened, with the backend's [`SearchIndex`]; dropped with its last handle). The write path
//! tells it how many commits it wrote; past a batch (`StoreOptions::index_batch`, 1,024 by
//! default) a thread of the process (at a lower priority, as the journal's folding thread)
//! indexes what is new, while the appends go on. A search indexes the rest itself when it is
//! more than [`SEARCH_BATCH`], and otherwise searches it beside the index from memory. An
//! index other processes write too is written by one at a time (a batch another process is
//! writing is left to it). An index in this process's memory (a store in memory) is brought up
//! to date only by the searches of its process. Store-wide work that removes content
//! (redaction, `gc`) takes it out of an index that exists before it returns.

use crate::error::Result;
use crate::id::CommitId;
use crate::storage::search::catch_up::Caught;
use crate::storage::search::tantivy_index::TantivyIndex;
use crate::storage::search::{SearchIndex, Upkeep};
use crate::storage::store::Store;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Commits a search finds unindexed past which it indexes them before it searches.
pub(crate) const SEARCH_BATCH: u64 = 1024;

/// How long store-wide work waits for another process's index writer.
const UPKEEP_WAIT: Duration = Duration::from_secs(30);

/// How long a catch-up sleeps before it asks again for an index writer another process holds.
const RETRY: Duration = Duration::from_millis(50);

/// The index of one store in this process, and its batches.
pub(crate) struct Keeper {
    index: Arc<dyn SearchIndex>,
    /// Commits written by this process since its last batch.
    written: AtomicU64,
    /// The thread indexing a batch, while it runs.
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl Keeper {
    /// The keeper of `index`, a store's (attached to it where its backend is opened).
    pub(crate) fn new(index: Arc<dyn SearchIndex>) -> Keeper {
        Keeper {
            index,
            written: AtomicU64::new(0),
            worker: Mutex::default(),
        }
    }

    /// The index.
    pub(crate) fn index(&self) -> &dyn SearchIndex {
        &*self.index
    }

    /// Brings the index up to the store, waiting up to `wait` for another process's writer
    /// (`None`: it was still busy), telling `indexed` how many commits it has added as it
    /// goes. What was written since the last batch and is not indexed by this one counts
    /// toward the next.
    pub(crate) fn catch_up(
        &self,
        store: &Store,
        wait: Duration,
        upkeep: Upkeep<'_>,
    ) -> Result<Option<Caught>> {
        let start = Instant::now();
        loop {
            let written = self.written.swap(0, Ordering::AcqRel);
            let left = wait.saturating_sub(start.elapsed());
            match self.index.catch_up(store, left, upkeep) {
                Ok(Some(caught)) => return Ok(Some(caught)),
                Ok(None) if start.elapsed() < wait => {
                    self.written.fetch_add(written, Ordering::AcqRel);
                    std::thread::sleep(RETRY.min(wait - start.elapsed()));
                }
                other => {
                    self.written.fetch_add(written, Ordering::AcqRel);
                    return other;
                }
            }
        }
    }
}

/// The keeper of `store` in this process: the one attached where its backend was opened (a
/// store opened otherwise is searched with an index in this process's memory).
pub(crate) fn of(store: &Store) -> Arc<Keeper> {
    store.attached(|| Keeper::new(Arc::new(TantivyIndex::in_memory())))
}

/// Tells `store`'s keeper that `n` commits were written; a full batch (the handle's
/// `index_batch`; 0: none) starts a thread that indexes them.
pub(crate) fn written(store: &Store, n: u64) {
    let batch = store.options().index_batch;
    if batch == 0 {
        return;
    }
    let keeper = of(store);
    // An index in this process's memory is its alone: a search brings it up to date when it
    // needs to, and a process that never searches pays nothing.
    if !keeper.index.shared() {
        return;
    }
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
            crate::parallel::yield_to_appends();
            // A batch that fails (a full disk, another process's writer) is indexed with the
            // next one, or by the next search.
            let _ = me.catch_up(&store, Duration::ZERO, Upkeep::default());
        })
        .ok();
}

/// Brings `store`'s index up to date after store-wide work removed content (`collected`: the
/// commits a collection removed), so removed text leaves it before the work returns. An index
/// not made yet is not made; an index writer busy past a while leaves it to the next
/// catch-up, which finds the work by the store's counts.
pub(crate) fn after_removal(store: &Store, collected: Option<&[CommitId]>) -> Result<()> {
    let keeper = of(store);
    if !keeper.index.exists() {
        return Ok(());
    }
    let upkeep = Upkeep {
        collected,
        only_existing: true,
        ..Upkeep::default()
    };
    keeper.catch_up(store, UPKEEP_WAIT, upkeep).map(drop)
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
