//! Searching through a handle: its arguments read into the core's `SearchQuery`.

use super::{PyTract, invalid_input};
use crate::errors::IntoPyResult;
use crate::tools::PySearchHit;
use pyo3::prelude::*;
use tract_core::{Role, SearchQuery, SearchScope};

#[pymethods]
impl PyTract {
    /// Searches message text, tool-call names and arguments, and tool results. By words, the
    /// hits ranked best first (BM25; on PostgreSQL the database's `ts_rank_cd`, among a
    /// query's newest 1,000 matches when it has more and the page reaches no further): every
    /// word must appear (case does not matter),
    /// `"some words"` in this order, `-word` must not, `a OR b` either; `getUserName`,
    /// `src/main.rs` and `DATABASE_URL` are searched as their parts (`user name` finds
    /// `getUserName`), and punctuation is not searched. With `regex=True`, a regular
    /// expression (case-insensitive), the hits oldest first. What was just written is found at
    /// once.
    ///
    /// It searches the current view of this handle's position, of `branch`, or of every branch
    /// (`all_branches=True`; not with `regex`); with `history=True` every version in history
    /// (originals of edited messages, compressed messages, what merges brought in). Filters:
    /// `role`, `tool` (its results and the calls to it), `op` (`append`, `edit`, `compress`,
    /// `merge`), `errors` (tool results marked as errors), `since` (inclusive) and `until`
    /// (exclusive), each a `datetime` (naive: UTC) or seconds since the epoch. `offset` hits
    /// are skipped, then at most `limit` returned (None: all). A commit several branches
    /// share is one hit naming them all in `branches`.
    #[pyo3(signature = (
        query, role=None, tool=None, history=false, regex=false, limit=None, *, branch=None,
        all_branches=false, op=None, errors=false, since=None, until=None, offset=0
    ))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        query: String,
        role: Option<String>,
        tool: Option<String>,
        history: bool,
        regex: bool,
        limit: Option<i64>,
        branch: Option<String>,
        all_branches: bool,
        op: Option<String>,
        errors: bool,
        since: Option<&Bound<'_, PyAny>>,
        until: Option<&Bound<'_, PyAny>>,
        offset: i64,
    ) -> PyResult<Vec<PySearchHit>> {
        let role = role.as_deref().map(Role::parse).transpose().py()?;
        let scope = match (branch, all_branches) {
            (Some(name), true) => {
                return Err(invalid_input(format!(
                    "search one branch (branch='{name}') or every branch (all_branches=True), \
                     not both"
                )));
            }
            (Some(name), false) => SearchScope::Branch(name),
            (None, true) => SearchScope::All,
            (None, false) => SearchScope::Here,
        };
        if regex && scope == SearchScope::All {
            return Err(invalid_input(
                "a regular expression scans one branch: leave out all_branches=True, or search \
                 by words",
            ));
        }
        let count = |name: &str, n: i64| {
            usize::try_from(n).map_err(|_| {
                invalid_input(format!(
                    "{name} must be a number of hits, 0 or more (got {n})"
                ))
            })
        };
        let limit = limit.map(|n| count("limit", n)).transpose()?;
        let offset = count("offset", offset)?;
        let since_us = since
            .filter(|v| !v.is_none())
            .map(|v| crate::convert::epoch_micros(v, "since"))
            .transpose()?;
        let until_us = until
            .filter(|v| !v.is_none())
            .map(|v| crate::convert::epoch_micros(v, "until"))
            .transpose()?;
        let q = SearchQuery {
            query,
            regex,
            role,
            tool,
            history,
            scope,
            op,
            errors,
            since_us,
            until_us,
            offset,
            limit,
        };
        let hits = self.with(py, move |t| t.search(&q))?;
        Ok(hits.into_iter().map(Into::into).collect())
    }
}
