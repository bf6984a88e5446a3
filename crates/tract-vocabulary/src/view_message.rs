//! [`ViewMessage`]: one message of a view as the model sees it, with its tool calls' states
//! and results (the web view's page of a view).

use super::{Merge, ToolCall, hex};
use serde::Serialize;
use serde_json::Value;
use tract_core::json::message_to_json;
use tract_core::{Op, PageCall, PageEntry, Role};

/// One position of a view: the message in it, where it came from and what its content is.
/// The names are a commit's ([`super::Commit`]): `commit_hash` is the position, as Python's
/// `CommitInfo` of a position, and `current_hash` the version shown.
#[derive(Debug, Clone, Serialize)]
pub struct ViewMessage {
    /// Its index in the view, from 0.
    index: usize,
    /// The position: the commit that put it in the view (an append, a compression or a
    /// merge).
    commit_hash: String,
    /// The commit whose content is shown: the position itself, or its newest edit.
    current_hash: String,
    /// The position's operation: `append`, `compress` (a summary of a compressed run) or
    /// `merge` (a merged branch's answer).
    op: &'static str,
    /// `system`, `user`, `assistant` or `tool`.
    role: &'static str,
    /// The tool name of a tool result (or a participant's name).
    name: Option<String>,
    /// For a tool result: the call it answers.
    tool_call_id: Option<String>,
    /// Whether this tool result reports an error.
    is_error: bool,
    /// The text shown (text parts joined by newlines).
    content: String,
    /// The content parts as JSON when the message has parts (images, documents, thinking);
    /// `null` for plain text.
    parts: Option<Value>,
    /// Tokens of the message with its framing.
    token_count: u32,
    /// Bytes of its text.
    byte_count: usize,
    /// When the position was committed: RFC 3339 UTC with microseconds.
    created_at: String,
    /// The same time in microseconds since the Unix epoch.
    timestamp_us: u64,
    /// 1 plus the number of edits.
    version_count: usize,
    /// The note of the commit shown (for a result a hook summarized, `summarized by ...`).
    note: Option<String>,
    /// What its content is, any of `edited`, `summarized`, `cleared`, `redacted`, `repaired`.
    marks: Vec<&'static str>,
    /// For a tool result: the index of the message whose call it answers (`null` for a
    /// result that answers no call, which is not sent, and for every other role).
    caller: Option<usize>,
    /// For a compression: the positions its summary replaced (empty otherwise).
    sources: Vec<String>,
    /// For a compression: who summarized.
    summarizer: Option<String>,
    /// For a merge: the branch merged and how.
    merge: Option<Merge>,
    /// For an assistant message that calls tools: each call with its state and result.
    calls: Vec<ViewToolCall>,
}

/// One tool call of a message in view: its lifecycle, and the message of its result.
#[derive(Debug, Clone, Serialize)]
pub struct ViewToolCall {
    /// The call, its state and duration.
    #[serde(flatten)]
    call: ToolCall,
    /// Whether the model is sent a marked synthetic error result in its place (while it is
    /// pending).
    synthetic: bool,
    /// The result's message (with no calls of its own), or `null` while pending.
    result: Option<Box<ViewMessage>>,
}

impl From<&PageEntry> for ViewMessage {
    fn from(p: &PageEntry) -> Self {
        let e = &p.entry;
        let m = &p.message;
        let text = m.content.text();
        let (sources, summarizer) = match &e.origin.op {
            Op::Compress {
                sources,
                summarizer,
                ..
            } => (hex(sources), Some(summarizer.clone())),
            _ => (Vec::new(), None),
        };
        let parts = match message_to_json(m) {
            Value::Object(mut o) => o.remove("content").filter(Value::is_array),
            _ => None,
        };
        ViewMessage {
            index: p.index,
            commit_hash: e.position.to_hex(),
            current_hash: e.commit.to_hex(),
            op: match &e.origin.op {
                Op::Compress { .. } => "compress",
                Op::Merge { .. } => "merge",
                _ => "append",
            },
            role: m.role.as_str(),
            name: m.name.clone(),
            tool_call_id: m.tool_call_id.clone(),
            is_error: m.is_error,
            byte_count: text.len(),
            content: text.into_owned(),
            parts,
            token_count: e.tokens,
            created_at: tract_core::clock::rfc3339_micros(e.origin.timestamp_us),
            timestamp_us: e.origin.timestamp_us,
            version_count: 1 + e.edits.len(),
            note: p.note.clone(),
            marks: p.marks.iter().map(|k| k.as_str()).collect(),
            caller: p.caller,
            sources,
            summarizer,
            merge: Merge::of(&e.origin),
            calls: if m.role == Role::Assistant {
                p.calls.iter().map(ViewToolCall::from).collect()
            } else {
                Vec::new()
            },
        }
    }
}

impl From<&PageCall> for ViewToolCall {
    fn from(c: &PageCall) -> Self {
        ViewToolCall {
            call: ToolCall::from(&c.info),
            synthetic: c.result.is_none(),
            result: c.result.as_deref().map(|r| Box::new(ViewMessage::from(r))),
        }
    }
}
