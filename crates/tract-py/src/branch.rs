//! `tract.BranchInfo`: one branch (one session) as `Tract.branches()` lists it.

use pyo3::prelude::*;
use tract_core::BranchInfo;

/// A branch: its name and tip, the messages and tokens in its view, when it last moved, and
/// whether this handle is on it. Unpacks as `(name, head)`, so `dict(t.branches())` maps
/// names to tips.
#[pyclass(name = "BranchInfo", module = "tract", frozen, eq)]
pub struct PyBranchInfo {
    inner: BranchInfo,
}

/// Equal when every field is: the same branch, at the same tip, with the same counts.
impl PartialEq for PyBranchInfo {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}

impl From<BranchInfo> for PyBranchInfo {
    fn from(inner: BranchInfo) -> Self {
        PyBranchInfo { inner }
    }
}

#[pymethods]
impl PyBranchInfo {
    /// The branch's name.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// Its tip: a full commit hash.
    #[getter]
    fn head(&self) -> String {
        self.inner.head.to_hex()
    }

    /// Whether this handle is on it.
    #[getter]
    fn current(&self) -> bool {
        self.inner.current
    }

    /// Messages in its view.
    #[getter]
    fn messages(&self) -> u64 {
        self.inner.messages
    }

    /// Tokens compile would send for it.
    #[getter]
    fn token_count(&self) -> u64 {
        self.inner.token_count
    }

    /// When its tip was committed, in microseconds since the Unix epoch.
    #[getter]
    fn last_activity_us(&self) -> u64 {
        self.inner.last_activity_us
    }

    /// When its tip was committed (timezone-aware, UTC).
    #[getter]
    fn last_activity<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::utc_datetime(py, self.inner.last_activity_us)
    }

    /// The agent whose session the branch holds (`"claude-code"`, `"codex"`, `"gemini"`), when
    /// an agent's session was imported or captured onto it; else `None`.
    #[getter]
    fn agent(&self) -> Option<&str> {
        self.inner.agent.as_ref().map(|a| a.agent.as_str())
    }

    /// That agent's version, as the session names it (`None` when it names none: Gemini CLI
    /// writes no version).
    #[getter]
    fn agent_version(&self) -> Option<&str> {
        self.inner.agent.as_ref().and_then(|a| a.version.as_deref())
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let pair = (self.inner.name.clone(), self.inner.head.to_hex());
        Ok(pyo3::types::PyTuple::new(py, [pair.0, pair.1])?
            .try_iter()?
            .into_any()
            .unbind())
    }

    fn __repr__(&self) -> String {
        format!(
            "BranchInfo(name={:?}, head={}, messages={}, token_count={}{}{})",
            self.inner.name,
            self.inner.head.short(),
            self.inner.messages,
            self.inner.token_count,
            self.inner
                .agent
                .as_ref()
                .map(|a| format!(", agent={:?}", a.label()))
                .unwrap_or_default(),
            if self.inner.current { ", current" } else { "" }
        )
    }
}
