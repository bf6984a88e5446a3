//! The view a handle keeps in memory: built once, then extended by each commit the handle
//! writes, so an agent step costs O(1) instead of a fold of the whole history.
//!
//! All the views cached in a process share one memory budget ([`set_view_cache_budget`]): when
//! their estimated size passes it, the views used least recently are dropped (a handle whose
//! view was dropped builds it again on its next read), so one process can serve many sessions.
//!
//! A view holds no text. Beside it, a handle keeps the messages it wrote or read lately
//! (`Texts`, least recently used dropped first, counted in the same budget), so a step that
//! renders the message it just wrote, or queries the same results again, reads nothing from
//! the store.

use crate::error::Result;
use crate::id::{BlobId, CommitId};
use crate::object::{Commit, Message, Role};
use crate::stats::Tally;
use crate::storage::store::meta::META_REDACTIONS;
use crate::storage::store::snapshot::Snapshot;
use crate::tokens;
use crate::view::info::CommitInfo;
use crate::view::{Carried as Content, Shape, Source, View, checkpoint};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};

/// The budget when none is set: 1 GiB of cached views per process.
pub const DEFAULT_VIEW_CACHE_BUDGET: usize = 1 << 30;

/// Every view cache of this process, and what they hold together.
struct Budget {
    limit: AtomicUsize,
    total: AtomicUsize,
    clock: AtomicU64,
    caches: Mutex<Vec<Weak<ViewCache>>>,
}

static BUDGET: LazyLock<Budget> = LazyLock::new(|| Budget {
    limit: AtomicUsize::new(DEFAULT_VIEW_CACHE_BUDGET),
    total: AtomicUsize::new(0),
    clock: AtomicU64::new(0),
    caches: Mutex::new(Vec::new()),
});

/// Sets how many bytes the views cached in this process may take together (estimated).
pub fn set_view_cache_budget(bytes: usize) {
    BUDGET.limit.store(bytes, Ordering::Relaxed);
}

/// The estimated bytes of the views cached in this process now.
pub fn view_cache_bytes() -> usize {
    BUDGET.total.load(Ordering::Relaxed)
}

/// The most text one handle keeps (a quarter of the budget when that is less).
const TEXTS_LIMIT: usize = 64 << 20;

/// Messages a handle wrote or read lately, by blob, least recently used dropped first.
#[derive(Debug, Default)]
struct Texts {
    /// Each message with when it was last used and its size.
    by_blob: HashMap<BlobId, (Arc<Message>, u64, usize)>,
    bytes: usize,
    tick: u64,
    /// The store's redaction count these were read under: a redaction (by any process) keeps
    /// the blob's id and replaces what it holds.
    redactions: u64,
}

/// Roughly the bytes a message takes in memory.
fn message_bytes(m: &Message) -> usize {
    let content = match &m.content {
        crate::object::Content::Text(t) => t.len(),
        crate::object::Content::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                crate::object::ContentPart::Text(t) | crate::object::ContentPart::Raw(t) => {
                    t.len() + 32
                }
            })
            .sum(),
    };
    let calls: usize = m
        .tool_calls
        .iter()
        .map(|c| c.id.len() + c.name.len() + c.arguments.len() + 72)
        .sum();
    let metadata: usize = m.metadata.iter().map(|(k, v)| k.len() + v.len() + 48).sum();
    std::mem::size_of::<Message>() + content + calls + metadata + 64
}

impl Texts {
    /// The message of `blob`, marked used.
    fn get(&mut self, blob: &BlobId) -> Option<Arc<Message>> {
        self.tick += 1;
        let (m, used, _) = self.by_blob.get_mut(blob)?;
        *used = self.tick;
        Some(Arc::clone(m))
    }

    /// Keeps `m` as the message of `blob`; past `limit`, drops the least recently used down to
    /// three quarters of it (a sort now and then, not an order kept on every read). Returns how
    /// the bytes kept changed.
    fn put(&mut self, blob: BlobId, m: Arc<Message>, limit: usize) -> isize {
        let before = self.bytes;
        self.tick += 1;
        let size = message_bytes(&m);
        if let Some((_, _, old)) = self.by_blob.insert(blob, (m, self.tick, size)) {
            self.bytes -= old;
        }
        self.bytes += size;
        if self.bytes > limit {
            let mut by_use: Vec<(u64, BlobId)> = self
                .by_blob
                .iter()
                .map(|(b, (_, used, _))| (*used, *b))
                .collect();
            by_use.sort_unstable_by_key(|(used, _)| *used);
            for (_, oldest) in by_use {
                if self.bytes <= limit / 4 * 3 {
                    break;
                }
                if let Some((_, _, old)) = self.by_blob.remove(&oldest) {
                    self.bytes -= old;
                }
            }
        }
        self.bytes as isize - before as isize
    }
}

/// The cached view of one head.
#[derive(Debug)]
pub(crate) struct ViewCache {
    slot: Mutex<Option<View>>,
    /// The messages the handle wrote or read lately.
    texts: Mutex<Texts>,
    /// The cached view's estimated size.
    view_bytes: AtomicUsize,
    /// The cached view's estimated size and its texts', counted in the process's budget.
    bytes: AtomicUsize,
    /// When it was last used (a tick of the budget's clock), to drop the oldest first.
    used: AtomicU64,
    /// The store's redaction count the cached view was built under: a redaction since (by any
    /// process) may have replaced a message it holds.
    redactions: AtomicU64,
}

impl Drop for ViewCache {
    fn drop(&mut self) {
        BUDGET
            .total
            .fetch_sub(*self.bytes.get_mut(), Ordering::Relaxed);
    }
}

impl ViewCache {
    /// An empty cache, counted in the process's budget.
    pub(crate) fn new() -> Arc<Self> {
        let cache = Arc::new(ViewCache {
            slot: Mutex::new(None),
            texts: Mutex::new(Texts::default()),
            view_bytes: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            used: AtomicU64::new(0),
            redactions: AtomicU64::new(0),
        });
        let mut caches = BUDGET.caches.lock().unwrap_or_else(|e| e.into_inner());
        caches.retain(|c| c.strong_count() > 0);
        caches.push(Arc::downgrade(&cache));
        cache
    }

    /// The estimated bytes of the view this cache holds.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    fn slot(&self) -> MutexGuard<'_, Option<View>> {
        // A panic while holding the lock leaves at worst a stale view, which is rebuilt.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts what the slot holds now in the budget, and drops other caches' views (oldest
    /// use first) while the budget is exceeded.
    fn account(&self, view: Option<&View>) {
        let new = view.map_or(0, View::estimated_bytes);
        let old = self.view_bytes.swap(new, Ordering::Relaxed);
        self.charge(new as isize - old as isize);
    }

    /// Adds `delta` bytes to what this cache holds, and drops other caches' views and texts
    /// (oldest use first) while the budget is exceeded.
    fn charge(&self, delta: isize) {
        if delta >= 0 {
            self.bytes.fetch_add(delta as usize, Ordering::Relaxed);
            BUDGET.total.fetch_add(delta as usize, Ordering::Relaxed);
        } else {
            self.bytes
                .fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
            BUDGET
                .total
                .fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
        }
        self.used.store(
            BUDGET.clock.fetch_add(1, Ordering::Relaxed),
            Ordering::Relaxed,
        );
        if view_cache_bytes() > BUDGET.limit.load(Ordering::Relaxed) {
            self.make_room();
        }
    }

    fn make_room(&self) {
        let mut others: Vec<Arc<ViewCache>> = {
            let caches = BUDGET.caches.lock().unwrap_or_else(|e| e.into_inner());
            caches
                .iter()
                .filter_map(Weak::upgrade)
                .filter(|c| !std::ptr::eq(Arc::as_ptr(c), self))
                .filter(|c| c.bytes.load(Ordering::Relaxed) > 0)
                .collect()
        };
        others.sort_by_key(|c| c.used.load(Ordering::Relaxed));
        for c in others {
            if view_cache_bytes() <= BUDGET.limit.load(Ordering::Relaxed) {
                break;
            }
            // Never wait for another handle's view: a busy one is in use, so not the oldest.
            if let (Ok(mut slot), Ok(mut texts)) = (c.slot.try_lock(), c.texts.try_lock()) {
                *slot = None;
                *texts = Texts::default();
                c.view_bytes.store(0, Ordering::Relaxed);
                let freed = c.bytes.swap(0, Ordering::Relaxed);
                BUDGET.total.fetch_sub(freed, Ordering::Relaxed);
            }
        }
    }

    /// Runs `f` on the view at `head`, from the cache, extending or rebuilding it as needed;
    /// a view built without one to extend starts from the checkpoint `checkpoint` names, when
    /// `head` descends from it.
    pub(crate) fn with_view<R>(
        &self,
        snap: &Snapshot,
        head: Option<CommitId>,
        checkpoint: impl FnOnce() -> Result<Option<CommitId>>,
        f: impl FnOnce(&View) -> R,
    ) -> Result<R> {
        let mut guard = self.slot();
        let redactions = snap.redactions()?;
        if self.redactions.swap(redactions, Ordering::Relaxed) != redactions {
            *guard = None;
        }
        let view = match guard.take() {
            Some(v) if v.head() == head => v,
            Some(base) => View::build(snap, head, Some(base))?,
            None => checkpoint::build(snap, head, checkpoint()?)?,
        };
        let out = f(&view);
        self.account(Some(&view));
        *guard = Some(view);
        Ok(out)
    }

    /// Applies freshly committed commits to the cached view when it is at their parent;
    /// otherwise drops it (it is rebuilt on the next read).
    pub(crate) fn extend(&self, parent: Option<CommitId>, infos: &[CommitInfo]) {
        self.extend_with(parent, infos, |view, id, commit, content| {
            view.apply(id, commit, content)
        });
    }

    /// [`ViewCache::extend`], applying each commit with `apply`.
    fn extend_with(
        &self,
        parent: Option<CommitId>,
        infos: &[CommitInfo],
        mut apply: impl FnMut(&mut View, CommitId, Arc<Commit>, Content) -> Result<()>,
    ) {
        let mut guard = self.slot();
        let Some(view) = guard.as_mut() else { return };
        if view.head().is_some() && view.head() == infos.last().map(|i| i.id) {
            return; // extended already, inside the write transaction
        }
        if view.head() != parent {
            *guard = None;
            return;
        }
        for info in infos {
            let content = match (&info.commit.blob, &info.message) {
                (Some(b), Some(m)) => {
                    self.remember(*b, Arc::clone(m));
                    Some((*b, (Arc::new(Shape::of(m)), payload_of(info))))
                }
                _ => None,
            };
            if apply(view, info.id, info.commit.clone(), content).is_err() {
                *guard = None;
                self.account(None);
                return;
            }
        }
        view.flush();
        self.account(guard.as_ref());
    }
}

impl ViewCache {
    /// Extends the cached view with commits written on `parent` (not committed yet, read from
    /// `src`, the write transaction, which has seen `redactions`) and returns its counts;
    /// `None` when the cached view is not at `parent`, or is older than a redaction (it would
    /// count the removed content).
    pub(crate) fn extend_and_tally(
        &self,
        src: &impl Source,
        redactions: u64,
        parent: Option<CommitId>,
        infos: &[CommitInfo],
    ) -> Option<Tally> {
        if self.redactions.swap(redactions, Ordering::Relaxed) != redactions {
            self.invalidate();
            return None;
        }
        if self.slot().as_ref().map(View::head) != Some(parent) {
            return None;
        }
        self.extend_with(parent, infos, |view, id, commit, content| {
            view.apply_from(src, id, commit, content)
        });
        let guard = self.slot();
        let view = guard.as_ref()?;
        (view.head() == infos.last().map(|i| i.id)).then(|| view.tally())
    }

    /// Runs `f` on the cached view if it is at `head`.
    pub(crate) fn cached<R>(&self, head: CommitId, f: impl FnOnce(&mut View) -> R) -> Option<R> {
        let mut guard = self.slot();
        guard.as_mut().filter(|v| v.head() == Some(head)).map(f)
    }

    /// The store's redaction count the cached view was built under.
    pub(crate) fn redactions(&self) -> u64 {
        self.redactions.load(Ordering::Relaxed)
    }

    /// The most text this handle keeps.
    fn texts_limit() -> usize {
        TEXTS_LIMIT.min(BUDGET.limit.load(Ordering::Relaxed) / 4)
    }

    /// Keeps the message of `blob` (one this handle just wrote, so no redaction can have
    /// replaced it yet) for the next read of it.
    fn remember(&self, blob: BlobId, m: Arc<Message>) {
        let delta =
            self.texts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .put(blob, m, Self::texts_limit());
        self.charge(delta);
    }

    /// The messages of the blobs `ids`, text included: those this handle wrote or read lately
    /// from memory, the others read from `src` in one go (and kept for the next read).
    pub(crate) fn texts(&self, src: &impl Source, ids: &[BlobId]) -> Result<Vec<Arc<Message>>> {
        // Nothing of them kept (a cold read): every one is read whatever the redaction count,
        // so the count is asked for with them, in one round trip on a database.
        let cold = {
            let texts = self.texts.lock().unwrap_or_else(|e| e.into_inner());
            !ids.is_empty() && !ids.iter().any(|b| texts.by_blob.contains_key(b))
        };
        let read_first = match cold {
            true => {
                src.want_metas(&[META_REDACTIONS.to_string()]);
                Some(crate::view::texts(src, ids)?)
            }
            false => None,
        };
        let redactions = src.redactions()?;
        let mut freed = 0;
        let mut out: Vec<Option<Arc<Message>>> = {
            let mut texts = self.texts.lock().unwrap_or_else(|e| e.into_inner());
            if texts.redactions != redactions {
                freed = texts.bytes;
                *texts = Texts {
                    redactions,
                    ..Texts::default()
                };
            }
            match read_first {
                Some(_) => vec![None; ids.len()],
                None => ids.iter().map(|b| texts.get(b)).collect(),
            }
        };
        self.charge(-(freed as isize));
        let missing: Vec<BlobId> = ids
            .iter()
            .zip(&out)
            .filter(|(_, m)| m.is_none())
            .map(|(b, _)| *b)
            .collect();
        if missing.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        let read = match read_first {
            Some(read) => read,
            None => crate::view::texts(src, &missing)?,
        };
        let mut delta = 0;
        {
            let mut texts = self.texts.lock().unwrap_or_else(|e| e.into_inner());
            // Another thread may have seen a redaction since: what this snapshot read is then
            // returned, not kept.
            let keep = texts.redactions == redactions;
            let limit = Self::texts_limit();
            let mut read = read.into_iter();
            for (slot, b) in out.iter_mut().zip(ids) {
                if slot.is_none()
                    && let Some(m) = read.next()
                {
                    if keep {
                        delta += texts.put(*b, Arc::clone(&m), limit);
                    }
                    *slot = Some(m);
                }
            }
        }
        self.charge(delta);
        Ok(out.into_iter().flatten().collect())
    }

    /// Keeps `view`, built in a write transaction that has seen `redactions`, in place of what
    /// the cache held: the handle's next writes extend it (dropped if the write does not
    /// commit, as a view extended inside it is).
    pub(crate) fn keep(&self, view: View, redactions: u64) {
        let mut guard = self.slot();
        self.redactions.store(redactions, Ordering::Relaxed);
        self.account(Some(&view));
        *guard = Some(view);
    }

    /// Forgets the cached view (a write it was extended with did not commit).
    pub(crate) fn invalidate(&self) {
        *self.slot() = None;
        self.account(None);
    }
}

/// Payload tokens back from a framed count.
fn payload_of(info: &CommitInfo) -> u32 {
    let named = info
        .message
        .as_ref()
        .is_some_and(|m| m.name.is_some() && m.role != Role::Tool);
    // A record's count is 0 (no framing): the view skips it anyway.
    info.token_count.saturating_sub(tokens::framed(0, named))
}
