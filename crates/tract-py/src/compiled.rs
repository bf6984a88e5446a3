//! `tract.Compiled`: a view rendered for a provider.

use crate::convert::to_py;
use crate::errors::IntoPyResult;
use crate::renders::Renders;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;
use tract_core::Compiled;

/// What the model would see at a commit, valid by construction. It holds what each message is
/// (role, calls, tokens), not its text: a message's text is read from the store the first time
/// this compile renders it (one redacted since shows its tombstone).
#[pyclass(name = "Compiled", module = "tract", frozen)]
pub struct PyCompiled {
    pub(crate) inner: Compiled,
    /// The renderings of the handle it was compiled by, reused and kept up to date.
    pub(crate) renders: Arc<Renders>,
}

#[pymethods]
impl PyCompiled {
    /// The messages in sending order, in tract's neutral form (dicts with role, content and,
    /// where they apply, name, tool_calls, tool_call_id, is_error).
    #[getter]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let messages = py.detach(|| self.inner.messages()).py()?;
        messages
            .iter()
            .map(|m| to_py(py, &tract_core::json::message_to_json(&m.message)))
            .collect()
    }

    /// Tokens of each message in `messages`, framing included.
    #[getter]
    fn message_token_counts(&self) -> Vec<u32> {
        self.inner.message_tokens()
    }

    /// Total tokens of the request (framing and reply priming included).
    #[getter]
    fn token_count(&self) -> u64 {
        self.inner.token_count()
    }

    /// The commit compiled (None for an empty branch).
    #[getter]
    fn head(&self) -> Option<String> {
        self.inner.head().map(|h| h.to_hex())
    }

    /// OpenAI's `prompt_cache_key` for this conversation's requests (pass it with
    /// `client.chat.completions.create(..., prompt_cache_key=...)`): derived from the first
    /// commit of the branch's history, so the same in every process for the branch and its
    /// forks. None for an empty branch.
    fn prompt_cache_key(&self, py: Python<'_>) -> PyResult<Option<String>> {
        py.detach(|| self.inner.prompt_cache_key()).py()
    }

    /// Problems repaired while compiling: calls without results, results without calls,
    /// call ids sent under a new id.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }

    /// The tool calls sent under another id than they hold, because an earlier call in view
    /// has theirs (each id is sent once per request): dicts with `position` (the commit of the
    /// message making the call), `index` (which of its calls), `id` (the id it holds) and
    /// `sent_as` (the id it is sent with, its result's `tool_call_id` with it), in view order.
    #[getter]
    fn reused_call_ids<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .reused_call_ids()
            .iter()
            .map(|r| {
                let d = PyDict::new(py);
                d.set_item("position", r.position.to_hex())?;
                d.set_item("index", r.index)?;
                d.set_item("id", &r.id)?;
                d.set_item("sent_as", &r.sent_as)?;
                Ok(d)
            })
            .collect()
    }

    /// OpenAI chat-completions `messages`. Each call returns objects of its own; a message
    /// rendered by an earlier call of the same handle is not rendered again (from the
    /// handle's second rendering on: its first keeps nothing, so a process that reads a view
    /// once makes one set of objects).
    fn to_openai<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.renders
            .openai(py, &self.inner)
            .unwrap_or_else(|| to_py(py, &py.detach(|| self.inner.to_openai()).py()?))
    }

    /// Anthropic Messages body: `{"system": ..., "messages": [...]}`. Each call returns
    /// objects of its own; a message rendered by an earlier call of the same handle is not
    /// rendered again. With `cache_breakpoints`, `cache_control` breakpoints where the prefix
    /// stays the same from request to request (at most 4: the end of the system prompt, then a
    /// list of one text block; of the newest summary; of the newest message), the whole body
    /// rendered anew.
    #[pyo3(signature = (cache_breakpoints=false))]
    fn to_anthropic<'py>(
        &self,
        py: Python<'py>,
        cache_breakpoints: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        if cache_breakpoints {
            let body = py
                .detach(|| self.inner.to_anthropic_with_cache_breakpoints())
                .py()?;
            return to_py(py, &body);
        }
        self.renders
            .anthropic(py, &self.inner)
            .unwrap_or_else(|| to_py(py, &py.detach(|| self.inner.to_anthropic()).py()?))
    }

    /// OpenAI Responses `input` items in view order (with `limit`, the last `limit` of them);
    /// items added with `append_items` come back as they were added (with the current content
    /// where it was edited since). Each call returns objects of its own; a message rendered
    /// by an earlier call of the same handle is not rendered again (from the handle's second
    /// rendering on, as for `to_openai`).
    #[pyo3(signature = (limit=None))]
    fn to_responses<'py>(
        &self,
        py: Python<'py>,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.renders
            .responses(py, &self.inner, limit)
            .unwrap_or_else(|| to_py(py, &py.detach(|| self.inner.to_responses(limit)).py()?))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Compiled(messages={}, token_count={})",
            self.inner.len(),
            self.inner.token_count()
        )
    }
}
