//! OpenAI Responses items as tract messages, and a view back as items.
//!
//! Each item becomes one message, so log, search, queries, compress and compile see it: a
//! `message` item is a system, user or assistant message (`developer` is a system message), a
//! `function_call` an assistant message with one tool call, a `function_call_output` a tool
//! result. Any other item (reasoning, hosted tool calls, references) is kept whole as a raw part
//! of an assistant message, never dropped.
//!
//! What the message does not hold (item ids, status, part annotations, the item's own key
//! order) stays in the metadata key [`ITEM_KEY`] as the item's *shell*: the item with the text,
//! call and output fields taken out. Rendering puts them back, so an item comes back as it was
//! added; an item whose message was edited, cleared or compressed since comes back with the
//! current content, and a message that never was an item (a summary, a message appended
//! directly) is written in the plain input form.

use crate::error::{BatchPosition, Error, Result};
use crate::json::{content_value_with, part_from_json, raw_value};
use crate::object::{Content, ContentPart, Message, Role, ToolCall};
use crate::view::{CallShape, SYNTHETIC_RESULT, ViewEntry};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The metadata key holding an item's shell (the item minus what the message holds).
pub const ITEM_KEY: &str = "openai.responses_item";

/// Text-bearing content parts, by item role: these become text parts of the message.
const TEXT_PARTS: &[&str] = &["input_text", "output_text"];

/// Messages from a list of items, in order. A function call's output takes the tool name of
/// the call when the call is among `items` or in `known_calls` (call id to tool name). A bad
/// item is an error naming its place, so a caller can add all of them or none.
pub fn messages_from_items(
    items: &[Value],
    known_calls: &HashMap<String, String>,
) -> Result<Vec<Message>> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let lookup = |id: &str| names.get(id).or_else(|| known_calls.get(id)).cloned();
        let message = message_from_item(item, lookup)
            .map_err(|e| e.in_batch(BatchPosition::Message(i + 1)))?;
        for call in &message.tool_calls {
            names.insert(call.id.clone(), call.name.clone());
        }
        out.push(message);
    }
    Ok(out)
}

/// One item as a message; `call_name` gives the tool name of a call id seen before.
pub fn message_from_item(
    item: &Value,
    call_name: impl Fn(&str) -> Option<String>,
) -> Result<Message> {
    let obj = item
        .as_object()
        .ok_or_else(|| Error::invalid_message("an item must be a JSON object"))?;
    let kind = match obj.get("type") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return Err(Error::invalid_message("an item's 'type' must be a string")),
    };
    let mut shell = obj.clone();
    let mut message = match kind {
        None | Some("message") => {
            let role = match obj.get("role") {
                Some(Value::String(r)) => match r.as_str() {
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    "system" | "developer" => Role::System,
                    other => {
                        return Err(Error::invalid_message(format!(
                            "unknown message role '{other}'"
                        )));
                    }
                },
                Some(_) => return Err(Error::invalid_message("'role' must be a string")),
                None if kind.is_none() => {
                    return Err(Error::invalid_message(
                        "an item needs a 'type' (or a 'role', for a message)",
                    ));
                }
                None => return Err(Error::invalid_message("a message item needs a 'role'")),
            };
            let content = take_content(&mut shell, "content")?;
            Message {
                role,
                content,
                ..Message::text(role, "")
            }
        }
        Some("function_call") => {
            let call = ToolCall {
                id: take_string(&mut shell, "call_id")?,
                name: take_string(&mut shell, "name")?,
                arguments: match shell.remove("arguments") {
                    Some(Value::String(s)) => s,
                    None | Some(Value::Null) => {
                        return Err(Error::invalid_message(
                            "a function_call item needs 'arguments'",
                        ));
                    }
                    // Not what the API sends, but JSON all the same: kept as written.
                    Some(other) => other.to_string(),
                },
            };
            Message {
                tool_calls: vec![call],
                ..Message::text(Role::Assistant, "")
            }
        }
        Some("function_call_output") => {
            let call_id = take_string(&mut shell, "call_id")?;
            let content = take_content(&mut shell, "output")?;
            Message {
                content,
                name: call_name(&call_id),
                tool_call_id: Some(call_id),
                ..Message::text(Role::Tool, "")
            }
        }
        Some(t) => {
            // Kept whole: the raw part is the item itself (read as the neutral form reads a
            // part, so it reads back the same), the shell only says so.
            let part = part_from_json(item)?;
            if !matches!(part, ContentPart::Raw(_)) {
                return Err(Error::invalid_message(format!(
                    "'{t}' is a content part, not an item"
                )));
            }
            shell = Map::new();
            shell.insert("type".into(), Value::Null);
            Message {
                content: Content::Parts(vec![part]),
                ..Message::text(Role::Assistant, "")
            }
        }
    };
    message
        .metadata
        .insert(ITEM_KEY.into(), Value::Object(shell).to_string());
    message.validate()?;
    Ok(message)
}

fn take_string(shell: &mut Map<String, Value>, key: &str) -> Result<String> {
    match shell.remove(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(Error::invalid_message(format!(
            "'{key}' must be a non-empty string"
        ))),
    }
}

/// Takes a content field out of the shell: a string stays text; in a list, text parts become
/// text parts (their template, without the text, stays in the shell) and any other part is
/// kept raw (its place in the shell is `null`).
fn take_content(shell: &mut Map<String, Value>, key: &str) -> Result<Content> {
    match shell.remove(key) {
        None | Some(Value::Null) => Ok(Content::Text(String::new())),
        Some(Value::String(s)) => Ok(Content::Text(s)),
        Some(Value::Array(parts)) => {
            let mut templates = Vec::with_capacity(parts.len());
            let mut content = Vec::with_capacity(parts.len());
            for part in parts {
                let text_part = part.get("type").and_then(Value::as_str).is_some_and(|t| {
                    TEXT_PARTS.contains(&t) && part.get("text").is_some_and(Value::is_string)
                });
                match part {
                    Value::Object(mut p) if text_part => {
                        let text = match p.remove("text") {
                            Some(Value::String(s)) => s,
                            _ => String::new(),
                        };
                        content.push(ContentPart::Text(text));
                        templates.push(Value::Object(p));
                    }
                    Value::Object(_) => {
                        content.push(part_from_json(&part).map_err(|e| match e {
                            Error::InvalidMessage { reason, .. } => {
                                Error::invalid_message(format!("in '{key}': {reason}"))
                            }
                            other => other,
                        })?);
                        templates.push(Value::Null);
                    }
                    _ => {
                        return Err(Error::invalid_message(format!(
                            "each part of '{key}' must be an object"
                        )));
                    }
                }
            }
            shell.insert(key.into(), Value::Array(templates));
            Ok(Content::Parts(content))
        }
        Some(_) => Err(Error::invalid_message(format!(
            "'{key}' must be a string or a list of parts"
        ))),
    }
}

/// The view as Responses input items, in view order (with `limit`, only the last `limit`
/// of them, made from the end), of pieces: `items` makes an entry's items, `synthetic` the
/// marked error output that follows a call whose result is missing (as compile does; given
/// the entry and which of its calls); results that answer no call are left out.
pub(crate) fn items_from_view<P>(
    entries: &[ViewEntry],
    limit: Option<usize>,
    mut items: impl FnMut(&ViewEntry) -> Vec<P>,
    mut synthetic: impl FnMut(&ViewEntry, usize) -> P,
) -> Vec<P> {
    let mut entry_items = |e: &ViewEntry| -> Vec<P> {
        if e.shape.role == Role::Tool && e.caller.is_none() {
            return Vec::new();
        }
        let mut out = items(e);
        for (k, (_, result)) in e.shape.tool_calls.iter().zip(&e.results).enumerate() {
            if result.is_none() {
                out.push(synthetic(e, k));
            }
        }
        out
    };
    let Some(limit) = limit else {
        return entries.iter().flat_map(entry_items).collect();
    };
    let mut tail: Vec<P> = Vec::with_capacity(limit);
    for e in entries.iter().rev() {
        if tail.len() >= limit {
            break;
        }
        tail.extend(entry_items(e).into_iter().rev());
    }
    tail.truncate(limit);
    tail.reverse();
    tail
}

/// The output that stands in for the missing result of `call`.
pub fn synthetic_output(call: &CallShape) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), "function_call_output".into());
    o.insert("call_id".into(), call.id.clone().into());
    o.insert("output".into(), SYNTHETIC_RESULT.into());
    Value::Object(o)
}

/// One message as the items it came from (or, without a shell, in the plain input form).
pub fn items_from_message(m: &Message) -> Vec<Value> {
    let shell = m
        .metadata
        .get(ITEM_KEY)
        .and_then(|s| serde_json::from_str::<Map<String, Value>>(s).ok());
    if let Some(shell) = shell
        && let Some(item) = restore(shell, m)
    {
        return vec![item];
    }
    plain_items(m)
}

/// Puts the message's fields back into its shell; `None` when the message no longer has the
/// shape of its item (then it is written in the plain form).
fn restore(mut shell: Map<String, Value>, m: &Message) -> Option<Value> {
    let kind = shell.get("type").map(|t| t.as_str());
    match kind {
        // A raw item: the part is the item.
        Some(None) => match &m.content {
            Content::Parts(parts) => match parts.as_slice() {
                [ContentPart::Raw(raw)] => Some(raw_value(raw)),
                _ => None,
            },
            Content::Text(_) => None,
        },
        Some(Some("function_call")) => match m.tool_calls.as_slice() {
            [call] if m.content.is_empty() => {
                shell.insert("call_id".into(), call.id.clone().into());
                shell.insert("name".into(), call.name.clone().into());
                shell.insert("arguments".into(), call.arguments.clone().into());
                Some(Value::Object(shell))
            }
            _ => None,
        },
        Some(Some("function_call_output")) => {
            let call_id = m.tool_call_id.clone()?;
            let output = put_content(&mut shell, "output", &m.content);
            shell.insert("call_id".into(), call_id.into());
            shell.insert("output".into(), output);
            Some(Value::Object(shell))
        }
        Some(Some("message")) | None if m.tool_calls.is_empty() && m.role != Role::Tool => {
            let content = put_content(&mut shell, "content", &m.content);
            shell.insert("content".into(), content);
            Some(Value::Object(shell))
        }
        _ => None,
    }
}

/// The content field from the message and the shell's part templates, where the parts still
/// line up; otherwise the text, or plain parts.
fn put_content(shell: &mut Map<String, Value>, key: &str, content: &Content) -> Value {
    let templates = match shell.remove(key) {
        Some(Value::Array(t)) => Some(t),
        _ => None,
    };
    match (content, templates) {
        (Content::Text(t), None) => Value::String(t.clone()),
        (Content::Parts(parts), Some(templates)) if parts.len() == templates.len() => {
            let mut out = Vec::with_capacity(parts.len());
            for (part, template) in parts.iter().zip(templates) {
                match (part, template) {
                    (ContentPart::Text(text), Value::Object(mut t)) => {
                        t.insert("text".into(), text.clone().into());
                        out.push(Value::Object(t));
                    }
                    (ContentPart::Raw(raw), Value::Null) => out.push(raw_value(raw)),
                    _ => return plain_content(content, "input_text"),
                }
            }
            Value::Array(out)
        }
        (Content::Parts(_), Some(t)) => {
            // Edited into other parts: text parts take the kind the item's first text had.
            let kind = t
                .iter()
                .find_map(|p| p.get("type").and_then(Value::as_str))
                .unwrap_or("input_text")
                .to_string();
            plain_content(content, &kind)
        }
        (content, _) => Value::String(content.text().into_owned()),
    }
}

fn plain_content(content: &Content, text_kind: &str) -> Value {
    content_value_with(content, text_kind)
}

/// A message that never was an item: `{"role", "content"}` for what is said, one
/// `function_call` per tool call, a `function_call_output` for a result.
fn plain_items(m: &Message) -> Vec<Value> {
    let mut out = Vec::with_capacity(1 + m.tool_calls.len());
    match m.role {
        Role::Tool => {
            let mut o = Map::new();
            o.insert("type".into(), "function_call_output".into());
            o.insert(
                "call_id".into(),
                m.tool_call_id.clone().unwrap_or_default().into(),
            );
            o.insert("output".into(), plain_content(&m.content, "input_text"));
            out.push(Value::Object(o));
        }
        role => {
            if !m.content.is_empty() || m.tool_calls.is_empty() {
                let kind = if role == Role::Assistant {
                    "output_text"
                } else {
                    "input_text"
                };
                let mut o = Map::new();
                o.insert("role".into(), role.as_str().into());
                o.insert("content".into(), plain_content(&m.content, kind));
                out.push(Value::Object(o));
            }
            for call in &m.tool_calls {
                let mut o = Map::new();
                o.insert("type".into(), "function_call".into());
                o.insert("call_id".into(), call.id.clone().into());
                o.insert("name".into(), call.name.clone().into());
                o.insert("arguments".into(), call.arguments.clone().into());
                out.push(Value::Object(o));
            }
        }
    }
    out
}

/// The call ids that outputs among `items` answer without the call being among them: the
/// names an append of `items` must find before them ([`call_names`]).
pub fn calls_answered_elsewhere(items: &[Value]) -> std::collections::HashSet<String> {
    let mut made = std::collections::HashSet::new();
    let mut needed = std::collections::HashSet::new();
    for item in items {
        let call_id = item.get("call_id").and_then(Value::as_str);
        match (item.get("type").and_then(Value::as_str), call_id) {
            (Some("function_call"), Some(id)) => {
                made.insert(id.to_string());
            }
            (Some("function_call_output"), Some(id)) if !made.contains(id) => {
                needed.insert(id.to_string());
            }
            _ => {}
        }
    }
    needed
}

/// The tool names of the calls `wanted`, found in the view's `shapes` newest first, stopping
/// once all are found (an answer is usually to one of the last calls, so a long session is not
/// walked).
pub fn call_names<'a>(
    shapes: impl IntoIterator<Item = &'a crate::view::Shape>,
    wanted: &std::collections::HashSet<String>,
) -> HashMap<String, String> {
    let mut found = HashMap::new();
    if wanted.is_empty() {
        return found;
    }
    for m in shapes {
        for c in &m.tool_calls {
            if wanted.contains(&c.id) {
                found.entry(c.id.clone()).or_insert_with(|| c.name.clone());
            }
        }
        if found.len() == wanted.len() {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(items: Vec<Value>) {
        let messages = messages_from_items(&items, &HashMap::new()).unwrap();
        let back: Vec<Value> = messages.iter().flat_map(items_from_message).collect();
        assert_eq!(back, items);
    }

    #[test]
    fn items_come_back_as_they_were_added() {
        round_trip(vec![
            json!({"role": "developer", "content": "be brief"}),
            json!({"content": "What is the weather?", "role": "user"}),
            json!({"role": "user", "type": "message", "content": [
                {"type": "input_text", "text": "and this"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA==", "detail": "auto"}
            ]}),
            json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "x"}),
            json!({"arguments": "{\"city\":\"Paris\"}", "call_id": "call_1", "name": "weather",
                   "type": "function_call", "id": "fc_1", "status": "completed"}),
            json!({"call_id": "call_1", "output": "sunny", "type": "function_call_output"}),
            json!({"id": "msg_1", "content": [{"annotations": [], "text": "Sunny.", "type": "output_text",
                   "logprobs": []}], "role": "assistant", "status": "completed", "type": "message"}),
        ]);
    }

    #[test]
    fn items_become_messages_the_rest_of_tract_reads() {
        let items = vec![
            json!({"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "3 matches"}),
            json!({"type": "web_search_call", "id": "ws_1", "status": "completed"}),
        ];
        let m = messages_from_items(&items, &HashMap::new()).unwrap();
        assert_eq!(m[0].role, Role::Assistant);
        assert_eq!(m[0].tool_calls[0].name, "grep");
        assert_eq!(m[1].role, Role::Tool);
        assert_eq!(m[1].name.as_deref(), Some("grep"));
        assert_eq!(m[1].content.text(), "3 matches");
        // An item tract has no message form for is kept whole, not dropped.
        assert_eq!(
            m[2].content,
            Content::Parts(vec![ContentPart::Raw(items[2].to_string())])
        );
    }

    #[test]
    fn an_edited_message_comes_back_with_its_current_content() {
        let item = json!({"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "a long answer", "annotations": []}]});
        let mut m = message_from_item(&item, |_| None).unwrap();
        m.content = Content::Text("short".into());
        let back = items_from_message(&m);
        assert_eq!(
            back,
            vec![
                json!({"id": "msg_1", "type": "message", "role": "assistant",
                "status": "completed", "content": "short"})
            ]
        );
        // A message that never was an item is written in the plain form.
        let plain = Message::text(Role::User, "hi");
        assert_eq!(
            items_from_message(&plain),
            vec![json!({"role": "user", "content": "hi"})]
        );
    }

    #[test]
    fn bad_items_are_errors_naming_their_place() {
        let cases = [
            (json!("text"), "must be a JSON object"),
            (json!({"content": "no role"}), "needs a 'type'"),
            (
                json!({"role": "robot", "content": "x"}),
                "unknown message role 'robot'",
            ),
            (
                json!({"type": "function_call", "name": "f", "arguments": "{}"}),
                "'call_id'",
            ),
            (json!({"type": "function_call_output", "call_id": "c"}), ""),
            (json!({"role": "user", "content": 7}), "'content' must be"),
            (
                json!({"role": "user", "content": ["x"]}),
                "must be an object",
            ),
            // Found by fuzzing (transcript_parse): an "item" that is a content part.
            (
                json!({"type": "text", "text": "x"}),
                "'text' is a content part, not an item",
            ),
            (
                json!({"type": "text", "uuid": "s0"}),
                "a text part needs a string 'text'",
            ),
        ];
        for (item, wanted) in cases {
            let items = vec![json!({"role": "user", "content": "ok"}), item.clone()];
            match messages_from_items(&items, &HashMap::new()) {
                Err(e) => {
                    let text = e.to_string();
                    assert!(text.contains("message 2"), "{item}: {text}");
                    assert!(text.contains(wanted), "{item}: {text}");
                }
                // An output with no 'output' is an empty result: allowed.
                Ok(m) => assert_eq!(m[1].content.text(), "", "{item}"),
            }
        }
    }
}
