//! What a transcript is read into: its [`Format`], the [`Step`]s of a conversation or a
//! commit export ([`Transcript`]), and what every format builds them with (a bad line's error,
//! a message step, tool names by call id).

use crate::agents::AgentSession;
use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::object::{Commit, Message, Role};
use std::collections::{BTreeMap, HashMap};

/// A transcript format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A Claude Code session file (`~/.claude/projects/.../<session>.jsonl`).
    ClaudeCode,
    /// OpenAI Chat Completions messages, or request bodies with `messages` (JSON or JSONL).
    OpenAi,
    /// OpenAI Responses items, or request bodies with `input` (JSON or JSONL).
    OpenAiResponses,
    /// Anthropic Messages request bodies (`system`, `messages`), JSON or JSONL.
    Anthropic,
    /// tract's JSONL: neutral messages (as `tract add --json` takes them), or commits (as
    /// `tract export --format jsonl` writes them, read back to identical ids).
    Jsonl,
    /// An OpenAI Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, or
    /// `.jsonl.zst`).
    Codex,
    /// A Google Gemini CLI session (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, or the
    /// older single-object `.json`).
    Gemini,
}

impl Format {
    /// Every format, by name.
    pub const ALL: [(&'static str, Format); 7] = [
        ("claude-code", Format::ClaudeCode),
        ("codex", Format::Codex),
        ("gemini", Format::Gemini),
        ("openai", Format::OpenAi),
        ("openai-responses", Format::OpenAiResponses),
        ("anthropic", Format::Anthropic),
        ("jsonl", Format::Jsonl),
    ];

    /// The format named `name`; `auto` is `None` (detect it).
    pub fn parse(name: &str) -> Result<Option<Format>> {
        if name == "auto" {
            return Ok(None);
        }
        Format::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| Some(*f))
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|(n, _)| *n).collect();
                Error::invalid_input(format!(
                    "unknown transcript format '{name}' (auto, {})",
                    names.join(", ")
                ))
            })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Format::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("?", |(n, _)| n)
    }
}

/// One step of a transcript, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A message, with the time it was written where the transcript says.
    Message {
        /// The message.
        message: Message,
        /// Microseconds since the Unix epoch.
        timestamp_us: Option<u64>,
        /// Its line in the file (from 1; the object's line for a JSON document).
        line: usize,
        /// The ids of the transcript lines it holds (Claude Code's `uuid`s; empty for formats
        /// without them): what an import keys each line by, so none is imported twice.
        lines: Vec<String>,
    },
    /// A sub-agent answered a tool call (a Claude Code Task): its conversation goes on a
    /// branch of its own, forked at the call, and comes back as the call's result (a merge).
    SubAgent {
        /// The agent's id (its branch is named after it).
        agent: String,
        /// Its conversation, oldest first.
        steps: Vec<Step>,
        /// The result the calling conversation received.
        result: Message,
        /// When the result came back.
        timestamp_us: Option<u64>,
        /// The result's line.
        line: usize,
        /// The ids of the result's transcript lines.
        lines: Vec<String>,
    },
    /// The conversation so far was compacted into `summary` (a Claude Code compact boundary):
    /// a compression of everything in view.
    Compact {
        /// The summary the conversation went on from.
        summary: Message,
        /// When.
        timestamp_us: Option<u64>,
        /// What started it (`manual`, `auto`) and the tokens before, where recorded.
        params: BTreeMap<String, String>,
        /// The boundary's line.
        line: usize,
        /// The ids of the boundary's and the summary's transcript lines.
        lines: Vec<String>,
    },
    /// A line kept in history but not in the view (a Claude Code line its reader leaves out):
    /// a record of `kind` holding the line verbatim.
    Record {
        /// The record kind ([`CLAUDE_CODE_LINE_RECORD`](super::CLAUDE_CODE_LINE_RECORD)).
        kind: String,
        /// The line's JSON.
        data: String,
        /// The line's id.
        lines: Vec<String>,
        /// When it was written, where it says.
        timestamp_us: Option<u64>,
        /// Its line.
        line: usize,
        /// What the response it holds cost, when it is the line that carries that.
        usage: Option<crate::usage::Usage>,
    },
}

impl Step {
    /// Its line in the file.
    pub fn line(&self) -> usize {
        match self {
            Step::Message { line, .. }
            | Step::SubAgent { line, .. }
            | Step::Compact { line, .. }
            | Step::Record { line, .. } => *line,
        }
    }

    /// The ids of the transcript lines it holds.
    pub fn lines(&self) -> &[String] {
        match self {
            Step::Message { lines, .. }
            | Step::SubAgent { lines, .. }
            | Step::Compact { lines, .. }
            | Step::Record { lines, .. } => lines,
        }
    }
}

/// A transcript's messages, or a commit-level export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transcript {
    /// Steps to append on a branch.
    Steps {
        /// The format read.
        format: Format,
        /// The steps, oldest first.
        steps: Vec<Step>,
        /// Lines that carry no message (snapshots, progress, metadata), skipped and counted.
        skipped: usize,
        /// Lines of the file's other conversation paths (abandoned retries), not imported.
        off_path: usize,
        /// The name the transcript gives itself (a Claude Code session id).
        session: Option<String>,
        /// The project a Claude Code session belongs to: the key Claude Code names its folder
        /// with, from the session's working directory.
        project: Option<String>,
        /// Lines read with something to say (a line that is not JSON, skipped; a line kept as
        /// a record because it makes no message): line and what.
        warnings: Vec<(usize, String)>,
        /// Sub-agents whose conversations no Task result names yet (still running): imported
        /// once their result is written.
        waiting_agents: Vec<String>,
        /// A Claude Code session caught while a line that settles its reading is still to
        /// come: the line (from 1) of the first message line the reader leaves off the
        /// conversation although it is newer than every line on it. The file then ends on a
        /// chain the reader does not take as the leaf (a meta line: a local command's caveat,
        /// a command or skill expanded), so the reader falls back to an older leaf; the line
        /// that continues from it puts those lines back on the conversation. Imported now,
        /// they would be kept as off-path records and then imported again as messages. `None`:
        /// the reading is settled.
        unsettled: Option<usize>,
        /// The session this one was forked from (a Codex thread's `forked_from_id`): its
        /// branch holds the lines this one repeats.
        parent: Option<String>,
        /// The agent that wrote the session, its version and start (an agent's own session
        /// file; `None` for a conversation in an API's format).
        agent: Option<Box<AgentSession>>,
    },
    /// Commits written by `tract export --format jsonl`, oldest first, each with the message
    /// it carries; the last one is the branch tip.
    Commits(Vec<(CommitId, Commit, Option<Message>)>),
}

impl Transcript {
    /// Steps read in `format`, with nothing skipped, no session and nothing to say: what every
    /// format but Claude Code's reads.
    pub(super) fn of_steps(format: Format, steps: Vec<Step>) -> Transcript {
        Transcript::Steps {
            format,
            steps,
            skipped: 0,
            off_path: 0,
            session: None,
            project: None,
            warnings: Vec::new(),
            waiting_agents: Vec::new(),
            unsettled: None,
            parent: None,
            agent: None,
        }
    }
}

/// A transcript's bad line: where and why.
pub(super) fn bad(line: usize, reason: impl Into<String>) -> Error {
    Error::InvalidTranscript {
        path: None,
        line,
        reason: reason.into(),
    }
}

/// A message read at `line`, of a format that gives no times and no line ids.
pub(super) fn message_step(message: Message, line: usize) -> Step {
    Step::Message {
        message,
        timestamp_us: None,
        line,
        lines: Vec::new(),
    }
}

/// Notes the tool name of each call `m` makes, by call id.
pub(super) fn remember_calls(names: &mut HashMap<String, String>, m: &Message) {
    for c in &m.tool_calls {
        names.insert(c.id.clone(), c.name.clone());
    }
}

/// Gives a tool result without a name its call's tool name.
pub(super) fn name_result(names: &HashMap<String, String>, m: &mut Message) {
    if m.role == Role::Tool && m.name.is_none() {
        m.name = m
            .tool_call_id
            .as_ref()
            .and_then(|id| names.get(id))
            .cloned();
    }
}

/// What an error says without its kind (the transcript error adds the line).
pub(super) fn reason_of(e: Error) -> String {
    match e {
        Error::InvalidMessage { reason, .. } => reason,
        Error::InvalidInput { message } => message,
        Error::InvalidTranscript { reason, .. } => reason,
        other => other.to_string(),
    }
}
