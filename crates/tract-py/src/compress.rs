//! Compression from Python: summarizers given as callables, and the report as a dict.

use crate::convert::to_py;
use crate::errors::IntoPyResult;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;
use tract_core::{CompressOutcome, Error, FnSummarizer, Summarizer, SummaryRequest};

/// `target_tokens` from Python: positive, or an error (the core's rule).
pub(crate) fn positive(n: Option<i64>) -> PyResult<Option<std::num::NonZeroU32>> {
    n.map(tract_core::tools::decision::target_tokens)
        .transpose()
        .py()
}

/// The summarizer a Python object stands for: an `OpenAICompatible`, or a callable
/// `summarizer(messages) -> str` given OpenAI-style messages (system first).
pub fn summarizer_of(py: Python<'_>, f: Py<PyAny>) -> Arc<dyn Summarizer> {
    if let Ok(client) = f.bind(py).cast::<PyOpenAiCompatible>() {
        return Arc::new(client.get().inner.clone());
    }
    let name = callable_name(f.bind(py));
    let identity = format!("callable:{name}");
    Arc::new(FnSummarizer::new(name, move |req: &SummaryRequest| {
        // Called with the GIL released around it, so it takes the GIL itself.
        Python::attach(|py| {
            let messages = to_py(py, &req.to_chat_messages())?;
            f.bind(py).call1((messages,))?.extract::<String>()
        })
        .map_err(|e| Error::Summarizer {
            summarizer: identity.clone(),
            reason: format!("the summarizer raised {e}"),
        })
    }))
}

/// A name for a callable, recorded on the compress commit.
fn callable_name(f: &Bound<'_, PyAny>) -> String {
    f.getattr("__qualname__")
        .or_else(|_| f.getattr("__name__"))
        .and_then(|n| n.extract::<String>())
        .unwrap_or_else(|_| "summarizer".into())
}

/// The report of `tract compress --json` (`commits`, `sources`, `skipped`, `warnings`,
/// `tokens_before`, `tokens_after`), its commits `CommitInfo` objects; each run left as it was
/// (its summary was not shorter) is also a `TractWarning`.
pub fn outcome_dict<'py>(py: Python<'py>, out: CompressOutcome) -> PyResult<Bound<'py, PyDict>> {
    for w in &out.warnings {
        crate::errors::warn(py, w)?;
    }
    // Brief: the commits' texts would be made only to be replaced by the objects.
    let report = tract_vocabulary::CompressReport::new(&out, tract_vocabulary::Detail::Brief);
    crate::vocabulary::with_commits(py, &report, "commits", out.commits)
}

/// A summarizer that asks an OpenAI-compatible chat-completions server (OpenAI, vLLM,
/// Ollama, llama.cpp server). Pass it as `summarizer=` to `compress`, `compress_tool_calls`
/// or `Tract.open`. Retries 429 and 5xx replies with backoff.
#[pyclass(name = "OpenAICompatible", module = "tract", frozen)]
pub struct PyOpenAiCompatible {
    pub(crate) inner: tract_core::OpenAiCompatible,
}

#[pymethods]
impl PyOpenAiCompatible {
    /// `base_url` and `model` default to `TRACT_LLM_BASE_URL` / `TRACT_LLM_MODEL` (then the
    /// `OPENAI_*` variables); `api_key` to `TRACT_LLM_API_KEY` / `OPENAI_API_KEY`.
    #[new]
    #[pyo3(signature = (base_url=None, model=None, api_key=None, timeout=60.0, retries=3, backoff=1.0))]
    fn new(
        base_url: Option<String>,
        model: Option<String>,
        api_key: Option<String>,
        timeout: f64,
        retries: u32,
        backoff: f64,
    ) -> PyResult<Self> {
        let seconds = |s: f64, what: &str| {
            if s.is_finite() && s >= 0.0 {
                Ok(std::time::Duration::from_secs_f64(s))
            } else {
                Err(crate::errors::to_py(Error::InvalidInput {
                    message: format!("{what} must be a non-negative number of seconds"),
                }))
            }
        };
        let mut inner = tract_core::Environment::from_process()
            .llm(base_url, model, api_key)
            .py()?;
        inner.timeout = seconds(timeout, "timeout")?;
        inner.backoff = seconds(backoff, "backoff")?;
        inner.retries = retries;
        Ok(PyOpenAiCompatible { inner })
    }

    /// The base URL requests go to, without a user and password it may hold.
    #[getter]
    fn base_url(&self) -> String {
        self.inner.shown_base_url()
    }

    /// The model asked.
    #[getter]
    fn model(&self) -> &str {
        &self.inner.model
    }

    fn __repr__(&self) -> String {
        format!(
            "OpenAICompatible(base_url={:?}, model={:?})",
            self.inner.shown_base_url(),
            self.inner.model
        )
    }
}
