//! [`Repo`]: a store, the position one handle works at, and the cached view there: the one
//! thing every operation reads and writes through. Operations take a `&Repo`; the
//! [`crate::Tract`] handle owns one.
//!
//! A handle's position is its own (a branch, or a commit when detached), chosen when it opens
//! ([`Bind`]): other handles, other processes and `tract switch` in a terminal never move it.
//! Only a handle bound to [`Bind::StoreHead`] (the command line's) reads and moves the store's
//! `HEAD`.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::refs::{Head, HeadRef};
use crate::scrubbing::Scrubber;
use crate::storage::store::snapshot::Snapshot;
use crate::storage::store::writer::Writer;
use crate::storage::store::{RefReader, Store};
use crate::view::cache::ViewCache;
use crate::view::revision::{BranchName, Rev};
use crate::view::{View, checkpoint};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

/// What a handle is bound to when it opens: where its reads and writes go from then on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Bind {
    /// The branch (or commit) `HEAD` names when the handle opens. The handle keeps that
    /// position; `HEAD` moving later (`tract switch` in a terminal) does not move the handle,
    /// and the handle never moves `HEAD`.
    #[default]
    HeadAtOpen,
    /// This branch, which may have no commits yet (its first commit creates it).
    Branch(BranchName),
    /// The store's `HEAD` itself, as a command line uses it: the handle reads `HEAD` on every
    /// call, and its `switch`, `checkout` and detached appends move `HEAD`.
    StoreHead,
}

/// Where a handle works.
#[derive(Debug)]
enum Position {
    /// Its own branch or detached commit.
    Own(RwLock<HeadRef>),
    /// Wherever the store's `HEAD` is.
    StoreHead,
}

/// Where a write goes: the store's `HEAD`, or a handle's own position at the time it wrote.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    StoreHead,
    /// A handle's own position; `fresh` while it is a new session that has not written yet.
    Own {
        target: HeadRef,
        fresh: bool,
    },
}

impl Target {
    /// The refs a write at this position moves: the store's `HEAD` (and, locked when first
    /// touched, the branch it names), a branch, or none for a detached handle.
    pub(crate) fn refs(&self) -> Vec<String> {
        match self {
            Target::StoreHead => vec!["HEAD".to_string()],
            Target::Own {
                target: HeadRef::Branch(b),
                ..
            } => vec![b.clone()],
            Target::Own {
                target: HeadRef::Detached(_),
                ..
            } => Vec::new(),
        }
    }

    /// The position and the commit there, as a snapshot or a write transaction sees it. A
    /// branch with no tip is new (its first commit creates it), unless its reflog ends with
    /// its deletion (not a clear) and this is not a new session: a handle still bound to a
    /// deleted branch must not start a new history there silently.
    pub(crate) fn head_in(&self, refs: &impl RefReader) -> Result<Head> {
        match self {
            Target::StoreHead => refs.head(),
            Target::Own { target, fresh } => {
                let commit = match target {
                    HeadRef::Branch(b) => match refs.branch(b)? {
                        Some(tip) => Some(tip),
                        None if *fresh => None,
                        None => match refs.last_move(b)? {
                            Some(e) if e.new.is_none() && e.reason != crate::refs::CLEARED => {
                                return Err(Error::BranchDeleted { name: b.clone() });
                            }
                            _ => None,
                        },
                    },
                    HeadRef::Detached(id) => Some(*id),
                };
                Ok(Head {
                    target: target.clone(),
                    commit,
                })
            }
        }
    }

    /// Moves the position from `start` to `tip` in the write transaction: its branch, or
    /// (detached) the store's `HEAD` for a command line, or nothing in the store. Returns the
    /// detached position the handle takes once the transaction has committed.
    pub(crate) fn advance(
        &self,
        w: &mut Writer,
        start: &Head,
        tip: CommitId,
        reason: &str,
    ) -> Result<Option<HeadRef>> {
        match (self, &start.target) {
            (Target::StoreHead, _) => w.advance_head(start, tip, reason).map(|()| None),
            (Target::Own { .. }, HeadRef::Branch(b)) => {
                w.set_branch(b, Some(tip), reason).map(|()| None)
            }
            (Target::Own { .. }, HeadRef::Detached(_)) => Ok(Some(HeadRef::Detached(tip))),
        }
    }
}

/// A store, a handle's position in it, and the view cache.
#[derive(Debug)]
pub(crate) struct Repo {
    pub(crate) store: Store,
    /// Shared with the write jobs that extend it inside their transaction.
    pub(crate) views: Arc<ViewCache>,
    position: Position,
    /// Opened on a branch that did not exist, and not written to since: a new session, which
    /// its first commit creates (even where a deleted branch of that name was).
    fresh: AtomicBool,
    /// Waits, when the handle closes, for the search index's batch this process is writing.
    _batch: Settle,
}

/// Waits for the search index's batch in progress when dropped: a closed handle leaves no
/// thread of its own reading the store's files, and holds no handle on it (`compact` needs
/// the only one).
#[derive(Debug)]
struct Settle(Store);

impl Drop for Settle {
    fn drop(&mut self) {
        crate::storage::search::keeper::settle(&self.0);
    }
}

impl Repo {
    /// A repo bound as `bind` says (reading `HEAD` once for [`Bind::HeadAtOpen`]).
    pub(crate) fn new(store: Store, bind: &Bind) -> Result<Self> {
        let mut fresh = false;
        let position = match bind {
            Bind::StoreHead => Position::StoreHead,
            Bind::Branch(name) => {
                fresh = store.read()?.branch(name.as_str())?.is_none();
                Position::Own(RwLock::new(HeadRef::Branch(name.to_string())))
            }
            Bind::HeadAtOpen => Position::Own(RwLock::new(store.read()?.head()?.target)),
        };
        Ok(Repo {
            _batch: Settle(store.clone()),
            store,
            views: ViewCache::new(),
            position,
            fresh: AtomicBool::new(fresh),
        })
    }

    /// The store, giving up this handle's position and cached view.
    pub(crate) fn into_store(self) -> Store {
        self.store
    }

    /// A consistent snapshot of everything committed so far.
    pub(crate) fn read(&self) -> Result<Snapshot> {
        self.store.read()
    }

    /// What the store's secrets policy asks of a write, as this process last saw it (a write
    /// scrubs before it encodes, before the write lock; its transaction checks the policy).
    pub(crate) fn scrubber(&self) -> Result<Scrubber> {
        Scrubber::current(&self.store)
    }

    fn own(lock: &RwLock<HeadRef>) -> RwLockReadGuard<'_, HeadRef> {
        lock.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The handle's position, without looking up the commit there.
    pub(crate) fn position(&self, snap: &Snapshot) -> Result<HeadRef> {
        match &self.position {
            Position::StoreHead => Ok(snap.head()?.target),
            Position::Own(lock) => Ok(Self::own(lock).clone()),
        }
    }

    /// The handle's position and the commit there, as `snap` sees it.
    pub(crate) fn head(&self, snap: &Snapshot) -> Result<Head> {
        self.target().head_in(snap)
    }

    /// Where this handle writes, as a value a write job can carry.
    pub(crate) fn target(&self) -> Target {
        match &self.position {
            Position::StoreHead => Target::StoreHead,
            Position::Own(lock) => Target::Own {
                target: Self::own(lock).clone(),
                fresh: self.fresh.load(Ordering::Acquire),
            },
        }
    }

    /// A write transaction for what this handle's position moves (see [`Target::refs`]).
    pub(crate) fn write(&self) -> Result<Writer> {
        let refs = self.target().refs();
        let names: Vec<&str> = refs.iter().map(String::as_str).collect();
        self.store.write_refs(&names)
    }

    /// The handle's position and the commit there, inside a write transaction.
    pub(crate) fn head_in(&self, w: &Writer) -> Result<Head> {
        self.target().head_in(w)
    }

    /// Moves the handle's position from `start` to `tip` in the write transaction; see
    /// [`Target::advance`].
    pub(crate) fn advance(
        &self,
        w: &mut Writer,
        start: &Head,
        tip: CommitId,
        reason: &str,
    ) -> Result<Option<HeadRef>> {
        self.target().advance(w, start, tip, reason)
    }

    /// Sets the handle's own position; for a command line's handle, the store's `HEAD` (with
    /// `reason` in its reflog), in a transaction of its own.
    pub(crate) fn set_position(&self, target: HeadRef, reason: &str) -> Result<()> {
        match &self.position {
            Position::StoreHead => {
                let mut w = self.store.write_refs(&["HEAD"])?;
                w.set_head(&target, reason)?;
                w.commit()
            }
            Position::Own(lock) => {
                *lock.write().unwrap_or_else(|e| e.into_inner()) = target;
                self.fresh.store(false, Ordering::Release);
                Ok(())
            }
        }
    }

    /// After a committed write: the handle's session exists now, and a detached handle moves
    /// to the new tip (`to`, unless something else moved it from `from` meanwhile).
    pub(crate) fn written(&self, from: &HeadRef, to: Option<HeadRef>) {
        self.fresh.store(false, Ordering::Release);
        if let Some(to) = to {
            self.moved(from, to);
        }
    }

    fn moved(&self, from: &HeadRef, to: HeadRef) {
        if let Position::Own(lock) = &self.position {
            let mut pos = lock.write().unwrap_or_else(|e| e.into_inner());
            if *pos == *from {
                *pos = to;
            }
        }
    }

    /// The commit `rev` names, `HEAD` being this handle's position.
    pub(crate) fn resolve(&self, snap: &Snapshot, rev: &Rev) -> Result<CommitId> {
        rev.resolve(snap, &|| self.head(snap))
    }

    /// Runs `f` on a fresh snapshot and the view at the handle's position.
    pub(crate) fn at_head<R>(&self, f: impl FnOnce(&Snapshot, &View) -> R) -> Result<R> {
        let snap = self.read()?;
        if let Target::Own {
            target: HeadRef::Branch(name),
            ..
        } = self.target()
        {
            checkpoint::read_ahead(&snap, &name)?;
        }
        let head = self.head(&snap)?.commit;
        self.with_view(&snap, head, |v| f(&snap, v))
    }

    /// The messages of `entries` (entries of a view of this handle), text included: those the
    /// handle wrote or read lately from memory, the others read from `snap` in one go.
    pub(crate) fn texts<'a>(
        &self,
        snap: &Snapshot,
        entries: impl IntoIterator<Item = &'a crate::view::ViewEntry>,
    ) -> Result<Vec<Arc<crate::object::Message>>> {
        let blobs: Vec<crate::id::BlobId> = entries.into_iter().map(|e| e.blob).collect();
        self.views.texts(snap, &blobs)
    }

    /// The messages of the blobs `blobs`, as [`Repo::texts`] reads them.
    pub(crate) fn blob_texts(
        &self,
        snap: &Snapshot,
        blobs: &[crate::id::BlobId],
    ) -> Result<Vec<Arc<crate::object::Message>>> {
        self.views.texts(snap, blobs)
    }

    /// The message of one entry of a view of this handle, text included.
    pub(crate) fn text(
        &self,
        snap: &Snapshot,
        e: &crate::view::ViewEntry,
    ) -> Result<Arc<crate::object::Message>> {
        self.texts(snap, [e])?.pop().ok_or_else(|| {
            Error::corrupt(format!(
                "the message of {} was not read",
                e.position.short()
            ))
        })
    }

    /// Runs `f` on the view at `head` of `snap`. A view that is not cached is built from the
    /// newest checkpoint of the handle's branch when `head` descends from it (a head elsewhere
    /// is replayed: finding that out costs nothing the replay does not read anyway).
    pub(crate) fn with_view<R>(
        &self,
        snap: &Snapshot,
        head: Option<CommitId>,
        f: impl FnOnce(&View) -> R,
    ) -> Result<R> {
        let checkpoint = || match self.head(snap)?.target {
            HeadRef::Branch(name) => checkpoint::of_branch(snap, &name),
            HeadRef::Detached(_) => Ok(None),
        };
        self.views.with_view(snap, head, checkpoint, f)
    }

    /// The commit `rev` names and its index in `view`, if it is a message there. A commit
    /// named by id that is in view needs no store lookup: most calls pass ids a query returned.
    pub(crate) fn locate(
        &self,
        view: &View,
        snap: &Snapshot,
        rev: &Rev,
    ) -> Result<(CommitId, Option<usize>)> {
        if let Some(id) = rev.as_commit()
            && let Some(i) = view.index_of(&id)
        {
            return Ok((id, Some(i)));
        }
        let id = self.resolve(snap, rev)?;
        Ok((id, view.index_of(&id)))
    }

    /// The view index of `rev`, which must be a message in view (a position or an edit of
    /// one); `argument` names the parameter it came in, for the error.
    pub(crate) fn position_in_view(
        &self,
        view: &View,
        snap: &Snapshot,
        rev: &Rev,
        argument: Option<&str>,
    ) -> Result<usize> {
        let (commit, index) = self.locate(view, snap, rev)?;
        index.ok_or_else(|| Error::NotInView {
            commit,
            argument: argument.map(str::to_string),
        })
    }
}
