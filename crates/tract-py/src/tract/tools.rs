//! Tool calls and results through a handle: recording a result, the `tool_result` hook and
//! the stored policy, tool queries and repair.

use super::{PyTract, rev_of};
use crate::commit::PyCommitInfo;
use crate::errors::IntoPyResult;
use crate::hooks::PyPendingToolResult;
use crate::tools::{PyToolCall, PyToolTurn};
use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;
use tract_core::{Content, Error, Message, RecordOptions};

/// Calls a Python `tool_result` handler with a `PendingToolResult` holding what the core's
/// pending result holds, and passes its decision on to the core (which warns if it made none).
fn run_handler(
    py: Python<'_>,
    handler: &Py<PyAny>,
    tract: &Py<PyWeakrefReference>,
    pending: &mut tract_core::PendingToolResult,
) -> PyResult<()> {
    let tract = tract
        .bind(py)
        .upgrade()
        .map_or_else(|| py.None(), |t| t.unbind());
    let shown = Py::new(py, PyPendingToolResult::new(pending, tract))?;
    handler.bind(py).call1((shown.clone_ref(py),))?;
    match shown.get().take_decision() {
        Some(d) => pending.decide(d).py(),
        None => Ok(()),
    }
}

/// A token threshold from Python: a non-negative int (not a bool).
fn threshold(v: &Bound<'_, PyAny>) -> PyResult<u32> {
    let invalid = |what: String| {
        crate::errors::to_py(Error::InvalidInput {
            message: format!("auto_threshold must be a non-negative number of tokens, not {what}"),
        })
    };
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Err(invalid(v.repr()?.to_string()));
    }
    let n: i64 = v
        .extract()
        .map_err(|_| invalid(v.repr().map(|r| r.to_string()).unwrap_or_default()))?;
    u32::try_from(n).map_err(|_| invalid(n.to_string()))
}

#[pymethods]
impl PyTract {
    /// Records the result of tool call `call_id` from tool `name`. The `tool_result` handler
    /// registered with `on` decides what the model sees, else the store's tool-summarization
    /// policy; a summarized or edited result is committed first and its new text as an edit
    /// of it. Returns the recorded position (with its original content). With `edit=hash`,
    /// replaces the content of that tool result instead (it must answer `call_id` from
    /// `name`); no handler runs then.
    #[pyo3(signature = (call_id, name, content, is_error=false, edit=None))]
    fn tool_result(
        &self,
        py: Python<'_>,
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
        edit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        if let Some(target) = edit {
            let target = rev_of(target)?;
            return self
                .with(py, move |t| {
                    t.edit_tool_result(target, &call_id, &name, Content::Text(content))
                })
                .map(Into::into);
        }
        let message = Message::tool_result(call_id, name, content, is_error);
        let outcome = self.with(py, |t| {
            t.record_tool_result(message, &RecordOptions::default())
        })?;
        for w in &outcome.warnings {
            crate::errors::warn(py, w)?;
        }
        Ok(outcome.original.into())
    }

    /// Registers `handler` for `event` (`"tool_result"`), replacing the default handler (the
    /// store's tool-summarization policy) and any handler registered before. The handler is
    /// called with a `PendingToolResult` and decides with its methods; an exception it raises
    /// propagates and nothing is committed.
    fn on(slf: &Bound<'_, Self>, event: &str, handler: Bound<'_, PyAny>) -> PyResult<()> {
        tract_core::HookEvent::parse(event).py()?;
        if !handler.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "the handler for '{event}' must be callable, not {}",
                handler.get_type().name()?
            )));
        }
        // A weak reference: the handler lives in the core handle, which this object owns.
        let tract = PyWeakrefReference::new(slf.as_any())?.unbind();
        let handler = handler.unbind();
        slf.get().get()?.on_tool_result(move |pending| {
            Python::attach(|py| run_handler(py, &handler, &tract, pending))
                .map_err(crate::errors::from_py)
        });
        Ok(())
    }

    /// Removes the handler registered for `event`: the store's policy applies again.
    fn off(&self, event: &str) -> PyResult<()> {
        tract_core::HookEvent::parse(event).py()?;
        self.get()?.off_tool_result();
        Ok(())
    }

    /// Sets the store's tool-summarization policy (replacing the stored one; every process
    /// and the CLI apply it). `instructions`: tool name to instructions, whose results are
    /// summarized with them; `auto_threshold`: results over this many tokens are summarized
    /// with `default_instructions` (or the tool prompt alone). The instructions apply when an
    /// LLM summarizer is set (an `OpenAICompatible` or a callable as `summarizer=` on open,
    /// or the LLM `TRACT_LLM_MODEL` names); until then the built-in extractive summarizer
    /// shortens those results and ignores them. Called with nothing, it clears the policy.
    #[pyo3(signature = (instructions=None, *, auto_threshold=None, default_instructions=None))]
    fn configure_tool_summarization(
        &self,
        py: Python<'_>,
        instructions: Option<std::collections::BTreeMap<String, String>>,
        auto_threshold: Option<&Bound<'_, PyAny>>,
        default_instructions: Option<String>,
    ) -> PyResult<()> {
        let auto_threshold = match auto_threshold {
            None => None,
            Some(v) => Some(threshold(v)?),
        };
        let policy = tract_core::ToolPolicy {
            instructions: instructions.unwrap_or_default(),
            auto_threshold,
            default_instructions,
        };
        self.with(py, move |t| t.set_tool_policy(&policy))
    }

    /// The store's tool-summarization policy (empty when none is configured).
    fn tool_summarization(&self, py: Python<'_>) -> PyResult<crate::hooks::PyToolSummarization> {
        Ok(self.with(py, |t| t.tool_policy())?.into())
    }

    /// The policy as the default handler reads it, None when nothing is configured (so a
    /// handler written as `if config and ...` works as in the documentation).
    #[getter]
    fn _tool_summarization_config(
        &self,
        py: Python<'_>,
    ) -> PyResult<Option<crate::hooks::PyToolSummarization>> {
        let policy = self.with(py, |t| t.tool_policy())?;
        Ok((!policy.is_empty()).then(|| policy.into()))
    }

    /// Tool result commits in the current view, in view order, each position once.
    #[pyo3(signature = (name=None, after=None, before=None))]
    fn find_tool_results(
        &self,
        py: Python<'_>,
        name: Option<String>,
        after: Option<&Bound<'_, PyAny>>,
        before: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let query = tract_core::ResultQuery {
            name,
            after: after.map(rev_of).transpose()?,
            before: before.map(rev_of).transpose()?,
        };
        let infos = self.with(py, move |t| t.find_tool_results(&query))?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// Assistant commits in the current view that call tools (`name`: that tool).
    #[pyo3(signature = (name=None))]
    fn find_tool_calls(&self, py: Python<'_>, name: Option<String>) -> PyResult<Vec<PyCommitInfo>> {
        let infos = self.with(py, move |t| t.find_tool_calls(name.as_deref()))?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// Tool-call commits paired with their results, matched by tool_call_id.
    #[pyo3(signature = (name=None))]
    fn find_tool_turns(&self, py: Python<'_>, name: Option<String>) -> PyResult<Vec<PyToolTurn>> {
        let turns = self.with(py, move |t| t.find_tool_turns(name.as_deref()))?;
        Ok(turns.into_iter().map(Into::into).collect())
    }

    /// Tool calls in the current view that have no result yet.
    fn pending_tool_calls(&self, py: Python<'_>) -> PyResult<Vec<PyToolCall>> {
        let calls = self.with(py, |t| t.pending_tool_calls())?;
        Ok(calls.into_iter().map(Into::into).collect())
    }

    /// Commits a marked synthetic error result for every tool call left without one (after a
    /// crash), in one transaction; returns them.
    fn repair(&self, py: Python<'_>) -> PyResult<Vec<PyCommitInfo>> {
        let infos = self.with(py, |t| t.repair())?;
        Ok(infos.into_iter().map(Into::into).collect())
    }
}
