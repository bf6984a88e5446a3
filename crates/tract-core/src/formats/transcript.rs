//! Transcripts other tools wrote, read as tract messages: Claude Code session JSONL, OpenAI
//! Chat messages or request bodies, OpenAI Responses items or request bodies, Anthropic
//! Messages request bodies, and tract's own JSONL (messages, or commits as `tract export`
//! writes them).
//!
//! Parsing is pure and complete before anything is written: a bad line is an error naming its
//! line, and nothing of the file is committed. Provider-native content (thinking blocks with
//! their signatures, images, documents) is kept verbatim as raw parts.

use crate::error::{Error, Result};
use crate::formats::claude_code;
use crate::formats::responses;
use crate::id::{BlobId, CommitId};
use crate::json::{message_from_json, message_to_json};
use crate::object::{Commit, Content, ContentPart, Message, Op, Role, ToolCall};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};

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
}

impl Format {
    /// Every format, by name.
    pub const ALL: [(&'static str, Format); 5] = [
        ("claude-code", Format::ClaudeCode),
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
        /// The record kind ([`CLAUDE_CODE_LINE_RECORD`]).
        kind: String,
        /// The line's JSON.
        data: String,
        /// The line's id.
        lines: Vec<String>,
        /// When it was written, where it says.
        timestamp_us: Option<u64>,
        /// Its line.
        line: usize,
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
    },
    /// Commits written by `tract export --format jsonl`, oldest first, each with the message
    /// it carries; the last one is the branch tip.
    Commits(Vec<(CommitId, Commit, Option<Message>)>),
}

fn bad(line: usize, reason: impl Into<String>) -> Error {
    Error::InvalidTranscript {
        path: None,
        line,
        reason: reason.into(),
    }
}

/// The JSON values of a text, each with its line: one document (an object, or a list of
/// values, each at the document's first line), or JSONL. Lines that are not JSON are returned
/// apart (line and error): only Claude Code's format skips them, as Claude Code does.
struct Values {
    values: Vec<(usize, Value)>,
    unreadable: Vec<(usize, String)>,
    /// Read as one JSON document, not line by line.
    document: bool,
}

impl Values {
    fn read(text: &str) -> Result<Values> {
        let trimmed = text.trim_start();
        if trimmed.is_empty() {
            return Err(bad(1, "the file is empty"));
        }
        let first_line = text.len() - trimmed.len();
        let first_line = text[..first_line].matches('\n').count() + 1;
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            let values = match v {
                Value::Array(list) => list.into_iter().map(|v| (first_line, v)).collect(),
                v => vec![(first_line, v)],
            };
            return Ok(Values {
                values,
                unreadable: Vec::new(),
                document: true,
            });
        }
        Ok(Values::lines(text))
    }

    /// The text read line by line, as Claude Code's reader reads a session: lines end at
    /// `\n`, `\r\n` or a lone `\r` (Python's universal newlines), are trimmed as Python's
    /// `str.strip()` trims (which also takes U+001C..U+001F for whitespace), and a lone UTF-16
    /// surrogate escape (JavaScript writes one for a cut emoji; a Rust string cannot hold it)
    /// reads as U+FFFD.
    fn lines(text: &str) -> Values {
        let mut values = Vec::new();
        let mut unreadable = Vec::new();
        for (i, line) in text.split('\n').enumerate() {
            for piece in line.split('\r') {
                let piece = piece.trim_matches(|c: char| {
                    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
                });
                if piece.is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(piece) {
                    Ok(v) => values.push((i + 1, v)),
                    Err(e) => match lone_surrogates_replaced(piece)
                        .and_then(|fixed| serde_json::from_str::<Value>(&fixed).ok())
                    {
                        Some(v) => values.push((i + 1, v)),
                        None => unreadable.push((i + 1, format!("malformed JSON: {e}"))),
                    },
                }
            }
        }
        Values {
            values,
            unreadable,
            document: false,
        }
    }

    /// The values, for a format whose lines must all be JSON.
    fn strict(self) -> Result<Vec<(usize, Value)>> {
        match self.unreadable.into_iter().next() {
            Some((line, reason)) => Err(bad(line, reason)),
            None => Ok(self.values),
        }
    }

    /// The format of the values, `format` when named.
    fn format(&self, format: Option<Format>) -> Result<Format> {
        match format {
            Some(f) => Ok(f),
            None if self.values.is_empty() => match self.unreadable.first() {
                Some((line, reason)) => Err(bad(*line, reason.clone())),
                None => Err(bad(1, "the file holds no JSON value")),
            },
            None => detect(&self.values),
        }
    }

    /// The transcript in `format` (`text`: what was read, for a Claude Code session, which is
    /// read line by line even where the whole text is one JSON document).
    fn parse(self, format: Format, text: &str) -> Result<Transcript> {
        if format == Format::ClaudeCode {
            return self.into_session(text).session(&[]);
        }
        parse_values(self.strict()?, format)
    }

    /// The values as Claude Code reads a session: line by line, even where the whole text
    /// (`text`, what was read) is one JSON document.
    fn into_session(self, text: &str) -> Values {
        if self.document {
            Values::lines(text)
        } else {
            self
        }
    }

    /// The Claude Code session these lines hold, with its sub-agents' files.
    fn session(&self, agent_files: &[(String, Vec<(usize, Value)>)]) -> Result<Transcript> {
        let unreadable: Vec<usize> = self.unreadable.iter().map(|(l, _)| *l).collect();
        claude_code(&self.values, agent_files, &unreadable)
    }
}

/// `line` with each lone UTF-16 surrogate escape (`\\ud83d` not part of a pair) written as
/// `\\ufffd`; `None` when it holds none.
fn lone_surrogates_replaced(line: &str) -> Option<String> {
    let b = line.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        if b.get(at) != Some(&b'\\') || b.get(at + 1) != Some(&b'u') {
            return None;
        }
        let hex = line.get(at + 2..at + 6)?;
        u16::from_str_radix(hex, 16).ok()
    };
    let mut out = String::with_capacity(line.len());
    let mut changed = false;
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit(i) {
            Some(0xD800..=0xDBFF) => {
                if matches!(unit(i + 6), Some(0xDC00..=0xDFFF)) {
                    i += 12;
                } else {
                    out.push_str(&line[copied..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                    changed = true;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.push_str(&line[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
                changed = true;
            }
            // Any other escape: the backslash and what it escapes.
            _ => i += 2,
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&line[copied..]);
    Some(out)
}

/// Reads a transcript; `format` `None` detects it.
pub fn parse(text: &str, format: Option<Format>) -> Result<Transcript> {
    let values = Values::read(text)?;
    let format = values.format(format)?;
    values.parse(format, text)
}

fn parse_values(values: Vec<(usize, Value)>, format: Format) -> Result<Transcript> {
    let steps = |steps| Transcript::Steps {
        format,
        steps,
        skipped: 0,
        off_path: 0,
        session: None,
        project: None,
        warnings: Vec::new(),
        waiting_agents: Vec::new(),
    };
    match format {
        Format::ClaudeCode => claude_code(&values, &[], &[]),
        Format::OpenAi => Ok(steps(openai(&values)?)),
        Format::OpenAiResponses => Ok(steps(openai_responses(&values)?)),
        Format::Anthropic => Ok(steps(anthropic(&values)?)),
        Format::Jsonl => jsonl(&values),
    }
}

/// The format of a transcript, from its first value.
fn detect(values: &[(usize, Value)]) -> Result<Format> {
    let Some((_, first)) = values.first() else {
        return Err(bad(1, "the file holds no JSON value"));
    };
    let has = |k: &str| first.get(k).is_some();
    let kind = first.get("type").and_then(Value::as_str);
    // A Claude Code file may open with lines that carry no message (snapshots).
    let claude = values.iter().take(16).any(|(_, v)| {
        v.get("sessionId").is_some() || v.get("parentUuid").is_some() || v.get("leafUuid").is_some()
    });
    let format = if claude {
        Format::ClaudeCode
    } else if has("op") && has("id") {
        Format::Jsonl
    } else if has("input") || is_responses_item(first) {
        Format::OpenAiResponses
    } else if has("messages") {
        let messages = first.get("messages").and_then(Value::as_array);
        let anthropic_blocks = messages.is_some_and(|ms| ms.iter().any(has_anthropic_blocks));
        if has("system") || anthropic_blocks {
            Format::Anthropic
        } else {
            Format::OpenAi
        }
    } else if has("role") {
        if values.iter().any(|(_, v)| has_anthropic_blocks(v)) {
            Format::Anthropic
        } else if values.iter().any(|(_, v)| is_responses_item(v)) {
            Format::OpenAiResponses
        } else if values
            .iter()
            .any(|(_, v)| v.get("tool_calls").is_some_and(is_wire_calls))
        {
            Format::OpenAi
        } else {
            Format::Jsonl
        }
    } else {
        return Err(bad(
            values[0].0,
            format!(
                "cannot tell the format (a value of type {}); name it with --format",
                kind.unwrap_or("object")
            ),
        ));
    };
    Ok(format)
}

fn is_wire_calls(v: &Value) -> bool {
    v.as_array()
        .is_some_and(|calls| calls.iter().any(|c| c.get("function").is_some()))
}

fn is_responses_item(v: &Value) -> bool {
    let typed = v.get("type").and_then(Value::as_str).is_some_and(|t| {
        matches!(t, "function_call" | "function_call_output" | "reasoning")
            || (t == "message" && v.get("role").is_some())
    });
    let parts = v
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|ps| {
            ps.iter().any(|p| {
                p.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.starts_with("input_") || t.starts_with("output_"))
            })
        });
    typed || parts
}

fn has_anthropic_blocks(m: &Value) -> bool {
    m.get("content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| {
            blocks.iter().any(|b| {
                b.get("type").and_then(Value::as_str).is_some_and(|t| {
                    matches!(
                        t,
                        "tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "document"
                    ) || (t == "image" && b.get("source").is_some())
                })
            })
        })
}

fn message_step(message: Message, line: usize) -> Step {
    Step::Message {
        message,
        timestamp_us: None,
        line,
        lines: Vec::new(),
    }
}

/// OpenAI Chat: message objects (or request bodies holding `messages`). `developer` is a
/// system message; a tool result takes its call's tool name.
fn openai(values: &[(usize, Value)]) -> Result<Vec<Step>> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for (line, v) in values {
        let messages: Vec<&Value> = match v.get("messages") {
            Some(Value::Array(ms)) => ms.iter().collect(),
            Some(_) => return Err(bad(*line, "'messages' must be a list")),
            None => vec![v],
        };
        for m in messages {
            let mut m = m.clone();
            if m.get("role").and_then(Value::as_str) == Some("developer")
                && let Some(o) = m.as_object_mut()
            {
                o.insert("role".into(), "system".into());
            }
            let mut message = message_from_json(&m).map_err(|e| bad(*line, reason_of(e)))?;
            remember_calls(&mut names, &message);
            name_result(&names, &mut message);
            out.push(message_step(message, *line));
        }
    }
    Ok(out)
}

fn remember_calls(names: &mut HashMap<String, String>, m: &Message) {
    for c in &m.tool_calls {
        names.insert(c.id.clone(), c.name.clone());
    }
}

fn name_result(names: &HashMap<String, String>, m: &mut Message) {
    if m.role == Role::Tool && m.name.is_none() {
        m.name = m
            .tool_call_id
            .as_ref()
            .and_then(|id| names.get(id))
            .cloned();
    }
}

/// What an error says without its kind (the transcript error adds the line).
fn reason_of(e: Error) -> String {
    match e {
        Error::InvalidMessage { reason, .. } => reason,
        Error::InvalidInput { message } => message,
        other => other.to_string(),
    }
}

/// OpenAI Responses: items (or request bodies holding `input`, with `instructions`).
fn openai_responses(values: &[(usize, Value)]) -> Result<Vec<Step>> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for (line, v) in values {
        let items: Vec<Value> = match v.get("input") {
            Some(Value::Array(items)) => {
                if let Some(Value::String(i)) = v.get("instructions") {
                    out.push(message_step(Message::text(Role::System, i.clone()), *line));
                }
                items.clone()
            }
            Some(Value::String(s)) => {
                if let Some(Value::String(i)) = v.get("instructions") {
                    out.push(message_step(Message::text(Role::System, i.clone()), *line));
                }
                vec![serde_json::json!({"role": "user", "content": s})]
            }
            Some(_) => return Err(bad(*line, "'input' must be a string or a list of items")),
            None => vec![v.clone()],
        };
        for item in &items {
            let message = responses::message_from_item(item, |id| names.get(id).cloned())
                .map_err(|e| bad(*line, reason_of(e)))?;
            remember_calls(&mut names, &message);
            out.push(message_step(message, *line));
        }
    }
    Ok(out)
}

/// Anthropic Messages: request bodies (`system`, `messages`), or message objects.
fn anthropic(values: &[(usize, Value)]) -> Result<Vec<Step>> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for (line, v) in values {
        let line = *line;
        let messages: Vec<&Value> = match v.get("messages") {
            Some(Value::Array(ms)) => {
                match v.get("system") {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) => {
                        out.push(message_step(Message::text(Role::System, s.clone()), line));
                    }
                    Some(Value::Array(blocks)) => {
                        let content = anthropic_content(blocks).map_err(|r| bad(line, r))?;
                        out.push(message_step(
                            Message {
                                content,
                                ..Message::text(Role::System, "")
                            },
                            line,
                        ));
                    }
                    Some(_) => return Err(bad(line, "'system' must be a string or a list")),
                }
                ms.iter().collect()
            }
            Some(_) => return Err(bad(line, "'messages' must be a list")),
            None => vec![v],
        };
        for m in messages {
            for message in anthropic_message(m, &names).map_err(|r| bad(line, r))? {
                remember_calls(&mut names, &message);
                out.push(message_step(message, line));
            }
        }
    }
    Ok(out)
}

/// One Anthropic message as tract messages: a user message's `tool_result` blocks become
/// tool results (first, as Anthropic orders them), the rest one user message; an assistant's
/// `tool_use` blocks become its tool calls.
pub(crate) fn anthropic_message(
    m: &Value,
    names: &HashMap<String, String>,
) -> std::result::Result<Vec<Message>, String> {
    let role = match m.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some(other) => return Err(format!("unknown message role '{other}'")),
        None => return Err("a message needs a 'role'".into()),
    };
    let blocks = match m.get("content") {
        Some(Value::String(s)) => return Ok(vec![Message::text(role, s.clone())]),
        Some(Value::Array(blocks)) => blocks,
        _ => return Err("'content' must be a string or a list of blocks".into()),
    };
    let mut out = Vec::new();
    let mut rest = Vec::new();
    let mut calls = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("tool_result") if role == Role::User => {
                let id = b
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .ok_or("a tool_result block needs a 'tool_use_id'")?;
                let content = match b.get("content") {
                    None | Some(Value::Null) => Content::Text(String::new()),
                    Some(Value::String(s)) => Content::Text(s.clone()),
                    // A list stays a list (it renders back as one, not as a string).
                    Some(Value::Array(parts)) => match anthropic_content(parts)? {
                        Content::Text(t) => Content::Parts(vec![ContentPart::Text(t)]),
                        parts => parts,
                    },
                    Some(_) => {
                        return Err("a tool_result's 'content' must be a string or a list".into());
                    }
                };
                let is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                out.push(Message {
                    content,
                    name: names.get(id).cloned(),
                    tool_call_id: Some(id.to_string()),
                    is_error,
                    ..Message::text(Role::Tool, "")
                });
            }
            Some("tool_use") if role == Role::Assistant => {
                let id = b.get("id").and_then(Value::as_str).unwrap_or_default();
                let name = b.get("name").and_then(Value::as_str).unwrap_or_default();
                if id.is_empty() || name.is_empty() {
                    return Err("a tool_use block needs an 'id' and a 'name'".into());
                }
                let arguments = b
                    .get("input")
                    .map_or_else(|| "{}".to_string(), Value::to_string);
                calls.push(ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments,
                });
            }
            Some(_) => rest.push(b.clone()),
            None => return Err("a content block needs a string 'type'".into()),
        }
    }
    if !rest.is_empty() || !calls.is_empty() || out.is_empty() {
        let message = Message {
            content: anthropic_content(&rest)?,
            tool_calls: calls,
            ..Message::text(role, "")
        };
        message.validate().map_err(reason_of)?;
        out.push(message);
    }
    Ok(out)
}

/// Blocks as content: one plain text block is text; otherwise parts, text blocks as text and
/// every other block kept verbatim.
fn anthropic_content(blocks: &[Value]) -> std::result::Result<Content, String> {
    let plain = |b: &Value| {
        b.get("type").and_then(Value::as_str) == Some("text")
            && b.get("text").is_some_and(Value::is_string)
            && b.as_object().is_some_and(|o| o.len() == 2)
    };
    if let [one] = blocks
        && plain(one)
    {
        return Ok(Content::Text(
            one.get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .into(),
        ));
    }
    blocks
        .iter()
        .map(|b| {
            if plain(b) {
                return Ok(ContentPart::Text(
                    b.get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .into(),
                ));
            }
            // Any other block verbatim, read as the neutral form reads a part.
            crate::json::part_from_json(b).map_err(reason_of)
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map(Content::Parts)
}

/// tract's JSONL: every line a neutral message, or every line a commit.
fn jsonl(values: &[(usize, Value)]) -> Result<Transcript> {
    let commits = values.first().is_some_and(|(_, v)| v.get("op").is_some());
    if !commits {
        let mut steps = Vec::with_capacity(values.len());
        for (line, v) in values {
            if v.get("op").is_some() {
                return Err(bad(*line, "a commit line among message lines"));
            }
            let message = message_from_json(v).map_err(|e| bad(*line, reason_of(e)))?;
            steps.push(message_step(message, *line));
        }
        return Ok(Transcript::Steps {
            format: Format::Jsonl,
            steps,
            skipped: 0,
            off_path: 0,
            session: None,
            project: None,
            warnings: Vec::new(),
            waiting_agents: Vec::new(),
        });
    }
    let mut out = Vec::with_capacity(values.len());
    for (line, v) in values {
        out.push(commit_from_line(v).map_err(|r| bad(*line, r))?);
    }
    Ok(Transcript::Commits(out))
}

/// One exported commit as a JSON line: its id, parents, operation, timestamp, note and the
/// message it carries (neutral form).
pub fn commit_line(id: CommitId, c: &Commit, message: Option<&Message>) -> Value {
    let ids = |v: &[CommitId]| Value::Array(v.iter().map(|i| i.to_hex().into()).collect());
    let mut o = Map::new();
    o.insert("id".into(), id.to_hex().into());
    o.insert("parents".into(), ids(&c.parents));
    o.insert("op".into(), c.op.name().into());
    match &c.op {
        Op::Append => {}
        Op::Edit { target } => {
            o.insert("target".into(), target.to_hex().into());
        }
        Op::Record { kind } => {
            o.insert("kind".into(), kind.clone().into());
        }
        Op::Compress {
            sources,
            preserved,
            summarizer,
            params,
        } => {
            o.insert("sources".into(), ids(sources));
            o.insert("preserved".into(), ids(preserved));
            o.insert("summarizer".into(), summarizer.clone().into());
            o.insert(
                "params".into(),
                serde_json::to_value(params).unwrap_or_default(),
            );
        }
        Op::Merge {
            base,
            branch,
            strategy,
            summarizer,
        } => {
            o.insert("base".into(), base.to_hex().into());
            o.insert("branch".into(), branch.clone().into());
            match strategy {
                crate::object::MergeStrategy::Append => {
                    o.insert("strategy".into(), "append".into());
                }
                crate::object::MergeStrategy::ToolResult { call_id } => {
                    o.insert("strategy".into(), "tool_result".into());
                    o.insert("call_id".into(), call_id.clone().into());
                }
            }
            if let Some(s) = summarizer {
                o.insert("summarizer".into(), s.clone().into());
            }
        }
    }
    o.insert("timestamp_us".into(), c.timestamp_us.into());
    if let Some(note) = &c.message {
        o.insert("note".into(), note.clone().into());
    }
    if let Some(m) = message {
        o.insert("message".into(), message_to_json(m));
    }
    Value::Object(o)
}

fn commit_from_line(v: &Value) -> std::result::Result<(CommitId, Commit, Option<Message>), String> {
    let id_at = |key: &str| -> std::result::Result<CommitId, String> {
        v.get(key)
            .and_then(Value::as_str)
            .and_then(CommitId::from_hex)
            .ok_or_else(|| format!("'{key}' must be a full commit id"))
    };
    let ids_at = |key: &str| -> std::result::Result<Vec<CommitId>, String> {
        match v.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(list)) => list
                .iter()
                .map(|x| {
                    x.as_str()
                        .and_then(CommitId::from_hex)
                        .ok_or_else(|| format!("'{key}' must list full commit ids"))
                })
                .collect(),
            Some(_) => Err(format!("'{key}' must be a list")),
        }
    };
    let string_at = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let id = id_at("id")?;
    let op = match v.get("op").and_then(Value::as_str) {
        Some("append") => Op::Append,
        Some("edit") => Op::Edit {
            target: id_at("target")?,
        },
        Some("compress") => Op::Compress {
            sources: ids_at("sources")?,
            preserved: ids_at("preserved")?,
            summarizer: string_at("summarizer").ok_or("a compress needs its 'summarizer'")?,
            params: match v.get("params") {
                None => BTreeMap::new(),
                Some(p) => serde_json::from_value(p.clone())
                    .map_err(|_| "'params' must map names to strings".to_string())?,
            },
        },
        Some("merge") => Op::Merge {
            base: id_at("base")?,
            branch: string_at("branch").ok_or("a merge needs its 'branch'")?,
            strategy: match v.get("strategy").and_then(Value::as_str) {
                Some("append") => crate::object::MergeStrategy::Append,
                Some("tool_result") => crate::object::MergeStrategy::ToolResult {
                    call_id: string_at("call_id").ok_or("a tool_result merge needs 'call_id'")?,
                },
                _ => return Err("'strategy' must be append or tool_result".into()),
            },
            summarizer: string_at("summarizer"),
        },
        Some("record") => {
            let kind = string_at("kind").ok_or("a record needs its 'kind'")?;
            crate::object::check_record_kind(&kind).map_err(reason_of)?;
            Op::Record { kind }
        }
        Some(other) => return Err(format!("unknown op '{other}'")),
        None => return Err("'op' must be a string".into()),
    };
    let message = match v.get("message") {
        None | Some(Value::Null) => None,
        Some(m) => Some(message_from_json(m).map_err(reason_of)?),
    };
    let blob: Option<BlobId> = match &message {
        Some(m) => Some(m.id().map_err(reason_of)?),
        None => None,
    };
    let commit = Commit {
        parents: ids_at("parents")?,
        op,
        blob,
        timestamp_us: v
            .get("timestamp_us")
            .and_then(Value::as_u64)
            .ok_or("'timestamp_us' must be a whole number")?,
        message: string_at("note"),
    };
    let computed = commit.id().map_err(reason_of)?;
    if computed != id {
        return Err(format!(
            "the commit's fields hash to {}, not to its id {}: the line was changed",
            computed.short(),
            id.short()
        ));
    }
    Ok((id, commit, message))
}

// ----- Claude Code -----

/// The record kind of a Claude Code line the reader leaves out of the conversation (a line off
/// its path, a meta line): kept in history, verbatim, never in the view.
pub const CLAUDE_CODE_LINE_RECORD: &str = "claude_code.line";

/// What a Claude Code file without a single conversation line is refused with.
pub const NO_CLAUDE_CODE_LINE: &str = "no Claude Code transcript line";

/// A compact boundary: its line, time, parameters and uuid.
struct Boundary {
    line: usize,
    timestamp_us: Option<u64>,
    params: BTreeMap<String, String>,
    uuid: String,
}

/// What turns a Claude Code session's lines into steps: the tool names by call id, the
/// sub-agents Task results name, and the response being assembled.
#[derive(Default)]
struct Assembler {
    steps: Vec<Step>,
    records: Vec<Step>,
    names: HashMap<String, String>,
    /// Task calls whose result names the sub-agent that answered them: call id to agent id.
    agents: HashMap<String, String>,
    /// The API message id of the assistant message being assembled from its lines.
    open_response: Option<String>,
    /// A compact boundary waiting for its summary.
    pending_compact: Option<Boundary>,
    skipped: usize,
    warnings: Vec<(usize, String)>,
}

impl Assembler {
    /// Keeps a line the view leaves out as a record.
    fn record(&mut self, e: &claude_code::Entry<'_>) {
        self.records.push(Step::Record {
            kind: CLAUDE_CODE_LINE_RECORD.into(),
            data: e.value.to_string(),
            lines: vec![e.uuid().to_string()],
            timestamp_us: timestamp_of(e.value),
            line: e.line,
        });
    }

    /// A line the reader shows: its message (or messages: tool results come apart), joined to
    /// the message of its response where it continues one.
    fn show(&mut self, e: &claude_code::Entry<'_>) {
        let uuid = e.uuid().to_string();
        let parsed = match e.value.get("message") {
            // The common case: the message as Claude Code wrote it.
            Some(m)
                if m.get("role").and_then(Value::as_str) == Some(e.kind())
                    && !misplaced_block(m, e.kind()) =>
            {
                anthropic_message(m, &self.names).or_else(|_| self.lenient(e, m))
            }
            Some(m) if m.is_object() => self.lenient(e, m),
            _ => Err("the line has no message object".to_string()),
        };
        let parsed = match parsed {
            Ok(p) => p,
            Err(reason) => {
                // The reader shows it; tract cannot make a message of it: kept, and said.
                self.warnings
                    .push((e.line, format!("kept as a record, not shown: {reason}")));
                self.record(e);
                return;
            }
        };
        let timestamp_us = timestamp_of(e.value);
        let response = e.response_id().map(str::to_string);
        let continues =
            e.kind() == "assistant" && response.is_some() && response == self.open_response;
        let named_agent = e
            .value
            .get("toolUseResult")
            .and_then(|r| r.get("agentId"))
            .and_then(Value::as_str)
            .map(str::to_string);
        for mut m in parsed {
            remember_calls(&mut self.names, &m);
            name_result(&self.names, &mut m);
            if let Some(call) = m.tool_call_id.clone()
                && let Some(agent) = named_agent
                    .clone()
                    .or_else(|| agent_in_text(&m.content.text()))
            {
                self.agents.insert(call, agent);
            }
            if let Some(b) = self.pending_compact.take() {
                // The first message after a boundary is the summary the conversation went on
                // from.
                self.steps.push(Step::Compact {
                    summary: m,
                    timestamp_us: b.timestamp_us.or(timestamp_us),
                    params: b.params,
                    line: b.line,
                    lines: vec![b.uuid, uuid.clone()],
                });
                continue;
            }
            if continues
                && let Some(Step::Message {
                    message: prev,
                    lines,
                    ..
                }) = self.steps.last_mut()
                // Content after a tool call starts a message of its own, so that the blocks
                // keep their order when rendered (content first, then calls).
                && (prev.tool_calls.is_empty() || m.content.is_empty())
                // The joined message must hold together: one call id once.
                && !m
                    .tool_calls
                    .iter()
                    .any(|c| prev.tool_calls.iter().any(|p| p.id == c.id))
            {
                append_blocks(prev, m);
                if lines.last() != Some(&uuid) {
                    lines.push(uuid.clone());
                }
                continue;
            }
            self.steps.push(Step::Message {
                message: m,
                timestamp_us,
                line: e.line,
                lines: vec![uuid.clone()],
            });
        }
        self.open_response = if e.kind() == "assistant" {
            response
        } else {
            None
        };
    }

    /// A message as the reader shows it when it is not as Claude Code writes it: its role is
    /// the line's type, and a content block tract cannot hold is left out, with a warning.
    fn lenient(
        &mut self,
        e: &claude_code::Entry<'_>,
        m: &Value,
    ) -> std::result::Result<Vec<Message>, String> {
        let mut m = m.clone();
        if let Some(o) = m.as_object_mut() {
            o.insert("role".into(), Value::String(e.kind().to_string()));
        }
        let mut left_out = false;
        if let Some(blocks) = m.get_mut("content").and_then(Value::as_array_mut) {
            let mut kept = Vec::with_capacity(blocks.len());
            for b in blocks.drain(..) {
                let alone = json!({"role": e.kind(), "content": [b.clone()]});
                let fits = if misplaced_block(&alone, e.kind()) {
                    Err(format!(
                        "a {} line cannot hold a {} block",
                        e.kind(),
                        block_type(&b)
                    ))
                } else {
                    anthropic_message(&alone, &self.names).map(|_| ())
                };
                match fits {
                    Ok(()) => kept.push(b),
                    Err(reason) => {
                        left_out = true;
                        self.warnings.push((
                            e.line,
                            format!(
                                "a content block left out (the line is kept as a record): {reason}"
                            ),
                        ));
                    }
                }
            }
            *blocks = kept;
        }
        let parsed = anthropic_message(&m, &self.names)?;
        if left_out {
            // What the view cannot hold is kept: the line verbatim, named apart from its
            // message.
            self.record(e);
            if let Some(Step::Record { lines, .. }) = self.records.last_mut()
                && let Some(l) = lines.first_mut()
            {
                *l = format!("{l}#{}", e.line);
            }
        }
        Ok(parsed)
    }

    /// A compact boundary at the start of a part of the conversation.
    fn boundary(&mut self, e: &claude_code::Entry<'_>) {
        let mut params = BTreeMap::new();
        if let Some(meta) = e.value.get("compactMetadata").and_then(Value::as_object) {
            for (k, x) in meta {
                params.insert(k.clone(), x.to_string());
            }
        }
        self.pending_compact = Some(Boundary {
            line: e.line,
            timestamp_us: timestamp_of(e.value),
            params,
            uuid: e.uuid().to_string(),
        });
        self.open_response = None;
    }

    /// The lines of a part of the conversation, in the reader's order.
    fn part(&mut self, all: &[claude_code::Entry<'_>], part: &[usize], compacted: bool) {
        for (k, &i) in part.iter().enumerate() {
            let e = &all[i];
            if k == 0 && compacted {
                self.boundary(e);
            } else if e.visible() {
                self.show(e);
            } else if matches!(e.kind(), "user" | "assistant") {
                self.record(e);
            } else {
                self.skipped += 1;
            }
        }
    }
}

/// Whether a message holds a block its role cannot: a `tool_result` in an assistant's, a
/// `tool_use` in a user's (no API takes them; Claude Code never writes them).
fn misplaced_block(m: &Value, kind: &str) -> bool {
    let wrong = match kind {
        "assistant" => "tool_result",
        _ => "tool_use",
    };
    m.get("content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| blocks.iter().any(|b| block_type(b) == wrong))
}

/// A block's `type`, or empty.
fn block_type(b: &Value) -> &str {
    b.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn is_compact_boundary(e: &claude_code::Entry<'_>) -> bool {
    e.kind() == "system"
        && e.value.get("subtype").and_then(Value::as_str) == Some("compact_boundary")
}

/// A line's time, where it gives one that reads.
fn timestamp_of(v: &Value) -> Option<u64> {
    v.get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_rfc3339_us)
}

/// A Claude Code session, as Claude Code reads it (see [`crate::formats::claude_code`]): the view holds
/// the messages its reader shows, in its order, with the lines of one API response joined into
/// one message (content, then tool calls), tool results as tool messages, thinking blocks
/// verbatim and the times of the lines. What came before a compact boundary (the reader stops
/// there) is followed through `logicalParentUuid` and kept in history: the boundary becomes a
/// compression of it into the summary the conversation went on from. User and assistant lines
/// the reader leaves out (off the conversation's path, meta lines) are kept as records; lines
/// of other kinds are counted.
///
/// Sub-agents (`isSidechain` lines, in this file or in `agent_files`, one per agent id) become
/// [`Step::SubAgent`] in place of the result of the Task call they answered (the result names
/// the agent: `toolUseResult.agentId`, or `agentId: ID` in its text); one no result names yet
/// (still running) waits for it.
fn claude_code(
    values: &[(usize, Value)],
    agent_files: &[(String, Vec<(usize, Value)>)],
    unreadable: &[usize],
) -> Result<Transcript> {
    let all = claude_code::entries(values);
    if all.is_empty() {
        return Err(bad(
            values.first().map_or(1, |(l, _)| *l),
            format!(
                "{NO_CLAUDE_CODE_LINE} (a user, assistant, progress, system or attachment line \
                 with a uuid)"
            ),
        ));
    }
    let session = all
        .iter()
        .find_map(|e| e.value.get("sessionId").and_then(Value::as_str))
        .map(str::to_string);
    let project = all
        .iter()
        .find_map(|e| e.value.get("cwd").and_then(Value::as_str))
        .map(claude_code::project_key);
    // The conversation the reader shows, after the parts its compact boundaries closed.
    let reading = claude_code::Session::new(&all);
    let mut parts = vec![reading.conversation()];
    let mut used: HashSet<usize> = parts[0].iter().copied().collect();
    while let Some(&first) = parts[0].first() {
        if !is_compact_boundary(&all[first]) {
            break;
        }
        let before: Vec<usize> = reading
            .before_boundary(&all[first])
            .into_iter()
            .filter(|i| !used.contains(i))
            .collect();
        if before.is_empty() {
            break;
        }
        used.extend(before.iter().copied());
        parts.insert(0, before);
    }
    // A boundary is a compression only with its summary: the first line the reader shows after
    // it, a user's. Without one (not written yet, or the line after is something else), what
    // came before is not in the view, as the reader shows it: its lines are kept as records.
    let summarized = |part: &[usize]| {
        part.iter()
            .skip(1)
            .map(|&i| &all[i])
            .find(|e| e.visible())
            .is_some_and(|e| {
                e.kind() == "user"
                    && !claude_code::holds_tool_result(e.value)
                    && e.value
                        .get("message")
                        .and_then(|m| m.get("content"))
                        .is_some_and(|c| c.is_string() || c.is_array())
            })
    };
    let first_shown = (1..parts.len())
        .rev()
        .find(|&k| !summarized(&parts[k]))
        .unwrap_or(0);
    let mut a = Assembler::default();
    let mut off_path = 0;
    for (k, part) in parts.iter().enumerate() {
        if k < first_shown {
            for &i in part {
                if matches!(all[i].kind(), "user" | "assistant") {
                    off_path += 1;
                    a.record(&all[i]);
                } else {
                    a.skipped += 1;
                }
            }
            continue;
        }
        a.part(&all, part, k > first_shown);
    }
    a.pending_compact = None;
    // The rest: sub-agents' lines to their conversations, other lines off the path kept as
    // records or counted.
    let mut groups: Vec<(String, Vec<(usize, Value)>)> = Vec::new();
    let on_path: HashSet<usize> = used;
    for (i, e) in all.iter().enumerate() {
        if on_path.contains(&i) {
            continue;
        }
        if e.sidechain() {
            let agent = e
                .value
                .get("agentId")
                .and_then(Value::as_str)
                .unwrap_or("sidechain")
                .to_string();
            let line = (e.line, e.value.clone());
            match groups.iter_mut().find(|(g, _)| *g == agent) {
                Some((_, lines)) => lines.push(line),
                None => groups.push((agent, vec![line])),
            }
        } else if matches!(e.kind(), "user" | "assistant") {
            off_path += 1;
            a.record(e);
        } else {
            a.skipped += 1;
        }
    }
    a.skipped += values.len() - all.len();
    for (agent, lines) in agent_files {
        groups.push((agent.clone(), lines.clone()));
    }
    let mut sub: HashMap<String, Vec<Step>> = HashMap::new();
    for (agent, lines) in groups {
        sub.insert(agent, conversation_of_agent(&lines));
    }
    // Each agent's conversation in place of the result of the call it answered, where that
    // call is in the view before it.
    let mut called: HashSet<String> = HashSet::new();
    for step in &mut a.steps {
        if let Step::Message { message, .. } = step {
            called.extend(message.tool_calls.iter().map(|c| c.id.clone()));
        }
        let Step::Message {
            message,
            timestamp_us,
            line,
            lines,
        } = step
        else {
            continue;
        };
        let Some(agent) = message
            .tool_call_id
            .as_ref()
            .filter(|id| called.contains(*id))
            .and_then(|id| a.agents.get(id))
        else {
            continue;
        };
        let Some(steps) = sub.remove(agent) else {
            continue;
        };
        *step = Step::SubAgent {
            agent: agent.clone(),
            steps,
            result: message.clone(),
            timestamp_us: *timestamp_us,
            line: *line,
            lines: std::mem::take(lines),
        };
    }
    let mut warnings: Vec<(usize, String)> = unreadable
        .iter()
        .map(|&l| (l, "not JSON: skipped, as Claude Code skips it".to_string()))
        .collect();
    warnings.append(&mut a.warnings);
    warnings.sort();
    // A kept line whose uuid another line of the file has too is named by its line as well,
    // so that it is kept even where the other is in the view.
    if !a.records.is_empty() {
        let mut count: HashMap<&str, usize> = HashMap::new();
        for e in &all {
            *count.entry(e.uuid()).or_default() += 1;
        }
        for r in &mut a.records {
            if let Step::Record { lines, line, .. } = r
                && let Some(uuid) = lines.first_mut()
                && count.get(uuid.as_str()).is_some_and(|n| *n > 1)
            {
                *uuid = format!("{uuid}#{line}");
            }
        }
    }
    let mut steps = a.steps;
    steps.append(&mut a.records);
    Ok(Transcript::Steps {
        format: Format::ClaudeCode,
        steps,
        skipped: a.skipped + unreadable.len(),
        off_path,
        session,
        project,
        warnings,
        waiting_agents: {
            let mut w: Vec<String> = sub.into_keys().collect();
            w.sort();
            w
        },
    })
}

/// A sub-agent's conversation as the reader builds it: every user and assistant line of its
/// chain (a sub-agent's own sub-agents are not linked further).
fn conversation_of_agent(values: &[(usize, Value)]) -> Vec<Step> {
    let all = claude_code::entries(values);
    let chain = claude_code::sub_agent(&all);
    let mut a = Assembler::default();
    for i in chain {
        let e = &all[i];
        if e.value.get("message").is_some_and(Value::is_object) {
            a.show(e);
        } else {
            a.record(e);
        }
    }
    a.steps
}

/// Checks what the Claude Code reading of `text` promises (the fuzz target's invariants):
/// every message Claude Code's reader shows is in the view, in the reader's order; every user
/// or assistant line of the main conversation is in the view or kept as a record (nothing is
/// dropped silently); no line is in the view twice. `Ok` for a text that is not read as a
/// session at all. The error says which promise broke.
pub fn check_claude_code(text: &str) -> std::result::Result<(), String> {
    if text.trim().is_empty() {
        return Ok(());
    }
    let values = Values::lines(text);
    let Ok(Transcript::Steps { steps, .. }) = values.session(&[]) else {
        return Ok(());
    };
    let all = claude_code::entries(&values.values);
    let chain = claude_code::Session::new(&all).conversation();
    let shown: Vec<&str> = chain
        .iter()
        .map(|&i| &all[i])
        .filter(|e| e.visible())
        .map(|e| e.uuid())
        .collect();
    let mut in_view: Vec<&str> = Vec::new();
    let mut kept: HashSet<&str> = HashSet::new();
    for step in &steps {
        // A compaction replaces what is in view with its summary: what came before is history.
        if matches!(step, Step::Compact { .. }) {
            in_view.clear();
        }
        for l in step.lines() {
            kept.insert(l);
            // A kept line whose uuid another line has too is `uuid#line`.
            if let Some((uuid, _)) = l.rsplit_once('#') {
                kept.insert(uuid);
            }
            if !matches!(step, Step::Record { .. }) && in_view.last() != Some(&l.as_str()) {
                in_view.push(l);
            }
        }
    }
    // The reader's messages are the view, in its order; one tract cannot make a message of is
    // a record.
    let shown_set: HashSet<&str> = shown.iter().copied().collect();
    let in_view_set: HashSet<&str> = in_view.iter().copied().collect();
    let viewed: Vec<&str> = in_view
        .iter()
        .copied()
        .filter(|u| shown_set.contains(u))
        .collect();
    let expected: Vec<&str> = shown
        .iter()
        .copied()
        .filter(|u| in_view_set.contains(u))
        .collect();
    if viewed != expected {
        return Err(format!(
            "the view's order is not the reader's: reader {shown:?}, view {in_view:?}"
        ));
    }
    if let Some(u) = shown.iter().find(|u| !kept.contains(*u)) {
        return Err(format!(
            "line {u}, which the reader shows, is neither in the view nor kept"
        ));
    }
    let mut seen = HashSet::new();
    for u in &in_view {
        if !seen.insert(*u) {
            return Err(format!("line {u} is in the view twice: {in_view:?}"));
        }
    }
    for e in &all {
        if matches!(e.kind(), "user" | "assistant") && !e.sidechain() && !kept.contains(e.uuid()) {
            return Err(format!(
                "line {} ({}) is neither in the view nor kept",
                e.line,
                e.uuid()
            ));
        }
    }
    Ok(())
}

/// The branch a Claude Code session lives on: `claude/<project>/<session>`, the name the
/// Claude Agent SDK session store gives it too, so that `tract import`, `tract capture` and the
/// session store never keep one session twice. Each part is one branch name segment, written
/// as the session store writes it (letters, digits, `-` and `.` kept, any other character as
/// `_` and its UTF-8 bytes in hex).
pub fn claude_code_branch(project: &str, session: &str) -> String {
    fn segment(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '.') {
                out.push(c);
            } else {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("_{b:02x}"));
                }
            }
        }
        out
    }
    format!("claude/{}/{}", segment(project), segment(session))
}

/// The branch a transcript read from `file` goes to by default: a Claude Code session's own
/// ([`claude_code_branch`], its project from its working directory, else from the folder the
/// file is in), else `import/<session id or file name>`, with what a branch name cannot hold
/// replaced by `-`.
pub fn default_branch(t: &Transcript, file: &std::path::Path) -> String {
    if let Transcript::Steps {
        format: Format::ClaudeCode,
        session,
        project,
        ..
    } = t
    {
        let folder = || {
            file.parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
        };
        let stem = || {
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let project = project
            .clone()
            .or_else(folder)
            .unwrap_or_else(|| "-".into());
        let session = session.clone().unwrap_or_else(stem);
        return claude_code_branch(&project, &session);
    }
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match t {
        Transcript::Steps {
            session: Some(s), ..
        } => s.clone(),
        _ => stem,
    };
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("import/{}", clean.trim_matches('.'))
}

/// The agent a Task result names in its text (`agentId: a1b2c3`).
fn agent_in_text(text: &str) -> Option<String> {
    let at = text.find("agentId: ")? + "agentId: ".len();
    let id: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '@' | '.'))
        .collect();
    (!id.is_empty()).then_some(id)
}

/// Reads a transcript file; for a Claude Code session, also the sub-agent files Claude Code
/// keeps beside it (`<session>/subagents/agent-<id>.jsonl`, its internal compaction agents
/// left out).
pub fn parse_file(path: &std::path::Path, format: Option<Format>) -> Result<Transcript> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path.to_path_buf(), e))?;
    parse_session(path, &text, format)
}

/// Reads the text of the transcript file at `path` (its sub-agent files, for a Claude Code
/// session, from beside it): what [`parse_file`] does with the file's text already read (up to
/// its last complete line, for a file being written).
pub fn parse_session(
    path: &std::path::Path,
    text: &str,
    format: Option<Format>,
) -> Result<Transcript> {
    let values = Values::read(text).map_err(|e| e.in_file(path))?;
    let format = values.format(format).map_err(|e| e.in_file(path))?;
    if format != Format::ClaudeCode {
        return values.parse(format, text).map_err(|e| e.in_file(path));
    }
    let values = values.into_session(text);
    let mut agent_files = Vec::new();
    for f in agent_files_of(path) {
        let text = match std::fs::read_to_string(&f) {
            Ok(t) => t,
            // Removed since it was listed: nothing to read.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(f.clone(), e)),
        };
        // A sub-agent file being written: its complete lines.
        let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
        if complete.trim().is_empty() {
            continue;
        }
        let lines = Values::lines(complete).values;
        let agent = f
            .file_stem()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("agent-"))
            .unwrap_or_default()
            .to_string();
        agent_files.push((agent, lines));
    }
    values.session(&agent_files).map_err(|e| e.in_file(path))
}

/// The sub-agent files Claude Code keeps beside a session file
/// (`<session>/subagents/agent-<id>.jsonl`), its internal compaction agents left out, sorted.
pub fn agent_files_of(session: &std::path::Path) -> Vec<std::path::PathBuf> {
    let dir = session.with_extension("").join("subagents");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("agent-")
                    && n.ends_with(".jsonl")
                    && !n.starts_with("agent-acompact-")
            })
        })
        .collect();
    files.sort();
    files
}

/// Adds the content and calls of a later line of the same API response to its message.
fn append_blocks(into: &mut Message, more: Message) {
    let mut parts = match std::mem::replace(&mut into.content, Content::Text(String::new())) {
        Content::Text(t) if t.is_empty() => Vec::new(),
        Content::Text(t) => vec![ContentPart::Text(t)],
        Content::Parts(p) => p,
    };
    match more.content {
        Content::Text(t) if t.is_empty() => {}
        Content::Text(t) => parts.push(ContentPart::Text(t)),
        Content::Parts(p) => parts.extend(p),
    }
    into.content = match parts.as_slice() {
        [ContentPart::Text(t)] => Content::Text(t.clone()),
        _ => Content::Parts(parts),
    };
    into.tool_calls.extend(more.tool_calls);
}

/// Microseconds since the Unix epoch of an RFC 3339 UTC time such as
/// `2026-01-20T11:57:17.716Z` (an offset is applied).
fn parse_rfc3339_us(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    // ASCII only: the fields below are sliced by byte position.
    if !t.is_ascii()
        || b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
    {
        return None;
    }
    let num = |s: &str| s.parse::<i64>().ok();
    let (y, mo, d) = (num(&t[0..4])?, num(&t[5..7])?, num(&t[8..10])?);
    let (h, mi, s) = (num(&t[11..13])?, num(&t[14..16])?, num(&t[17..19])?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &t[19..];
    let mut micros = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let mut scaled = frac[..digits.min(6)].to_string();
        while scaled.len() < 6 {
            scaled.push('0');
        }
        micros = num(&scaled)?;
        rest = &frac[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(&rest[..1], "+" | "-") && &rest[3..4] == ":" => {
            let sign = if &rest[..1] == "-" { -1 } else { 1 };
            sign * (num(&rest[1..3])? * 3600 + num(&rest[4..6])? * 60)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset_s;
    u64::try_from(secs * 1_000_000 + micros).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_to_microseconds() {
        assert_eq!(parse_rfc3339_us("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_us("2026-01-20T11:57:17.716Z"),
            Some(1_768_910_237_716_000)
        );
        assert_eq!(
            parse_rfc3339_us("2026-01-20T12:57:17.716+01:00"),
            Some(1_768_910_237_716_000)
        );
        for bad in [
            "",
            "2026-01-20",
            "2026-13-20T00:00:00Z",
            "2026-01-20T00:00:00",
            "x026-01-20T00:00:00Z",
            "2026-01-2\u{e9}T00:00:00Z",
            "2026-01-20T00:00:00.\u{e9}Z",
        ] {
            assert_eq!(parse_rfc3339_us(bad), None, "{bad}");
        }
    }
}
