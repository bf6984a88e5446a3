//! `tract.ToolTurn`, `tract.ToolCall` and `tract.SearchHit`.

use crate::commit::PyCommitInfo;
use pyo3::prelude::*;
use tract_core::{SearchHit, ToolCallInfo, ToolTurn};

/// One tool call with its lifecycle: input, state, result and duration.
#[pyclass(name = "ToolCall", module = "tract", frozen)]
pub struct PyToolCall {
    inner: ToolCallInfo,
}

impl From<ToolCallInfo> for PyToolCall {
    fn from(inner: ToolCallInfo) -> Self {
        PyToolCall { inner }
    }
}

#[pymethods]
impl PyToolCall {
    /// The provider's call id.
    #[getter]
    fn call_id(&self) -> &str {
        &self.inner.call_id
    }

    /// The tool's name.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// The arguments as the model wrote them (JSON text, verbatim).
    #[getter]
    fn arguments(&self) -> &str {
        &self.inner.arguments
    }

    /// `pending`, `ok` or `error`.
    #[getter]
    fn state(&self) -> &'static str {
        self.inner.state.as_str()
    }

    /// The assistant commit that made the call.
    #[getter]
    fn call_hash(&self) -> String {
        self.inner.call_commit.to_hex()
    }

    /// The result's commit (its view position), None while pending.
    #[getter]
    fn result_hash(&self) -> Option<String> {
        self.inner.result_commit.map(|c| c.to_hex())
    }

    /// Milliseconds from the call's commit to the result's, None while pending.
    #[getter]
    fn duration_ms(&self) -> Option<f64> {
        self.inner.duration_us.map(|d| d as f64 / 1000.0)
    }

    /// Tokens of the result as it is in view.
    #[getter]
    fn result_tokens(&self) -> Option<u32> {
        self.inner.result_tokens
    }

    /// Bytes of the result's text as it is in view.
    #[getter]
    fn result_bytes(&self) -> Option<usize> {
        self.inner.result_bytes
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolCall(call_id={}, name={}, state={})",
            self.inner.call_id,
            self.inner.name,
            self.inner.state.as_str()
        )
    }
}

/// An assistant tool-call commit with its result commits, matched by call id.
#[pyclass(name = "ToolTurn", module = "tract", frozen, eq, hash)]
pub struct PyToolTurn {
    inner: ToolTurn,
}

impl PartialEq for PyToolTurn {
    fn eq(&self, other: &Self) -> bool {
        self.inner.all_hashes() == other.inner.all_hashes()
    }
}

impl std::hash::Hash for PyToolTurn {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.all_hashes().hash(state);
    }
}

impl From<ToolTurn> for PyToolTurn {
    fn from(inner: ToolTurn) -> Self {
        PyToolTurn { inner }
    }
}

#[pymethods]
impl PyToolTurn {
    /// The assistant message with tool calls.
    #[getter]
    fn call(&self) -> PyCommitInfo {
        self.inner.call.clone().into()
    }

    /// The tool results, in call order (a call without a result contributes none).
    #[getter]
    fn results(&self) -> Vec<PyCommitInfo> {
        self.inner.results.iter().cloned().map(Into::into).collect()
    }

    /// Names of the tools called in this turn, in call order.
    #[getter]
    fn tool_names(&self) -> Vec<String> {
        self.inner.tool_names()
    }

    /// All commit hashes in this turn (call + results).
    #[getter]
    fn all_hashes(&self) -> Vec<String> {
        self.inner.all_hashes().iter().map(|h| h.to_hex()).collect()
    }

    /// Just the result commit hashes.
    #[getter]
    fn result_hashes(&self) -> Vec<String> {
        self.inner
            .result_hashes()
            .iter()
            .map(|h| h.to_hex())
            .collect()
    }

    /// Each call's lifecycle (state, input, result, duration), in call order.
    #[getter]
    fn calls(&self) -> Vec<PyToolCall> {
        self.inner.calls.iter().cloned().map(Into::into).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolTurn(call={}, results={}, tool_names={:?})",
            self.inner.call.id.short(),
            self.inner.results.len(),
            self.inner.tool_names()
        )
    }
}

/// One search match: the commit and a snippet of the matching line.
#[pyclass(name = "SearchHit", module = "tract", frozen)]
pub struct PySearchHit {
    inner: SearchHit,
}

impl From<SearchHit> for PySearchHit {
    fn from(inner: SearchHit) -> Self {
        PySearchHit { inner }
    }
}

#[pymethods]
impl PySearchHit {
    /// The commit whose message matched.
    #[getter]
    fn commit(&self) -> PyCommitInfo {
        self.inner.info.clone().into()
    }

    /// Its hash.
    #[getter]
    fn commit_hash(&self) -> String {
        self.inner.info.id.to_hex()
    }

    /// The matching line, cut around the match.
    #[getter]
    fn snippet(&self) -> &str {
        &self.inner.snippet
    }

    fn __repr__(&self) -> String {
        format!(
            "SearchHit({} {:?})",
            self.inner.info.id.short(),
            self.inner.snippet
        )
    }
}
