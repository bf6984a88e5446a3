//! The view at a handle's position: compiled for a provider, and its status.

use super::{PyTract, rev_of};
use crate::compiled::PyCompiled;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

#[pymethods]
impl PyTract {
    /// Compiles the view at HEAD (or at commit `at`).
    #[pyo3(signature = (at=None))]
    fn compile(&self, py: Python<'_>, at: Option<&Bound<'_, PyAny>>) -> PyResult<PyCompiled> {
        let at = at.map(rev_of).transpose()?;
        let inner = self.with(py, move |t| match at {
            Some(rev) => t.compile_at(&rev),
            None => t.compile(),
        })?;
        Ok(PyCompiled {
            inner,
            renders: Arc::clone(&self.renders),
        })
    }

    /// Branch, head, message and token counts of the current view: `branch` (None when
    /// detached), `head`, `detached`, `messages`, `token_count`, `unanswered_tool_calls`,
    /// `reused_call_ids` (tool calls whose id an earlier call in view used: compile sends each
    /// under a new id), `path`: the fields of `tract status --json`.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.with(py, |t| t.status())?;
        crate::vocabulary::dict(py, &tract_vocabulary::Status::from(&s))
    }
}
