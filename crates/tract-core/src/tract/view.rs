//! The view at a handle's position: compiled for a provider, its status, and pages of it as a
//! person reads them.

use crate::error::Result;
use crate::formats::compile::Compiled;
use crate::id::CommitId;
use crate::ops::page::{self, PageAt, ViewPage};
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;

use super::{Status, Tract};

impl Tract {
    /// Compiles the view at `HEAD`.
    pub fn compile(&self) -> Result<Compiled> {
        self.repo
            .at_head(|_, v| Compiled::new(v, &self.repo.store, &self.repo.views))
    }

    /// Compiles the view at `HEAD` replayed from the whole history, with no cached view and no
    /// checkpoint: what views built from checkpoints are checked against.
    #[cfg(feature = "testing")]
    pub fn compile_replayed(&self) -> Result<Compiled> {
        let snap = self.repo.read()?;
        let head = self.repo.head(&snap)?.commit;
        Ok(Compiled::new(
            &crate::view::View::build(&snap, head, None)?,
            &self.repo.store,
            &self.repo.views,
        ))
    }

    /// Compiles the view at any commit.
    pub fn compile_at(&self, rev: &Rev) -> Result<Compiled> {
        let snap = self.repo.read()?;
        let id = self.repo.resolve(&snap, rev)?;
        if self.repo.head(&snap)?.commit == Some(id) {
            return self.repo.with_view(&snap, Some(id), |v| {
                Compiled::new(v, &self.repo.store, &self.repo.views)
            });
        }
        Ok(Compiled::new(
            &crate::view::View::build(&snap, Some(id), None)?,
            &self.repo.store,
            &self.repo.views,
        ))
    }

    /// Where the handle is and what its view holds.
    pub fn status(&self) -> Result<Status> {
        let snap = self.repo.read()?;
        let head = self.repo.head(&snap)?;
        let (messages, token_count, unanswered_calls, reused_call_ids) =
            self.repo.with_view(&snap, head.commit, |v| {
                (
                    v.len(),
                    v.token_count(),
                    v.unanswered_calls(),
                    crate::formats::compile::reused_call_ids(v).len() as u64,
                )
            })?;
        Ok(Status {
            head,
            messages,
            token_count,
            unanswered_calls,
            reused_call_ids,
            store: self.store().location(),
        })
    }

    /// Up to `limit` entries of the view at `HEAD` from `at`, as a person reads them: each
    /// with its calls' states and results, its versions and marks.
    pub fn view_page(&self, at: PageAt, limit: usize) -> Result<ViewPage> {
        page::view_page(&self.repo, at, limit)
    }

    /// The positions the compression `rev` summarized, each with the content it had then
    /// (empty when `rev` is no compression).
    pub fn compressed_sources(&self, rev: impl Into<Rev>) -> Result<Vec<CommitInfo>> {
        page::compressed_sources(&self.repo, &rev.into())
    }

    /// The view index at `HEAD` of each commit whose content the view shows (a position never
    /// edited, or the newest edit of one); `None` for any other, an earlier version included.
    pub fn view_indexes(
        &self,
        ids: impl IntoIterator<Item = CommitId>,
    ) -> Result<Vec<Option<usize>>> {
        page::view_indexes(&self.repo, ids)
    }

    /// Where each other branch that shares history with this one forks from it (their merge
    /// base), by branch name, among the commits made at or after `since_us` (0: all): each
    /// branch costs its commits since then.
    pub fn fork_points(&self, since_us: u64) -> Result<Vec<(String, CommitId)>> {
        page::fork_points(&self.repo, since_us)
    }
}
