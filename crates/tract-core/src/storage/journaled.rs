//! The store file's backend: redb with its journal (`storage::journal`) in front.
//!
//! A write transaction takes the journal's writer lock, reads one redb snapshot and the
//! journal's frames not folded into it, and commits as one frame and one fdatasync. A read
//! transaction sees the same: the redb snapshot, then the frames after the generation that
//! snapshot records as folded, newest first. Full segments are folded into redb by a thread of
//! the process that filled them, in one redb transaction that records the folded generation, so
//! a fold is all or nothing and never applied twice. Store-wide writes (gc, redaction, sync,
//! settings, upgrades) and transactions too large for a frame go to redb directly, after
//! folding everything before them; a store-wide write then wipes the segments it folded, so a
//! redacted payload leaves the journal too. When the last handle in a process closes, what it
//! left in the journal is folded, so the next open has little to read.

use crate::error::{Error, Result};
use crate::storage::backend::{
    Backend, Key, ObjectTable, RawReflogEntry, ReadTx, Row, ScanFn, WriteScope, WriteTx,
};
use crate::storage::journal::ops::{self, Op};
use crate::storage::journal::overlay::{Hit, Layer};
use crate::storage::journal::segment::StoreId;
use crate::storage::journal::{Journal, View, WriterLock, frame_limit};
use crate::storage::pack::set::{self as packs, ObjectWrites, PackCache, PackList, Packs};
use crate::storage::redb_backend::{RedbBackend, RedbRead, RedbWrite};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The last journal generation whose frames redb holds, 8 bytes little-endian (absent: none).
pub(crate) const META_FOLDED: &str = "journal.folded";
/// What a closing process leaves in the journal unfolded, at most: what the next open reads.
const CLOSE_FOLD: u64 = 256 << 10;
/// How long a fold waits for redb's write transaction (another process's fold).
const FOLD_WAIT: Duration = Duration::from_secs(60);

/// The last generation redb holds.
pub(crate) fn folded_of(tx: &(impl ReadTx + ?Sized)) -> Result<u64> {
    Ok(tx
        .meta(META_FOLDED)?
        .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
        .map_or(0, u64::from_le_bytes))
}

/// A store file with its journal.
pub(crate) struct JournaledRedb {
    inner: Arc<Inner>,
}

struct Inner {
    redb: RedbBackend,
    journal: Journal,
    /// The packs this process has open.
    packs: PackCache,
    path: PathBuf,
    /// The thread folding full segments, while it runs.
    folder: Mutex<Option<JoinHandle<()>>>,
    /// A segment filled while the folder ran: it folds again.
    again: AtomicBool,
    /// This process wrote to the journal (what it leaves is its own to fold when it closes).
    wrote: AtomicBool,
    /// The objects are in redb's tables (a store of format 4, open to read only).
    tables: bool,
}

impl JournaledRedb {
    /// Makes the journal of the store file at `path` (whose id is `store` and whose redb
    /// records `folded` as folded), before redb records the format that needs it: a store at
    /// that format always has its journal.
    pub(crate) fn create_journal(path: &Path, store: &StoreId, folded: u64) -> Result<()> {
        Journal::create(&crate::storage::journal::dir_of(path), store, folded + 1).map(drop)
    }

    /// Closes the newest segment of the journal of the store file at `path` and starts the
    /// next, in the journal format this build writes (the upgrade from store format 3: the
    /// frames after it are written the way only this build reads). Waits up to `timeout` for
    /// another process's writer.
    pub(crate) fn start_next_segment(
        path: &Path,
        store: &StoreId,
        folded: u64,
        timeout: Duration,
    ) -> Result<()> {
        let journal = Journal::open(&crate::storage::journal::dir_of(path), store);
        let _lock = journal.lock_writer(timeout)?;
        let view = journal
            .view(folded, true)?
            .ok_or_else(|| journal.missing())?;
        let newest = view.layers.last().ok_or_else(|| journal.missing())?;
        journal.start_next(&newest.0).map(drop)
    }

    /// Moves the objects the tables of the store file at `path` hold into a pack of its journal
    /// directory, in the transaction `tx` (the upgrade to store format 5).
    pub(crate) fn pack_objects(tx: &mut dyn WriteTx, path: &Path, store: &StoreId) -> Result<()> {
        let cache = PackCache::new(&crate::storage::journal::dir_of(path), *store);
        packs::pack_tables(&cache, tx).map(drop)
    }

    /// The store file `redb` at `path` with its journal, which must be there, of this store,
    /// with every segment after the generation redb last folded. `tables`: its objects are in
    /// redb's tables, not in packs (a store of format 4, open to read only).
    pub(crate) fn open(
        redb: RedbBackend,
        path: &Path,
        store: &StoreId,
        tables: bool,
    ) -> Result<Self> {
        let dir = crate::storage::journal::dir_of(path);
        let journal = Journal::open(&dir, store);
        let inner = Arc::new(Inner {
            redb,
            journal,
            packs: PackCache::new(&dir, *store),
            path: path.to_path_buf(),
            folder: Mutex::new(None),
            again: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            tables,
        });
        // Reading it once checks it is there and whole.
        inner.snapshot(false)?;
        Ok(JournaledRedb { inner })
    }

    /// Why the store file is open to read only (`None`: it may write).
    pub(crate) fn read_only(&self) -> Option<&str> {
        self.inner.redb.read_only()
    }

    /// The store file.
    pub(crate) fn path(&self) -> &Path {
        &self.inner.path
    }

    /// A read transaction: redb's snapshot and the frames after it.
    fn read_boxed(&self) -> Result<Box<dyn ReadTx + Sync>> {
        let (base, view, packs) = self.inner.snapshot(false)?;
        Ok(Box::new(JRead {
            base,
            view,
            packs,
            tables: self.inner.tables,
        }))
    }

    /// The one write transaction, waiting up to `timeout` for another process's.
    fn write_boxed(&self, scope: &WriteScope, timeout: Duration) -> Result<Box<dyn WriteTx>> {
        let lock = self.inner.journal.lock_writer(timeout)?;
        let (base, view, packs) = self.inner.snapshot(true)?;
        Ok(Box::new(JWrite {
            inner: Arc::clone(&self.inner),
            lock,
            base,
            view,
            packs,
            pending: Layer::default(),
            ops: Vec::new(),
            store_wide: *scope == WriteScope::Store,
            timeout,
            reflog_next: HashMap::new(),
        }))
    }

    /// Folds every frame into redb, so the store file alone holds every commit.
    pub(crate) fn fold(&self, timeout: Duration) -> Result<()> {
        self.inner.fold_all(false, timeout)
    }

    /// Reads every segment after the folded generation whole, and every pack the store lists
    /// (fsck): the frames the segments hold, and each pack that does not check with what is
    /// wrong (its records are then checked one by one as every record is).
    pub(crate) fn check_journal(&self) -> Result<(u64, Vec<(PathBuf, String)>)> {
        let (base, _, packs) = self.inner.snapshot(false)?;
        let damaged = packs
            .all()
            .iter()
            .filter_map(|p| match p.check() {
                Ok(()) => None,
                Err(Error::CorruptJournal { path, reason }) => Some((path, reason)),
                Err(e) => Some((p.path().to_path_buf(), e.to_string())),
            })
            .collect();
        let frames = self.inner.journal.check(folded_of(&base)?)?;
        Ok((frames, damaged))
    }

    /// Folds everything, wipes and removes the segments, merges every pack into one, then
    /// compacts the file.
    pub(crate) fn compact(&mut self, timeout: Duration) -> Result<()> {
        self.inner.fold_all(true, timeout)?;
        self.inner.join_folder();
        self.inner.merge(true, timeout)?;
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.redb.compact(),
            None => Err(Error::invalid_op(
                "a transaction on the store is still open; finish it first",
            )),
        }
    }
}

/// A store file: redb with its journal in front and its objects in packs.
impl Backend for JournaledRedb {
    fn read(&self) -> Result<Box<dyn ReadTx + Sync>> {
        self.read_boxed()
    }

    // One writer at a time in a file, whatever it moves.
    fn write(&self, scope: &WriteScope, lock_timeout: Duration) -> Result<Box<dyn WriteTx>> {
        self.write_boxed(scope, lock_timeout)
    }

    fn read_only(&self) -> Option<&str> {
        JournaledRedb::read_only(self)
    }

    fn path(&self) -> Option<&Path> {
        Some(JournaledRedb::path(self))
    }

    fn location(&self) -> Option<String> {
        Some(self.inner.path.display().to_string())
    }

    fn at_commit(&self, e: Error) -> Error {
        crate::storage::redb_backend::on_file(Some(&self.inner.path), e)
    }

    fn compact(mut self: Box<Self>, lock_timeout: Duration) -> Result<()> {
        JournaledRedb::compact(&mut self, lock_timeout)
    }

    fn fold(&self, lock_timeout: Duration) -> Result<()> {
        JournaledRedb::fold(self, lock_timeout)
    }

    fn check_journal(&self) -> Result<(u64, Vec<(PathBuf, String)>)> {
        JournaledRedb::check_journal(self)
    }

    fn journal_dir(&self) -> Option<PathBuf> {
        Some(crate::storage::journal::dir_of(&self.inner.path))
    }
}

/// What [`crate::Store::salvage_journal`] did to a store whose journal was damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalSalvage {
    /// The frames before the damage, now folded into the store file.
    pub kept_frames: u64,
    /// The segment file with the first damaged frame.
    pub damaged_segment: PathBuf,
    /// Where in it that frame starts.
    pub damaged_offset: u64,
    /// What is wrong with it.
    pub damage: String,
    /// The directory the damaged segment and every later one were copied into (kept: nothing
    /// is deleted that might still be read by hand).
    pub set_aside: PathBuf,
    /// How many segments were copied there and left out of the store.
    pub segments_set_aside: u64,
}

impl JournaledRedb {
    /// Brings back a store whose journal is damaged before its last frame (which every open
    /// refuses): folds every frame before the damage into redb, copies the damaged segment
    /// and every later one into a directory of the journal, leaves them out of the store and
    /// goes on in a new segment. The store is then as it was when the last whole frame before
    /// the damage was written. `None`, with nothing changed, when no frame is damaged.
    ///
    /// Crash-safe in this order: the copies and the new segment are made before redb records
    /// the newest generation as folded, in the transaction that folds what is kept (a crash
    /// before it leaves the damage as it was, for a salvage again); the segments left out are
    /// removed after it.
    pub(crate) fn salvage(
        redb: &RedbBackend,
        path: &Path,
        store: &StoreId,
        timeout: Duration,
    ) -> Result<Option<JournalSalvage>> {
        let dir = crate::storage::journal::dir_of(path);
        let journal = Journal::open(&dir, store);
        if !dir.is_dir() {
            return Err(journal.missing());
        }
        let _lock = journal.lock_writer(timeout)?;
        let mut w = redb.write_txn(timeout)?;
        let folded = folded_of(&w)?;
        let found = journal.salvageable(folded)?;
        let Some((generation, offset, reason)) = found.damage else {
            return Ok(None);
        };
        let kept = found.frames.len() as u64;
        let cache = PackCache::new(&dir, *store);
        let list = apply(&cache, &mut w, found.frames.into_iter().flatten(), false)?;
        let set_aside = journal.set_aside(generation, found.newest)?;
        set_folded(&mut w, found.newest)?;
        Box::new(w).commit()?;
        // Left out of the store: removing them is tidying (the next fold removes what is left).
        let _ = journal.remove_folded(found.newest, false);
        let _ = cache.remove_unlisted(&list);
        Ok(Some(JournalSalvage {
            kept_frames: kept,
            damaged_segment: crate::storage::journal::segment_path(&dir, generation),
            damaged_offset: offset,
            damage: reason,
            set_aside,
            segments_set_aside: found.newest - generation + 1,
        }))
    }
}

impl Drop for JournaledRedb {
    fn drop(&mut self) {
        self.inner.join_folder();
        // What a writing process leaves unfolded is read by every later open: a large journal
        // is folded now, when no other process is writing (nothing waits for it otherwise). A
        // process that only read leaves it to the writers.
        let big = self.inner.wrote.load(Ordering::Acquire)
            && self
                .inner
                .snapshot(false)
                .is_ok_and(|(_, view, _)| view.bytes() > CLOSE_FOLD);
        if big {
            let _ = self.inner.fold_all(false, Duration::ZERO);
        }
    }
}

impl Inner {
    /// A redb snapshot, the journal's frames after the generation it folded (every frame
    /// there for the `writer`, who holds the writer lock; the durable ones for a reader) and
    /// the packs it lists.
    fn snapshot(&self, writer: bool) -> Result<(RedbRead, View, Packs)> {
        let mut seen = None;
        loop {
            let base = self.redb.read_txn()?;
            let folded = folded_of(&base)?;
            let list = PackList::of(&base)?;
            let packs = match self.packs.packs(&list, &base) {
                Ok(p) => Some(p),
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    None
                }
                Err(e) => return Err(e),
            };
            if let Some(packs) = packs
                && let Some(view) = self.journal.view(folded, writer)?
            {
                return Ok((base, view, packs));
            }
            // A segment after the snapshot's fold or a pack it lists is gone: a later fold or
            // merge removed it (read again), unless the store did not change in between.
            let now = (folded, list);
            if seen.as_ref() == Some(&now) {
                return match self.packs.packs(&now.1, &base) {
                    Err(Error::Io { path, source })
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        Err(Error::CorruptJournal {
                            path,
                            reason: "the store lists this pack and it is missing: a store file \
                                     was copied or restored without its journal directory, which \
                                     holds its objects (copy both, with no writer running; see \
                                     docs/backends.md, \"Backups\")"
                                .into(),
                        })
                    }
                    Err(e) => Err(e),
                    Ok(_) => Err(self.journal.missing()),
                };
            }
            seen = Some(now);
        }
    }

    /// Starts the folding thread, or tells the running one to go again.
    fn request_fold(self: &Arc<Self>) {
        let mut folder = self.folder.lock().unwrap_or_else(|e| e.into_inner());
        if folder.as_ref().is_some_and(|h| !h.is_finished()) {
            self.again.store(true, Ordering::Release);
            return;
        }
        if let Some(done) = folder.take() {
            let _ = done.join();
        }
        let me = Arc::clone(self);
        *folder = std::thread::Builder::new()
            .name("tract-fold".into())
            .spawn(move || {
                crate::parallel::yield_to_appends();
                loop {
                    // A fold that fails (a full disk) leaves the segments as they are: the
                    // next full segment, or the next open, folds them.
                    let _ = me.fold();
                    if !me.again.swap(false, Ordering::AcqRel) {
                        break;
                    }
                }
            })
            .ok();
    }

    fn join_folder(&self) {
        let handle = self.folder.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }

    /// Folds the full segments into redb, in one transaction that records the last one's
    /// generation, then removes them. Appends go on meanwhile: they write the newest segment.
    fn fold(&self) -> Result<()> {
        let mut w = self.redb.write_txn(FOLD_WAIT)?;
        let folded = folded_of(&w)?;
        let view = self
            .journal
            .view(folded, false)?
            .ok_or_else(|| self.journal.missing())?;
        let full: Vec<_> = view.complete().cloned().collect();
        let Some(last) = full.last().map(|s| s.generation()) else {
            // Nothing to fold: packs that direct writes made may be due a merge.
            drop(w);
            return self.merge_if_due(FOLD_WAIT);
        };
        let ops: Vec<Op> = full.iter().flat_map(|seg| seg.layer().net_ops()).collect();
        let list = apply(&self.packs, &mut w, ops, false)?;
        // Derived data (view checkpoints, a search index) is computed here, once per fold.
        set_folded(&mut w, last)?;
        Box::new(w).commit()?;
        let _ = self.packs.remove_unlisted(&list);
        self.tidy(last, false)?;
        self.merge_if_due(FOLD_WAIT)
    }

    /// Merges the newest packs if the list says they are due (after a fold, or a direct write
    /// that made a pack), waiting up to `timeout` for redb's write transaction.
    fn merge_if_due(&self, timeout: Duration) -> Result<()> {
        match PackList::of(&self.redb.read_txn()?)?
            .merge_plan()
            .is_empty()
        {
            true => Ok(()),
            false => self.merge(false, timeout),
        }
    }

    /// Merges the newest packs, as [`PackList::merge_plan`] says (every pack with `all`), in a
    /// redb transaction of its own: appends go on meanwhile, and other processes' folds wait.
    fn merge(&self, all: bool, timeout: Duration) -> Result<()> {
        let mut w = self.redb.write_txn(timeout)?;
        let list = PackList::of(&w)?;
        let numbers: Vec<u64> = match all {
            true => list.packs.iter().map(|p| p.number).collect(),
            false => list.merge_plan(),
        };
        if numbers.len() < 2 {
            return Ok(());
        }
        let list = packs::merge(&self.packs, &mut w, &numbers)?;
        Box::new(w).commit()?;
        self.packs.remove_unlisted(&list)
    }

    /// Folds every frame into redb (the newest segment too), holding the writer lock.
    fn fold_all(&self, wipe: bool, timeout: Duration) -> Result<()> {
        let lock = self.journal.lock_writer(timeout)?;
        let (_, view, _) = self.snapshot(true)?;
        let (folded, _) = self.commit_direct(&view, Vec::new(), false, timeout)?;
        drop(lock);
        self.tidy(folded, wipe)?;
        // Packs the fold made may be due a merge; one that cannot run now runs after a later
        // fold (the fold is done either way).
        let _ = self.merge_if_due(timeout);
        Ok(())
    }

    /// Removes the segments up to `folded` once redb holds them (wiping them first with
    /// `wipe`), after the writer lock is let go: readers of the segments hold the journal's
    /// directory, and other writers need not wait for them. A removal that fails is tidying
    /// (the next fold removes what is left); a wipe that fails is the caller's error.
    fn tidy(&self, folded: u64, wipe: bool) -> Result<()> {
        match self.journal.remove_folded(folded, wipe) {
            Err(e) if wipe => Err(e),
            _ => Ok(()),
        }
    }

    /// Writes `ops` to redb directly, after every frame of `view` (read holding the writer
    /// lock, so it is all of them): a new segment is made first, so the journal always has the
    /// one after the generation redb records, then one redb transaction folds and writes
    /// (`replace`: store-wide work, whose records replace older ones with other bytes). The
    /// last generation redb then holds, which the caller removes the segments up to
    /// ([`Inner::tidy`]), and whether the newest packs are now due a merge.
    fn commit_direct(
        &self,
        view: &View,
        ops: Vec<Op>,
        replace: bool,
        timeout: Duration,
    ) -> Result<(u64, bool)> {
        let mut w = self.redb.write_txn(timeout)?;
        let folded = folded_of(&w)?;
        let Some((newest, _)) = view.layers.last() else {
            return Err(self.journal.missing());
        };
        // The newest segment, folded with the rest when it holds frames (the journal then goes
        // on in a new one), or left as it is, empty (no segment made for nothing).
        let last = match newest.layer().frames() {
            0 => newest.generation() - 1,
            _ => {
                self.journal.start_next(newest)?;
                newest.generation()
            }
        };
        let mut all: Vec<Op> = view
            .layers
            .iter()
            .filter(|(s, _)| s.generation() > folded && s.generation() <= last)
            .flat_map(|(seg, _)| seg.layer().net_ops())
            .collect();
        all.extend(ops);
        let list = apply(&self.packs, &mut w, all, replace)?;
        if last > folded {
            set_folded(&mut w, last)?;
        }
        Box::new(w).commit()?;
        let _ = self.packs.remove_unlisted(&list);
        Ok((last, !list.merge_plan().is_empty()))
    }
}

fn set_folded(w: &mut RedbWrite, generation: u64) -> Result<()> {
    w.set_meta(META_FOLDED, Some(generation.to_le_bytes().as_slice()))
}

/// Writes ops in the redb transaction `w`, in order: objects into a new pack (and packs
/// rewritten without what is removed, `replace` as [`packs::write_objects`] says), the rest into
/// redb, a run of reflog entries at a time (redb opens a table for each call, and a fold is
/// thousands of ops). The list of packs `w` now holds: the caller removes the files it no
/// longer names once `w` commits.
fn apply(
    cache: &PackCache,
    w: &mut RedbWrite,
    ops: impl IntoIterator<Item = Op>,
    replace: bool,
) -> Result<PackList> {
    let mut objects = ObjectWrites::default();
    let mut ops = ops.into_iter().peekable();
    while let Some(op) = ops.next() {
        match op {
            Op::Put(t, key, record) => objects.put(t, key, record),
            Op::Remove(t, key) => objects.remove(t, key),
            Op::Reflog(name, n, entry) => {
                let mut run = vec![(name, n, entry)];
                while let Some(Op::Reflog(name, n, entry)) =
                    ops.next_if(|o| matches!(o, Op::Reflog(..)))
                {
                    run.push((name, n, entry));
                }
                w.put_reflogs(&run)?;
            }
            Op::Meta(name, v) => w.set_meta(&name, v.as_deref())?,
            Op::Tip(name, k) => w.set_tip(&name, None, k)?,
            Op::RemoveReflog(name, n) => w.remove_reflog(&[(name, n)])?,
            Op::Stats(name, v) => w.set_stats(&name, v.as_deref())?,
            Op::ClearStats => w.clear_stats()?,
        }
    }
    packs::write_objects(cache, w, objects, replace)
}

/// The layers over a redb snapshot, newest first, each with its cut-off.
type Layers<'a> = [(&'a Layer, u64)];

/// Runs `f` on the layers of `view` (and `pending`, a transaction's own writes, above them).
fn with_layers<T>(view: &View, pending: Option<&Layer>, f: impl FnOnce(&Layers<'_>) -> T) -> T {
    // Most reads of a store nobody writes find no frame: straight to redb.
    if pending.is_none() && view.layers.iter().all(|(_, upto)| *upto == 0) {
        return f(&[]);
    }
    let guards: Vec<_> = view
        .layers
        .iter()
        .filter(|(_, upto)| *upto > 0)
        .map(|(s, upto)| (s.layer(), *upto))
        .collect();
    let mut layers: Vec<(&Layer, u64)> = Vec::with_capacity(guards.len() + 1);
    if let Some(p) = pending {
        layers.push((p, u64::MAX));
    }
    layers.extend(guards.iter().rev().map(|(g, u)| (&**g, *u)));
    f(&layers)
}

/// The first layer that has the value, newest first; `None`: ask redb.
fn find<T>(layers: &Layers<'_>, f: impl Fn(&Layer, u64) -> Hit<T>) -> Option<Option<T>> {
    layers.iter().find_map(|(l, u)| match f(l, *u) {
        Hit::Here(v) => Some(v),
        Hit::Below => None,
    })
}

/// Reads through the layers to a redb snapshot and its packs.
struct Merged<'a> {
    base: &'a RedbRead,
    packs: &'a Packs,
    layers: &'a Layers<'a>,
    /// The objects below the layers are in redb's tables, not in packs: a store of format 4
    /// read as it is (opened to read only, so not upgraded).
    tables: bool,
}

impl Merged<'_> {
    fn object(&self, t: ObjectTable, k: &Key) -> Result<Option<Vec<u8>>> {
        match find(self.layers, |l, u| l.object(t, k, u)) {
            Some(v) => Ok(v),
            None if self.tables => self.base.object(t, k),
            None => self.packs.get(t, k),
        }
    }

    /// The objects below the layers from `low` to `high`: the packs', or redb's tables'.
    fn scan_below(
        &self,
        t: ObjectTable,
        low: &Key,
        high: &Key,
        limit: Option<usize>,
        f: &mut ScanFn<'_>,
    ) -> Result<()> {
        match self.tables {
            true => self.base.scan(t, low, high, limit, f),
            false => self.packs.scan(t, low, high, limit, f),
        }
    }

    fn objects(&self, t: ObjectTable, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.object(t, k)).collect()
    }

    fn has_objects(&self, t: ObjectTable, keys: &[Key]) -> Vec<bool> {
        keys.iter()
            .map(|k| match find(self.layers, |l, u| l.object(t, k, u)) {
                Some(v) => v.is_some(),
                None if self.tables => self.base.object(t, k).is_ok_and(|v| v.is_some()),
                None => self.packs.has(t, k),
            })
            .collect()
    }

    fn scan(
        &self,
        t: ObjectTable,
        low: &Key,
        high: &Key,
        limit: Option<usize>,
        f: &mut ScanFn<'_>,
    ) -> Result<()> {
        let mut over: BTreeMap<Key, Option<Vec<u8>>> = BTreeMap::new();
        for (l, u) in self.layers.iter().rev() {
            for (k, v) in l.objects_in(t, low, high, *u) {
                over.insert(k, v.map(<[u8]>::to_vec));
            }
        }
        if over.is_empty() {
            return self.scan_below(t, low, high, limit, f);
        }
        let limit = limit.unwrap_or(usize::MAX);
        // Records the layers remove hide records the packs have: ask for that many more.
        let hidden = over.values().filter(|v| v.is_none()).count();
        let mut emitted = 0usize;
        let mut over = over.into_iter().peekable();
        let mut emit = |k: Key, v: &[u8], f: &mut ScanFn<'_>| -> Result<()> {
            if emitted < limit {
                emitted += 1;
                f(k, v)?;
            }
            Ok(())
        };
        self.scan_below(
            t,
            low,
            high,
            Some(limit.saturating_add(hidden)),
            &mut |k, record| {
                while let Some((ok, ov)) = over.next_if(|(ok, _)| *ok < k) {
                    if let Some(v) = ov {
                        emit(ok, &v, f)?;
                    }
                }
                match over.next_if(|(ok, _)| *ok == k) {
                    Some((_, Some(v))) => emit(k, &v, f),
                    Some((_, None)) => Ok(()),
                    None => emit(k, record, f),
                }
            },
        )?;
        for (k, v) in over {
            if let Some(v) = v {
                emit(k, &v, f)?;
            }
        }
        Ok(())
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        match find(self.layers, |l, u| l.meta(key, u)) {
            Some(v) => Ok(v),
            None => self.base.meta(key),
        }
    }

    fn meta_keys(&self, prefix: &str) -> Result<Vec<String>> {
        let mut all: std::collections::BTreeSet<String> =
            self.base.meta_keys(prefix)?.into_iter().collect();
        for (l, u) in self.layers.iter().rev() {
            for (key, set) in l.meta_keys(prefix, *u) {
                if set {
                    all.insert(key.to_string());
                } else {
                    all.remove(key);
                }
            }
        }
        Ok(all.into_iter().collect())
    }

    fn tip(&self, name: &str) -> Result<Option<Key>> {
        match find(self.layers, |l, u| l.tip(name, u)) {
            Some(v) => Ok(v),
            None => self.base.tip(name),
        }
    }

    fn tips(&self) -> Result<Vec<(String, Key)>> {
        let mut all: BTreeMap<String, Key> = self.base.tips()?.into_iter().collect();
        for (l, u) in self.layers.iter().rev() {
            for (name, k) in l.tips(*u) {
                match k {
                    Some(k) => all.insert(name.to_string(), k),
                    None => all.remove(name),
                };
            }
        }
        Ok(all.into_iter().collect())
    }

    /// The layers' reflog entries of `name` by sequence number (`None`: removed): the newest
    /// `limit` of each layer that are there (all of them without a limit, or in a layer that
    /// removed any). An append logs a move on every commit, so this stays short of the whole
    /// segment.
    fn reflog_over(&self, name: &str, limit: Option<usize>) -> BTreeMap<u64, Option<Vec<u8>>> {
        let mut over = BTreeMap::new();
        for (l, u) in self.layers.iter().rev() {
            let limit = limit.filter(|_| !l.reflog_removed());
            let mut kept = 0usize;
            for (n, e) in l.reflog(name, *u) {
                if limit.is_some_and(|l| kept >= l) {
                    break;
                }
                kept += usize::from(e.is_some());
                over.insert(n, e.map(<[u8]>::to_vec));
            }
        }
        over
    }

    fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<Vec<u8>>> {
        let over = self.reflog_over(name, limit);
        if over.is_empty() {
            return self.base.reflog(name, limit);
        }
        let hidden = over.values().filter(|v| v.is_none()).count();
        let mut all: BTreeMap<u64, Vec<u8>> = self
            .base
            .reflog_numbered(name, limit.map(|l| l.saturating_add(hidden)))?
            .into_iter()
            .collect();
        for (n, e) in over {
            match e {
                Some(e) => all.insert(n, e),
                None => all.remove(&n),
            };
        }
        Ok(all
            .into_values()
            .rev()
            .take(limit.unwrap_or(usize::MAX))
            .collect())
    }

    /// The next sequence number of `name`'s reflog.
    fn next_reflog(&self, name: &str) -> Result<u64> {
        let over = self
            .layers
            .iter()
            .filter_map(|(l, u)| l.reflog(name, *u).next().map(|(n, _)| n))
            .max();
        let base = self
            .base
            .reflog_numbered(name, Some(1))?
            .first()
            .map(|(n, _)| *n);
        Ok(over.max(base).map_or(0, |n| n + 1))
    }

    fn reflog_all(&self) -> Result<Vec<RawReflogEntry>> {
        let mut all: BTreeMap<(String, u64), Vec<u8>> = self
            .base
            .reflog_all()?
            .into_iter()
            .map(|(name, n, e)| ((name, n), e))
            .collect();
        for (l, u) in self.layers.iter().rev() {
            for name in l.reflog_names() {
                for (n, e) in l.reflog(name, *u) {
                    match e {
                        Some(e) => all.insert((name.to_string(), n), e.to_vec()),
                        None => all.remove(&(name.to_string(), n)),
                    };
                }
            }
        }
        Ok(all.into_iter().map(|((name, n), e)| (name, n, e)).collect())
    }

    fn stats(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match find(self.layers, |l, u| l.stats(name, u)) {
            Some(v) => Ok(v),
            None => self.base.stats(name),
        }
    }

    fn all_stats(&self) -> Result<Vec<(String, Vec<u8>)>> {
        // From the newest layer that cleared the counts, or from redb's.
        let oldest_first: Vec<_> = self.layers.iter().rev().collect();
        let cleared = oldest_first.iter().rposition(|(l, u)| l.stats_cleared(*u));
        let mut all: BTreeMap<String, Vec<u8>> = match cleared {
            Some(_) => BTreeMap::new(),
            None => self.base.all_stats()?.into_iter().collect(),
        };
        for (l, u) in &oldest_first[cleared.unwrap_or(0)..] {
            for (name, v) in l.all_stats(*u) {
                match v {
                    Some(v) => all.insert(name.to_string(), v.to_vec()),
                    None => all.remove(name),
                };
            }
        }
        Ok(all.into_iter().collect())
    }
}

/// Implements `ReadTx` by reading through `Merged`.
macro_rules! merged_reads {
    ($ty:ty) => {
        impl ReadTx for $ty {
            fn object(&self, table: ObjectTable, key: &Key) -> Result<Option<Vec<u8>>> {
                self.merged(|m| m.object(table, key))
            }

            fn objects(&self, table: ObjectTable, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>> {
                self.merged(|m| m.objects(table, keys))
            }

            fn has_objects(&self, table: ObjectTable, keys: &[Key]) -> Result<Vec<bool>> {
                Ok(self.merged(|m| m.has_objects(table, keys)))
            }

            fn scan(
                &self,
                table: ObjectTable,
                low: &Key,
                high: &Key,
                limit: Option<usize>,
                f: &mut ScanFn<'_>,
            ) -> Result<()> {
                self.merged(|m| m.scan(table, low, high, limit, f))
            }

            fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
                self.merged(|m| m.meta(key))
            }

            fn meta_keys(&self, prefix: &str) -> Result<Vec<String>> {
                self.merged(|m| m.meta_keys(prefix))
            }

            fn tip(&self, name: &str) -> Result<Option<Key>> {
                self.merged(|m| m.tip(name))
            }

            fn tips(&self) -> Result<Vec<(String, Key)>> {
                self.merged(|m| m.tips())
            }

            fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<Vec<u8>>> {
                self.merged(|m| m.reflog(name, limit))
            }

            fn reflog_all(&self) -> Result<Vec<RawReflogEntry>> {
                self.merged(|m| m.reflog_all())
            }

            fn stats(&self, name: &str) -> Result<Option<Vec<u8>>> {
                self.merged(|m| m.stats(name))
            }

            fn all_stats(&self) -> Result<Vec<(String, Vec<u8>)>> {
                self.merged(|m| m.all_stats())
            }
        }
    };
}

/// A read transaction.
struct JRead {
    base: RedbRead,
    view: View,
    packs: Packs,
    tables: bool,
}

impl JRead {
    fn merged<T>(&self, f: impl FnOnce(&Merged<'_>) -> T) -> T {
        with_layers(&self.view, None, |layers| {
            f(&Merged {
                base: &self.base,
                packs: &self.packs,
                layers,
                tables: self.tables,
            })
        })
    }
}

merged_reads!(JRead);

/// A write transaction: its writes kept as ops (and in a layer its reads see) until `commit`
/// writes them as one frame, or to redb directly.
struct JWrite {
    inner: Arc<Inner>,
    lock: WriterLock,
    base: RedbRead,
    view: View,
    packs: Packs,
    pending: Layer,
    ops: Vec<Op>,
    store_wide: bool,
    timeout: Duration,
    /// The next reflog sequence number of each ref this transaction logged a move of.
    reflog_next: HashMap<String, u64>,
}

impl JWrite {
    fn merged<T>(&self, f: impl FnOnce(&Merged<'_>) -> T) -> T {
        with_layers(&self.view, Some(&self.pending), |layers| {
            f(&Merged {
                base: &self.base,
                packs: &self.packs,
                layers,
                tables: false,
            })
        })
    }

    fn push(&mut self, op: Op) {
        self.pending.apply(1, [op.clone()]);
        self.ops.push(op);
    }
}

merged_reads!(JWrite);

impl WriteTx for JWrite {
    fn put_objects(&mut self, table: ObjectTable, rows: &[Row<'_>]) -> Result<()> {
        for row in rows {
            self.push(Op::Put(table, row.key, row.record.to_vec()));
        }
        Ok(())
    }

    fn remove_objects(&mut self, table: ObjectTable, keys: &[Key]) -> Result<()> {
        for key in keys {
            self.push(Op::Remove(table, *key));
        }
        Ok(())
    }

    fn set_meta(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
        self.push(Op::Meta(key.to_string(), value.map(<[u8]>::to_vec)));
        Ok(())
    }

    fn set_tip(&mut self, name: &str, _old: Option<Key>, new: Option<Key>) -> Result<()> {
        // The writer lock is held from the start of the transaction: the tip it read is
        // still the tip.
        self.push(Op::Tip(name.to_string(), new));
        Ok(())
    }

    fn push_reflog(&mut self, name: &str, entry: &[u8]) -> Result<()> {
        let n = match self.reflog_next.get(name) {
            Some(n) => *n,
            None => self.merged(|m| m.next_reflog(name))?,
        };
        self.reflog_next.insert(name.to_string(), n + 1);
        self.push(Op::Reflog(name.to_string(), n, entry.to_vec()));
        Ok(())
    }

    fn remove_reflog(&mut self, entries: &[(String, u64)]) -> Result<()> {
        for (name, n) in entries {
            self.push(Op::RemoveReflog(name.clone(), *n));
        }
        Ok(())
    }

    fn set_stats(&mut self, name: &str, stats: Option<&[u8]>) -> Result<()> {
        self.push(Op::Stats(name.to_string(), stats.map(<[u8]>::to_vec)));
        Ok(())
    }

    fn clear_stats(&mut self) -> Result<()> {
        self.push(Op::ClearStats);
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<()> {
        let JWrite {
            inner,
            lock,
            base,
            view,
            ops,
            store_wide,
            timeout,
            ..
        } = *self;
        // The redb snapshot is let go first: held through a direct write's commit, it would
        // keep the pages that commit frees from being reused.
        drop(base);
        if ops.is_empty() {
            return Ok(());
        }
        let payload = ops::encode(&ops)?;
        if store_wide || payload.len() > frame_limit() {
            let (folded, merge) = inner.commit_direct(&view, ops, store_wide, timeout)?;
            drop(lock);
            inner.tidy(folded, store_wide)?;
            // The merge a new pack made due runs on the folding thread, off this call.
            if merge {
                inner.request_fold();
            }
            return Ok(());
        }
        let filled = inner.journal.append(&view, ops, &payload, lock)?;
        inner.wrote.store(true, Ordering::Release);
        // A segment this write filled, or full ones a process that stopped left unfolded.
        if filled || view.complete().next().is_some() {
            inner.request_fold();
        }
        Ok(())
    }
}
