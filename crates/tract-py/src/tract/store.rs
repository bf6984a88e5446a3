//! Upkeep and transfer of the whole store, which the core gives as functions taking a `Store`
//! (and the `Store`'s `compact`): checking, collecting, indexing, checkpointing the views,
//! compacting, pushing and pulling. Python has one class, so they are methods of `Tract`.

use super::{PyTract, invalid_input};
use crate::errors::IntoPyResult;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::Arc;
use tract_core::Error;

/// The core's sync options from Python's arguments.
fn sync_options(
    branches: Option<Vec<String>>,
    force: bool,
    settings: bool,
) -> PyResult<tract_core::SyncOptions<'static>> {
    let branches = branches
        .map(|specs| {
            specs
                .iter()
                .map(|s| tract_core::BranchSpec::parse(s))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
        .py()?;
    Ok(tract_core::SyncOptions {
        branches,
        force,
        settings,
        on_progress: None,
    })
}

/// A push's or pull's report as a dict, or DivergedError carrying it when a branch was refused.
fn sync_result<'py>(py: Python<'py>, r: &tract_core::SyncReport) -> PyResult<Bound<'py, PyDict>> {
    let report = sync_report(py, r)?;
    if r.is_complete() {
        Ok(report)
    } else {
        Err(crate::errors::refused(py, r, report))
    }
}

/// A sync report as a dict.
fn sync_report<'py>(py: Python<'py>, r: &tract_core::SyncReport) -> PyResult<Bound<'py, PyDict>> {
    crate::vocabulary::dict(py, &tract_vocabulary::SyncReport::from(r))
}

#[pymethods]
impl PyTract {
    /// Checks the whole store (every branch): re-hashes every object and chunk, checks every
    /// link, ref and reflog entry and the kept per-branch counts, lists what nothing reaches.
    /// Returns a dict: `clean`, the counts checked (`commits`, `blobs`, `chunks`, `bytes`,
    /// `branches`, `reflog_entries`, `counts_replayed`, `checkpoints_checked`, `journal_frames`,
    /// `index_documents`: the search index's documents checked against the store, 0 without an
    /// index file), `problems` (dicts with `kind`, `subject`, `detail`; the search index's are
    /// of kind `index`, and `update_index(rebuild=True)` repairs them), `unreachable`
    /// (`commits`, `blobs`, `chunks`: full ids), `redacted` (blob ids) and
    /// `derived_from_redacted` (commits whose content was made from redacted content:
    /// `redact(..., follow=True)` removes them too), `reused_call_ids` (branch name to how
    /// many tool calls in its view reuse an id an earlier call used: not a problem, compile
    /// sends each under a new id), `secrets_in_view` (branch name to how many messages in its
    /// view hold what looks like a credential: a warning, `redact_secrets()` scrubs them), and
    /// `past_checkpoint` (every branch's name to the commits a new handle reads past its view
    /// checkpoint: at most the checkpoint interval, the whole history without a checkpoint).
    fn fsck<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.with(py, |t| tract_core::fsck(t.store()))?;
        crate::vocabulary::dict(py, &tract_vocabulary::FsckReport::from(&r))
    }

    /// Applies the store's retention policy (see `set_retention_policy`; nothing without a
    /// rule), then removes the objects nothing reaches: not a branch, not HEAD, not a reflog
    /// entry younger than `grace_days` (older entries are expired); `prune_now=True` for no
    /// grace; `dry_run=True` changes nothing and says what would go. Returns a dict:
    /// `commits`, `blobs`, `chunks`, `bytes`, `reflog_entries`, and the view checkpoints (all
    /// but each branch's newest; not counted in a dry run) and their chunks, `checkpoints`,
    /// `checkpoint_chunks`, removed; `dry_run`; and `retention`, one dict per rule in the
    /// policy's order: `rule`, `deleted_branches` (`branch`, `commit_hash`, `idle_since`: RFC
    /// 3339 UTC),
    /// `replaced_results` (`commits`, `summary`: the summary's hash or None for a
    /// placeholder), `bytes` and `kept` (`pinned`, `current`, `shared`, `newest`,
    /// `unsummarized`: what the rule covers but kept, by why), as `tract gc --json` says.
    #[pyo3(signature = (*, grace_days=14.0, prune_now=false, dry_run=false))]
    fn gc<'py>(
        &self,
        py: Python<'py>,
        grace_days: f64,
        prune_now: bool,
        dry_run: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        if !grace_days.is_finite() || grace_days < 0.0 {
            return Err(invalid_input(format!(
                "grace_days must be a number of days, 0 or more (got {grace_days})"
            )));
        }
        let grace = if prune_now {
            std::time::Duration::ZERO
        } else {
            std::time::Duration::from_secs_f64(grace_days * 86_400.0)
        };
        let options = tract_core::GcOptions { grace, dry_run };
        let out = self.with(py, move |t| tract_core::gc_with(t.store(), &options))?;
        crate::vocabulary::dict(py, &tract_vocabulary::GcReport::from(&out))
    }

    /// Brings the store's search index up to date: the commits written since it was last
    /// brought up to date (by any process), and the text redactions and `gc` removed; with
    /// `rebuild=True`, builds it anew from every branch. Searching never needs this (a search
    /// finds what is not indexed yet itself, and the processes that write index in batches);
    /// it is for after a bulk import, and to repair an index `fsck` finds wrong. Waits up to a
    /// minute for another process that is indexing (`StoreLockedError` after that). Returns a
    /// dict: `added` (commits), `removed` (documents dropped or rewritten), `rebuilt`,
    /// `documents` (one per commit), `bytes` (of its files, or of its tables in a database),
    /// `path` (its directory beside the store file; None for a store in memory or in
    /// PostgreSQL) and `in_database` (True for a store in PostgreSQL, whose index is the
    /// database's own full-text search, beside the store's tables).
    #[pyo3(signature = (*, rebuild=false))]
    fn update_index<'py>(&self, py: Python<'py>, rebuild: bool) -> PyResult<Bound<'py, PyDict>> {
        let r = self.with(py, move |t| tract_core::update_index(t.store(), rebuild))?;
        crate::vocabulary::dict(py, &tract_vocabulary::IndexReport::from(&r))
    }

    /// Checkpoints the view of every branch whose tip has no checkpoint of this layout (a
    /// store written by older code, a clone, a pull), so a new handle builds it from there
    /// instead of replaying its history; what `tract upgrade` does. Returns how many were
    /// written.
    fn checkpoint_views(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |t| t.checkpoint_views())
    }

    /// Closes this handle and compacts the store file: it shrinks, and no freed page keeps the
    /// bytes of what `gc` removed or `redact` replaced. Needs the only open handle on the store
    /// in this process (forks included) and no transaction of another process under way.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        let taken = {
            let mut guard = self.inner.write().unwrap_or_else(|e| e.into_inner());
            guard.take()
        };
        let Some(arc) = taken else {
            return Err(crate::errors::to_py(Error::InvalidOperation {
                message: "this Tract is closed".into(),
            }));
        };
        let t = Arc::try_unwrap(arc).map_err(|_| {
            crate::errors::to_py(Error::InvalidOperation {
                message: "a call on this handle is still running".into(),
            })
        })?;
        py.detach(move || t.into_store().compact()).py()
    }

    /// Sends branches (all, or `branches`) and the history they reach to the store at `dest`
    /// (a file or a postgresql:// URL; it must be a tract store): only the objects it lacks,
    /// each hashed again as it is stored. A branch is a name, or `"SRC:DST"` to send the
    /// branch SRC as DST (`"main:theirs/main"`). Each branch moves only by fast-forward; one
    /// that has diverged is refused and the others move: then DivergedError is raised after
    /// the transfer, naming each refused branch, with `report` (the dict below, its `refused`
    /// listing them); `force` moves them anyway (the old tip stays in the reflog). `settings`
    /// sends the tool-summarization, retention and secrets policies too. Returns a dict: `branches`
    /// (each `name`, `source`, `old`, `new`, `up_to_date`, `forced`, `ahead_of`: the
    /// sender's tip when the receiver's branch already contained it, and stayed), `refused`
    /// (each `name`, `source`, `receiver`, `sender`, `reason`), `commits`, `blobs`,
    /// `settings`.
    #[pyo3(signature = (dest, branches=None, *, force=false, settings=false))]
    fn push<'py>(
        &self,
        py: Python<'py>,
        dest: PathBuf,
        branches: Option<Vec<String>>,
        force: bool,
        settings: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let options = sync_options(branches, force, settings)?;
        let report = self.with(py, move |t| tract_core::push(t.store(), &dest, &options))?;
        sync_result(py, &report)
    }

    /// Receives branches (all, or `branches`, each a name or `"SRC:DST"`: the sender's SRC
    /// as this store's DST) and their history from the store at `src` into this one, as
    /// `push` sends them: a diverged branch is refused (DivergedError with `report`, after
    /// the others moved); `pull(src, ["main:theirs/main"])` then brings it in under another
    /// name, to `merge("theirs/main")`. Returns the same dict as `push`.
    #[pyo3(signature = (src, branches=None, *, force=false, settings=false))]
    fn pull<'py>(
        &self,
        py: Python<'py>,
        src: PathBuf,
        branches: Option<Vec<String>>,
        force: bool,
        settings: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let options = sync_options(branches, force, settings)?;
        let report = self.with(py, move |t| tract_core::pull(t.store(), &src, &options))?;
        sync_result(py, &report)
    }
}
