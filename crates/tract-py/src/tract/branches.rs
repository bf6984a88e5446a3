//! Branches through a handle: its position, listing, creating, forking, merging, deleting,
//! clearing, popping, switching, checking out, resetting, and the reflog.

use super::compress::chosen;
use super::{PyTract, invalid_input, rev_of};
use crate::commit::PyCommitInfo;
use crate::compress::positive;
use crate::convert::to_py;
use crate::errors::IntoPyResult;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tract_core::{BranchName, MergeRequest, MergeStrategy, Rev};

#[pymethods]
impl PyTract {
    /// The commit this handle is at (None on a branch with no commits yet).
    #[getter]
    fn head(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.with(py, |t| t.head())?.commit.map(|c| c.to_hex()))
    }

    /// The branch this handle is on (None when detached).
    #[getter]
    fn current_branch(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.with(py, |t| t.head())?.branch().map(str::to_string))
    }

    /// Every branch (every session) with its tip, messages and tokens in view and last
    /// activity, as kept while it moved (nothing is compiled). Each unpacks as `(name, head)`.
    fn branches(&self, py: Python<'_>) -> PyResult<Vec<crate::branch::PyBranchInfo>> {
        let list = self.with(py, |t| t.branches())?;
        Ok(list.into_iter().map(Into::into).collect())
    }

    /// Creates branch `name` at `at` (default HEAD); returns the commit it starts at.
    #[pyo3(signature = (name, at=None))]
    fn branch(
        &self,
        py: Python<'_>,
        name: String,
        at: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let at = at.map(rev_of).transpose()?;
        let name = BranchName::new(&name).py()?;
        Ok(self
            .with(py, move |t| {
                t.create_branch(&name, &at.unwrap_or_else(Rev::head))
            })?
            .to_hex())
    }

    /// A new branch `name` at this handle's position (or at `at`), returned as a handle bound
    /// to it, on the same store, with this handle's hooks and default summarizer. Nothing is
    /// copied: a fork costs the same at any history size.
    #[pyo3(signature = (name, at=None))]
    fn fork(
        &self,
        py: Python<'_>,
        name: String,
        at: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTract> {
        let at = at.map(rev_of).transpose()?;
        let name = BranchName::new(&name).py()?;
        let fork = self.with(py, move |t| t.fork(&name, &at.unwrap_or_else(Rev::head)))?;
        Ok(PyTract::of(fork))
    }

    /// Merges branch `name` into this handle's branch with a commit of two parents (the
    /// branch's whole history stays reachable). `strategy="append"`: the view continues with
    /// the branch's messages since it forked. `strategy="tool_result", call_id=ID`: the branch's
    /// final assistant answer (or, with `summarize=True`, a summary of its work by `summarizer`,
    /// the handle's, or the extractive one) becomes the result of that pending call. A branch
    /// merged into itself, one with no common history or nothing new, or a call that is not
    /// pending raises, and nothing is committed. Returns the merge commit.
    #[pyo3(signature = (branch, *, strategy="append", call_id=None, summarize=false, summarizer=None, target_tokens=None, note=None))]
    #[allow(clippy::too_many_arguments)]
    fn merge(
        &self,
        py: Python<'_>,
        branch: String,
        strategy: &str,
        call_id: Option<String>,
        summarize: bool,
        summarizer: Option<Py<PyAny>>,
        target_tokens: Option<i64>,
        note: Option<String>,
    ) -> PyResult<PyCommitInfo> {
        let name = BranchName::new(&branch).py()?;
        let strategy = match (strategy, call_id) {
            ("append", None) => MergeStrategy::Append,
            ("tool_result", Some(call_id)) => MergeStrategy::ToolResult { call_id },
            ("append", Some(_)) => {
                return Err(invalid_input("call_id goes with strategy=\"tool_result\""));
            }
            ("tool_result", None) => {
                return Err(invalid_input("strategy=\"tool_result\" needs call_id"));
            }
            (other, _) => {
                return Err(invalid_input(format!(
                    "unknown merge strategy '{other}' (expected \"append\" or \"tool_result\")"
                )));
            }
        };
        let target_tokens = positive(target_tokens)?;
        let chosen = chosen(py, summarizer, None);
        self.with(py, move |t| {
            t.merge(
                &name,
                &MergeRequest {
                    strategy,
                    summarize,
                    summarizer: chosen.as_deref(),
                    target_tokens,
                    note,
                },
            )
        })
        .map(Into::into)
    }

    /// Deletes branch `name` (not the one this handle or the store's HEAD is on); its reflog
    /// keeps the tip, which this returns. A handle still bound to it raises NotFoundError
    /// rather than start a new history there.
    fn delete_branch(&self, py: Python<'_>, name: String) -> PyResult<String> {
        let name = BranchName::new(&name).py()?;
        Ok(self.with(py, move |t| t.delete_branch(&name))?.to_hex())
    }

    /// Empties the handle's branch (a session started over): every handle on it sees it
    /// empty, and the old tip stays in the reflog. Returns that tip, or None.
    fn clear_branch(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let tip = self.with(py, |t| t.clear_branch())?;
        Ok(tip.map(|c| c.to_hex()))
    }

    /// Takes the last message off the view and nothing else: the branch moves back to just
    /// before it was appended, and what was committed since (edits, a compression or a clear
    /// of earlier messages, records) is written again on top; the reflog keeps the old tip.
    /// Returns it as a message dict, or None for an empty branch; refused when it is a summary
    /// or came from a merge.
    fn pop<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let popped = self.with(py, |t| t.pop())?;
        popped
            .map(|m| to_py(py, &tract_core::json::message_to_json(&m)))
            .transpose()
    }

    /// Puts this handle on branch `name` (other handles and the store's HEAD stay put).
    fn switch(&self, py: Python<'_>, name: String) -> PyResult<()> {
        self.with(py, move |t| t.switch(&name)).map(|_| ())
    }

    /// Puts this handle on a branch, or detaches it at a commit (time travel).
    fn checkout(&self, py: Python<'_>, rev: &Bound<'_, PyAny>) -> PyResult<()> {
        let rev = rev_of(rev)?;
        self.with(py, move |t| t.checkout(&rev)).map(|_| ())
    }

    /// Moves this handle's branch to `rev`; the old head stays in the reflog.
    fn reset(&self, py: Python<'_>, rev: &Bound<'_, PyAny>) -> PyResult<()> {
        let rev = rev_of(rev)?;
        self.with(py, move |t| t.reset(&rev)).map(|_| ())
    }

    /// The moves of a ref, newest first: dicts with `old`, `new`, `reason`, `timestamp_us`.
    #[pyo3(signature = (name="HEAD".to_string(), limit=None))]
    fn reflog<'py>(
        &self,
        py: Python<'py>,
        name: String,
        limit: Option<usize>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let entries = self.with(py, move |t| t.reflog(&name, limit.unwrap_or(usize::MAX)))?;
        entries
            .into_iter()
            .map(|e| {
                let d = PyDict::new(py);
                d.set_item("old", e.old.map(|c| c.to_hex()))?;
                d.set_item("new", e.new.map(|c| c.to_hex()))?;
                d.set_item("reason", e.reason)?;
                d.set_item("timestamp_us", e.timestamp_us)?;
                Ok(d)
            })
            .collect()
    }
}
