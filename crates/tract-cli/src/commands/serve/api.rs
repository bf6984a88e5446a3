//! The JSON API of `tract serve` (docs/serve.md): sessions, a page of a view, a commit,
//! history, search, and a stream of a branch's head moves. Every handler reads the store on a
//! blocking thread; none writes.

use super::State;
use super::answers::{
    CommitAnswer, Fork, HistoryAnswer, HistoryRow, Hit, SearchAnswer, SessionsAnswer, StoreAnswer,
    ViewAnswer,
};
use crate::arguments::when_us;
use crate::vocabulary::{
    Branch, Commit, Detail, HistoryDiffReport, Redaction, SearchHit, Status, UsageReport,
    UsageReports, Version, ViewDiffReport, ViewMessage,
};
use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State as Shared};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::Stream;
use serde::Deserialize;
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tract_core::{
    CommitId, CommitInfo, Error, ErrorCategory, PageAt, Rev, Role, SearchQuery, SearchScope, Tract,
};

/// The API's routes, under `/api`.
pub(super) fn routes() -> Router<Arc<State>> {
    Router::new()
        .route("/store", get(store))
        .route("/sessions", get(sessions))
        .route("/view", get(view))
        .route("/commit/{id}", get(commit))
        .route("/history", get(history))
        .route("/search", get(search))
        .route("/usage", get(usage))
        .route("/diff", get(diff))
        .route("/events", get(events))
}

/// An API error: a status and `{"error": {"code", "category", "message"}}`.
#[derive(Debug)]
pub(super) struct ApiError {
    status: StatusCode,
    code: &'static str,
    category: ErrorCategory,
    message: String,
}

/// The HTTP status and the `code` of an error of `category`, defined once (docs/serve.md). The
/// codes the page already knew (`not_found`, `bad_request`, `corrupt`, `internal`) stay.
fn status_of(category: ErrorCategory) -> (StatusCode, &'static str) {
    match category {
        ErrorCategory::NotFound => (StatusCode::NOT_FOUND, "not_found"),
        ErrorCategory::InvalidInput => (StatusCode::BAD_REQUEST, "bad_request"),
        ErrorCategory::Conflict => (StatusCode::CONFLICT, "conflict"),
        ErrorCategory::Corrupt => (StatusCode::INTERNAL_SERVER_ERROR, "corrupt"),
        ErrorCategory::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        ErrorCategory::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}

impl ApiError {
    /// An error of `category`, with its status and code.
    fn new(category: ErrorCategory, message: impl Into<String>) -> Self {
        let (status, code) = status_of(category);
        ApiError {
            status,
            code,
            category,
            message: message.into(),
        }
    }

    pub(super) fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCategory::NotFound, message)
    }

    fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCategory::InvalidInput, message)
    }

    /// A request the server refuses by its own rules (not its store's): input it will not
    /// take, with the status HTTP has for it.
    fn refused(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            category: ErrorCategory::InvalidInput,
            message: message.into(),
        }
    }

    pub(super) fn forbidden_host(host: &str) -> Self {
        ApiError::refused(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            format!(
                "the server answers only requests for a loopback host, not '{host}' (start it with --bind to serve other addresses)"
            ),
        )
    }

    pub(super) fn method_not_allowed() -> Self {
        ApiError::refused(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "the view is read-only: only GET and HEAD are served",
        )
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let category = e.category();
        let mut message = e.to_string();
        if category == ErrorCategory::Corrupt {
            message.push_str(" (run `tract fsck` to check the whole store)");
        }
        ApiError::new(category, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "code": self.code,
            "category": self.category.as_str(),
            "message": self.message,
        }});
        (self.status, Json(body)).into_response()
    }
}

type Answer<T> = Result<Json<T>, ApiError>;

/// Runs a store read off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Answer<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map(Json),
        Err(e) => Err(ApiError::new(
            ErrorCategory::Internal,
            format!("the request failed: {e}"),
        )),
    }
}

/// A number parameter within `lo..=hi`; absent gives `default`.
fn bounded(
    name: &str,
    v: Option<&str>,
    default: usize,
    lo: usize,
    hi: usize,
) -> Result<usize, ApiError> {
    let Some(v) = v else { return Ok(default) };
    match v.parse::<usize>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(ApiError::bad_request(format!(
            "{name} must be a whole number from {lo} to {hi}, not '{v}'"
        ))),
    }
}

fn flag(name: &str, v: Option<&str>) -> Result<bool, ApiError> {
    match v {
        None | Some("") | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "{name} must be true or false, not '{other}'"
        ))),
    }
}

/// The query parameters of every endpoint, as text: each endpoint checks its own.
#[derive(Debug, Deserialize, Default)]
struct Params {
    branch: Option<String>,
    filter: Option<String>,
    offset: Option<String>,
    limit: Option<String>,
    q: Option<String>,
    history: Option<String>,
    role: Option<String>,
    tool: Option<String>,
    all: Option<String>,
    op: Option<String>,
    errors: Option<String>,
    since: Option<String>,
    until: Option<String>,
    a: Option<String>,
    b: Option<String>,
}

impl Params {
    fn branch(&self) -> Result<&str, ApiError> {
        match self.branch.as_deref() {
            Some(b) if !b.is_empty() => Ok(b),
            _ => Err(ApiError::bad_request("the branch parameter is missing")),
        }
    }
}

/// Query parameters that do not parse are a 400 in the API's shape, not axum's text.
fn params(
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Result<Params, ApiError> {
    q.map(|Query(p)| p)
        .map_err(|e| ApiError::bad_request(format!("bad query parameters: {e}")))
}

async fn store(Shared(s): Shared<Arc<State>>) -> Answer<StoreAnswer> {
    blocking(move || {
        let head = s.head.store_head()?;
        let branches = s.head.branches()?;
        Ok(StoreAnswer {
            store: s.head.store().location(),
            head: head.branch().map(|b| b.to_string()),
            branches: branches.len(),
            version: env!("CARGO_PKG_VERSION"),
        })
    })
    .await
}

async fn sessions(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Answer<SessionsAnswer> {
    let p = params(q)?;
    blocking(move || {
        let mut branches = s.head.branches()?;
        if let Some(f) = p.filter.as_deref().filter(|f| !f.is_empty()) {
            let f = f.to_lowercase();
            branches.retain(|b| b.name.to_lowercase().contains(&f));
        }
        branches.sort_by(|a, b| {
            b.last_activity_us
                .cmp(&a.last_activity_us)
                .then_with(|| a.name.cmp(&b.name))
        });
        Ok(SessionsAnswer {
            sessions: branches.iter().map(Branch::from).collect(),
        })
    })
    .await
}

async fn view(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Answer<ViewAnswer> {
    let p = params(q)?;
    let branch = p.branch()?.to_string();
    let limit = bounded("limit", p.limit.as_deref(), 100, 1, 500)?;
    let at = match p.offset.as_deref() {
        None => PageAt::Last,
        Some(o) => PageAt::Offset(bounded("offset", Some(o), 0, 0, usize::MAX)?),
    };
    blocking(move || {
        let t = s.on(&branch)?;
        let page = t.view_page(at, limit).inspect_err(|_| s.forget(&branch))?;
        Ok(ViewAnswer {
            head: page.head.map(|h| h.to_hex()),
            total: page.total,
            token_count: page.token_count,
            offset: page.offset,
            limit,
            entries: page.entries.iter().map(ViewMessage::from).collect(),
            branch,
        })
    })
    .await
}

/// What a branch's requests cost (`branch`), or every branch's and the store's (`all=true`),
/// as `tract usage --json` and `tract usage --all --json` print them.
async fn usage(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let p = params(q)?;
    let all = flag("all", p.all.as_deref())?;
    let branch = if all {
        None
    } else {
        Some(p.branch()?.to_string())
    };
    let o = tract_core::UsageOptions::default();
    let value = blocking(move || {
        let json = |v: Result<serde_json::Value, serde_json::Error>| {
            v.map_err(|e| ApiError::new(ErrorCategory::Internal, e.to_string()))
        };
        match branch {
            Some(b) => {
                let t = s.on(&b)?;
                let u = t.usage(None, &o).inspect_err(|_| s.forget(&b))?;
                json(serde_json::to_value(UsageReport::from(&u)))
            }
            None => json(serde_json::to_value(UsageReports::from(
                &s.head.usage_of_branches(&o)?,
            ))),
        }
    })
    .await?;
    Ok(value)
}

/// How the views of revisions `a` and `b` differ, or (without `b`) what commit `a` did to its
/// view; with `history=true`, which commits each history holds: as `tract diff --json` prints
/// them.
async fn diff(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let p = params(q)?;
    let history = flag("history", p.history.as_deref())?;
    let a = match p.a.as_deref() {
        Some(a) if !a.is_empty() => tract_core::Rev::parse(a)?,
        _ => return Err(ApiError::bad_request("the a parameter is missing")),
    };
    let b =
        p.b.as_deref()
            .filter(|b| !b.is_empty())
            .map(tract_core::Rev::parse)
            .transpose()?;
    let value = blocking(move || {
        let t = &s.head;
        let v = match (history, b) {
            (true, Some(b)) => {
                serde_json::to_value(HistoryDiffReport::from(&t.diff_history(&a, &b)?))
            }
            (true, None) => {
                return Err(ApiError::bad_request(
                    "history=true compares two revisions: give b",
                ));
            }
            (false, Some(b)) => serde_json::to_value(ViewDiffReport::from(&t.diff(&a, &b)?)),
            (false, None) => serde_json::to_value(ViewDiffReport::from(&t.diff_commit(&a)?)),
        };
        v.map_err(|e| ApiError::new(ErrorCategory::Internal, e.to_string()))
    })
    .await?;
    Ok(value)
}

async fn commit(
    Shared(s): Shared<Arc<State>>,
    Path(id): Path<String>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Answer<CommitAnswer> {
    let p = params(q)?;
    blocking(move || {
        let t = match p.branch.as_deref() {
            Some(b) if !b.is_empty() => s.on(b)?,
            _ => Arc::clone(&s.head),
        };
        let info = t.get_commit(Rev::parse(&id)?)?;
        commit_answer(&t, &info)
    })
    .await
}

fn commit_answer(t: &Tract, info: &CommitInfo) -> Result<CommitAnswer, ApiError> {
    let id = Rev::from(info.id);
    // Versions exist for a commit that is, or edits, a position of this branch's view.
    let versions = crate::versions::of(t, id.clone())?;
    let sources = t.compressed_sources(id.clone())?;
    let compressed_into = t.compressed_into(id.clone())?;
    let tombstone = t.tombstone(id)?;
    let branches: Vec<String> = t
        .branches()?
        .into_iter()
        .filter(|b| b.head == info.id)
        .map(|b| b.name)
        .collect();
    Ok(CommitAnswer {
        commit: Commit::from(info)
            .compressed_into(compressed_into.as_ref())
            .in_view(&versions, Detail::Full),
        versions: Version::list(&versions, Detail::Full),
        sources: sources.iter().map(Commit::from).collect(),
        redacted: tombstone.as_ref().map(Redaction::from),
        branches,
    })
}

async fn history(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Answer<HistoryAnswer> {
    let p = params(q)?;
    let branch = p.branch()?.to_string();
    let limit = bounded("limit", p.limit.as_deref(), 200, 1, 5000)?;
    blocking(move || {
        let t = s.on(&branch)?;
        let head = t.head()?.commit;
        // One more than asked tells whether the history goes on.
        let mut commits = t.log(&tract_core::LogQuery {
            limit: Some(limit + 1),
            graph: true,
            ..Default::default()
        })?;
        let more = commits.len() > limit;
        commits.truncate(limit);
        // The branch's own line: first parents from its tip.
        let mut line = std::collections::HashSet::new();
        let mut cursor = head;
        for c in &commits {
            if Some(c.id) == cursor {
                line.insert(c.id);
                cursor = c.commit.parent();
            }
        }
        let mut tips: std::collections::HashMap<CommitId, Vec<String>> = Default::default();
        for b in t.branches()? {
            tips.entry(b.head).or_default().push(b.name);
        }
        let oldest = commits.last().map_or(0, |c| c.commit.timestamp_us);
        let shown: std::collections::HashMap<CommitId, &CommitInfo> =
            commits.iter().map(|c| (c.id, c)).collect();
        let mut forks = Vec::new();
        for (name, base) in t.fork_points(oldest)? {
            // A branch that holds all of this one (it merged it, or grew from its tip) forks
            // nowhere on it.
            if name == branch || Some(base) == head {
                continue;
            }
            // The merge base may have come in through a merge (a sub-agent merged back): the
            // fork is where its first-parent line meets this branch's line, within the page.
            let mut cursor = Some(base);
            while let Some(id) = cursor {
                if line.contains(&id) {
                    forks.push(Fork {
                        branch: name,
                        at: id.to_hex(),
                    });
                    break;
                }
                let commit = match shown.get(&id) {
                    Some(c) => c.commit.clone(),
                    None => t.get_commit(id)?.commit,
                };
                if commit.timestamp_us < oldest {
                    break;
                }
                cursor = commit.parent();
            }
        }
        let rows = commits
            .iter()
            .map(|c| HistoryRow {
                commit: Commit::new(c, Detail::Brief),
                first_parent: line.contains(&c.id),
                preview: crate::render::cut(&c.preview(), 200),
                branches: tips.get(&c.id).cloned().unwrap_or_default(),
            })
            .collect();
        Ok(HistoryAnswer {
            branch,
            head: head.map(|h| h.to_hex()),
            more,
            commits: rows,
            forks,
        })
    })
    .await
}

/// The most hits `/api/search` skips (`offset`): paging, not a walk of everything.
const MAX_SEARCH_OFFSET: usize = 10_000;

async fn search(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Answer<SearchAnswer> {
    let p = params(q)?;
    let all = flag("all", p.all.as_deref())?;
    // Searching every branch needs none; given, it is the page's, whose view the hits link to.
    let branch = match (all, p.branch.as_deref()) {
        (true, None | Some("")) => None,
        (false, None | Some("")) => {
            return Err(ApiError::bad_request(
                "the branch parameter is missing (or all=true, to search every branch)",
            ));
        }
        (_, Some(b)) => Some(b.to_string()),
    };
    let limit = bounded("limit", p.limit.as_deref(), 50, 1, 500)?;
    let offset = bounded("offset", p.offset.as_deref(), 0, 0, MAX_SEARCH_OFFSET)?;
    let history = flag("history", p.history.as_deref())?;
    let errors = flag("errors", p.errors.as_deref())?;
    let query = p.q.clone().unwrap_or_default();
    if query.trim().is_empty() {
        return Err(ApiError::bad_request(
            "the q parameter (the text to find) is missing",
        ));
    }
    let role = match p.role.as_deref().filter(|r| !r.is_empty()) {
        Some(r) => Some(Role::parse(r).map_err(|e| ApiError::bad_request(e.to_string()))?),
        None => None,
    };
    let tool = p.tool.clone().filter(|t| !t.is_empty());
    let op = p.op.clone().filter(|o| !o.is_empty());
    let now_us = s.head.store().options().clock.now_us();
    let when = |name: &str, v: &Option<String>| -> Result<Option<u64>, ApiError> {
        match v.as_deref().filter(|v| !v.is_empty()) {
            Some(text) => Ok(Some(when_us(name, text, now_us)?)),
            None => Ok(None),
        }
    };
    let since_us = when("since", &p.since)?;
    let until_us = when("until", &p.until)?;
    blocking(move || {
        // The page's branch, even searching all: a hit in its view links to its place.
        let t = match &branch {
            Some(b) => s.on(b)?,
            None => Arc::clone(&s.head),
        };
        let mut hits = t.search(&SearchQuery {
            query,
            regex: false,
            role,
            tool,
            history,
            scope: match all {
                true => SearchScope::All,
                false => SearchScope::Here,
            },
            op,
            errors,
            since_us,
            until_us,
            offset,
            // One more than asked tells whether a next page follows.
            limit: Some(limit + 1),
        })?;
        let more = hits.len() > limit;
        hits.truncate(limit);
        // Where each hit is in the view, so the page can link to its place: only a hit whose
        // content is what the view shows (an earlier version, a compressed source or another
        // branch's message is not).
        let shown =
            |h: &tract_core::SearchHit| h.info.current.as_ref().map_or(h.info.id, |c| c.commit);
        let places = match branch {
            Some(_) => t.view_indexes(hits.iter().map(shown))?,
            None => vec![None; hits.len()],
        };
        let agents = t.agents()?;
        let hits = hits
            .iter()
            .zip(places)
            .map(|(h, index)| Hit {
                hit: SearchHit::new(h, Detail::Brief).with_agents(&agents),
                index,
            })
            .collect();
        Ok(SearchAnswer { hits, offset, more })
    })
    .await
}

/// How often the event stream looks at the branch's tip.
const EVENT_POLL: Duration = Duration::from_millis(500);

async fn events(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let p = params(q)?;
    let branch = p.branch()?.to_string();
    // A branch that does not exist yet reads as empty until its first commit.
    let name = tract_core::BranchName::new(&branch).map_err(ApiError::from)?;
    let t = Arc::new(Tract::from_store(
        s.head.store().clone(),
        &tract_core::Bind::Branch(name),
    )?);
    let stream = futures_util::stream::unfold(
        (t, None::<String>, true),
        move |(t, last, first)| async move {
            loop {
                if !first || last.is_some() {
                    tokio::time::sleep(EVENT_POLL).await;
                }
                let probe = Arc::clone(&t);
                let now = tokio::task::spawn_blocking(move || head_state(&probe))
                    .await
                    .unwrap_or_else(|_| "null".to_string());
                if last.as_ref() != Some(&now) {
                    let event = Event::default().event("head").data(now.clone());
                    return Some((Ok(event), (t, Some(now), false)));
                }
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The branch's status as the event stream sends it: its tip and counts (nothing, with no
/// head, when the store cannot be read now).
fn head_state(t: &Tract) -> String {
    let status = t.status().map(|s| Status::from(&s)).unwrap_or_default();
    serde_json::to_string(&status).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_category_has_its_status_and_a_code_of_its_own() {
        let statuses: Vec<(ErrorCategory, u16, &str)> = ErrorCategory::ALL
            .into_iter()
            .map(|c| {
                let (status, code) = status_of(c);
                (c, status.as_u16(), code)
            })
            .collect();
        assert_eq!(
            statuses,
            [
                (ErrorCategory::NotFound, 404, "not_found"),
                (ErrorCategory::InvalidInput, 400, "bad_request"),
                (ErrorCategory::Conflict, 409, "conflict"),
                (ErrorCategory::Corrupt, 500, "corrupt"),
                (ErrorCategory::Unavailable, 503, "unavailable"),
                (ErrorCategory::Internal, 500, "internal"),
            ]
        );
    }

    #[test]
    fn a_core_error_answers_its_categorys_status_and_names_the_category() {
        for e in Error::examples() {
            let category = e.category();
            let text = e.to_string();
            let answer = ApiError::from(e);
            assert_eq!(answer.status, status_of(category).0, "{text}");
            assert_eq!(answer.category, category);
            assert!(answer.message.starts_with(&text));
        }
    }
}
