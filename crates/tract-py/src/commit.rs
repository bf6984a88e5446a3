//! `tract.CommitInfo`: one commit and the message it carries.

use crate::convert::to_py;
use pyo3::prelude::*;
use tract_core::CommitInfo;

/// One commit: its id, operation, message fields and provenance.
#[pyclass(name = "CommitInfo", module = "tract", frozen, eq, hash)]
#[derive(Clone)]
pub struct PyCommitInfo {
    pub(crate) inner: CommitInfo,
}

impl PartialEq for PyCommitInfo {
    fn eq(&self, other: &Self) -> bool {
        self.inner.id == other.inner.id
    }
}

impl std::hash::Hash for PyCommitInfo {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.id.hash(state);
    }
}

impl From<CommitInfo> for PyCommitInfo {
    fn from(inner: CommitInfo) -> Self {
        PyCommitInfo { inner }
    }
}

#[pymethods]
impl PyCommitInfo {
    /// The commit's id: 64 hex digits.
    #[getter]
    fn commit_hash(&self) -> String {
        self.inner.id.to_hex()
    }

    /// The first 10 hex digits of the id.
    #[getter]
    fn short_hash(&self) -> String {
        self.inner.id.short()
    }

    /// `append`, `edit`, `compress`, `merge` or `record`.
    #[getter]
    fn op(&self) -> &'static str {
        self.inner.op()
    }

    /// A record's kind (None for any other commit).
    #[getter]
    fn record_kind(&self) -> Option<&str> {
        self.inner.record_kind()
    }

    /// `system`, `user`, `assistant` or `tool` (None for a commit without a message).
    #[getter]
    fn role(&self) -> Option<&'static str> {
        self.inner.role().map(|r| r.as_str())
    }

    /// `instruction`, `dialogue`, `tool_call` or `tool_result`.
    #[getter]
    fn content_type(&self) -> Option<&'static str> {
        self.inner.content_type()
    }

    /// The tool name of a tool result (or a participant name).
    #[getter]
    fn name(&self) -> Option<String> {
        self.inner.message.as_ref().and_then(|m| m.name.clone())
    }

    /// `name`, `tool_call_id`, `tool_calls`, `is_error` where they apply, and extra fields.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &serde_json::Value::Object(self.inner.metadata()))
    }

    /// The message's text (text parts joined by newlines).
    #[getter]
    fn content(&self) -> Option<String> {
        self.inner
            .message
            .as_ref()
            .map(|m| m.content.text().into_owned())
    }

    /// The full message as a dict (role, content, name, tool_calls, tool_call_id, …).
    #[getter]
    fn message<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .message
            .as_deref()
            .map(|m| to_py(py, &tract_core::json::message_to_json(m)))
            .transpose()
    }

    /// Tokens of the message with its framing (o200k_base).
    #[getter]
    fn token_count(&self) -> u32 {
        self.inner.token_count
    }

    /// Parent commit ids.
    #[getter]
    fn parents(&self) -> Vec<String> {
        self.inner
            .commit
            .parents
            .iter()
            .map(|p| p.to_hex())
            .collect()
    }

    /// The commit an edit replaces.
    #[getter]
    fn edit_target(&self) -> Option<String> {
        self.inner.edit_target().map(|t| t.to_hex())
    }

    /// Whether this tool result reports an error.
    #[getter]
    fn is_error(&self) -> bool {
        self.inner.message.as_ref().is_some_and(|m| m.is_error)
    }

    /// When it was committed (timezone-aware, UTC).
    #[getter]
    fn created_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::utc_datetime(py, self.inner.commit.timestamp_us)
    }

    /// The note stored on the commit, if any.
    #[getter]
    fn note(&self) -> Option<String> {
        self.inner.commit.message.clone()
    }

    /// For a compress commit: the positions its summary replaced.
    #[getter]
    fn sources(&self) -> Vec<String> {
        self.inner.sources().iter().map(|s| s.to_hex()).collect()
    }

    /// For a compress commit or a summarized merge: who summarized (`extractive`, `manual`,
    /// `callable:…`, `openai:…`).
    #[getter]
    fn summarizer(&self) -> Option<String> {
        self.inner.summarizer().map(str::to_string)
    }

    /// For a merge: the branch merged (its name when it was merged; its tip is the second
    /// parent).
    #[getter]
    fn merged_branch(&self) -> Option<String> {
        self.inner.merged().map(|(b, _, _)| b.to_string())
    }

    /// For a merge: `append` or `tool_result`.
    #[getter]
    fn merge_strategy(&self) -> Option<&'static str> {
        self.inner.merged().map(|(_, _, s)| s.name())
    }

    /// The commit whose content is in view: the newest edit of this position when a query
    /// returned an edited one, otherwise this commit.
    #[getter]
    fn current_hash(&self) -> String {
        self.inner
            .current
            .as_ref()
            .map_or(self.inner.id, |c| c.commit)
            .to_hex()
    }

    /// The text the model sees for this position (the newest edit's, when edited).
    #[getter]
    fn current_content(&self) -> Option<String> {
        match &self.inner.current {
            Some(c) => Some(c.message.content.text().into_owned()),
            None => self.content(),
        }
    }

    fn __repr__(&self) -> String {
        let mut s = format!(
            "CommitInfo(role={}",
            self.inner.role().map_or("-", |r| r.as_str())
        );
        let tools = self.inner.tool_names();
        if !tools.is_empty() {
            s.push_str(&format!(", name={}", tools.join(",")));
        }
        s.push_str(&format!(
            ", op={}, hash={}, tokens={})",
            self.inner.op(),
            self.inner.id.short(),
            self.inner.token_count
        ));
        s
    }
}
