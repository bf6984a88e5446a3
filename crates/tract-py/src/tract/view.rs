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

    /// What the model requests of a branch cost (`branch`: this handle's position when None),
    /// summed along its first parents: `branch`, `commit_hash`, `since`, `totals` (the four
    /// Anthropic counts: `input_tokens`, `output_tokens`, `cache_read_input_tokens`,
    /// `cache_creation_input_tokens`), `request_count`, `largest_input_tokens`,
    /// `cache_hit_rate`, `rewrite_factor`, `by_model` (a list of dicts with `model` and the
    /// same figures), `by_day` (with `by_day=True`), `unknown_kinds`: the fields of
    /// `tract usage --json`; with a price table (`set_prices`), `cost` in each (None when a
    /// model is not priced), `currency` and `unpriced_models`. `since` (a `datetime`, naive:
    /// UTC, or seconds since the epoch) sums only the requests from then on.
    #[pyo3(signature = (branch=None, since=None, by_day=false))]
    fn usage<'py>(
        &self,
        py: Python<'py>,
        branch: Option<String>,
        since: Option<&Bound<'_, PyAny>>,
        by_day: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let since_us = since
            .filter(|v| !v.is_none())
            .map(|v| crate::convert::epoch_micros(v, "since"))
            .transpose()?;
        let o = tract_core::UsageOptions { since_us, by_day };
        let u = self.with(py, move |t| t.usage(branch.as_deref(), &o))?;
        crate::vocabulary::dict(py, &tract_vocabulary::UsageReport::from(&u))
    }

    /// What a provider's prompt cache could have served each model request of a branch
    /// (`branch`: this handle's position when None), as tract renders the view each answer
    /// was given in `format` (`"anthropic"`, `"openai"` or `"responses"`), against the request
    /// before; `ttl` is the provider's cache lifetime in seconds. The fields of
    /// `tract cache --json`: `requests` (each with `commit_hash`, `created_at`, `model`, the
    /// reported `input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`,
    /// `request_tokens`, `shared_prefix_tokens`, and `break`: None, or `commit_hash` and
    /// `cause`, one of `edit`, `compress`, `clear`, `redaction`, `system`, `model`, `ttl`,
    /// `append`, `merge`), their sums, `break_count`, `notes`.
    #[pyo3(signature = (branch=None, format="anthropic", ttl=tract_core::DEFAULT_CACHE_TTL_SECONDS))]
    fn cache_report<'py>(
        &self,
        py: Python<'py>,
        branch: Option<String>,
        format: &str,
        ttl: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let provider = match format {
            "anthropic" => tract_core::Provider::Anthropic,
            "openai" => tract_core::Provider::OpenAi,
            "responses" => tract_core::Provider::Responses { limit: None },
            other => {
                return Err(super::invalid_input(format!(
                    "unknown format '{other}': use 'anthropic', 'openai' or 'responses'"
                )));
            }
        };
        let o = tract_core::CacheOptions {
            provider,
            ttl_seconds: ttl,
        };
        let r = self.with(py, move |t| t.cache_report(branch.as_deref(), &o))?;
        crate::vocabulary::dict(py, &tract_vocabulary::CacheReport::from(&r))
    }
}
