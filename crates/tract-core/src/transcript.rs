//! Transcripts other tools wrote, read as tract messages: Claude Code session JSONL, OpenAI
//! Chat messages or request bodies, OpenAI Responses items or request bodies, Anthropic
//! Messages request bodies, and tract's own JSONL (messages, or commits as `tract export`
//! writes them).
//!
//! Parsing is pure and complete before anything is written: a bad line is an error naming its
//! line, and nothing of the file is committed. Provider-native content (thinking blocks with
//! their signatures, images, documents) is kept verbatim as raw parts.

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId};
use crate::json::{message_from_json, message_to_json};
use crate::object::{Commit, Content, ContentPart, Message, Op, Role, ToolCall};
use crate::responses;
use serde_json::{Map, Value};
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
    },
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
/// values, each at the document's first line), or JSONL.
fn values(text: &str) -> Result<Vec<(usize, Value)>> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(bad(1, "the file is empty"));
    }
    let first_line = text.len() - trimmed.len();
    let first_line = text[..first_line].matches('\n').count() + 1;
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return Ok(match v {
            Value::Array(list) => list.into_iter().map(|v| (first_line, v)).collect(),
            v => vec![(first_line, v)],
        });
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v = serde_json::from_str::<Value>(line)
            .map_err(|e| bad(i + 1, format!("malformed JSON: {e}")))?;
        out.push((i + 1, v));
    }
    Ok(out)
}

/// Reads a transcript; `format` `None` detects it.
pub fn parse(text: &str, format: Option<Format>) -> Result<Transcript> {
    let values = values(text)?;
    let format = match format {
        Some(f) => f,
        None => detect(&values)?,
    };
    parse_values(values, format)
}

fn parse_values(values: Vec<(usize, Value)>, format: Format) -> Result<Transcript> {
    let steps = |steps| Transcript::Steps {
        format,
        steps,
        skipped: 0,
        off_path: 0,
        session: None,
    };
    match format {
        Format::ClaudeCode => claude_code(&values, &[]),
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

/// One conversation of a Claude Code file (the main one, or a sub-agent's).
struct Conversation {
    steps: Vec<Step>,
    skipped: usize,
    off_path: usize,
    session: Option<String>,
    /// Task calls whose result names the sub-agent that answered them: call id to agent id.
    agents: HashMap<String, String>,
}

/// A Claude Code session: the conversation path that ends at the file's last message (the
/// `parentUuid` chain, followed across compact boundaries by their `logicalParentUuid`), one
/// assistant message per API response (its content blocks come on several lines), tool
/// results as tool messages, thinking blocks verbatim, timestamps kept, compact boundaries as
/// compressions. Lines without a message (snapshots, progress, summaries) are counted.
///
/// Sub-agents (`isSidechain` lines, in this file or in `agent_files`, one per agent id) become
/// [`Step::SubAgent`] in place of the result of the Task call they answered (the result names
/// the agent: `toolUseResult.agentId`, or `agentId: ID` in its text).
fn claude_code(
    values: &[(usize, Value)],
    agent_files: &[(String, Vec<(usize, Value)>)],
) -> Result<Transcript> {
    let is_side = |v: &Value| v.get("isSidechain").and_then(Value::as_bool) == Some(true);
    let main: Vec<&(usize, Value)> = values.iter().filter(|(_, v)| !is_side(v)).collect();
    let mut groups: Vec<(String, Vec<&(usize, Value)>)> = Vec::new();
    for lv in values.iter().filter(|(_, v)| is_side(v)) {
        let agent =
            lv.1.get("agentId")
                .and_then(Value::as_str)
                .unwrap_or("sidechain")
                .to_string();
        match groups.iter_mut().find(|(a, _)| *a == agent) {
            Some((_, lines)) => lines.push(lv),
            None => groups.push((agent, vec![lv])),
        }
    }
    for (agent, lines) in agent_files {
        groups.push((agent.clone(), lines.iter().collect()));
    }
    let mut conversation = conversation(&main, true)?;
    let mut sub: HashMap<String, Vec<Step>> = HashMap::new();
    for (agent, lines) in groups {
        let c = conversation_of_agent(&lines).map_err(|e| match e {
            Error::InvalidTranscript { line, reason, .. } => {
                bad(line, format!("agent {agent}: {reason}"))
            }
            other => other,
        })?;
        sub.insert(agent, c);
    }
    // Each agent's conversation in place of the result of the call it answered.
    let mut unlinked = sub.len();
    for step in &mut conversation.steps {
        let Step::Message {
            message,
            timestamp_us,
            line,
        } = step
        else {
            continue;
        };
        let Some(agent) = message
            .tool_call_id
            .as_ref()
            .and_then(|id| conversation.agents.get(id))
        else {
            continue;
        };
        let Some(steps) = sub.remove(agent) else {
            continue;
        };
        unlinked -= 1;
        *step = Step::SubAgent {
            agent: agent.clone(),
            steps,
            result: message.clone(),
            timestamp_us: *timestamp_us,
            line: *line,
        };
    }
    if unlinked > 0 {
        let mut names: Vec<&String> = sub.keys().collect();
        names.sort();
        return Err(bad(
            1,
            format!(
                "sub-agent conversations that no Task result names: {}",
                names
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(Transcript::Steps {
        format: Format::ClaudeCode,
        steps: conversation.steps,
        skipped: conversation.skipped,
        off_path: conversation.off_path,
        session: conversation.session,
    })
}

/// A sub-agent's conversation: its messages only (a sub-agent's own sub-agents are not
/// linked further).
fn conversation_of_agent(lines: &[&(usize, Value)]) -> Result<Vec<Step>> {
    let c = conversation(lines, false)?;
    Ok(c.steps)
}

/// The steps of the path that ends at the last message of `lines`. In the main conversation a
/// parent that is not there is an error; a sub-agent's first message may name a parent in the
/// main conversation.
fn conversation(lines: &[&(usize, Value)], main: bool) -> Result<Conversation> {
    struct Line<'a> {
        line: usize,
        v: &'a Value,
        parent: Option<&'a str>,
    }
    let mut by_uuid: HashMap<&str, Line<'_>> = HashMap::new();
    let mut last: Option<&str> = None;
    let mut skipped = 0;
    let mut session = None;
    for (line, v) in lines.iter().map(|lv| (&lv.0, &lv.1)) {
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        let uuid = v.get("uuid").and_then(Value::as_str);
        let is_message = matches!(kind, "user" | "assistant")
            || (kind == "system"
                && v.get("subtype").and_then(Value::as_str) == Some("compact_boundary"));
        match uuid {
            Some(uuid) if is_message => {
                if session.is_none() {
                    session = v
                        .get("sessionId")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
                let parent = match v.get("parentUuid") {
                    Some(Value::String(p)) => Some(p.as_str()),
                    None | Some(Value::Null) => v.get("logicalParentUuid").and_then(Value::as_str),
                    Some(_) => return Err(bad(*line, "'parentUuid' must be a string or null")),
                };
                by_uuid.insert(
                    uuid,
                    Line {
                        line: *line,
                        v,
                        parent,
                    },
                );
                last = Some(uuid);
            }
            _ if is_message => return Err(bad(*line, "a message line needs a 'uuid'")),
            _ => skipped += 1,
        }
    }
    // The path to the last message, oldest first.
    let mut path = Vec::new();
    let mut cursor = last;
    while let Some(uuid) = cursor {
        let Some(l) = by_uuid.get(uuid) else {
            if !main {
                break;
            }
            let child = path.last().map_or(0, |l: &&Line<'_>| l.line);
            return Err(bad(
                child,
                format!("the parent {uuid} of this line is not in the file (the chain is broken)"),
            ));
        };
        if path.len() > by_uuid.len() {
            return Err(bad(l.line, "the parentUuid chain loops"));
        }
        path.push(l);
        cursor = l.parent;
    }
    path.reverse();
    let off_path = by_uuid.len() - path.len();

    let mut steps: Vec<Step> = Vec::new();
    let mut names: HashMap<String, String> = HashMap::new();
    let mut agents: HashMap<String, String> = HashMap::new();
    // The API message id of the assistant message being assembled from its lines.
    let mut open_response: Option<String> = None;
    let mut pending_compact: Option<(usize, Option<u64>, BTreeMap<String, String>)> = None;
    for l in path {
        let v = l.v;
        let line = l.line;
        let timestamp_us = match v.get("timestamp") {
            Some(Value::String(t)) => {
                Some(parse_rfc3339_us(t).ok_or_else(|| bad(line, format!("bad timestamp '{t}'")))?)
            }
            _ => None,
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "system" {
            let mut params = BTreeMap::new();
            if let Some(meta) = v.get("compactMetadata").and_then(Value::as_object) {
                for (k, x) in meta {
                    params.insert(k.clone(), x.to_string());
                }
            }
            pending_compact = Some((line, timestamp_us, params));
            open_response = None;
            continue;
        }
        let Some(message) = v.get("message") else {
            return Err(bad(line, "a user or assistant line needs a 'message'"));
        };
        if let Some((cline, cts, params)) = pending_compact.take() {
            // The first message after a boundary is the summary the conversation went on
            // from.
            let summary = anthropic_message(message, &names)
                .map_err(|r| bad(line, r))?
                .into_iter()
                .next()
                .ok_or_else(|| bad(line, "a compact boundary without its summary"))?;
            steps.push(Step::Compact {
                summary,
                timestamp_us: cts.or(timestamp_us),
                params,
                line: cline,
            });
            continue;
        }
        let response_id = message
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let continues =
            kind == "assistant" && response_id.is_some() && response_id == open_response;
        let parsed = anthropic_message(message, &names).map_err(|r| bad(line, r))?;
        let named_agent = v
            .get("toolUseResult")
            .and_then(|r| r.get("agentId"))
            .and_then(Value::as_str)
            .map(str::to_string);
        for mut m in parsed {
            remember_calls(&mut names, &m);
            name_result(&names, &mut m);
            if let Some(call) = m.tool_call_id.clone()
                && let Some(agent) = named_agent
                    .clone()
                    .or_else(|| agent_in_text(&m.content.text()))
            {
                agents.insert(call, agent);
            }
            if continues && let Some(Step::Message { message: prev, .. }) = steps.last_mut() {
                append_blocks(prev, m);
                // The joined message must hold together (one call id once).
                prev.validate().map_err(|e| bad(line, reason_of(e)))?;
                continue;
            }
            steps.push(Step::Message {
                message: m,
                timestamp_us,
                line,
            });
        }
        open_response = if kind == "assistant" {
            response_id
        } else {
            None
        };
    }
    if let Some((line, ..)) = pending_compact {
        return Err(bad(line, "a compact boundary without its summary"));
    }
    Ok(Conversation {
        steps,
        skipped,
        off_path,
        session,
        agents,
    })
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
    let values = values(&text).map_err(|e| e.in_file(path))?;
    let format = match format {
        Some(f) => f,
        None => detect(&values).map_err(|e| e.in_file(path))?,
    };
    if format != Format::ClaudeCode {
        return parse_values(values, format).map_err(|e| e.in_file(path));
    }
    let dir = path.with_extension("").join("subagents");
    let mut agent_files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
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
        for f in files {
            let text = std::fs::read_to_string(&f).map_err(|e| Error::io(f.clone(), e))?;
            let lines = crate::transcript::values(&text).map_err(|e| e.in_file(&f))?;
            let agent = f
                .file_stem()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("agent-"))
                .unwrap_or_default()
                .to_string();
            agent_files.push((agent, lines));
        }
    }
    claude_code(&values, &agent_files).map_err(|e| e.in_file(path))
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
