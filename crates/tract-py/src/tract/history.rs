//! Reading history through a handle: revisions, commits, their content, the log, versions of
//! a position, and records.

use super::{PyTract, rev_of};
use crate::commit::PyCommitInfo;
use crate::convert::to_py;
use pyo3::prelude::*;
use tract_core::LogQuery;

#[pymethods]
impl PyTract {
    /// Resolves a reference to a full commit hash.
    fn resolve(&self, py: Python<'_>, rev: &Bound<'_, PyAny>) -> PyResult<String> {
        let rev = rev_of(rev)?;
        Ok(self.with(py, move |t| t.resolve(&rev))?.to_hex())
    }

    /// One commit by hash (a unique prefix works), branch name or `HEAD~N`.
    fn get_commit(&self, py: Python<'_>, commit: &Bound<'_, PyAny>) -> PyResult<PyCommitInfo> {
        let rev = rev_of(commit)?;
        self.with(py, move |t| t.get_commit(rev)).map(Into::into)
    }

    /// The content stored in that commit: a string, or a list of part dicts.
    fn get_content<'py>(
        &self,
        py: Python<'py>,
        commit: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let info = match commit.cast::<PyCommitInfo>() {
            Ok(ci) if ci.get().inner.message.is_some() => ci.get().inner.clone(),
            _ => {
                let rev = rev_of(commit)?;
                self.with(py, move |t| t.get_commit(rev))?
            }
        };
        match info.message.as_deref() {
            Some(m) => to_py(py, &tract_core::json::message_to_json(m)["content"]),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// History from `start` (default HEAD) back along first parents, newest first. With
    /// `graph=True`, every commit reachable through both parents of merges (a merged branch's
    /// commits too), newest first.
    #[pyo3(signature = (limit=None, start=None, *, graph=false))]
    fn log(
        &self,
        py: Python<'_>,
        limit: Option<usize>,
        start: Option<&Bound<'_, PyAny>>,
        graph: bool,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let start = start.map(rev_of).transpose()?;
        let query = LogQuery {
            start,
            limit,
            graph,
            ..LogQuery::default()
        };
        let infos = self.with(py, move |t| t.log(&query))?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// Every version of a message in view, oldest first: the original, then each edit.
    fn edit_history(
        &self,
        py: Python<'_>,
        commit: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let rev = rev_of(commit)?;
        let infos = self.with(py, move |t| t.edit_history(rev))?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// How the views of revisions `a` and `b` differ, as the model saw them: `a` and `b`
    /// (each with `rev`, `commit_hash`, `message_count`, `token_count`), `token_delta`,
    /// `shared_prefix_count` (they part after that many messages), `shared_count`, `only_a`
    /// and `only_b` (the messages only one holds, with their text), `changed` (the positions
    /// both hold with other content: `a` and `b` messages). With `b` None: what commit `a` did
    /// to its view (its first parent's view against its own, with `commit`). With
    /// `history=True`: the commits only each history holds (`only_a`, `only_b`) and
    /// `merge_base`. The fields of `tract diff --json`.
    #[pyo3(signature = (a, b=None, *, history=false))]
    fn diff<'py>(
        &self,
        py: Python<'py>,
        a: &Bound<'py, PyAny>,
        b: Option<&Bound<'py, PyAny>>,
        history: bool,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let a = rev_of(a)?;
        let b = b.map(rev_of).transpose()?;
        match (history, b) {
            (true, Some(b)) => {
                let d = self.with(py, move |t| t.diff_history(&a, &b))?;
                crate::vocabulary::dict(py, &tract_vocabulary::HistoryDiffReport::from(&d))
            }
            (true, None) => Err(super::invalid_input(
                "history=True compares two revisions: give b",
            )),
            (false, b) => {
                let d = self.with(py, move |t| match b {
                    Some(b) => t.diff(&a, &b),
                    None => t.diff_commit(&a),
                })?;
                crate::vocabulary::dict(py, &tract_vocabulary::ViewDiffReport::from(&d))
            }
        }
    }

    /// The compress commit whose summary replaced this message, if any.
    fn compressed_into(
        &self,
        py: Python<'_>,
        commit: &Bound<'_, PyAny>,
    ) -> PyResult<Option<PyCommitInfo>> {
        let rev = rev_of(commit)?;
        Ok(self
            .with(py, move |t| t.compressed_into(rev))?
            .map(Into::into))
    }

    /// The records on the branch's first-parent line from the head (or from just before the
    /// commit `before`), newest first: of `kind` or a kind under it (`"langgraph"` takes
    /// `"langgraph.checkpoint"`), at most `limit`.
    #[pyo3(signature = (kind=None, *, limit=None, before=None))]
    fn records(
        &self,
        py: Python<'_>,
        kind: Option<String>,
        limit: Option<usize>,
        before: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<crate::record::PyRecord>> {
        let query = tract_core::RecordQuery {
            kind,
            limit,
            before: before.map(rev_of).transpose()?,
        };
        let records = self.with(py, move |t| t.records(&query))?;
        Ok(records.into_iter().map(Into::into).collect())
    }

    /// The record a commit holds (an InvalidInputError for any other commit).
    fn get_record(
        &self,
        py: Python<'_>,
        commit: &Bound<'_, PyAny>,
    ) -> PyResult<crate::record::PyRecord> {
        let rev = rev_of(commit)?;
        self.with(py, move |t| t.get_record(rev)).map(Into::into)
    }
}
