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

/// One search match: the commit, a snippet of where it matched with the matching words
/// marked, its score when ranked, and the branches that hold it.
#[pyclass(name = "SearchHit", module = "tract", frozen)]
pub struct PySearchHit {
    inner: SearchHit,
    /// `inner.highlights` as character offsets into the snippet.
    highlights: Vec<(usize, usize)>,
}

impl From<SearchHit> for PySearchHit {
    fn from(inner: SearchHit) -> Self {
        let highlights = char_ranges(&inner.snippet, &inner.highlights);
        PySearchHit { inner, highlights }
    }
}

/// Byte ranges of `text` as ranges of characters (code points), which Python strings index
/// by. An offset inside a character (none should be) counts that character in; one past the
/// end stops at the end.
fn char_ranges(text: &str, bytes: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let at = |byte: usize| text.char_indices().take_while(|(i, _)| *i < byte).count();
    bytes
        .iter()
        .map(|&(start, end)| (at(start), at(end.max(start))))
        .collect()
}

#[pymethods]
impl PySearchHit {
    /// The commit whose message matched (for a search of the view: the version in view).
    #[getter]
    fn commit(&self) -> PyCommitInfo {
        self.inner.info.clone().into()
    }

    /// Its hash.
    #[getter]
    fn commit_hash(&self) -> String {
        self.inner.info.id.to_hex()
    }

    /// Where it matched, on one line: a ranked hit's best passage (some 160 characters), a
    /// regular expression's matching line cut around the match; `…` where it cuts the text.
    #[getter]
    fn snippet(&self) -> &str {
        &self.inner.snippet
    }

    /// The parts of `snippet` that matched, in order, as `(start, end)` character offsets into
    /// it: `snippet[start:end]` is a word of the query (or a regular expression's match).
    #[getter]
    fn highlights(&self) -> Vec<(usize, usize)> {
        self.highlights.clone()
    }

    /// How well it matched (BM25 on a store file, PostgreSQL's `ts_rank_cd` on a database:
    /// higher is better; hits come best first), or None for a
    /// regular expression's hit.
    #[getter]
    fn score(&self) -> Option<f64> {
        // The shortest decimal that reads back as the f32 (what the CLI's JSON prints), not
        // the f32's binary expansion.
        self.inner
            .score
            .map(|s| s.to_string().parse().unwrap_or(f64::from(s)))
    }

    /// Every branch whose history holds the commit, sorted by name: a commit from before a
    /// fork is one hit naming the branch and its forks.
    #[getter]
    fn branches(&self) -> Vec<String> {
        self.inner.branches.clone()
    }

    fn __repr__(&self) -> String {
        match self.inner.score {
            Some(score) => format!(
                "SearchHit({} {:?} score={score:.3})",
                self.inner.info.id.short(),
                self.inner.snippet
            ),
            None => format!(
                "SearchHit({} {:?})",
                self.inner.info.id.short(),
                self.inner.snippet
            ),
        }
    }
}
