//! Compression from Python: summarizers given as callables, and the result as a dict.

use crate::commit::PyCommitInfo;
use crate::convert::to_py;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tract_core::{CompressOutcome, Error, SummaryRequest};

/// Calls a Python `summarizer(messages) -> str` with OpenAI-style messages (system first).
/// Runs with the GIL released around it, so it takes the GIL itself.
pub fn call_summarizer(f: &Py<PyAny>, req: &SummaryRequest) -> Result<String, Error> {
    Python::attach(|py| {
        let messages = to_py(py, &req.to_chat_messages())?;
        f.bind(py).call1((messages,))?.extract::<String>()
    })
    .map_err(|e| Error::Summarizer {
        message: format!("the summarizer raised {e}"),
    })
}

/// A name for a callable, recorded on the compress commit.
pub fn callable_name(f: &Bound<'_, PyAny>) -> String {
    f.getattr("__qualname__")
        .or_else(|_| f.getattr("__name__"))
        .and_then(|n| n.extract::<String>())
        .unwrap_or_else(|_| "summarizer".into())
}

/// `{"commits", "sources", "tokens_before", "tokens_after"}`.
pub fn outcome_dict<'py>(py: Python<'py>, out: CompressOutcome) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let sources: Vec<Vec<String>> = out
        .commits
        .iter()
        .map(|c| c.sources().iter().map(|s| s.to_hex()).collect())
        .collect();
    let commits: Vec<PyCommitInfo> = out.commits.into_iter().map(Into::into).collect();
    d.set_item("commits", commits)?;
    d.set_item("sources", sources)?;
    d.set_item("tokens_before", out.tokens_before)?;
    d.set_item("tokens_after", out.tokens_after)?;
    Ok(d)
}
