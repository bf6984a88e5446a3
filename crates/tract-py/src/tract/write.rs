//! Writing through a handle: appends (one message, a batch, Responses items, the role
//! shorthands, awaited ones), edits, records, redaction, and the retention policy `gc`
//! applies.

use super::{PyTract, rev_of};
use crate::commit::PyCommitInfo;
use crate::convert::from_py;
use crate::errors::IntoPyResult;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tract_core::json::{message_from_json, messages_from_list, tool_calls_from_json};
use tract_core::{AppendOptions, Content, Error, Message, Rev, Role, Tract};

impl PyTract {
    /// Appends `m`, with the caller's compare-and-swap.
    fn append_one(
        &self,
        py: Python<'_>,
        m: Message,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        let expected = expected_head.map(rev_of).transpose()?;
        self.with(py, move |t| t.append_with(m, &options(t, expected)?))
            .map(Into::into)
    }
}

/// Append options for a caller's compare-and-swap: fail with `HeadMovedError` unless the
/// handle's branch is at `expected_head`.
fn options(t: &Tract, expected_head: Option<Rev>) -> Result<AppendOptions, Error> {
    let expected_head = match expected_head {
        None => None,
        Some(rev) => Some(Some(match rev.as_commit() {
            Some(id) => id,
            None => t.resolve(&rev)?,
        })),
    };
    Ok(AppendOptions {
        expected_head,
        note: None,
    })
}

/// The list of Responses items a call was given.
fn items_of(items: &Bound<'_, PyAny>) -> PyResult<Vec<serde_json::Value>> {
    match from_py(items)? {
        serde_json::Value::Array(items) => Ok(items),
        _ => Err(pyo3::exceptions::PyTypeError::new_err(
            "items must be a list of dicts",
        )),
    }
}

/// Appends Responses items (`Tract::append_items`), with the caller's compare-and-swap.
fn append_items(
    t: &Tract,
    items: &[serde_json::Value],
    expected: Option<Rev>,
) -> Result<Vec<tract_core::CommitInfo>, Error> {
    t.append_items(items, &options(t, expected)?)
}

#[pymethods]
impl PyTract {
    /// Appends a system message. With `expected_head` (a commit), only if the handle's
    /// branch is still there (else `HeadMovedError`, nothing committed); the same on every
    /// append.
    #[pyo3(signature = (text, *, expected_head=None))]
    fn system(
        &self,
        py: Python<'_>,
        text: String,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        self.append_one(py, Message::text(Role::System, text), expected_head)
    }

    /// Appends a user message.
    #[pyo3(signature = (text, *, expected_head=None))]
    fn user(
        &self,
        py: Python<'_>,
        text: String,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        self.append_one(py, Message::text(Role::User, text), expected_head)
    }

    /// Appends an assistant message. `tool_calls` is a list of `{"id", "name", "arguments"}`
    /// (arguments a dict or a JSON string) or OpenAI `{"id", "type", "function": {...}}`.
    /// `usage` is what the answer cost, as the provider reported it: Anthropic's names
    /// (`input_tokens`, `output_tokens`, `cache_read_input_tokens`,
    /// `cache_creation_input_tokens`) or OpenAI's (`prompt_tokens`, `completion_tokens`,
    /// `prompt_tokens_details.cached_tokens`), with `model` and `request_id`; it is kept in
    /// Anthropic's names in the message's metadata (`tract.usage`).
    #[pyo3(signature = (text=None, tool_calls=None, *, usage=None, expected_head=None))]
    fn assistant(
        &self,
        py: Python<'_>,
        text: Option<String>,
        tool_calls: Option<&Bound<'_, PyAny>>,
        usage: Option<&Bound<'_, PyAny>>,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        let mut m = Message::text(Role::Assistant, text.unwrap_or_default());
        if let Some(calls) = tool_calls {
            m.tool_calls = tool_calls_from_json(&from_py(calls)?).py()?;
        }
        if let Some(usage) = usage {
            tract_core::Usage::from_json(&from_py(usage)?)
                .and_then(|u| u.put_on(&mut m))
                .py()?;
        }
        self.append_one(py, m, expected_head)
    }

    /// Appends one message given as a dict (`role`, `content`, `tool_calls`, …).
    #[pyo3(signature = (message, *, expected_head=None))]
    fn append(
        &self,
        py: Python<'_>,
        message: &Bound<'_, PyAny>,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        let m = message_from_json(&from_py(message)?).py()?;
        self.append_one(py, m, expected_head)
    }

    /// Appends several message dicts in one transaction: all of them, or none. With
    /// `expected_head`, only if the handle's branch is still at that commit.
    #[pyo3(signature = (messages, *, expected_head=None))]
    fn append_many(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let parsed = messages_from_list(&from_py(messages)?).py()?;
        let expected = expected_head.map(rev_of).transpose()?;
        let infos = self.with(py, move |t| {
            t.append_batch_with(parsed, &options(t, expected)?)
        })?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// Appends OpenAI Responses input items (dicts) in one transaction, one message each:
    /// all of them, or none. They come back as they were from `compile().to_responses()`.
    #[pyo3(signature = (items, *, expected_head=None))]
    fn append_items(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let items = items_of(items)?;
        let expected = expected_head.map(rev_of).transpose()?;
        let infos = self.with(py, move |t| append_items(t, &items, expected))?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// Appends what a provider's response body answers with (a dict, or its JSON text, as the
    /// API returned it: an OpenAI Chat Completions, OpenAI Responses or Anthropic Messages
    /// response; `response.model_dump()` of the SDKs' objects), in one transaction: all of
    /// them, or none. The first assistant message carries the body's usage, in Anthropic's
    /// names, with its model and id.
    #[pyo3(signature = (body, *, expected_head=None))]
    fn append_response(
        &self,
        py: Python<'_>,
        body: &Bound<'_, PyAny>,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let body = match body.extract::<String>() {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| super::invalid_input(format!("the response body is not JSON: {e}")))?,
            Err(_) => crate::convert::from_py(body)?,
        };
        let expected = expected_head.map(rev_of).transpose()?;
        let infos = self.with(py, move |t| {
            let opts = options(t, expected)?;
            t.append_response(&body, &opts)
        })?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// `append_items` without waiting: the items are read here (a value that is not a list
    /// raises here), appended on a worker thread without the GIL, and the commits or the error
    /// queued in `finished` under `token`, which wakes the event loop watching it.
    #[pyo3(name = "_append_items_to", signature = (items, finished, token, *, expected_head=None))]
    fn append_items_to(
        &self,
        items: &Bound<'_, PyAny>,
        finished: &Bound<'_, crate::finished::PyFinished>,
        token: u64,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let items = items_of(items)?;
        let expected = expected_head.map(rev_of).transpose()?;
        let t = self.get()?;
        let finished = finished.get().inner.clone();
        crate::worker::run(move || {
            let outcome = append_items(&t, &items, expected);
            // The handle may be the last reference (closed meanwhile): what its close does
            // happens before the loop hears of the outcome.
            drop(t);
            finished.put(token, outcome);
        })
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("no thread to append on: {e}")))
    }

    /// Replaces the content of a message in the current view; the original stays in history.
    fn edit(
        &self,
        py: Python<'_>,
        commit: &Bound<'_, PyAny>,
        content: String,
    ) -> PyResult<PyCommitInfo> {
        let rev = rev_of(commit)?;
        self.with(py, move |t| t.edit(rev, Content::Text(content)))
            .map(Into::into)
    }

    /// Appends `messages` (message dicts), then a record of `kind` holding `data`, in one
    /// transaction: all of it, or none. Records keep data of the caller's own (a framework's
    /// checkpoints) on the branch; the view never shows them. Returns the record's commit.
    #[pyo3(signature = (kind, data, *, messages=None))]
    fn record(
        &self,
        py: Python<'_>,
        kind: String,
        data: String,
        messages: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        let parsed = match messages {
            Some(m) => messages_from_list(&from_py(m)?).py()?,
            None => Vec::new(),
        };
        self.with(py, move |t| t.record(&kind, data, parsed))
            .map(Into::into)
    }

    /// Removes the content of the message `commit` names from the store for good: a tombstone
    /// keeps when and `reason`; ids stay valid; views show a placeholder with the message's
    /// role and call structure; search no longer finds it. With `follow=True`, every commit
    /// whose content was made from the removed content (a summary or compression of it, or of such
    /// a summary) is redacted too. Returns a dict: `commit`, `blob`, `redacted_at` (RFC 3339
    /// UTC) and `redacted_at_us`, `reason`, `chunks_removed`, `derived` (commits made from the
    /// removed content that still hold it) and `followed` (those redacted with it), as `tract
    /// redact --json` says. `compact()` afterwards makes sure no freed page of the file keeps
    /// the bytes.
    #[pyo3(signature = (commit, reason, *, follow=false))]
    fn redact<'py>(
        &self,
        py: Python<'py>,
        commit: &Bound<'py, PyAny>,
        reason: String,
        follow: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let rev = rev_of(commit)?;
        let options = tract_core::RedactOptions { follow };
        let r = self.with(py, move |t| t.redact_with(rev, &reason, &options))?;
        crate::vocabulary::dict(py, &tract_vocabulary::RedactReport::from(&r))
    }

    /// The store's retention policy as a dict (`rules`, `pinned`), in the JSON form `tract
    /// config show --json` prints under `retention`; `{"rules": [], "pinned": []}` when none
    /// was set.
    fn retention_policy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let policy = self.with(py, |t| t.retention_policy())?;
        crate::vocabulary::value(py, &policy)
    }

    /// Replaces the store's retention policy, which only `gc` applies (`gc(dry_run=True)`
    /// shows what it would do). `policy` is a dict: `rules`, a list of rules, each with a
    /// `name`, `branches` (name patterns: `*` any run of characters, `/` included) and either
    /// `replace_tool_results` (`older_than_days`, `keep_newest`: the newest messages of each
    /// view kept, `with`: `"summary"` (only results that have one, by it) or
    /// `"placeholder"`) or `delete_idle_branches` (`idle_days`); and `pinned`, branch
    /// patterns no rule touches. An invalid policy raises `InvalidInputError` and the stored
    /// one is kept; `{}` clears it.
    fn set_retention_policy(&self, py: Python<'_>, policy: &Bound<'_, PyAny>) -> PyResult<()> {
        let text = crate::convert::from_py(policy)?.to_string();
        let policy = tract_core::RetentionPolicy::from_json(&text).map_err(crate::errors::to_py)?;
        self.with(py, move |t| t.set_retention_policy(&policy))
    }

    /// The store's price table as a dict (`currency`, `models`: model name or pattern to its
    /// prices per million tokens, `input`, `output`, `cache_read`, `cache_creation`), as
    /// `tract config prices --json` prints it; `{"currency": "USD", "models": {}}` when none
    /// was set.
    fn prices<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let table = self.with(py, |t| t.prices())?;
        crate::vocabulary::value(py, &table)
    }

    /// Replaces the store's price table, which `usage()` prices requests with: a dict with
    /// `currency` (`"USD"` unless given) and `models`, model name or pattern (`*` any run of
    /// characters) to `input`, `output` and optionally `cache_read` and `cache_creation`, per
    /// million tokens (the cache prices default to `input`). A model the table does not price
    /// has an unknown cost, never zero. An invalid table raises `InvalidInputError` and the
    /// stored one is kept; `{}` clears it.
    fn set_prices(&self, py: Python<'_>, table: &Bound<'_, PyAny>) -> PyResult<()> {
        let text = crate::convert::from_py(table)?.to_string();
        let table = tract_core::PriceTable::from_json(&text).map_err(crate::errors::to_py)?;
        self.with(py, move |t| t.set_prices(&table))
    }
}
