//! Hooks from Python: the pending tool result a `tool_result` handler decides on.

use crate::errors::IntoPyResult;
use pyo3::prelude::*;
use std::sync::Mutex;
use tract_core::{Decision, DecisionSlot};

/// A tool result waiting for a `tool_result` handler's decision. Call exactly one of
/// `approve()`, `summarize()`, `edit()` or `reject()`; a handler that calls none approves
/// (with a `TractWarning`).
#[pyclass(name = "PendingToolResult", module = "tract", frozen)]
pub struct PyPendingToolResult {
    /// The tool that produced the result.
    #[pyo3(get)]
    pub tool_name: String,
    /// The call the result answers.
    #[pyo3(get)]
    pub tool_call_id: String,
    /// The result's text, as it is stored: what looks like a credential already scrubbed.
    #[pyo3(get)]
    pub content: String,
    /// Whether the tool reported a failure.
    #[pyo3(get)]
    pub is_error: bool,
    /// The result's tokens (without message framing).
    #[pyo3(get)]
    pub token_count: u32,
    /// The Tract the result is for.
    #[pyo3(get)]
    pub tract: Py<PyAny>,
    decision: Mutex<DecisionSlot>,
}

impl PyPendingToolResult {
    /// What the core's pending result holds, for the Python handler; `tract` is the Tract
    /// object the result is for (None once it is gone).
    pub fn new(p: &tract_core::PendingToolResult, tract: Py<PyAny>) -> Self {
        PyPendingToolResult {
            tool_name: p.tool_name.clone(),
            tool_call_id: p.tool_call_id.clone(),
            content: p.content.clone(),
            is_error: p.is_error,
            token_count: p.token_count,
            tract,
            decision: Mutex::new(DecisionSlot::default()),
        }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, DecisionSlot> {
        self.decision.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn decide(&self, d: Decision) -> PyResult<()> {
        self.slot().decide(d).py()
    }

    /// What the handler decided, if anything.
    pub fn take_decision(&self) -> Option<Decision> {
        self.slot().take()
    }
}

#[pymethods]
impl PyPendingToolResult {
    /// Record the result unchanged.
    fn approve(&self) -> PyResult<()> {
        self.decide(Decision::Approve)
    }

    /// Record the result, then its summary as an edit of it (the model sees the summary;
    /// history keeps the original). `instructions` follow the tool prompt.
    #[pyo3(signature = (instructions=None, target_tokens=None))]
    fn summarize(&self, instructions: Option<String>, target_tokens: Option<i64>) -> PyResult<()> {
        let target_tokens = crate::compress::positive(target_tokens)?;
        self.decide(Decision::Summarize {
            instructions,
            target_tokens,
        })
    }

    /// Record the result, then `text` as an edit of it.
    fn edit(&self, text: String) -> PyResult<()> {
        self.decide(Decision::Edit(text))
    }

    /// Record nothing: `tool_result()` raises `RejectedError` with `reason`.
    fn reject(&self, reason: String) -> PyResult<()> {
        self.decide(Decision::Reject(reason))
    }

    /// `"approve"`, `"summarize"`, `"edit"`, `"reject"`, or None before a decision.
    #[getter]
    fn decision(&self) -> Option<&'static str> {
        self.slot().get().map(Decision::name)
    }

    fn __repr__(&self) -> String {
        format!(
            "PendingToolResult(tool_name={:?}, tool_call_id={:?}, token_count={})",
            self.tool_name, self.tool_call_id, self.token_count
        )
    }
}

/// The store's tool-summarization policy, as `Tract.tool_summarization()` returns it.
#[pyclass(name = "ToolSummarization", module = "tract", frozen)]
pub struct PyToolSummarization {
    /// Tool name to the instructions its results are summarized with.
    #[pyo3(get)]
    pub instructions: std::collections::BTreeMap<String, String>,
    /// Results over this many tokens are summarized (None: no threshold).
    #[pyo3(get)]
    pub auto_threshold: Option<u32>,
    /// The instructions used for results over the threshold (None: the tool prompt alone).
    #[pyo3(get)]
    pub default_instructions: Option<String>,
}

impl From<tract_core::ToolPolicy> for PyToolSummarization {
    fn from(p: tract_core::ToolPolicy) -> Self {
        PyToolSummarization {
            instructions: p.instructions,
            auto_threshold: p.auto_threshold,
            default_instructions: p.default_instructions,
        }
    }
}

#[pymethods]
impl PyToolSummarization {
    /// Each field as Python writes it (`None`, not Rust's `Some(..)`).
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        use pyo3::IntoPyObjectExt;
        let repr = |v: Bound<'_, PyAny>| v.repr().map(|r| r.to_string());
        Ok(format!(
            "ToolSummarization(instructions={}, auto_threshold={}, default_instructions={})",
            repr(self.instructions.clone().into_bound_py_any(py)?)?,
            repr(self.auto_threshold.into_bound_py_any(py)?)?,
            repr(self.default_instructions.clone().into_bound_py_any(py)?)?,
        ))
    }
}
