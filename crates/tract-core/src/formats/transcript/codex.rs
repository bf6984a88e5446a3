//! OpenAI Codex CLI rollout files (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`), read by
//! Codex's own rules (its `codex-rs` reader: `RolloutRecorder::load_rollout_items` and the
//! history a resumed session rebuilds, `reconstruct_history_from_rollout`).
//!
//! Each line is `{"timestamp", "type", "payload"}`. The first `session_meta` names the thread
//! (a file without one is refused, as Codex refuses it). `response_item` lines are the model's
//! history: OpenAI Responses items, read as tract reads them ([`crate::formats::responses`]),
//! reasoning with its `encrypted_content` kept verbatim; a `system` message and a ghost
//! snapshot never reach the model and are records. A `compacted` line with a
//! `replacement_history` replaces everything before it: a compression of the view whose
//! summary is the first replacement item, the other items appended after it (a `compacted`
//! line without one is rebuilt as Codex rebuilds it: the recent user messages, then the
//! summary). `thread_rolled_back` drops the last N user turns from the view: those items become
//! records, so history keeps them. `event_msg`, `turn_context` and copied `session_meta` lines
//! are records; a `token_count` whose totals moved is a record carrying the usage of the answer
//! before it (`last_token_usage`, cached tokens taken out of the input as for OpenAI), so what
//! each answer cost is counted once, whenever its count is written. Lines that are not
//! JSON, or of a type Codex does not know, are skipped and counted, as Codex skips them.
//!
//! Every step is keyed by the lines it holds (as a Claude Code session's are): a line's id is the
//! BLAKE3 of its JSON (with a count for a line repeated in one file), so a fork, which repeats
//! its parent's lines, holds the same ids as its parent up to the fork point, and an import of
//! a file that grew adds only what is new. The oldest files (before Codex wrote envelopes: a
//! first line `{"id", "timestamp", ...}`, then bare items) read the same way, without events.

use crate::agents::AgentSession;
use crate::error::Result;
use crate::formats::responses::message_from_item;
use crate::formats::transcript::rfc3339;
use crate::formats::transcript::steps::{Format, Step, Transcript, bad};
use crate::formats::transcript::values::Values;
use crate::object::{Message, Role};
use crate::usage::Usage;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// The record kind holding a rollout line the view leaves out (an event, the turn's settings,
/// an item Codex does not send), verbatim.
pub const CODEX_LINE_RECORD: &str = "codex.line";

/// The top-level line types Codex reads (others are skipped, as Codex skips them).
const LINE_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
    "world_state",
    "security_risk_score",
];

/// Where each contextual user message Codex writes starts and ends (never a user's turn).
const CONTEXT_MARKERS: &[(&str, &str)] = &[
    ("# agents.md instructions for ", "</instructions>"),
    ("<environment_context>", "</environment_context>"),
    ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
    ("<user_instructions>", "</user_instructions>"),
];

/// Developer messages Codex writes as context, which a rollback takes with the turn after them.
const CONTEXT_DEVELOPER: &[&str] = &[
    "<permissions instructions>",
    "<model_switch>",
    "<collaboration_mode>",
    "<realtime_conversation>",
    "<personality_spec>",
];

/// What a summary from a compaction Codex did itself starts with.
const SUMMARY_PREFIX: &str = "Another language model started to solve this problem";

/// How many tokens of recent user messages a rebuilt (legacy) compaction keeps.
const COMPACT_USER_TOKENS: usize = 20_000;

/// The key Codex's project folder goes by in a branch name: the working directory encoded as
/// Claude Code names its project folders ([`crate::formats::claude_code::project_key`]).
pub fn codex_project_key(cwd: &str) -> String {
    crate::formats::claude_code::project_key(cwd)
}

/// The branch a Codex thread goes to: `codex/<project key>/<thread id>`.
pub fn codex_branch(project: &str, thread: &str) -> String {
    let clean: String = thread
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("codex/{project}/{clean}")
}

/// Whether `values` are a Codex rollout: a `session_meta` line, or the envelopes Codex writes.
pub(super) fn is_rollout(values: &[(usize, Value)]) -> bool {
    values.iter().take(16).any(|(_, v)| {
        let kind = v.get("type").and_then(Value::as_str);
        v.get("payload").is_some()
            && v.get("timestamp").is_some()
            && matches!(
                kind,
                Some("session_meta" | "response_item" | "event_msg" | "turn_context")
            )
    }) || values.first().is_some_and(|(_, v)| is_pre_envelope_meta(v))
}

/// The first line of a rollout from before Codex wrote envelopes: `{"id", "timestamp", ...}`.
fn is_pre_envelope_meta(v: &Value) -> bool {
    v.get("type").is_none()
        && v.get("id").and_then(Value::as_str).is_some()
        && v.get("timestamp").and_then(Value::as_str).is_some()
        && (v.get("instructions").is_some() || v.get("git").is_some())
}

/// One step of the view with what a rollback needs of it.
struct Kept {
    step: Step,
    /// A user's turn starts here (a user message that is not context, or a message from
    /// another agent).
    boundary: bool,
    /// Context Codex writes, which a rollback takes with the turn after it.
    context: bool,
    /// The item verbatim, kept as a record when a rollback takes it out of view.
    data: String,
}

/// The reading of one rollout.
#[derive(Default)]
struct Reader {
    /// The view's steps in file order (those a rollback took out become records in place).
    kept: Vec<Kept>,
    /// Which of `kept` are in Codex's history now, in order.
    history: Vec<usize>,
    /// Lines kept out of view, each a record, in file order, with their place among `kept`.
    records: Vec<(usize, Step)>,
    /// Lines skipped (not JSON, no timestamp, a type Codex does not know).
    skipped: usize,
    warnings: Vec<(usize, String)>,
    session: Option<String>,
    cwd: Option<String>,
    parent: Option<String>,
    /// The thread's `session_meta`'s `cli_version` and `timestamp`.
    version: Option<String>,
    started: Option<String>,
    model: Option<String>,
    /// The last totals a `token_count` reported.
    totals: Option<Value>,
    /// How many times each line (by its id) was seen, for the ids of repeated lines.
    seen: HashMap<String, usize>,
    /// Each call's tool, by call id: a result is named after its call.
    calls: HashMap<String, String>,
}

/// Reads a rollout file's values (JSONL; `text` is the whole file).
pub(super) fn read_rollout(values: &Values) -> Result<Transcript> {
    let mut r = Reader {
        skipped: values.unreadable.len(),
        ..Reader::default()
    };
    for (line, reason) in &values.unreadable {
        r.warnings.push((
            *line,
            format!("not JSON ({reason}); skipped, as Codex skips it"),
        ));
    }
    let pre_envelope = values
        .values
        .first()
        .is_some_and(|(_, v)| is_pre_envelope_meta(v));
    for (line, v) in &values.values {
        let id = r.line_id(v);
        if pre_envelope {
            r.read_pre_envelope(*line, v, id)?;
        } else {
            r.read_line(*line, v, id)?;
        }
    }
    let Some(session) = r.session.clone() else {
        return Err(bad(
            values.values.first().map_or(1, |(l, _)| *l),
            "session_meta is missing: Codex refuses a rollout without one",
        ));
    };
    // Records go where they were read, among the view's steps.
    let mut steps = Vec::with_capacity(r.kept.len() + r.records.len());
    let mut records = r.records.into_iter().peekable();
    for (k, kept) in r.kept.into_iter().enumerate() {
        while let Some((_, s)) = records.next_if(|(at, _)| *at <= k) {
            steps.push(s);
        }
        steps.push(kept.step);
    }
    steps.extend(records.map(|(_, s)| s));
    Ok(Transcript::Steps {
        format: Format::Codex,
        steps,
        skipped: r.skipped,
        off_path: 0,
        session: Some(session),
        project: Some(codex_project_key(r.cwd.as_deref().unwrap_or("unknown"))),
        warnings: r.warnings,
        waiting_agents: Vec::new(),
        unsettled: None,
        parent: r.parent,
        agent: Some(Box::new(AgentSession {
            agent: Format::Codex.name().into(),
            version: r.version,
            started: r.started,
        })),
    })
}

impl Reader {
    /// The id of a line: the BLAKE3 of its JSON, counted when repeated.
    fn line_id(&mut self, v: &Value) -> String {
        let hash = blake3::hash(v.to_string().as_bytes()).to_hex();
        let id = format!("cx{}", &hash[..24]);
        let n = self.seen.entry(id.clone()).or_default();
        *n += 1;
        match *n {
            1 => id,
            n => format!("{id}.{n}"),
        }
    }

    /// A line kept out of view, verbatim.
    fn record(&mut self, line: usize, v: &Value, id: String, timestamp_us: Option<u64>) {
        self.records.push((
            self.kept.len(),
            Step::Record {
                kind: CODEX_LINE_RECORD.into(),
                data: v.to_string(),
                lines: vec![id],
                timestamp_us,
                line,
                usage: None,
            },
        ));
    }

    fn read_line(&mut self, line: usize, v: &Value, id: String) -> Result<()> {
        let kind = v.get("type").and_then(Value::as_str);
        let timestamp = v.get("timestamp").and_then(Value::as_str);
        let payload = v.get("payload");
        let (Some(kind), Some(timestamp), Some(payload)) = (kind, timestamp, payload) else {
            self.skip(line, "not a rollout line (no timestamp, type or payload)");
            return Ok(());
        };
        if !LINE_TYPES.contains(&kind) {
            self.skip(
                line,
                &format!("a line of type '{kind}', which Codex does not read"),
            );
            return Ok(());
        }
        let at = rfc3339::parse_rfc3339_us(timestamp);
        match kind {
            "session_meta" => {
                if self.session.is_none() {
                    let text = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_string);
                    self.session = text("id");
                    self.cwd = text("cwd");
                    self.parent = text("forked_from_id");
                    self.version = text("cli_version");
                    self.started = text("timestamp");
                }
                self.record(line, v, id, at);
            }
            "response_item" => self.item(line, payload, v, id, at)?,
            "compacted" => self.compacted(line, payload, id, at)?,
            "turn_context" => {
                if let Some(m) = payload.get("model").and_then(Value::as_str) {
                    self.model = Some(m.to_string());
                }
                self.record(line, v, id, at);
            }
            "event_msg" => match payload.get("type").and_then(Value::as_str) {
                Some("token_count") => {
                    let usage = self.usage(payload);
                    self.record(line, v, id, at);
                    if let Some((_, Step::Record { usage: u, .. })) = self.records.last_mut() {
                        *u = usage;
                    }
                }
                Some("thread_rolled_back") => {
                    let n = payload
                        .get("num_turns")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                    self.roll_back(line, n as usize);
                    self.record(line, v, id, at);
                }
                _ => self.record(line, v, id, at),
            },
            _ => self.record(line, v, id, at),
        }
        Ok(())
    }

    /// A line of a rollout from before envelopes: the first is the session, then items.
    fn read_pre_envelope(&mut self, line: usize, v: &Value, id: String) -> Result<()> {
        if self.session.is_none() && is_pre_envelope_meta(v) {
            self.session = v.get("id").and_then(Value::as_str).map(str::to_string);
            self.started = v
                .get("timestamp")
                .and_then(Value::as_str)
                .map(str::to_string);
            self.record(line, v, id, None);
            return Ok(());
        }
        if v.get("record_type").is_some() {
            self.skip(line, "a state marker, which Codex does not read");
            return Ok(());
        }
        self.item(line, v, v, id, None)
    }

    fn skip(&mut self, line: usize, why: &str) {
        self.skipped += 1;
        self.warnings
            .push((line, format!("{why}; skipped, as Codex skips it")));
    }

    /// Line `line` (its value `v`) kept as a record, out of view, for `why`, and said.
    fn kept_out(&mut self, line: usize, why: String, v: &Value, id: String, at: Option<u64>) {
        self.warnings
            .push((line, format!("{why}; kept as a record")));
        self.record(line, v, id, at);
    }

    /// A `response_item`: in the model's history, or a record when Codex never sends it.
    fn item(
        &mut self,
        line: usize,
        item: &Value,
        whole: &Value,
        id: String,
        at: Option<u64>,
    ) -> Result<()> {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        let role = item.get("role").and_then(Value::as_str);
        let unsent =
            matches!(kind, "ghost_snapshot" | "") || kind == "message" && role == Some("system");
        if unsent {
            self.record(line, whole, id, at);
            return Ok(());
        }
        match self.message(line, item) {
            Ok(m) => {
                let k = self.keep((line, item, m), vec![id], at, whole.to_string());
                self.history.push(k);
            }
            // Codex skips an item it cannot read; it is kept here, out of view.
            Err(e) => {
                let why = format!(
                    "an item that does not read as a message ({})",
                    crate::formats::transcript::steps::reason_of(e)
                );
                self.kept_out(line, why, whole, id, at);
            }
        }
        Ok(())
    }

    /// `message`, read from `item`, as a step of the view; returns its place among the kept
    /// steps.
    fn keep(
        &mut self,
        (line, item, message): (usize, &Value, Message),
        lines: Vec<String>,
        timestamp_us: Option<u64>,
        data: String,
    ) -> usize {
        let (boundary, context) = turn_of(item);
        self.kept.push(Kept {
            step: Step::Message {
                message,
                timestamp_us,
                line,
                lines,
            },
            boundary,
            context,
            data,
        });
        self.kept.len() - 1
    }

    /// An item as a message, a tool result named after its call.
    fn message(&mut self, line: usize, item: &Value) -> Result<Message> {
        let m = message_from_item(item, |id| self.calls.get(id).cloned())
            .map_err(|e| bad(line, crate::formats::transcript::steps::reason_of(e)))?;
        for c in &m.tool_calls {
            self.calls.insert(c.id.clone(), c.name.clone());
        }
        Ok(m)
    }

    /// A `compacted` line: the history from here is its replacement (or, without one, what
    /// Codex rebuilds from the user messages and the summary).
    fn compacted(
        &mut self,
        line: usize,
        payload: &Value,
        id: String,
        at: Option<u64>,
    ) -> Result<()> {
        let items: Vec<Value> = match payload.get("replacement_history").and_then(Value::as_array) {
            Some(items) => items
                .iter()
                .filter(|i| {
                    let kind = i.get("type").and_then(Value::as_str).unwrap_or_default();
                    kind != "ghost_snapshot"
                        && !(kind == "message"
                            && i.get("role").and_then(Value::as_str) == Some("system"))
                })
                .cloned()
                .collect(),
            None => self.rebuilt(
                payload
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
        };
        let Some((first, rest)) = items.split_first() else {
            let why = "a compaction that replaced the history with nothing".into();
            self.kept_out(line, why, payload, id, at);
            return Ok(());
        };
        // Codex skips a compaction whose items do not read: so does the view, which keeps the
        // line as a record.
        let calls = self.calls.clone();
        let read: Result<Vec<Message>> = items.iter().map(|i| self.message(line, i)).collect();
        let mut messages = match read {
            Ok(messages) => messages.into_iter(),
            Err(e) => {
                self.calls = calls;
                let why = format!(
                    "a compaction whose items do not read ({})",
                    crate::formats::transcript::steps::reason_of(e)
                );
                self.kept_out(line, why, payload, id, at);
                return Ok(());
            }
        };
        let Some(summary) = messages.next() else {
            return Ok(());
        };
        let (boundary, context) = turn_of(first);
        let mut params = BTreeMap::new();
        params.insert(
            "codex_compaction".to_string(),
            match payload.get("replacement_history") {
                Some(_) => "replacement_history".into(),
                None => "rebuilt".into(),
            },
        );
        self.kept.push(Kept {
            step: Step::Compact {
                summary,
                timestamp_us: at,
                params,
                line,
                lines: vec![id.clone()],
            },
            boundary,
            context,
            data: first.to_string(),
        });
        self.history = vec![self.kept.len() - 1];
        for (n, (item, message)) in rest.iter().zip(messages).enumerate() {
            let lines = vec![format!("{id}/{}", n + 1)];
            let k = self.keep((line, item, message), lines, at, item.to_string());
            self.history.push(k);
        }
        Ok(())
    }

    /// The history a compaction without a replacement leaves, as Codex rebuilds it: its recent
    /// user messages (up to 20,000 tokens, newest first, put back in order), then the summary.
    fn rebuilt(&self, summary: &str) -> Vec<Value> {
        let mut users: Vec<String> = Vec::new();
        let mut budget = COMPACT_USER_TOKENS * 4;
        for &k in self.history.iter().rev() {
            let kept = &self.kept[k];
            let Step::Message { message, .. } = &kept.step else {
                continue;
            };
            let text = message.content.text();
            if !kept.boundary || message.role != Role::User || text.starts_with(SUMMARY_PREFIX) {
                continue;
            }
            if budget == 0 {
                break;
            }
            let cut: String = text.chars().take(budget).collect();
            budget = budget.saturating_sub(cut.len());
            users.push(cut);
        }
        users.reverse();
        let summary = if summary.trim().is_empty() {
            "(no summary available)"
        } else {
            summary
        };
        users
            .iter()
            .map(String::as_str)
            .chain(std::iter::once(summary))
            .map(|t| {
                serde_json::json!({
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": t}],
                })
            })
            .collect()
    }

    /// Drops the last `n` user turns from the view, as Codex does: cut at the n-th turn
    /// boundary from the end (the first, when there are fewer), then back over the context
    /// written just before it. What is cut becomes records. A compression stays: a rollback
    /// (at `line`) that Codex cuts into a compaction's first item is said, as tract's view
    /// keeps that item.
    fn roll_back(&mut self, line: usize, n: usize) {
        let bounds: Vec<usize> = (0..self.history.len())
            .filter(|&p| self.kept[self.history[p]].boundary)
            .collect();
        let (Some(&first), true) = (bounds.first(), n > 0) else {
            return;
        };
        let mut cut = if n >= bounds.len() {
            first
        } else {
            bounds[bounds.len() - n]
        };
        while cut > first && self.kept[self.history[cut - 1]].context {
            cut -= 1;
        }
        // A compression's summary cannot leave the view: the cut goes after it.
        let floor = self
            .history
            .iter()
            .rposition(|&k| matches!(self.kept[k].step, Step::Compact { .. }))
            .map_or(0, |p| p + 1);
        if cut < floor {
            self.warnings.push((
                line,
                "a rollback into a compaction's first item: Codex takes it out of view; tract \
                 keeps it, as a compression's result"
                    .into(),
            ));
        }
        let cut = cut.max(floor);
        for k in self.history.split_off(cut) {
            let kept = &mut self.kept[k];
            let (line, lines, timestamp_us) = match &kept.step {
                Step::Message {
                    line,
                    lines,
                    timestamp_us,
                    ..
                } => (*line, lines.clone(), *timestamp_us),
                _ => continue,
            };
            kept.step = Step::Record {
                kind: CODEX_LINE_RECORD.into(),
                data: std::mem::take(&mut kept.data),
                lines,
                timestamp_us,
                line,
                usage: None,
            };
        }
    }

    /// What a `token_count` says the newest answer cost, when its totals moved (Codex repeats
    /// a count whenever its rate limits arrive): its `last_token_usage`, the cached input taken
    /// out of the input. A count of the context after a compaction or a rollback (no input, no
    /// output) spends nothing.
    fn usage(&mut self, payload: &Value) -> Option<Usage> {
        let info = &payload["info"];
        let (total, last) = (
            info.get("total_token_usage")?,
            info.get("last_token_usage")?,
        );
        if self.totals.as_ref() == Some(total) {
            return None;
        }
        self.totals = Some(total.clone());
        let n = |k: &str| last.get(k).and_then(Value::as_u64).unwrap_or(0);
        let (input, cached, output) = (
            n("input_tokens"),
            n("cached_input_tokens"),
            n("output_tokens"),
        );
        (input > 0 || output > 0).then(|| Usage {
            input_tokens: input.saturating_sub(cached),
            output_tokens: output,
            cache_read_input_tokens: cached,
            model: self.model.clone(),
            ..Usage::default()
        })
    }
}

/// Whether `item` starts a user's turn, and whether it is context Codex writes.
fn turn_of(item: &Value) -> (bool, bool) {
    let role = item.get("role").and_then(Value::as_str);
    let texts: Vec<&str> = item
        .get("content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|p| {
                    matches!(
                        p.get("type").and_then(Value::as_str),
                        Some("input_text" | "output_text")
                    )
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if item.get("type").and_then(Value::as_str) != Some("message") {
        return (false, false);
    }
    match role {
        Some("user") => {
            let context = texts.iter().any(|t| is_context(t));
            (!context, context)
        }
        Some("developer") => {
            let context = texts.iter().any(|t| {
                CONTEXT_DEVELOPER
                    .iter()
                    .any(|m| t.trim_start().starts_with(m))
            });
            (false, context)
        }
        Some("assistant") => (texts.len() == 1 && is_agent_message(texts[0]), false),
        _ => (false, false),
    }
}

/// Whether a user message's text is context Codex writes (between its markers), or a hook's
/// prompt.
fn is_context(text: &str) -> bool {
    let t = text.trim_start().to_lowercase();
    let end = t.trim_end();
    CONTEXT_MARKERS
        .iter()
        .any(|(start, stop)| t.starts_with(start) && end.ends_with(stop))
        || (t.starts_with("<hook_prompt") && end.ends_with("</hook_prompt>"))
}

/// Whether an assistant message's text is a message from another agent.
fn is_agent_message(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|v| {
        ["author", "recipient", "content", "trigger_turn"]
            .iter()
            .all(|k| v.get(k).is_some())
    })
}
