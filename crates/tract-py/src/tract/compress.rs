//! Making a view smaller through a handle: clearing old tool results and compressing runs of
//! messages or whole tool turns (each with its dry run).

use super::{PyTract, revs_of};
use crate::compress::{outcome_dict, positive, summarizer_of};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;
use tract_core::{ClearOptions, CompressRequest, Manual, Summarizer};

/// The summarizer a call names: its `content` (a summary written by the caller), else its
/// `summarizer`; `None` leaves the choice to the handle's default.
pub(super) fn chosen(
    py: Python<'_>,
    summarizer: Option<Py<PyAny>>,
    content: Option<String>,
) -> Option<Arc<dyn Summarizer>> {
    match (content, summarizer) {
        (Some(text), _) => Some(Arc::new(Manual(text))),
        (None, Some(f)) => Some(summarizer_of(py, f)),
        (None, None) => None,
    }
}

#[pymethods]
impl PyTract {
    /// Replaces the results of all but the last `keep` tool turns with a short placeholder
    /// naming the original commit (`{tool}`, `{commit}`, `{tokens}`, `{bytes}` are filled in),
    /// as edits in one transaction; results of `exclude_tools` stay; nothing is cleared unless
    /// at least `clear_at_least` tokens are freed. With `keep_prefix=True`, no result up to the
    /// newest summary in view is cleared (what a provider has cached before it stays). With
    /// `dry_run=True` nothing is committed, `cleared` lists the positions that would be and
    /// `cached_tokens_invalidated` the tokens a provider's cache takes in again. Returns a
    /// dict: `cleared`, `tokens_before`, `tokens_after`, as `tract clear --json` says.
    #[pyo3(signature = (keep=3, exclude_tools=Vec::new(), clear_at_least=0, placeholder=None, dry_run=false, keep_prefix=false))]
    #[allow(clippy::too_many_arguments)]
    fn clear_tool_results<'py>(
        &self,
        py: Python<'py>,
        keep: usize,
        exclude_tools: Vec<String>,
        clear_at_least: u64,
        placeholder: Option<String>,
        dry_run: bool,
        keep_prefix: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let opts = ClearOptions {
            keep,
            exclude_tools,
            clear_at_least,
            placeholder,
            keep_prefix,
        };
        if dry_run {
            let plan = self.with(py, move |t| t.plan_clear_tool_results(&opts))?;
            return crate::vocabulary::dict(py, &tract_vocabulary::ClearPlan::from(&plan));
        }
        let out = self.with(py, move |t| t.clear_tool_results(&opts))?;
        let report = tract_vocabulary::ClearReport::from(&out);
        crate::vocabulary::with_commits(py, &report, "cleared", out.cleared)
    }

    /// Replaces the selected positions (default: the whole view but system messages) with one
    /// summary per contiguous run; `preserve` positions stay and split runs. The summary comes
    /// from `content` (written by you), `summarizer` (a callable `fn(messages) -> str` given
    /// OpenAI-style messages, system prompt first), the one given to `Tract.open`, or the
    /// built-in extractive summarizer. With `keep_prefix=True`, the positions up to the newest
    /// summary in view are left out of the selection, so the summary goes after what a
    /// provider has cached. All or nothing. Returns a dict: `commits`, `sources`, `skipped`,
    /// `warnings`, `tokens_before`, `tokens_after` (with `dry_run=True`: the runs' `sources`
    /// and `tokens`, and `cached_tokens_invalidated`, nothing committed), as
    /// `tract compress --json` says.
    #[pyo3(signature = (commits=None, system_prompt=None, instructions=None, preserve=None, target_tokens=None, content=None, summarizer=None, dry_run=false, keep_prefix=false))]
    #[allow(clippy::too_many_arguments)]
    fn compress<'py>(
        &self,
        py: Python<'py>,
        commits: Option<Vec<Bound<'py, PyAny>>>,
        system_prompt: Option<String>,
        instructions: Option<String>,
        preserve: Option<Vec<Bound<'py, PyAny>>>,
        target_tokens: Option<i64>,
        content: Option<String>,
        summarizer: Option<Py<PyAny>>,
        dry_run: bool,
        keep_prefix: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let commits = commits.as_deref().map(revs_of).transpose()?;
        let preserve = revs_of(&preserve.unwrap_or_default())?;
        let target_tokens = positive(target_tokens)?;
        if dry_run {
            let req = CompressRequest {
                commits,
                preserve,
                keep_prefix,
                ..CompressRequest::default()
            };
            let plan = self.with(py, move |t| t.plan_compress(&req))?;
            return crate::vocabulary::dict(py, &tract_vocabulary::CompressPlan::from(&plan));
        }
        let chosen = chosen(py, summarizer, content);
        let out = self.with(py, move |t| {
            let s = chosen.as_deref();
            t.compress(&CompressRequest {
                commits,
                preserve,
                system_prompt,
                instructions,
                target_tokens,
                summarizer: s,
                keep_prefix,
                ..CompressRequest::default()
            })
        })?;
        outcome_dict(py, out)
    }

    /// Compresses whole tool turns with `TOOL_SUMMARIZE_SYSTEM` by default: `commits` (any
    /// part of a turn takes the whole turn) or every turn (of tool `name`). The final answer
    /// (the last assistant message without tool calls in the selection) is kept unless
    /// `preserve_answer=False`.
    #[pyo3(signature = (commits=None, *, name=None, target_tokens=None, instructions=None, system_prompt=None, preserve_answer=true, content=None, summarizer=None))]
    #[allow(clippy::too_many_arguments)]
    fn compress_tool_calls<'py>(
        &self,
        py: Python<'py>,
        commits: Option<Vec<Bound<'py, PyAny>>>,
        name: Option<String>,
        target_tokens: Option<i64>,
        instructions: Option<String>,
        system_prompt: Option<String>,
        preserve_answer: bool,
        content: Option<String>,
        summarizer: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let commits = commits.as_deref().map(revs_of).transpose()?;
        let target_tokens = positive(target_tokens)?;
        let chosen = chosen(py, summarizer, content);
        let out = self.with(py, move |t| {
            let s = chosen.as_deref();
            let turns = tract_core::ToolTurns {
                commits,
                name,
                preserve_answer,
            };
            t.compress_tool_calls(
                &turns,
                CompressRequest {
                    system_prompt,
                    instructions,
                    target_tokens,
                    summarizer: s,
                    ..CompressRequest::default()
                },
            )
        })?;
        outcome_dict(py, out)
    }
}
