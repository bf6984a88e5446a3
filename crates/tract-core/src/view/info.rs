//! [`CommitInfo`]: one commit with its message, as every surface shows it.

use crate::error::Result;
use crate::id::CommitId;
use crate::object::{Commit, MergeStrategy, Message, Op, Role};
use crate::storage::store::snapshot::Snapshot;
use crate::tokens;
use std::sync::Arc;

/// What one commit holds, with its message.
#[derive(Debug, Clone)]
pub struct CommitInfo {
    /// The commit's id.
    pub id: CommitId,
    /// The commit itself (parents, operation, blob, timestamp, note), shared with the view.
    pub commit: Arc<Commit>,
    /// The message it carries, if its operation has content.
    pub message: Option<Arc<Message>>,
    /// Tokens of that message with framing (0 without one, and for a record).
    pub token_count: u32,
    /// For a view position that has been edited: the version the model sees now.
    pub current: Option<Current>,
}

/// The version of an edited position that is in view.
#[derive(Debug, Clone)]
pub struct Current {
    /// The newest edit of the position.
    pub commit: CommitId,
    /// Its message.
    pub message: Arc<Message>,
    /// Its tokens with framing.
    pub token_count: u32,
}

impl CommitInfo {
    /// A commit as `snap` holds it, with its message.
    pub fn load(snap: &Snapshot, id: CommitId) -> Result<Self> {
        Self::with_commit(snap, id, snap.commit(&id)?)
    }

    /// A commit already read, with its message from `snap`.
    pub(crate) fn with_commit(snap: &Snapshot, id: CommitId, commit: Commit) -> Result<Self> {
        let content = match &commit.blob {
            Some(b) => Some(snap.blob(b)?),
            None => None,
        };
        Ok(CommitInfo::new(id, commit, content))
    }

    pub(crate) fn new(id: CommitId, commit: Commit, content: Option<(Message, u32)>) -> Self {
        let (message, token_count) = match content {
            // A record is never sent to a model: it costs no tokens.
            Some((m, _)) if matches!(commit.op, Op::Record { .. }) => (Some(Arc::new(m)), 0),
            Some((m, payload)) => {
                let framed = tokens::framed(payload, m.name.is_some() && m.role != Role::Tool);
                (Some(Arc::new(m)), framed)
            }
            None => (None, 0),
        };
        CommitInfo {
            id,
            commit: Arc::new(commit),
            message,
            token_count,
            current: None,
        }
    }

    /// The operation's name: `append`, `edit`, `compress`, `merge` or `record`.
    pub fn op(&self) -> &'static str {
        self.commit.op.name()
    }

    /// The message's role.
    pub fn role(&self) -> Option<Role> {
        self.message.as_ref().map(|m| m.role)
    }

    /// The commit an edit replaces.
    pub fn edit_target(&self) -> Option<CommitId> {
        match &self.commit.op {
            Op::Edit { target } => Some(*target),
            Op::Append | Op::Compress { .. } | Op::Merge { .. } | Op::Record { .. } => None,
        }
    }

    /// What kind of message it is: `instruction` (system), `dialogue` (user or assistant
    /// text), `tool_call` (an assistant message with tool calls) or `tool_result`.
    pub fn content_type(&self) -> Option<&'static str> {
        self.message.as_ref().map(|m| match m.role {
            Role::System => "instruction",
            Role::Tool => "tool_result",
            Role::Assistant if !m.tool_calls.is_empty() => "tool_call",
            Role::User | Role::Assistant => "dialogue",
        })
    }

    /// The tool names involved: a result's tool, or the tools a call message calls.
    pub fn tool_names(&self) -> Vec<&str> {
        match &self.message {
            Some(m) if m.role == Role::Tool => m.name.iter().map(String::as_str).collect(),
            Some(m) => m.tool_calls.iter().map(|c| c.name.as_str()).collect(),
            None => Vec::new(),
        }
    }

    /// When it was committed, as RFC 3339 UTC with microseconds.
    pub fn created_at(&self) -> String {
        crate::clock::rfc3339_micros(self.commit.timestamp_us)
    }

    /// The message's fields beyond role and content, as the seed API's `metadata`: `name`,
    /// `tool_call_id`, `tool_calls` (flat form), `is_error` where they apply, plus any extra
    /// provider fields stored with the message.
    pub fn metadata(&self) -> serde_json::Map<String, serde_json::Value> {
        let Some(m) = &self.message else {
            return serde_json::Map::new();
        };
        let serde_json::Value::Object(mut all) = crate::json::message_to_json(m) else {
            return serde_json::Map::new();
        };
        let mut out = match all.remove("metadata") {
            Some(serde_json::Value::Object(extra)) => extra,
            _ => serde_json::Map::new(),
        };
        all.remove("role");
        all.remove("content");
        out.extend(all);
        out
    }

    /// The positions a compress commit summarized (empty for other operations).
    pub fn sources(&self) -> &[CommitId] {
        match &self.commit.op {
            Op::Compress { sources, .. } => sources,
            _ => &[],
        }
    }

    /// The summarizer a compress commit (or a summarized merge) records.
    pub fn summarizer(&self) -> Option<&str> {
        match &self.commit.op {
            Op::Compress { summarizer, .. } => Some(summarizer),
            Op::Merge { summarizer, .. } => summarizer.as_deref(),
            _ => None,
        }
    }

    /// For a record: its kind.
    pub fn record_kind(&self) -> Option<&str> {
        match &self.commit.op {
            Op::Record { kind } => Some(kind),
            _ => None,
        }
    }

    /// For a merge: the branch merged (its name when it was merged), its tip (the second
    /// parent) and the strategy.
    pub fn merged(&self) -> Option<(&str, CommitId, &MergeStrategy)> {
        match (&self.commit.op, self.commit.parents.get(1)) {
            (
                Op::Merge {
                    branch, strategy, ..
                },
                Some(tip),
            ) => Some((branch, *tip, strategy)),
            _ => None,
        }
    }

    /// The first line of the text content (or of the first tool call when there is none).
    pub fn preview(&self) -> String {
        if let (Op::Record { kind }, Some(m)) = (&self.commit.op, &self.message) {
            return format!("{kind} ({} bytes)", m.content.text().len());
        }
        let Some(m) = &self.message else {
            return match self.merged() {
                Some((branch, tip, _)) => format!("merged {branch} ({})", tip.short()),
                None => String::new(),
            };
        };
        let text = m.content.text();
        let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if let (true, Some(c)) = (line.is_empty(), m.tool_calls.first()) {
            return format!("{}({})", c.name, c.arguments);
        }
        line.to_string()
    }
}
