//! Claude Code session files made into a transcript's steps: API responses joined,
//! compactions, sub-agents (in the file or in the files beside it), the lines the reader
//! leaves out kept as records; the branch a session lives on; the check of what the reading
//! promises.
//!
//! Which lines make the conversation, and in which order, is [`crate::formats::claude_code`]'s
//! to say: a session is read there whole ([`claude_code::read`]), a sub-agent's chain too
//! ([`claude_code::sub_agent`]), then assembled here in that order; nothing there calls back.

use crate::agents::AgentSession;
use crate::error::{Error, Result};
use crate::formats::claude_code;
use crate::formats::transcript::anthropic::anthropic_message;
use crate::formats::transcript::rfc3339::parse_rfc3339_us;
use crate::formats::transcript::steps::{
    Format, Step, Transcript, bad, name_result, remember_calls,
};
use crate::formats::transcript::values::Values;
use crate::object::{Content, ContentPart, Message, Role};
use crate::usage::Usage;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The record kind of a Claude Code line the reader leaves out of the conversation (a line off
/// its path, a meta line): kept in history, verbatim, never in the view.
pub const CLAUDE_CODE_LINE_RECORD: &str = "claude_code.line";

/// What a Claude Code file without a single conversation line is refused with.
pub const NO_CLAUDE_CODE_LINE: &str = "no Claude Code transcript line";

/// A sub-agent's id and the JSON values of its lines, each with its line.
pub(super) type AgentLines = (String, Vec<(usize, Value)>);

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
    /// The lines that carry what their response cost ([`claude_code::paid_lines`]).
    paid: HashSet<usize>,
    skipped: usize,
    warnings: Vec<(usize, String)>,
}

impl Assembler {
    /// Keeps a line the view leaves out as a record, with what its response cost where the
    /// line carries that (a response off the conversation's path was paid for too).
    fn record(&mut self, e: &claude_code::Entry<'_>) {
        let usage = self.usage_of(e);
        self.keep(e, usage);
    }

    /// Keeps a line as a record carrying `usage`.
    fn keep(&mut self, e: &claude_code::Entry<'_>, usage: Option<Usage>) {
        self.records.push(Step::Record {
            kind: CLAUDE_CODE_LINE_RECORD.into(),
            data: e.value.to_string(),
            lines: vec![e.uuid().to_string()],
            timestamp_us: timestamp_of(e.value),
            line: e.line,
            usage,
        });
    }

    /// What the response `e` begins cost, when it is a line that carries that: its
    /// `message.usage` with the model, request id and time the line gives. Usage that does not
    /// read is said and left out (the line is kept as it is).
    fn usage_of(&mut self, e: &claude_code::Entry<'_>) -> Option<Usage> {
        if !self.paid.contains(&e.line) {
            return None;
        }
        let message = e.value.get("message");
        let raw = message.and_then(|m| m.get("usage"))?;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        match Usage::from_json(raw) {
            Ok(mut u) => {
                u.model = text(message.and_then(|m| m.get("model"))).or(u.model);
                u.request_id = text(e.value.get("requestId")).or(u.request_id);
                u.time = text(e.value.get("timestamp")).or(u.time);
                Some(u)
            }
            Err(err) => {
                self.warnings
                    .push((e.line, format!("usage left out: {err}")));
                None
            }
        }
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
        // The response's cost goes on its first message, the assistant's.
        let mut usage = self.usage_of(e);
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
            let cost = if m.role == Role::Assistant {
                usage.take()
            } else {
                None
            };
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
                add_usage(prev, cost);
                if lines.last() != Some(&uuid) {
                    lines.push(uuid.clone());
                }
                continue;
            }
            add_usage(&mut m, cost);
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
            // message (which carries what the response cost).
            self.keep(e, None);
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
/// (still running) waits for it. A file caught while the reader passes over its newest message
/// lines for an older leaf says so (`unsettled`): a capture waits for the line that settles it.
fn claude_code(
    values: &[(usize, Value)],
    agent_files: &[AgentLines],
    unreadable: &[usize],
) -> Result<Transcript> {
    let reading = claude_code::read(values);
    let all = &reading.entries;
    if all.is_empty() {
        return Err(bad(
            values.first().map_or(1, |(l, _)| *l),
            format!(
                "{NO_CLAUDE_CODE_LINE} (a user, assistant, progress, system or attachment line \
                 with a uuid)"
            ),
        ));
    }
    // The conversation the reader shows, after the parts its compact boundaries closed.
    let parts = &reading.parts;
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
    let mut a = Assembler {
        paid: claude_code::paid_lines(all, |e| !e.sidechain()),
        ..Assembler::default()
    };
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
        a.part(all, part, k > first_shown);
    }
    a.pending_compact = None;
    // The rest: sub-agents' lines to their conversations, other lines off the path kept as
    // records or counted.
    let mut groups: Vec<AgentLines> = Vec::new();
    let on_path = &reading.on_path;
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
        for e in all {
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
        session: reading.session.map(str::to_string),
        project: reading.project,
        warnings,
        waiting_agents: {
            let mut w: Vec<String> = sub.into_keys().collect();
            w.sort();
            w
        },
        unsettled: reading.unsettled,
        parent: None,
        agent: Some(Box::new(AgentSession {
            agent: Format::ClaudeCode.name().into(),
            // Claude Code updates between turns of one session: the newest line says which
            // version writes it now.
            version: values
                .iter()
                .rev()
                .find_map(|(_, v)| v.get("version").and_then(Value::as_str))
                .map(str::to_string),
            // A Claude Code session names no start of its own (each line has its time), so
            // none is kept, and nothing is refused for one.
            started: None,
        })),
    })
}

/// The Claude Code session `values` hold (read by [`Values::lines`]), with its sub-agents'
/// files ([`read_agent_files`]).
pub(super) fn read_session(values: &Values, agent_files: &[AgentLines]) -> Result<Transcript> {
    let unreadable: Vec<usize> = values.unreadable.iter().map(|(l, _)| *l).collect();
    claude_code(&values.values, agent_files, &unreadable)
}

/// The sub-agent files beside the session file at `path` ([`agent_files_of`]): each agent's id
/// and the lines of its file, up to its last complete line (a file being written). A file
/// removed since it was listed, or without a complete line yet, is left out.
pub(super) fn read_agent_files(path: &Path) -> Result<Vec<AgentLines>> {
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
    Ok(agent_files)
}

/// A sub-agent's conversation as the reader builds it: every user and assistant line of its
/// chain (a sub-agent's own sub-agents are not linked further).
fn conversation_of_agent(values: &[(usize, Value)]) -> Vec<Step> {
    let all = claude_code::entries(values);
    let chain = claude_code::sub_agent(&all);
    let mut a = Assembler {
        paid: claude_code::paid_lines(&all, |_| true),
        ..Assembler::default()
    };
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
    let Ok(Transcript::Steps { steps, .. }) = read_session(&values, &[]) else {
        return Ok(());
    };
    let reading = claude_code::read(&values.values);
    let all = &reading.entries;
    let shown: Vec<&str> = reading
        .conversation()
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
    for e in all {
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

/// The agent a Task result names in its text (`agentId: a1b2c3`).
fn agent_in_text(text: &str) -> Option<String> {
    let at = text.find("agentId: ")? + "agentId: ".len();
    let id: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '@' | '.'))
        .collect();
    (!id.is_empty()).then_some(id)
}

/// The sub-agent files Claude Code keeps beside a session file
/// (`<session>/subagents/agent-<id>.jsonl`), its internal compaction agents left out, sorted.
pub fn agent_files_of(session: &Path) -> Vec<PathBuf> {
    let dir = session.with_extension("").join("subagents");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
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

/// Puts `usage` on `m`, added to what it carries already (two requests whose lines came
/// together in one message).
fn add_usage(m: &mut Message, usage: Option<Usage>) {
    let Some(usage) = usage else {
        return;
    };
    let total = match Usage::of(m) {
        Ok(Some(mut had)) => {
            had.absorb(&usage);
            had
        }
        _ => usage,
    };
    // An assistant's message: it carries usage.
    total.put_on(m).ok();
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
