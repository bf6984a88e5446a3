//! The search index as tantivy keeps it: a store file's, in a directory of its journal
//! directory (`index/`), written by the processes that write the store; or one in this
//! process's memory (a store in memory, or one open to read only), brought up to date by its
//! searches. BM25 ranks its documents and the commits not indexed yet together.

pub(crate) mod index;
pub(crate) mod rank;
pub(crate) mod upkeep;

use crate::error::Result;
use crate::id::CommitId;
use crate::storage::search::catch_up::Caught;
use crate::storage::search::lanes::{self, Place};
use crate::storage::search::state::{State, failed};
use crate::storage::search::{Ask, Ranking, Reading, SearchIndex, Upkeep, Whereabouts};
use crate::storage::store::Store;
use crate::storage::store::snapshot::Snapshot;
use index::{Index, PLACE};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tantivy::Searcher;

/// A tantivy index, opened on first use.
pub(crate) struct TantivyIndex {
    /// Its directory (`None`: in this process's memory).
    dir: Option<PathBuf>,
    index: Mutex<Option<Arc<Index>>>,
}

impl TantivyIndex {
    /// The index in `dir` (a store file's journal directory's `index/`), made there when
    /// first used.
    pub(crate) fn in_dir(dir: PathBuf) -> TantivyIndex {
        TantivyIndex {
            dir: Some(dir),
            index: Mutex::default(),
        }
    }

    /// An index in this process's memory.
    pub(crate) fn in_memory() -> TantivyIndex {
        TantivyIndex {
            dir: None,
            index: Mutex::default(),
        }
    }

    /// The index, opened (or made) on first use.
    fn index(&self) -> Result<Arc<Index>> {
        let mut slot = self.index.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = &*slot {
            return Ok(Arc::clone(i));
        }
        let index = Arc::new(match &self.dir {
            Some(dir) => Index::open_dir(dir)?,
            None => Index::in_memory()?,
        });
        *slot = Some(Arc::clone(&index));
        Ok(index)
    }
}

impl SearchIndex for TantivyIndex {
    fn catch_up(
        &self,
        store: &Store,
        wait: Duration,
        upkeep: Upkeep<'_>,
    ) -> Result<Option<Caught>> {
        if upkeep.only_existing && !self.exists() {
            return Ok(Some(Caught::default()));
        }
        let index = self.index()?;
        let Some(mut w) = index.writer(wait)? else {
            return Ok(None);
        };
        let caught = upkeep::catch_up(
            &index,
            &mut w,
            store,
            upkeep.collected,
            upkeep.rebuild,
            upkeep.indexed,
        )?;
        w.finish()?;
        Ok(Some(caught))
    }

    fn read(
        &self,
        snapshot: &mut dyn FnMut() -> Result<Snapshot>,
    ) -> Result<(Box<dyn Reading + '_>, Snapshot)> {
        let index = self.index()?;
        let committed = index.read()?;
        // After the index: the store holds everything the index does.
        let snap = snapshot()?;
        // An index of another layout is not read: what it holds is walked as not indexed.
        let searcher = match committed.stale {
            true => Index::in_memory()?.read()?.searcher,
            false => committed.searcher,
        };
        let reading = TantivyReading {
            index,
            searcher,
            state: committed.state,
            stale: committed.stale,
        };
        Ok((Box::new(reading), snap))
    }

    fn exists(&self) -> bool {
        match &self.dir {
            Some(dir) => dir.exists(),
            None => self
                .index
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some(),
        }
    }

    fn shared(&self) -> bool {
        self.dir.is_some()
    }

    fn whereabouts(&self) -> Whereabouts {
        Whereabouts {
            path: self.dir.clone(),
            in_database: false,
        }
    }
}

/// A tantivy index's newest commit, as a search reads it.
struct TantivyReading {
    index: Arc<Index>,
    searcher: Searcher,
    state: Arc<State>,
    stale: bool,
}

impl Reading for TantivyReading {
    fn state(&self) -> &State {
        &self.state
    }

    fn usable(&self) -> bool {
        !self.stale
    }

    fn stale(&self) -> bool {
        self.stale
    }

    fn locate(&self, _snap: &Snapshot, id: &CommitId) -> Result<Option<Place>> {
        upkeep::locate(&self.searcher, &self.index.fields, id)
    }

    fn rank(&self, _snap: &Snapshot, ask: &Ask<'_>) -> Result<Ranking> {
        rank::rank(&self.searcher, &self.index.fields, ask)
    }

    fn hit(&self, _snap: &Snapshot, document: u64) -> Result<(CommitId, Option<Place>)> {
        let doc = rank::document(document);
        let seg = self
            .searcher
            .segment_readers()
            .get(doc.segment_ord as usize)
            .ok_or_else(|| {
                failed(
                    "reading a hit",
                    tantivy::TantivyError::InvalidArgument("a hit of another reading".into()),
                )
            })?;
        let keys = upkeep::key_columns(seg, &self.index.fields)?;
        let place = seg
            .fast_fields()
            .u64(PLACE)
            .map_err(|e| failed("reading its places", e))?
            .first(doc.doc_id)
            .map(lanes::unpack);
        Ok((upkeep::key_at(&keys, doc.doc_id), place))
    }

    fn ids(&self, _snap: &Snapshot) -> Result<Vec<CommitId>> {
        let mut ids = Vec::new();
        for seg in self.searcher.segment_readers() {
            let keys = upkeep::key_columns(seg, &self.index.fields)?;
            let alive = seg.alive_bitset();
            for doc in 0..seg.max_doc() {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    ids.push(upkeep::key_at(&keys, doc));
                }
            }
        }
        Ok(ids)
    }

    fn documents(&self, _snap: &Snapshot) -> Result<u64> {
        Ok(self.searcher.num_docs())
    }

    fn bytes(&self, _snap: &Snapshot) -> Result<u64> {
        Ok(self.index.bytes())
    }
}
