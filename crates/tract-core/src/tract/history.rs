//! Reading history through a handle: revisions, commits, the log, versions of a position,
//! records, tombstones and search.

use crate::error::Result;
use crate::id::CommitId;
use crate::ops::history::{self, LogQuery};
use crate::ops::search::{self, SearchHit, SearchQuery};
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;
use crate::write::record::RecordQuery;

use super::{Progress, Tract};

impl Tract {
    /// The commit `rev` names (`HEAD` is this handle's position).
    pub fn resolve(&self, rev: &Rev) -> Result<CommitId> {
        self.repo.resolve(&self.repo.read()?, rev)
    }

    /// One commit with its message.
    pub fn get_commit(&self, rev: impl Into<Rev>) -> Result<CommitInfo> {
        history::get(&self.repo, &rev.into())
    }

    /// The commits `q` names, newest first: from `HEAD` (or `q.start`) back along first
    /// parents, or through every parent of merges with `q.graph`, filtered by role or tool.
    pub fn log(&self, q: &LogQuery) -> Result<Vec<CommitInfo>> {
        history::log(&self.repo, q)
    }

    /// Every version of the view position `rev` belongs to, oldest first: the original
    /// message, then each edit on this branch.
    pub fn edit_history(&self, rev: impl Into<Rev>) -> Result<Vec<CommitInfo>> {
        history::edit_history(&self.repo, &rev.into())
    }

    /// The compress commit on this branch whose summary replaced `rev`, if any: the link from
    /// a source to its summary (the summary links back with [`CommitInfo::sources`]).
    pub fn compressed_into(&self, rev: impl Into<Rev>) -> Result<Option<CommitInfo>> {
        history::compressed_into(&self.repo, &rev.into())
    }

    /// What the model requests of a branch's history cost (`None`: this handle's position),
    /// summed along first parents: overall and per model from the usage ledger (reading none
    /// of its messages), per day or since a time as `o` asks.
    pub fn usage(
        &self,
        branch: Option<&str>,
        o: &crate::ops::usage::UsageOptions,
    ) -> Result<crate::ops::usage::BranchUsage> {
        crate::ops::usage::branch(&self.repo, branch, o)
    }

    /// [`Tract::usage`] of every branch, by name, and of the whole store: each request once,
    /// however many branches reach it.
    pub fn usage_of_branches(
        &self,
        o: &crate::ops::usage::UsageOptions,
    ) -> Result<crate::ops::usage::StoreUsage> {
        crate::ops::usage::all(&self.repo, o)
    }

    /// How the views at `a` and `b` differ: where they part, the messages only one holds and
    /// those both hold with other content (with their text), and their token counts. Reads
    /// the text of what differs only.
    pub fn diff(&self, a: &Rev, b: &Rev) -> Result<crate::ops::diff::ViewDiff> {
        crate::ops::diff::views(&self.repo, a, b)
    }

    /// What the commit `rev` names did to its view: the view at its first parent against the
    /// view at it (for a compression or a clear, the messages it took out of view with their
    /// text, and what replaced them).
    pub fn diff_commit(&self, rev: &Rev) -> Result<crate::ops::diff::ViewDiff> {
        crate::ops::diff::commit(&self.repo, rev)
    }

    /// The commits only `a`'s history holds, those only `b`'s does, and where they meet.
    pub fn diff_history(&self, a: &Rev, b: &Rev) -> Result<crate::ops::diff::HistoryDiff> {
        crate::ops::diff::histories(&self.repo, a, b)
    }

    /// What a provider's prompt cache could have served each model request of a branch's
    /// history (`None`: this handle's position), as tract renders what each was sent: the
    /// prefix it shares with the request before, and for each request that does not extend the
    /// one before, the commit that broke the prefix and why.
    pub fn cache_report(
        &self,
        branch: Option<&str>,
        o: &crate::ops::prompt_cache::CacheOptions,
    ) -> Result<crate::ops::prompt_cache::CacheReport> {
        crate::ops::prompt_cache::report(&self.repo, branch, o)
    }

    /// The records on the first-parent line from `HEAD` (or from just before `q.before`),
    /// newest first: of `q.kind` or a kind under it, at most `q.limit`.
    pub fn records(&self, q: &RecordQuery) -> Result<Vec<crate::write::record::Record>> {
        crate::write::record::list(&self.repo, q.kind.as_deref(), q.limit, q.before.as_ref())
    }

    /// The record `rev` names (an error if it is another kind of commit).
    pub fn get_record(&self, rev: impl Into<Rev>) -> Result<crate::write::record::Record> {
        crate::write::record::get(&self.repo, &rev.into())
    }

    /// The tombstone of a redacted message's blob (`None` when `rev`'s message is not redacted,
    /// or it has none): when and why it was redacted.
    pub fn tombstone(
        &self,
        rev: impl Into<Rev>,
    ) -> Result<Option<crate::storage::store::Tombstone>> {
        let snap = self.repo.read()?;
        let id = self.repo.resolve(&snap, &rev.into())?;
        match snap.commit(&id)?.blob {
            Some(b) => snap.tombstone(&b),
            None => Ok(None),
        }
    }

    /// Messages matching `q`, oldest first, each with a snippet.
    pub fn search(&self, q: &SearchQuery) -> Result<Vec<SearchHit>> {
        let progress = self.progress();
        let indexed = progress
            .as_ref()
            .map(|p| move |commits: u64| p(Progress::Indexing { commits }));
        search::search(
            &self.repo,
            q,
            indexed.as_ref().map(|f| f as &(dyn Fn(u64) + Sync)),
        )
    }
}
