//! [`Repo`]: a store and the cached view of its `HEAD`, the one thing every operation reads
//! and writes through. Operations take a `&Repo`; the [`crate::Tract`] handle owns one.

use crate::cache::ViewCache;
use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::revision::Rev;
use crate::store::{Snapshot, Store};
use crate::view::View;

/// A store and its view cache.
#[derive(Debug)]
pub(crate) struct Repo {
    pub(crate) store: Store,
    pub(crate) views: ViewCache,
}

impl Repo {
    pub(crate) fn new(store: Store) -> Self {
        Repo {
            store,
            views: ViewCache::default(),
        }
    }

    /// A consistent snapshot of everything committed so far.
    pub(crate) fn read(&self) -> Result<Snapshot> {
        self.store.read()
    }

    /// Runs `f` on a fresh snapshot and the view at its `HEAD`.
    pub(crate) fn at_head<R>(&self, f: impl FnOnce(&Snapshot, &View) -> R) -> Result<R> {
        let snap = self.read()?;
        let head = snap.head()?.commit;
        self.views.with_view(&snap, head, |v| f(&snap, v))
    }

    /// Runs `f` on the view at `head` of `snap`.
    pub(crate) fn with_view<R>(
        &self,
        snap: &Snapshot,
        head: Option<CommitId>,
        f: impl FnOnce(&View) -> R,
    ) -> Result<R> {
        self.views.with_view(snap, head, f)
    }
}

/// The commit `rev` names and its index in `view`, if it is a message there. A commit named by
/// id that is in view needs no store lookup: most calls pass ids a query returned.
pub(crate) fn locate(view: &View, snap: &Snapshot, rev: &Rev) -> Result<(CommitId, Option<usize>)> {
    if let Some(id) = rev.as_commit()
        && let Some(i) = view.index_of(&id)
    {
        return Ok((id, Some(i)));
    }
    let id = rev.resolve(snap)?;
    Ok((id, view.index_of(&id)))
}

/// The view index of `rev`, which must be a message in view (a position or an edit of one);
/// `argument` names the parameter it came in, for the error.
pub(crate) fn position_in_view(
    view: &View,
    snap: &Snapshot,
    rev: &Rev,
    argument: Option<&str>,
) -> Result<usize> {
    let (commit, index) = locate(view, snap, rev)?;
    index.ok_or_else(|| Error::NotInView {
        commit,
        argument: argument.map(str::to_string),
    })
}
