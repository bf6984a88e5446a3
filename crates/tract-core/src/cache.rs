//! The view a handle keeps in memory: built once, then extended by each commit the handle
//! writes, so an agent step costs O(1) instead of a fold of the whole history.

use crate::error::Result;
use crate::id::CommitId;
use crate::info::CommitInfo;
use crate::object::Role;
use crate::stats::Tally;
use crate::store::Snapshot;
use crate::tokens;
use crate::view::View;
use std::sync::{Mutex, MutexGuard};

/// The cached view of one head.
#[derive(Debug, Default)]
pub(crate) struct ViewCache {
    slot: Mutex<Option<View>>,
}

impl ViewCache {
    fn slot(&self) -> MutexGuard<'_, Option<View>> {
        // A panic while holding the lock leaves at worst a stale view, which is rebuilt.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the view at `head`, from the cache, extending or rebuilding it as needed.
    pub(crate) fn with_view<R>(
        &self,
        snap: &Snapshot,
        head: Option<CommitId>,
        f: impl FnOnce(&View) -> R,
    ) -> Result<R> {
        let mut guard = self.slot();
        let view = match guard.take() {
            Some(v) if v.head() == head => v,
            base => View::build(snap, head, base)?,
        };
        let out = f(&view);
        *guard = Some(view);
        Ok(out)
    }

    /// Applies freshly committed commits to the cached view when it is at their parent;
    /// otherwise drops it (it is rebuilt on the next read).
    pub(crate) fn extend(&self, parent: Option<CommitId>, infos: &[CommitInfo]) {
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
                (Some(b), Some(m)) => Some((*b, ((**m).clone(), payload_of(info)))),
                _ => None,
            };
            if view.apply(info.id, info.commit.clone(), content).is_err() {
                *guard = None;
                return;
            }
        }
        view.flush();
    }
}

impl ViewCache {
    /// Extends the cached view with commits written on `parent` (not committed yet) and returns
    /// its counts; `None` when the cached view is not at `parent`.
    pub(crate) fn extend_and_tally(
        &self,
        parent: Option<CommitId>,
        infos: &[CommitInfo],
    ) -> Option<Tally> {
        if self.slot().as_ref().map(View::head) != Some(parent) {
            return None;
        }
        self.extend(parent, infos);
        let guard = self.slot();
        let view = guard.as_ref()?;
        (view.head() == infos.last().map(|i| i.id)).then(|| view.tally())
    }

    /// Forgets the cached view (a write it was extended with did not commit).
    pub(crate) fn invalidate(&self) {
        *self.slot() = None;
    }
}

/// Payload tokens back from a framed count.
fn payload_of(info: &CommitInfo) -> u32 {
    let named = info
        .message
        .as_ref()
        .is_some_and(|m| m.name.is_some() && m.role != Role::Tool);
    info.token_count - tokens::framed(0, named)
}
