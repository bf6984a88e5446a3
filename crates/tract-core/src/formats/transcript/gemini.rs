//! Google Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, and the older
//! single-object `.json`), read by Gemini CLI's own rules: `loadConversationRecord` in
//! `packages/core/src/services/chatRecordingService.ts` (which records a session holds) and
//! `convertSessionToClientHistory` in `packages/core/src/utils/sessionUtils.ts` (what a resumed
//! session sends the model), google-gemini/gemini-cli at
//! 5411f113cafae26161b4969b0237b8e1e024e2c2.
//!
//! The current format is append-only JSON lines: a metadata line (`sessionId`,
//! `projectHash`, ...), message records (a later record with the same `id` replaces the earlier
//! one where it stood), `{"$rewindTo": id}` (drops that message and everything after it; an
//! unknown id drops everything) and `{"$set": {...}}` (metadata; with `messages`, the whole
//! list). Lines are split as Node's line reader splits them (`\r\n`, `\n` or a lone `\r`), and a
//! line that is not JSON is skipped, as Gemini CLI skips it. A file without a metadata line is
//! read as the older format: one JSON object, `messages` as stored.
//!
//! Each `user` record is a user message, unless Gemini CLI leaves it out of a resumed session
//! (empty, a `/` or `?` command, injected `<session_context>` or `<hook_context>`), and `gemini`
//! records are assistant messages: their thoughts kept verbatim as parts, their text, their
//! tool calls, and each call's result as a tool message after them. `info`, `error` and
//! `warning` records, and what a resumed session leaves out, are records of kind
//! `gemini.record` holding the record verbatim. A `gemini` record's `tokens` are its answer's
//! usage. Every step is keyed by its record's id and a
//! hash of the record, so a record Gemini CLI replaced is a conversation that moved to another
//! path (as a Claude Code rewind).

use crate::agents::AgentSession;
use crate::error::Result;
use crate::formats::transcript::rfc3339;
use crate::formats::transcript::steps::{Format, Step, Transcript, bad};
use crate::object::{Content, ContentPart, Message, Role, ToolCall};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The record kind holding a session record the view leaves out, verbatim.
pub const GEMINI_RECORD: &str = "gemini.record";

/// The branch a Gemini CLI session goes to: `gemini/<project>/<session id>`, with what a branch
/// name cannot hold replaced by `-`.
pub fn gemini_branch(project: &str, session: &str) -> String {
    let clean = |t: &str| -> String {
        t.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    format!("gemini/{}/{}", clean(project), clean(session))
}

/// Whether a value is a Gemini CLI session's metadata (line, or whole legacy file).
pub(super) fn is_metadata(v: &Value) -> bool {
    v.get("sessionId").is_some_and(Value::is_string)
        && v.get("projectHash").is_some_and(Value::is_string)
        && v.get("parentUuid").is_none()
        && v.get("uuid").is_none()
}

/// The characters JavaScript's `String.prototype.trim` removes.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{b}'
            | '\u{c}'
            | '\r'
            | ' '
            | '\u{a0}'
            | '\u{feff}'
            | '\u{2028}'
            | '\u{2029}'
    ) || (c.is_whitespace() && c != '\u{85}' && !('\u{1c}'..='\u{1f}').contains(&c))
}

fn js_trim(t: &str) -> &str {
    t.trim_matches(js_space)
}

/// JSON as JavaScript's `JSON.parse` reads it: a lone UTF-16 surrogate escape, which
/// JavaScript writes for a string cut inside a pair, reads as U+FFFD (a Rust string cannot
/// hold it).
fn parse_js(text: &str) -> Option<Value> {
    match serde_json::from_str(text) {
        Ok(v) => Some(v),
        Err(_) if text.contains("\\u") || text.contains("\\U") => {
            serde_json::from_str(&replace_lone_surrogates(text)).ok()
        }
        Err(_) => None,
    }
}

/// `text` with each `\uD800`-`\uDFFF` escape that is not half of a pair made `\uFFFD`.
fn replace_lone_surrogates(text: &str) -> String {
    let b = text.as_bytes();
    let hex = |at: usize| -> Option<u16> {
        let s = text.get(at..at + 4)?;
        u16::from_str_radix(s, 16).ok()
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut last = 0;
    while i + 5 < b.len() + 1 {
        if b[i] == b'\\' && i + 1 < b.len() {
            if b[i + 1] == b'u'
                && let Some(u) = hex(i + 2)
            {
                let high = (0xd800..0xdc00).contains(&u);
                let low = (0xdc00..0xe000).contains(&u);
                let paired_high = high
                    && b.get(i + 6) == Some(&b'\\')
                    && b.get(i + 7) == Some(&b'u')
                    && hex(i + 8).is_some_and(|n| (0xdc00..0xe000).contains(&n));
                if paired_high {
                    i += 12;
                    continue;
                }
                if high || low {
                    out.push_str(&text[last..i]);
                    out.push_str("\\uFFFD");
                    i += 6;
                    last = i;
                    continue;
                }
                i += 6;
                continue;
            }
            i += 2;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[last..]);
    out
}

/// The records a session holds, as `loadConversationRecord` replays its lines: its metadata and
/// its message records in order.
fn load(text: &str) -> Option<(Map<String, Value>, Vec<Value>)> {
    let mut metadata = Map::new();
    let mut order: Vec<String> = Vec::new();
    let mut by_id: HashMap<String, Value> = HashMap::new();
    let put = |order: &mut Vec<String>, by_id: &mut HashMap<String, Value>, m: &Value| {
        if let Some(id) = m.get("id").and_then(Value::as_str)
            && by_id.insert(id.to_string(), m.clone()).is_none()
        {
            order.push(id.to_string());
        }
    };
    for line in text.split("\r\n").flat_map(|l| l.split(['\n', '\r'])) {
        if js_trim(line).is_empty() {
            continue;
        }
        let Some(record) = parse_js(line) else {
            continue;
        };
        if let Some(to) = record.get("$rewindTo").and_then(Value::as_str) {
            match order.iter().position(|id| id == to) {
                Some(at) => {
                    for id in order.drain(at..) {
                        by_id.remove(&id);
                    }
                }
                None => {
                    order.clear();
                    by_id.clear();
                }
            }
        } else if record.get("id").is_some_and(Value::is_string) {
            // Gemini CLI reads the record's content before it keeps it: content it cannot
            // read (a call part that is null, text that is not a string) loses the line.
            if resumable_reads(&record) {
                put(&mut order, &mut by_id, &record);
            }
        } else if let Some(set) = record.get("$set").filter(|s| s.is_object() || s.is_array()) {
            if let Some(messages) = set.get("messages").and_then(Value::as_array) {
                order.clear();
                by_id.clear();
                // A record that does not read stops the rest of the line, as its throw does.
                for m in messages {
                    if m.get("id").is_some_and(Value::is_string) {
                        if !resumable_reads(m) {
                            break;
                        }
                        put(&mut order, &mut by_id, m);
                    }
                }
            }
            if let Some(set) = set.as_object() {
                metadata.extend(set.clone());
            }
        } else if is_metadata(&record) {
            if let Some(obj) = record.as_object() {
                metadata.extend(obj.clone());
            }
            if let Some(messages) = record.get("messages").and_then(Value::as_array) {
                for m in messages {
                    put(&mut order, &mut by_id, m);
                }
            }
        }
    }
    let truthy = |k: &str| {
        metadata
            .get(k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    if truthy("sessionId") && truthy("projectHash") {
        let messages = order
            .into_iter()
            .filter_map(|id| by_id.remove(&id))
            .collect();
        return Some((metadata, messages));
    }
    // The older format: the whole file one JSON object, its messages as stored.
    let whole: Value = serde_json::from_str(text).ok()?;
    let obj = whole.as_object()?;
    obj.get("sessionId")?;
    let messages = obj
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut metadata = obj.clone();
    metadata.remove("messages");
    Some((metadata, messages))
}

/// A content value as its parts (`ensurePartArray`): a string is one text part.
fn parts_of(content: &Value) -> Vec<Value> {
    match content {
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => serde_json::json!({"text": s}),
                other => other.clone(),
            })
            .collect(),
        Value::String(s) => vec![serde_json::json!({"text": s})],
        Value::Null => Vec::new(),
        other => vec![other.clone()],
    }
}

/// `partListUnionToString` of `v`, or `None` where JavaScript throws (a call or response part
/// that is null, `inlineData` that is null or has a `mimeType` that is not a string), or the
/// text of a part when it is not a string (`Err`, which the caller's `trim` throws on).
fn part_string(v: &Value) -> Option<std::result::Result<String, ()>> {
    Some(Ok(match v {
        Value::Null | Value::Bool(false) => String::new(),
        Value::Number(n) if n.as_f64() == Some(0.0) => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            let mut out = String::new();
            for p in parts {
                match part_string(p)? {
                    Ok(t) => out.push_str(&t),
                    // Joined: a number's text is written out, as `String()` writes it.
                    Err(()) => out.push_str(&js_string(p.get("text"))),
                }
            }
            out
        }
        Value::Object(part) => {
            let name_of = |k: &str| -> Option<String> {
                match part.get(k)? {
                    Value::Object(o) => Some(js_string(o.get("name"))),
                    _ => None,
                }
            };
            if part.contains_key("videoMetadata") {
                "[Video Metadata]".into()
            } else if let Some(t) = part.get("thought") {
                format!("[Thought: {}]", js_string(Some(t)))
            } else if part.contains_key("codeExecutionResult") {
                "[Code Execution Result]".into()
            } else if part.contains_key("executableCode") {
                "[Executable Code]".into()
            } else if part.contains_key("fileData") {
                "[File Data]".into()
            } else if part.contains_key("functionCall") {
                format!("[Function Call: {}]", name_of("functionCall")?)
            } else if part.contains_key("functionResponse") {
                format!("[Function Response: {}]", name_of("functionResponse")?)
            } else if let Some(data) = part.get("inlineData") {
                let data = data.as_object()?;
                if data
                    .get("mimeType")
                    .is_some_and(|m| !m.is_null() && !m.is_string())
                {
                    return None;
                }
                "[Media]".into()
            } else {
                match part.get("text") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(_) => return Some(Err(())),
                }
            }
        }
        _ => String::new(),
    }))
}

/// Whether `isResumableMessageRecord` reads `m` without throwing (its result is not used
/// while loading; its throw drops the line).
fn resumable_reads(m: &Value) -> bool {
    let content = m.get("content").unwrap_or(&Value::Null);
    match part_string(content) {
        None => false,
        // `trim` of what is not a string throws, for the types that trim it.
        Some(Err(())) => !matches!(
            m.get("type").and_then(Value::as_str),
            Some("user" | "gemini")
        ),
        Some(Ok(_)) => true,
    }
}

/// Whether Gemini CLI leaves a user record's text out of a resumed session.
fn ignored(text: &str) -> bool {
    let t = js_trim(text);
    t.is_empty()
        || t.starts_with('/')
        || t.starts_with('?')
        || t.starts_with("<session_context>")
        || t.starts_with("<hook_context>")
}

/// Content from parts: text parts as text, every other part verbatim.
fn content_of(parts: &[Value]) -> Content {
    let all_text = parts.iter().all(|p| {
        p.as_object()
            .is_some_and(|o| o.len() == 1 && o.get("text").is_some_and(Value::is_string))
    });
    if all_text {
        return Content::Text(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        );
    }
    Content::Parts(
        parts
            .iter()
            .map(|p| match p.as_object() {
                Some(o) if o.len() == 1 && o.get("text").is_some_and(Value::is_string) => {
                    ContentPart::Text(o["text"].as_str().unwrap_or_default().to_string())
                }
                _ => ContentPart::Raw(p.to_string()),
            })
            .collect(),
    )
}

/// A value as JavaScript's `String()` writes it (`undefined` for a missing one).
fn js_string(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => "null".into(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| match x {
                Value::Null => String::new(),
                other => js_string(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".into(),
        Some(other) => other.to_string(),
    }
}

/// Reads a Gemini CLI session file's text.
pub(super) fn read_session(text: &str) -> Result<Transcript> {
    let Some((metadata, messages)) = load(text) else {
        return Err(bad(
            1,
            "not a Gemini CLI session: no metadata line with a sessionId and projectHash, and \
             not one JSON object with a sessionId",
        ));
    };
    let session = metadata
        .get("sessionId")
        .and_then(Value::as_str)
        .map(str::to_string);
    let project = metadata
        .get("projectHash")
        .and_then(Value::as_str)
        .map(|h| h.chars().take(16).collect::<String>());
    let mut steps = Vec::new();
    let mut warnings = Vec::new();
    for (k, m) in messages.iter().enumerate() {
        let line = k + 1;
        let id = m.get("id").and_then(Value::as_str).unwrap_or_default();
        let hash = blake3::hash(m.to_string().as_bytes()).to_hex();
        let key = format!("gm{id}:{}", &hash[..16]);
        let at = m
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(rfc3339::parse_rfc3339_us);
        let record = |key: String| Step::Record {
            kind: GEMINI_RECORD.into(),
            data: m.to_string(),
            lines: vec![key],
            timestamp_us: at,
            line,
            usage: None,
        };
        let content = m.get("content").cloned().unwrap_or(Value::Null);
        match m.get("type").and_then(Value::as_str) {
            Some("user") => {
                let parts = parts_of(&content);
                // Content Gemini CLI's reading throws on says nothing it would resume with.
                let text = part_string(&content)
                    .and_then(std::result::Result::ok)
                    .unwrap_or_default();
                if ignored(&text) {
                    steps.push(record(key));
                    continue;
                }
                let mut message = Message::text(Role::User, String::new());
                message.content = content_of(&parts);
                steps.push(Step::Message {
                    message,
                    timestamp_us: at,
                    line,
                    lines: vec![key],
                });
            }
            Some("gemini") => {
                let (message, results) = model_turn(m, &content);
                let Some(mut message) = message else {
                    steps.push(record(key));
                    continue;
                };
                if let Some(usage) = usage_of(m)
                    && let Err(e) = usage.put_on(&mut message)
                {
                    warnings.push((line, format!("its tokens are not kept: {e}")));
                }
                steps.push(Step::Message {
                    message,
                    timestamp_us: at,
                    line,
                    lines: vec![key],
                });
                for (n, r) in results.into_iter().enumerate() {
                    steps.push(Step::Message {
                        message: r,
                        timestamp_us: at,
                        line,
                        lines: vec![format!("gm{id}_response/{n}:{}", &hash[..16])],
                    });
                }
            }
            other => {
                if !matches!(other, Some("info" | "error" | "warning")) {
                    warnings.push((
                        line,
                        format!(
                            "a record of type {}, which a resumed session leaves out; kept as a record",
                            other.unwrap_or("(none)")
                        ),
                    ));
                }
                steps.push(record(key));
            }
        }
    }
    Ok(Transcript::Steps {
        format: Format::Gemini,
        steps,
        skipped: 0,
        off_path: 0,
        session,
        project,
        warnings,
        waiting_agents: Vec::new(),
        unsettled: None,
        parent: None,
        agent: Some(Box::new(AgentSession {
            agent: Format::Gemini.name().into(),
            // Gemini CLI writes no version of itself into a session.
            version: None,
            started: metadata
                .get("startTime")
                .and_then(Value::as_str)
                .map(str::to_string),
        })),
    })
}

/// What a `gemini` record's answer cost, from its `tokens` (Gemini's input counts the cached
/// part, which is taken out, as for OpenAI; its thoughts are output, as Gemini bills them),
/// with its `model`.
fn usage_of(m: &Value) -> Option<crate::usage::Usage> {
    let tokens = m.get("tokens")?.as_object()?;
    let n = |k: &str| tokens.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (input, cached) = (n("input"), n("cached"));
    let output = n("output").saturating_add(n("thoughts"));
    if input == 0 && output == 0 {
        return None;
    }
    Some(crate::usage::Usage {
        input_tokens: input.saturating_sub(cached),
        output_tokens: output,
        cache_read_input_tokens: cached,
        model: m.get("model").and_then(Value::as_str).map(str::to_string),
        ..crate::usage::Usage::default()
    })
}

/// A `gemini` record as the model turn a resumed session holds (`None`: no parts, no turn) and
/// its calls' results, each a tool message.
fn model_turn(m: &Value, content: &Value) -> (Option<Message>, Vec<Message>) {
    let content_parts = match content {
        Value::Null => Vec::new(),
        Value::String(s) if s.is_empty() => Vec::new(),
        c => parts_of(c),
    };
    let truthy = |v: Option<&Value>| {
        v.is_some_and(|v| match v {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::String(s) => !s.is_empty(),
            Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
            _ => true,
        })
    };
    let has_calls = content_parts.iter().any(|p| truthy(p.get("functionCall")));
    let has_thoughts = content_parts.iter().any(|p| truthy(p.get("thought")));
    let tool_calls = m
        .get("toolCalls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut parts: Vec<Value> = Vec::new();
    if has_calls || has_thoughts {
        parts.extend(content_parts);
    } else {
        for th in m
            .get("thoughts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // As the template literal writes them: a missing description is "undefined".
            let subject = th.get("subject").filter(|s| truthy(Some(s)));
            let description = th.get("description");
            match (subject, description) {
                (Some(s), d) => parts.push(serde_json::json!({
                    "text": format!("**{}** {}", js_string(Some(s)), js_string(d)),
                    "thought": true,
                })),
                (None, Some(d)) => parts.push(serde_json::json!({"text": d, "thought": true})),
                (None, None) => parts.push(serde_json::json!({"thought": true})),
            }
        }
        parts.extend(content_parts);
        for tc in &tool_calls {
            parts.push(serde_json::json!({"functionCall": {
                "id": tc.get("id"), "name": tc.get("name"), "args": tc.get("args")}}));
        }
    }
    if parts.is_empty() {
        return (None, Vec::new());
    }
    let mut message = Message::text(Role::Assistant, String::new());
    let mut kept: Vec<Value> = Vec::new();
    for p in &parts {
        match p.get("functionCall") {
            Some(fc) => message.tool_calls.push(ToolCall {
                id: fc
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                name: fc
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                arguments: fc.get("args").map_or_else(|| "{}".into(), Value::to_string),
            }),
            None => kept.push(p.clone()),
        }
    }
    message.content = content_of(&kept);
    // Each call's result, after the turn (`<id>_response`).
    let mut results = Vec::new();
    for tc in &tool_calls {
        let r = tc.get("result");
        if !truthy(r) {
            continue;
        }
        let id = tc.get("id").and_then(Value::as_str).unwrap_or_default();
        let name = tc.get("name").and_then(Value::as_str).unwrap_or_default();
        let responses: Vec<Value> = match r {
            Some(Value::String(s)) => vec![serde_json::json!({"functionResponse": {
                "id": id, "name": name, "response": {"output": s}}})],
            Some(Value::Array(list)) => parts_of(&Value::Array(list.clone())),
            Some(other) => vec![other.clone()],
            None => Vec::new(),
        };
        for part in responses {
            let fr = part.get("functionResponse");
            let response = fr.and_then(|f| f.get("response"));
            let error = response.and_then(|r| r.get("error"));
            let output = match response.and_then(|r| r.get("output").or(r.get("error"))) {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => response
                    .map(Value::to_string)
                    .unwrap_or_else(|| part.to_string()),
            };
            let mut result = Message::text(Role::Tool, output);
            result.tool_call_id = Some(
                fr.and_then(|f| f.get("id"))
                    .and_then(Value::as_str)
                    .unwrap_or(id)
                    .to_string(),
            );
            result.name = Some(
                fr.and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_string(),
            );
            result.is_error =
                error.is_some() || tc.get("status").and_then(Value::as_str) == Some("error");
            results.push(result);
        }
    }
    (Some(message), results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_replace_rewind_and_set_as_gemini_cli_replays_them() {
        let text = [
            r#"{"sessionId":"s1","projectHash":"p","startTime":"2026-01-01T00:00:00Z"}"#,
            r#"{"id":"a","type":"user","content":[{"text":"one"}]}"#,
            r#"{"id":"b","type":"gemini","content":"first answer"}"#,
            r#"{"id":"c","type":"user","content":[{"text":"two"}]}"#,
            "not json",
            r#"{"id":"b","type":"gemini","content":"answer, replaced"}"#,
            r#"{"$rewindTo":"c"}"#,
            r#"{"$set":{"summary":"s"}}"#,
        ]
        .join("\r\n");
        let (metadata, messages) = load(&text).unwrap();
        assert_eq!(metadata["summary"], "s");
        let ids: Vec<&str> = messages.iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(messages[1]["content"], "answer, replaced");
        // An unknown id drops everything.
        let (_, none) = load(&format!("{text}\n{{\"$rewindTo\":\"zz\"}}")).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn a_lone_surrogate_escape_reads_as_the_replacement_character() {
        let v = parse_js(r#"{"t":"cut \ud83d","ok":"\ud83d\ude00"}"#).unwrap();
        assert_eq!(v["t"], "cut \u{fffd}");
        assert_eq!(v["ok"], "\u{1f600}");
        assert_eq!(js_trim("\u{feff} x \u{2028}"), "x");
    }
}
