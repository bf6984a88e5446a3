//! Tool calls and results: queries over the current view, turns, lifecycle, provenance edits
//! and repair. Queries read the view's tool indexes, so they cost the number of matches.

pub mod clear;
pub mod decision;
pub mod hooks;
pub mod policy;

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::object::{Content, Message, Role};
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::view::info::{CommitInfo, Current};
use crate::view::revision::Rev;
use crate::view::{SYNTHETIC_RESULT, View, ViewEntry};
use crate::write::txn::AppendOptions;
use std::sync::Arc;

/// Which tool results [`crate::Tract::find_tool_results`] lists (every one by default).
#[derive(Debug, Clone, Default)]
pub struct ResultQuery {
    /// Only results of this tool.
    pub name: Option<String>,
    /// Only results strictly after this commit of the view.
    pub after: Option<Rev>,
    /// Only results strictly before this commit of the view.
    pub before: Option<Rev>,
}
/// Where a tool call is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallState {
    /// No result recorded yet (running, or the agent stopped before the tool returned).
    Pending,
    /// A result that is not an error.
    Ok,
    /// A result marked `is_error`.
    Error,
}

impl CallState {
    /// `pending`, `ok` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            CallState::Pending => "pending",
            CallState::Ok => "ok",
            CallState::Error => "error",
        }
    }
}

/// One tool call with its lifecycle: input, state, result and duration.
#[derive(Debug, Clone)]
pub struct ToolCallInfo {
    /// The provider's call id.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// The arguments as the model wrote them (verbatim JSON text).
    pub arguments: String,
    /// Pending, ok or error.
    pub state: CallState,
    /// The assistant commit that made the call (its view position).
    pub call_commit: CommitId,
    /// The result's view position, once there is one.
    pub result_commit: Option<CommitId>,
    /// From the call's commit to the result's, in microseconds.
    pub duration_us: Option<u64>,
    /// Tokens of the result as it is in view (framing included).
    pub result_tokens: Option<u32>,
    /// Bytes of the result's text as it is in view.
    pub result_bytes: Option<usize>,
}

/// An assistant tool-call commit with its results, matched by call id.
#[derive(Debug, Clone)]
pub struct ToolTurn {
    /// The assistant message with tool calls.
    pub call: CommitInfo,
    /// Its results in call order (a call without a result contributes none).
    pub results: Vec<CommitInfo>,
    /// Each call's lifecycle, in call order.
    pub calls: Vec<ToolCallInfo>,
}

impl ToolTurn {
    /// The names of the tools called, in call order.
    pub fn tool_names(&self) -> Vec<String> {
        self.calls.iter().map(|c| c.name.clone()).collect()
    }

    /// The call commit and the result commits.
    pub fn all_hashes(&self) -> Vec<CommitId> {
        std::iter::once(self.call.id)
            .chain(self.results.iter().map(|r| r.id))
            .collect()
    }

    /// The result commits.
    pub fn result_hashes(&self) -> Vec<CommitId> {
        self.results.iter().map(|r| r.id).collect()
    }
}

/// The position an entry stands for, with its current version when it has been edited:
/// `message` is the entry's current message, text included.
pub(crate) fn entry_info(
    snap: &Snapshot,
    e: &ViewEntry,
    message: Arc<Message>,
) -> Result<CommitInfo> {
    if e.edits.is_empty() {
        return Ok(CommitInfo {
            id: e.position,
            commit: e.origin.clone(),
            message: Some(message),
            token_count: e.tokens,
            current: None,
        });
    }
    let original = match &e.origin.blob {
        Some(b) => Some(snap.blob(b)?),
        None => None,
    };
    let mut info = CommitInfo::new(e.position, (*e.origin).clone(), original);
    info.current = Some(Current {
        commit: e.commit,
        message,
        token_count: e.tokens,
    });
    Ok(info)
}

/// [`entry_info`] of each of `entries`, their messages read in one go.
pub(crate) fn entry_infos<'a>(
    repo: &Repo,
    snap: &Snapshot,
    entries: impl IntoIterator<Item = &'a ViewEntry>,
) -> Result<Vec<CommitInfo>> {
    let entries: Vec<&ViewEntry> = entries.into_iter().collect();
    let texts = repo.texts(snap, entries.iter().copied())?;
    entries
        .into_iter()
        .zip(texts)
        .map(|(e, m)| entry_info(snap, e, m))
        .collect()
}

/// Each tool call of `e` with its state, result and duration in `view` (the messages of the
/// call and of its results read through the handle: the arguments and the results' sizes are
/// text).
pub(crate) fn call_infos(
    repo: &Repo,
    snap: &Snapshot,
    view: &View,
    e: &ViewEntry,
) -> Result<Vec<ToolCallInfo>> {
    let results: Vec<&ViewEntry> = e
        .results
        .iter()
        .flatten()
        .filter_map(|&i| view.entries().get(i))
        .collect();
    let mut texts = repo
        .texts(snap, std::iter::once(e).chain(results.iter().copied()))?
        .into_iter();
    let Some(call) = texts.next() else {
        return Ok(Vec::new());
    };
    let read: Vec<Arc<Message>> = texts.collect();
    Ok(calls_of(view, e, &call, &read))
}

/// The calls of `e` (whose message is `call`) as [`call_infos`] gives them, `results` being
/// the messages of its results in view, in call order.
fn calls_of(
    view: &View,
    e: &ViewEntry,
    call: &Message,
    results: &[Arc<Message>],
) -> Vec<ToolCallInfo> {
    let mut read = results.iter();
    call.tool_calls
        .iter()
        .zip(&e.results)
        .map(|(c, result)| {
            let r = result.and_then(|i| view.entries().get(i));
            let bytes = r.and_then(|_| read.next()).map(|m| m.content.text().len());
            ToolCallInfo {
                call_id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
                state: match r {
                    None => CallState::Pending,
                    Some(r) if r.shape.is_error => CallState::Error,
                    Some(_) => CallState::Ok,
                },
                call_commit: e.position,
                result_commit: r.map(|r| r.position),
                duration_us: r.map(|r| r.origin.timestamp_us.saturating_sub(e.origin.timestamp_us)),
                result_tokens: r.map(|r| r.tokens),
                result_bytes: bytes,
            }
        })
        .collect()
}

/// The calls in view that have no result.
fn pending(repo: &Repo, snap: &Snapshot, v: &View) -> Result<Vec<ToolCallInfo>> {
    let mut out = Vec::new();
    for &i in v.call_entries(None) {
        let e = &v.entries()[i];
        if e.results.iter().any(Option::is_none) {
            out.extend(
                call_infos(repo, snap, v, e)?
                    .into_iter()
                    .filter(|c| c.state == CallState::Pending),
            );
        }
    }
    Ok(out)
}

/// Tool results in the view at `HEAD`, in view order, each position once: of tool `name` if
/// given, strictly after `after` and before `before` (commits in view) if given.
pub(crate) fn find_results(
    repo: &Repo,
    name: Option<&str>,
    after: Option<&Rev>,
    before: Option<&Rev>,
) -> Result<Vec<CommitInfo>> {
    repo.at_head(|snap, v| {
        let lo = after
            .map(|a| repo.position_in_view(v, snap, a, Some("after")))
            .transpose()?;
        let hi = before
            .map(|b| repo.position_in_view(v, snap, b, Some("before")))
            .transpose()?;
        let all = v.result_entries(name);
        // Indexes are in view order: the bounds are two binary searches.
        let start = lo.map_or(0, |lo| all.partition_point(|&i| i <= lo));
        let end = hi.map_or(all.len(), |hi| all.partition_point(|&i| i < hi));
        let found = all.get(start..end.max(start)).unwrap_or_default();
        entry_infos(repo, snap, found.iter().map(|&i| &v.entries()[i]))
    })?
}

/// Assistant commits in the view at `HEAD` that call tools (`name`: that tool).
pub(crate) fn find_calls(repo: &Repo, name: Option<&str>) -> Result<Vec<CommitInfo>> {
    repo.at_head(|snap, v| {
        entry_infos(
            repo,
            snap,
            v.call_entries(name).iter().map(|&i| &v.entries()[i]),
        )
    })?
}

/// Tool-call commits paired with their results (`name`: turns that call that tool).
pub(crate) fn find_turns(repo: &Repo, name: Option<&str>) -> Result<Vec<ToolTurn>> {
    repo.at_head(|snap, v| {
        // Every call and result of the turns, their messages read in one go.
        let turns: Vec<(&ViewEntry, Vec<&ViewEntry>)> = v
            .call_entries(name)
            .iter()
            .map(|&i| {
                let e = &v.entries()[i];
                let results = e
                    .results
                    .iter()
                    .flatten()
                    .filter_map(|&r| v.entries().get(r));
                (e, results.collect())
            })
            .collect();
        let all = turns
            .iter()
            .flat_map(|(e, results)| std::iter::once(*e).chain(results.iter().copied()));
        let mut texts = repo.texts(snap, all)?.into_iter();
        let mut out = Vec::with_capacity(turns.len());
        for (e, results) in turns {
            let missing = || {
                Error::corrupt(format!(
                    "the message of {} was not read",
                    e.position.short()
                ))
            };
            let call = texts.next().ok_or_else(missing)?;
            let read: Vec<Arc<Message>> = texts.by_ref().take(results.len()).collect();
            if read.len() != results.len() {
                return Err(missing());
            }
            out.push(ToolTurn {
                calls: calls_of(v, e, &call, &read),
                call: entry_info(snap, e, call)?,
                results: results
                    .into_iter()
                    .zip(read)
                    .map(|(r, m)| entry_info(snap, r, m))
                    .collect::<Result<_>>()?,
            });
        }
        Ok(out)
    })?
}

/// Every tool call in the view at `HEAD` without a result, in view order.
pub(crate) fn pending_calls(repo: &Repo) -> Result<Vec<ToolCallInfo>> {
    repo.at_head(|snap, v| pending(repo, snap, v))?
}

/// Edits a tool result: `target` must be a tool result in view answering `call_id` from tool
/// `name`.
pub(crate) fn edit_result(
    repo: &Repo,
    target: &Rev,
    call_id: &str,
    name: &str,
    content: Content,
) -> Result<CommitInfo> {
    crate::write::edit::edit(repo, target, content, |m| {
        if m.role != Role::Tool {
            return Err(Error::invalid_op(format!(
                "'{target}' is a {} message, not a tool result",
                m.role
            )));
        }
        let have = m.tool_call_id.as_deref().unwrap_or_default();
        if have != call_id {
            return Err(Error::invalid_op(format!(
                "'{target}' answers tool call '{have}', not '{call_id}'"
            )));
        }
        match m.name.as_deref() {
            Some(n) if n != name => Err(Error::invalid_op(format!(
                "'{target}' is a result of tool '{n}', not '{name}'"
            ))),
            _ => Ok(()),
        }
    })
}

/// Commits a marked synthetic error result for every tool call in view that has none, in one
/// transaction.
pub(crate) fn repair(repo: &Repo) -> Result<Vec<CommitInfo>> {
    let (head, pending) =
        repo.at_head(|snap, v| Ok::<_, Error>((v.head(), pending(repo, snap, v)?)))??;
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    let results: Vec<Message> = pending
        .into_iter()
        .map(|c| {
            let mut m = Message::tool_result(c.call_id, c.name, SYNTHETIC_RESULT, true);
            m.metadata.insert("tract_repair".into(), "true".into());
            m
        })
        .collect();
    // If another writer moved the branch since the calls were read, fail rather than answer
    // a call twice.
    let opts = AppendOptions {
        expected_head: Some(head),
        note: Some("repair: synthetic result for a call with none".into()),
    };
    crate::write::append::append_batch(repo, results, &opts)
}
