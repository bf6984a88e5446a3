//! [`Commit`]: one commit with its message, Python's `CommitInfo` as JSON.

use super::{Merge, ToolCallRequest, hex};
use serde::Serialize;
use serde_json::Value;
use tract_core::CommitInfo;
use tract_core::json::message_to_json;

/// How much of a commit's text a surface shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Everything: the texts and the messages (`--json`, the web API's commit).
    Full,
    /// The texts without the messages, which repeat them, each cut to `max_chars` characters
    /// when given: what MCP hands an agent, whose context is what it pays for (lists are
    /// cut, `show` gives all of it).
    Texts {
        /// The longest text shown whole (`None`: every text whole).
        max_chars: Option<usize>,
    },
    /// No texts and no messages: the web API's lists of many commits (history rows, search
    /// hits), which show a preview or a snippet and link to the commit.
    Brief,
}

/// One commit: its id, operation, provenance, message and tokens. The fields of Python's
/// `CommitInfo`, by the same names.
#[derive(Debug, Clone, Serialize)]
pub struct Commit {
    /// The commit's id: 64 hex digits.
    commit_hash: String,
    /// `append`, `edit`, `compress`, `merge` or `record`.
    op: &'static str,
    /// The parent commits' ids: none for a root, two for a merge (the merged tip second).
    parents: Vec<String>,
    /// For an edit: the commit it replaces.
    edit_target: Option<String>,
    /// For a compress commit: the positions its summary replaced (empty otherwise).
    sources: Vec<String>,
    /// For a compress commit or a summarized merge: who summarized (`extractive`, `manual`,
    /// `callable:...`, `openai:...`).
    summarizer: Option<String>,
    /// When it was committed: RFC 3339 UTC with microseconds.
    created_at: String,
    /// When it was committed, in microseconds since the Unix epoch.
    timestamp_us: u64,
    /// The note stored on the commit.
    note: Option<String>,
    /// The blob holding its message (`null` for a commit without one).
    blob_hash: Option<String>,
    /// `system`, `user`, `assistant` or `tool` (`null` for a commit without a message).
    role: Option<&'static str>,
    /// `instruction`, `dialogue`, `tool_call` or `tool_result`.
    content_type: Option<&'static str>,
    /// The tool name of a tool result (or a participant's name).
    name: Option<String>,
    /// For a tool result: the call it answers.
    tool_call_id: Option<String>,
    /// Whether this tool result reports an error.
    is_error: bool,
    /// For an assistant message: the tools it calls, in order.
    tool_calls: Vec<ToolCallRequest>,
    /// The tools involved: a result's tool, or the tools a message calls.
    tool_names: Vec<String>,
    /// Tokens of the message with its framing (o200k_base; 0 without one, and for a record).
    token_count: u32,
    /// The message's text (text parts joined by newlines; `null` without a message). Left
    /// out where the surface shows no texts ([`Detail::Brief`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Option<String>>,
    /// The full message in tract's neutral JSON form (role, content, name, tool_calls,
    /// tool_call_id, is_error, metadata; `null` without one). Left out where the surface
    /// shows none ([`Detail::Texts`], [`Detail::Brief`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Option<Value>>,
    /// The commit whose content is in view: the newest edit of this position when it was
    /// edited, otherwise this commit.
    current_hash: String,
    /// For an edited position: the tokens of the version in view.
    #[serde(skip_serializing_if = "Option::is_none")]
    current_token_count: Option<u32>,
    /// For an edited position: the text of the version in view (as `content` is shown).
    #[serde(skip_serializing_if = "Option::is_none")]
    current_content: Option<String>,
    /// For an edited position: the message in view (as `message` is shown).
    #[serde(skip_serializing_if = "Option::is_none")]
    current_message: Option<Value>,
    /// For a merge: the branch merged and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    merge: Option<Merge>,
    /// For a record: its kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    record_kind: Option<String>,
    /// For a compressed message: the summary that replaced it in the view (given by the
    /// commands that show one commit).
    #[serde(skip_serializing_if = "Option::is_none")]
    compressed_into: Option<String>,
}

/// `text` cut to `max` characters, with a note that says where the rest is.
fn cut(text: String, max: Option<usize>) -> String {
    match max {
        Some(max) if text.chars().count() > max => {
            let cut: String = text.chars().take(max).collect();
            format!("{cut}… [truncated; show gives all of it]")
        }
        _ => text,
    }
}

impl From<&CommitInfo> for Commit {
    fn from(info: &CommitInfo) -> Self {
        Commit::new(info, Detail::Full)
    }
}

impl Commit {
    /// `info` as a surface shows it.
    pub fn new(info: &CommitInfo, detail: Detail) -> Self {
        let m = info.message.as_deref();
        let (texts, messages, max) = match detail {
            Detail::Full => (true, true, None),
            Detail::Texts { max_chars } => (true, false, max_chars),
            Detail::Brief => (false, false, None),
        };
        let current = info.current.as_ref();
        Commit {
            commit_hash: info.id.to_hex(),
            op: info.op(),
            parents: hex(&info.commit.parents),
            edit_target: info.edit_target().map(|t| t.to_hex()),
            sources: hex(info.sources()),
            summarizer: info.summarizer().map(str::to_string),
            created_at: info.created_at(),
            timestamp_us: info.commit.timestamp_us,
            note: info.commit.message.clone(),
            blob_hash: info.commit.blob.map(|b| b.to_hex()),
            role: info.role().map(|r| r.as_str()),
            content_type: info.content_type(),
            name: m.and_then(|m| m.name.clone()),
            tool_call_id: m.and_then(|m| m.tool_call_id.clone()),
            is_error: m.is_some_and(|m| m.is_error),
            tool_calls: m.map_or_else(Vec::new, |m| {
                m.tool_calls.iter().map(ToolCallRequest::from).collect()
            }),
            tool_names: info.tool_names().into_iter().map(str::to_string).collect(),
            token_count: info.token_count,
            content: texts.then(|| m.map(|m| cut(m.content.text().into_owned(), max))),
            message: messages.then(|| m.map(message_to_json)),
            current_hash: current.map_or(info.id, |c| c.commit).to_hex(),
            current_token_count: current.map(|c| c.token_count),
            current_content: current
                .filter(|_| texts)
                .map(|c| cut(c.message.content.text().into_owned(), max)),
            current_message: current
                .filter(|_| messages)
                .map(|c| message_to_json(&c.message)),
            merge: Merge::of(&info.commit),
            record_kind: info.record_kind().map(str::to_string),
            compressed_into: None,
        }
    }

    /// With the summary that replaced this message.
    pub fn compressed_into(mut self, into: Option<&CommitInfo>) -> Self {
        self.compressed_into = into.map(|i| i.id.to_hex());
        self
    }

    /// With the version of its position that is in view: the last of `versions` (the
    /// position's edit history, oldest first), when that is another commit.
    pub fn in_view(mut self, versions: &[CommitInfo], detail: Detail) -> Self {
        let Some(last) = versions
            .last()
            .filter(|l| l.id.to_hex() != self.commit_hash)
        else {
            return self;
        };
        let shown = Commit::new(last, detail);
        self.current_hash = shown.commit_hash;
        self.current_token_count = Some(shown.token_count);
        self.current_content = shown.content.flatten();
        self.current_message = shown.message.flatten();
        self
    }
}
