//! The JSON API of `tract serve` (docs/serve.md): sessions, a page of a view, a commit,
//! history, search, and a stream of a branch's head moves. Every handler reads the store on a
//! blocking thread; none writes.

use super::State;
use crate::output::CommitJson;
use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State as Shared};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tract_core::json::message_to_json;
use tract_core::{
    CommitId, CommitInfo, Error, ErrorCategory, MergeStrategy, Op, PageEntry, Rev, Role,
    SearchQuery, Tract, ViewPage,
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

type Answer = Result<Json<Value>, ApiError>;

/// Runs a store read off the async workers.
async fn blocking(f: impl FnOnce() -> Result<Value, ApiError> + Send + 'static) -> Answer {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map(Json),
        Err(e) => Err(ApiError::new(
            ErrorCategory::Internal,
            format!("the request failed: {e}"),
        )),
    }
}

fn time(us: u64) -> String {
    tract_core::clock::rfc3339_micros(us)
}

fn hex(ids: &[CommitId]) -> Vec<String> {
    ids.iter().map(CommitId::to_hex).collect()
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

async fn store(Shared(s): Shared<Arc<State>>) -> Answer {
    blocking(move || {
        let head = s.head.store_head()?;
        let branches = s.head.branches()?;
        Ok(json!({
            "store": s.head.store().location(),
            "head": head.branch().map(|b| b.to_string()),
            "branches": branches.len(),
            "version": env!("CARGO_PKG_VERSION"),
        }))
    })
    .await
}

async fn sessions(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Answer {
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
        let sessions: Vec<Value> = branches
            .iter()
            .map(|b| {
                json!({
                    "name": b.name,
                    "head": b.head.to_hex(),
                    "current": b.current,
                    "messages": b.messages,
                    "tokens": b.token_count,
                    "last_activity_us": b.last_activity_us,
                    "last_activity": time(b.last_activity_us),
                })
            })
            .collect();
        Ok(json!({ "sessions": sessions }))
    })
    .await
}

async fn view(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Answer {
    let p = params(q)?;
    let branch = p.branch()?.to_string();
    let limit = bounded("limit", p.limit.as_deref(), 100, 1, 500)?;
    let offset = match p.offset.as_deref() {
        None => None,
        Some(o) => Some(bounded("offset", Some(o), 0, 0, usize::MAX)?),
    };
    blocking(move || {
        let t = s.on(&branch)?;
        let page = t
            .view_page(offset, limit)
            .inspect_err(|_| s.forget(&branch))?;
        Ok(page_json(&branch, &page, limit))
    })
    .await
}

fn page_json(branch: &str, page: &ViewPage, limit: usize) -> Value {
    json!({
        "branch": branch,
        "head": page.head.map(|h| h.to_hex()),
        "total": page.total,
        "tokens": page.token_count,
        "offset": page.offset,
        "limit": limit,
        "entries": page.entries.iter().map(entry_json).collect::<Vec<_>>(),
    })
}

/// One view position as the page shows it (docs/serve.md, ENTRY).
fn entry_json(p: &PageEntry) -> Value {
    let e = &p.entry;
    let m = &e.message;
    let text = m.content.text();
    let op = match &e.origin.op {
        Op::Compress { .. } => "compress",
        Op::Merge { .. } => "merge",
        _ => "append",
    };
    let summary = match &e.origin.op {
        Op::Compress {
            sources,
            summarizer,
            ..
        } => json!({"sources": hex(sources), "summarizer": summarizer}),
        _ => Value::Null,
    };
    let neutral = message_to_json(m);
    let mut o = json!({
        "index": p.index,
        "position": e.position.to_hex(),
        "commit": e.commit.to_hex(),
        "op": op,
        "role": m.role.as_str(),
        "name": m.name,
        "tool_call_id": m.tool_call_id,
        "is_error": m.is_error,
        "text": text,
        "parts": if neutral["content"].is_array() { neutral["content"].clone() } else { Value::Null },
        "tokens": e.tokens,
        "bytes": text.len(),
        "timestamp_us": e.origin.timestamp_us,
        "created_at": time(e.origin.timestamp_us),
        "versions": 1 + e.edits.len(),
        "note": p.note,
        "marks": p.marks.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        "caller": p.caller,
        "summary": summary,
        "merge": merge_json(&e.origin.op, e.origin.parents.get(1)),
    });
    if m.role == Role::Assistant {
        o["tool_calls"] = p
            .calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.info.call_id,
                    "name": c.info.name,
                    "arguments": c.info.arguments,
                    "state": c.info.state.as_str(),
                    "duration_us": c.info.duration_us,
                    "synthetic": c.result.is_none(),
                    "result": c.result.as_deref().map(|r| {
                        let mut r = entry_json(r);
                        if let Some(o) = r.as_object_mut() {
                            o.remove("tool_calls");
                        }
                        r
                    }),
                })
            })
            .collect();
    } else {
        o["tool_calls"] = json!([]);
    }
    o
}

fn merge_json(op: &Op, merged: Option<&CommitId>) -> Value {
    match (op, merged) {
        (
            Op::Merge {
                branch, strategy, ..
            },
            Some(tip),
        ) => json!({
            "branch": branch,
            "merged": tip.to_hex(),
            "strategy": strategy.name(),
            "call_id": match strategy {
                MergeStrategy::ToolResult { call_id } => Some(call_id.as_str()),
                MergeStrategy::Append => None,
            },
        }),
        _ => Value::Null,
    }
}

async fn commit(
    Shared(s): Shared<Arc<State>>,
    Path(id): Path<String>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Answer {
    let p = params(q)?;
    blocking(move || {
        let t = match p.branch.as_deref() {
            Some(b) if !b.is_empty() => s.on(b)?,
            _ => Arc::clone(&s.head),
        };
        let rev = Rev::parse(&id)?;
        let info = t.get_commit(rev.clone())?;
        commit_json(&t, &info)
    })
    .await
}

fn version_json(v: &CommitInfo, current: bool) -> Value {
    let m = v.message.as_deref();
    json!({
        "id": v.id.to_hex(),
        "op": v.op(),
        "created_at": v.created_at(),
        "timestamp_us": v.commit.timestamp_us,
        "note": v.commit.message,
        "text": m.map(|m| m.content.text().into_owned()),
        "tokens": v.token_count,
        "current": current,
    })
}

fn commit_json(t: &Tract, info: &CommitInfo) -> Result<Value, ApiError> {
    let id = Rev::from(info.id);
    // Versions exist for a commit that is, or edits, a position of this branch's view.
    let versions = match t.edit_history(id.clone()) {
        Ok(v) => v,
        Err(Error::NotInView { .. }) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let last = versions.len().saturating_sub(1);
    let sources = t.compressed_sources(id.clone())?;
    let compressed_into = t.compressed_into(id.clone())?;
    let tombstone = t.tombstone(id)?;
    let branches: Vec<String> = t
        .branches()?
        .into_iter()
        .filter(|b| b.head == info.id)
        .map(|b| b.name)
        .collect();
    let m = info.message.as_deref();
    Ok(json!({
        "commit": CommitJson::new(info).compressed_into(compressed_into.as_ref()),
        "text": m.map(|m| m.content.text().into_owned()),
        "message": m.map(message_to_json),
        "tokens": info.token_count,
        "versions": versions.iter().enumerate().map(|(i, v)| version_json(v, i == last)).collect::<Vec<_>>(),
        "sources": sources.iter().map(|c| {
            let (m, tokens) = match &c.current {
                Some(cur) => (Some(&*cur.message), cur.token_count),
                None => (c.message.as_deref(), c.token_count),
            };
            json!({
                "id": c.id.to_hex(),
                "op": c.op(),
                "role": m.map(|m| m.role.as_str()),
                "name": m.and_then(|m| m.name.clone()),
                "text": m.map(|m| m.content.text().into_owned()),
                "tokens": tokens,
            })
        }).collect::<Vec<_>>(),
        "compressed_into": compressed_into.map(|c| c.id.to_hex()),
        "edit_target": info.edit_target().map(|e| e.to_hex()),
        "parents": hex(&info.commit.parents),
        "merge": merge_json(&info.commit.op, info.commit.parents.get(1)),
        "redacted": tombstone.map(|ts| json!({
            "reason": ts.reason,
            "redacted_at_us": ts.redacted_at_us,
            "redacted_at": time(ts.redacted_at_us),
        })),
        "branches": branches,
    }))
}

async fn history(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Answer {
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
                    forks.push(json!({"branch": name, "at": id.to_hex()}));
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
        let rows: Vec<Value> = commits
            .iter()
            .map(|c| {
                json!({
                    "id": c.id.to_hex(),
                    "op": c.op(),
                    "parents": hex(&c.commit.parents),
                    "first_parent": line.contains(&c.id),
                    "role": c.role().map(|r| r.as_str()),
                    "tools": c.tool_names(),
                    "note": c.commit.message,
                    "preview": crate::render::cut(&c.preview(), 200),
                    "tokens": c.token_count,
                    "timestamp_us": c.commit.timestamp_us,
                    "created_at": c.created_at(),
                    "merge": merge_json(&c.commit.op, c.commit.parents.get(1)),
                    "record_kind": c.record_kind(),
                    "branches": tips.get(&c.id).cloned().unwrap_or_default(),
                })
            })
            .collect();
        Ok(json!({
            "branch": branch,
            "head": head.map(|h| h.to_hex()),
            "more": more,
            "commits": rows,
            "forks": forks,
        }))
    })
    .await
}

async fn search(
    Shared(s): Shared<Arc<State>>,
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Answer {
    let p = params(q)?;
    let branch = p.branch()?.to_string();
    let limit = bounded("limit", p.limit.as_deref(), 50, 1, 500)?;
    let history = flag("history", p.history.as_deref())?;
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
    blocking(move || {
        let t = s.on(&branch)?;
        let hits = t.search(&SearchQuery {
            query,
            regex: false,
            role,
            tool,
            history,
            limit: Some(limit),
        })?;
        // Where each hit is in the view, so the page can link to its place: only a hit whose
        // content is what the view shows (an earlier version or a compressed source is not).
        let shown =
            |h: &tract_core::SearchHit| h.info.current.as_ref().map_or(h.info.id, |c| c.commit);
        let places = t.view_indexes(hits.iter().map(shown))?;
        let hits: Vec<Value> = hits
            .iter()
            .zip(places)
            .map(|(h, index)| {
                json!({
                    "id": h.info.id.to_hex(),
                    "op": h.info.op(),
                    "role": h.info.role().map(|r| r.as_str()),
                    "tools": h.info.tool_names(),
                    "snippet": h.snippet,
                    "created_at": h.info.created_at(),
                    "timestamp_us": h.info.commit.timestamp_us,
                    "index": index,
                })
            })
            .collect();
        Ok(json!({ "hits": hits }))
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
        (t, None::<Value>, true),
        move |(t, last, first)| async move {
            loop {
                if !first || last.is_some() {
                    tokio::time::sleep(EVENT_POLL).await;
                }
                let probe = Arc::clone(&t);
                let now = tokio::task::spawn_blocking(move || head_state(&probe))
                    .await
                    .unwrap_or(Value::Null);
                if last.as_ref() != Some(&now) {
                    let event = Event::default().event("head").data(now.to_string());
                    return Some((Ok(event), (t, Some(now), false)));
                }
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The branch's tip and counts, as the event stream sends them.
fn head_state(t: &Tract) -> Value {
    match t.status() {
        Ok(s) => json!({
            "head": s.head.commit.map(|h| h.to_hex()),
            "messages": s.messages,
            "tokens": s.token_count,
        }),
        Err(_) => json!({"head": null, "messages": 0, "tokens": 0}),
    }
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
