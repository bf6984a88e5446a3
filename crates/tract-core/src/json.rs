//! Messages to and from JSON: the input forms tract accepts and the neutral output form.
//!
//! Tool calls are accepted flat (`{"id", "name", "arguments"}`) and in the OpenAI wire form
//! (`{"id", "type": "function", "function": {"name", "arguments"}}`); arguments given as a
//! string are kept verbatim, any other JSON is written compactly in the key order given.

use crate::error::{BatchPosition, Error, Result};
use crate::object::{Content, ContentPart, Message, Role, ToolCall};
use crate::usage::Usage;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The fields of a message in tract's neutral form.
const KNOWN_KEYS: &[&str] = &[
    "role",
    "content",
    "name",
    "tool_calls",
    "tool_call_id",
    "is_error",
    "metadata",
];

/// What an assistant message cost ([`Usage`]), in either provider's names.
const USAGE_KEY: &str = "usage";

/// Fields that providers and their SDKs put on chat messages, accepted beside the neutral
/// fields and kept verbatim as metadata, so a message copied from a response is taken as it
/// is: OpenAI's (`refusal`, `audio`, `annotations`, `function_call`; `parsed` from the SDK's
/// `parse()`; `id` and `content_parts` of a stored completion's messages), and the reasoning
/// fields of OpenAI-compatible servers (`reasoning_content`: DeepSeek, vLLM, SGLang, Qwen;
/// `reasoning`, `reasoning_details`: OpenRouter, vLLM, Ollama, Groq; `thinking_blocks`,
/// `provider_specific_fields`: LiteLLM; `prefix`: DeepSeek's and Mistral's continuation).
const PROVIDER_KEYS: &[&str] = &[
    "refusal",
    "audio",
    "annotations",
    "function_call",
    "parsed",
    "id",
    "content_parts",
    "reasoning_content",
    "reasoning",
    "reasoning_details",
    "thinking_blocks",
    "provider_specific_fields",
    "prefix",
];

/// Names people give a neutral field that no typo distance finds: the field they mean.
const SYNONYMS: &[(&str, &str)] = &[
    ("text", "content"),
    ("message", "content"),
    ("msg", "content"),
    ("body", "content"),
    ("parts", "content"),
    ("calls", "tool_calls"),
    ("function_calls", "tool_calls"),
    ("call_id", "tool_call_id"),
    ("tool_use_id", "tool_call_id"),
    ("error", "is_error"),
    ("meta", "metadata"),
];

/// What to do with a top-level field that is neither neutral nor a known provider field.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unknown {
    /// Refuse it, with the field meant: input given to tract directly.
    Refuse,
    /// Keep it verbatim as metadata: a transcript another program wrote.
    Keep,
}

/// Parses one message object (the neutral form, or an OpenAI chat message). A field that is
/// neither is refused, with the field meant where one is close (`text`: `content`); fields
/// of the caller's own go under `metadata`.
pub fn message_from_json(v: &Value) -> Result<Message> {
    parse_message(v, Unknown::Refuse)
}

/// Parses one message of a transcript another program wrote: as [`message_from_json`], but
/// a field tract does not know is kept verbatim as metadata rather than refused.
pub(crate) fn message_from_transcript_json(v: &Value) -> Result<Message> {
    parse_message(v, Unknown::Keep)
}

/// The error for the unknown field `key`: the field meant, where one is close.
fn unknown_field(key: &str) -> Error {
    // A long key is cut: it is the caller's text.
    let shown: String = key.chars().take(40).collect();
    let meant = SYNONYMS
        .iter()
        .find(|(said, _)| said.eq_ignore_ascii_case(key))
        .map(|(_, meant)| format!("; did you mean '{meant}'?"))
        .unwrap_or_else(|| {
            crate::error::suggest(key, KNOWN_KEYS.iter().chain(PROVIDER_KEYS).copied())
        });
    Error::invalid_message(format!(
        "unknown message field '{shown}'{meant} (fields of your own go under 'metadata')"
    ))
}

fn parse_message(v: &Value, unknown: Unknown) -> Result<Message> {
    let obj = v
        .as_object()
        .ok_or_else(|| Error::invalid_message("a message must be a JSON object"))?;
    if unknown == Unknown::Refuse
        && let Some(key) = obj.keys().find(|k| {
            !KNOWN_KEYS.contains(&k.as_str())
                && !PROVIDER_KEYS.contains(&k.as_str())
                && k.as_str() != USAGE_KEY
        })
    {
        return Err(unknown_field(key));
    }
    let role = match obj.get("role") {
        Some(Value::String(r)) => Role::parse(r)?,
        Some(_) => return Err(Error::invalid_message("'role' must be a string")),
        None => return Err(Error::invalid_message("a message needs a 'role'")),
    };
    let content = match obj.get("content") {
        None | Some(Value::Null) => Content::Text(String::new()),
        Some(Value::String(s)) => Content::Text(s.clone()),
        Some(Value::Array(parts)) => Content::Parts(
            parts
                .iter()
                .map(part_from_json)
                .collect::<Result<Vec<_>>>()?,
        ),
        Some(_) => {
            return Err(Error::invalid_message(
                "'content' must be a string, null or a list of parts",
            ));
        }
    };
    let name = opt_string(obj, "name")?;
    let tool_call_id = opt_string(obj, "tool_call_id")?;
    let is_error = match obj.get("is_error") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(Error::invalid_message("'is_error' must be true or false")),
    };
    let tool_calls = match obj.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => tool_calls_from_json(v)?,
    };
    let mut metadata = BTreeMap::new();
    // What the answer cost, in either provider's names, kept in tract's (a transcript's own
    // `usage` field, read elsewhere by its format's rules, is kept verbatim as the others).
    let usage = match unknown {
        Unknown::Refuse => obj.get(USAGE_KEY).filter(|v| !v.is_null()),
        Unknown::Keep => None,
    };
    // Provider fields (e.g. `refusal`) are kept verbatim rather than dropped.
    for (k, v) in obj {
        if !KNOWN_KEYS.contains(&k.as_str()) && (unknown == Unknown::Keep || k != USAGE_KEY) {
            metadata.insert(k.clone(), v.to_string());
        }
    }
    match obj.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                metadata.insert(k.clone(), v.to_string());
            }
        }
        Some(_) => return Err(Error::invalid_message("'metadata' must be an object")),
    }
    let mut message = Message {
        role,
        content,
        name,
        tool_calls,
        tool_call_id,
        is_error,
        metadata,
    };
    if let Some(v) = usage {
        Usage::from_json(v)?.put_on(&mut message)?;
    }
    message.validate()?;
    crate::usage::check(&message)?;
    Ok(message)
}

/// Parses a message from JSON text.
pub fn message_from_str(s: &str) -> Result<Message> {
    let v: Value = serde_json::from_str(s)
        .map_err(|e| Error::invalid_message(format!("malformed JSON: {e}")))?;
    message_from_json(&v)
}

/// Messages from JSON text: one object, a list of objects, or JSONL (one object a line). Any
/// bad message is an error naming its place, so a caller can commit all of them or none.
pub fn messages_from_text(text: &str) -> Result<Vec<Message>> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(Error::invalid_message("no message JSON given"));
    }
    // The whole text as one value first: a pretty-printed object spans several lines.
    if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        return match v {
            Value::Array(_) => messages_from_list(&v),
            other => Ok(vec![message_from_json(&other)?]),
        };
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = BatchPosition::Line(i + 1);
        out.push(message_from_str(line).map_err(|e| e.in_batch(at))?);
    }
    Ok(out)
}

/// Messages from a JSON list of message objects; a bad one is an error naming its place.
pub fn messages_from_list(v: &Value) -> Result<Vec<Message>> {
    let list = v
        .as_array()
        .ok_or_else(|| Error::invalid_input("expected a list of messages"))?;
    list.iter()
        .enumerate()
        .map(|(i, m)| message_from_json(m).map_err(|e| e.in_batch(BatchPosition::Message(i + 1))))
        .collect()
}

/// Parses a list of tool calls (flat or OpenAI wire form).
pub fn tool_calls_from_json(v: &Value) -> Result<Vec<ToolCall>> {
    let list = v
        .as_array()
        .ok_or_else(|| Error::invalid_message("'tool_calls' must be a list"))?;
    list.iter().map(tool_call_from_json).collect()
}

fn tool_call_from_json(v: &Value) -> Result<ToolCall> {
    let obj = v
        .as_object()
        .ok_or_else(|| Error::invalid_message("a tool call must be an object"))?;
    let id = opt_string(obj, "id")?
        .ok_or_else(|| Error::invalid_message("a tool call needs an 'id'"))?;
    let holder = match obj.get("function") {
        Some(Value::Object(f)) => f,
        Some(_) => {
            return Err(Error::invalid_message(
                "a tool call's 'function' must be an object",
            ));
        }
        None => obj,
    };
    let name = opt_string(holder, "name")?
        .ok_or_else(|| Error::invalid_message(format!("tool call '{id}' needs a 'name'")))?;
    let arguments = match holder.get("arguments") {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}

/// One content part in the neutral form: a text part, or any other part kept verbatim (every
/// reader of provider content makes its raw parts with this, so they read back the same).
pub(crate) fn part_from_json(v: &Value) -> Result<ContentPart> {
    let obj = v
        .as_object()
        .ok_or_else(|| Error::invalid_message("a content part must be an object"))?;
    match obj.get("type") {
        // A text part with more than its text (a cache_control, citations) is kept verbatim,
        // so nothing of it is lost and it reads back as the same part.
        Some(Value::String(t)) if t == "text" && obj.len() > 2 => match obj.get("text") {
            Some(Value::String(_)) => Ok(ContentPart::Raw(v.to_string())),
            _ => Err(Error::invalid_message("a text part needs a string 'text'")),
        },
        Some(Value::String(t)) if t == "text" => match obj.get("text") {
            Some(Value::String(s)) => Ok(ContentPart::Text(s.clone())),
            _ => Err(Error::invalid_message("a text part needs a string 'text'")),
        },
        Some(Value::String(_)) => Ok(ContentPart::Raw(v.to_string())),
        _ => Err(Error::invalid_message(
            "a content part needs a string 'type'",
        )),
    }
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Error::invalid_message(format!("'{key}' must be a string"))),
    }
}

/// A raw JSON text back as a value (it was valid when stored; if not, it stays a string).
pub(crate) fn raw_value(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

/// Content as OpenAI renders it: a string, or a list of parts.
pub(crate) fn content_value(c: &Content) -> Value {
    content_value_with(c, "text")
}

/// Content as a string, or a list of parts whose text parts have type `text_kind` (`text`
/// for chat, `input_text` / `output_text` for Responses items).
pub(crate) fn content_value_with(c: &Content, text_kind: &str) -> Value {
    match c {
        Content::Text(t) => Value::String(t.clone()),
        Content::Parts(parts) => Value::Array(
            parts
                .iter()
                .map(|p| match p {
                    ContentPart::Text(t) => {
                        let mut m = Map::new();
                        m.insert("type".into(), text_kind.into());
                        m.insert("text".into(), t.clone().into());
                        Value::Object(m)
                    }
                    ContentPart::Raw(raw) => raw_value(raw),
                })
                .collect(),
        ),
    }
}

/// The neutral form of a message: what `tract add --json` accepts, with every field tract
/// keeps (flat tool calls, `is_error`, metadata).
pub fn message_to_json(m: &Message) -> Value {
    let mut o = Map::new();
    o.insert("role".into(), m.role.as_str().into());
    o.insert("content".into(), content_value(&m.content));
    if let Some(n) = &m.name {
        o.insert("name".into(), n.clone().into());
    }
    if !m.tool_calls.is_empty() {
        o.insert(
            "tool_calls".into(),
            Value::Array(
                m.tool_calls
                    .iter()
                    .map(|c| {
                        let mut t = Map::new();
                        t.insert("id".into(), c.id.clone().into());
                        t.insert("name".into(), c.name.clone().into());
                        t.insert("arguments".into(), c.arguments.clone().into());
                        Value::Object(t)
                    })
                    .collect(),
            ),
        );
    }
    if let Some(id) = &m.tool_call_id {
        o.insert("tool_call_id".into(), id.clone().into());
    }
    if m.is_error {
        o.insert("is_error".into(), true.into());
    }
    if !m.metadata.is_empty() {
        o.insert("metadata".into(), metadata_value(&m.metadata));
    }
    Value::Object(o)
}

/// Metadata values back as JSON.
pub fn metadata_value(meta: &BTreeMap<String, String>) -> Value {
    Value::Object(
        meta.iter()
            .map(|(k, v)| (k.clone(), raw_value(v)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flat_and_wire_tool_calls_parse_alike() {
        let flat = message_from_json(&json!({
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "name": "grep", "arguments": {"b": 1, "a": 2}}]
        }))
        .unwrap();
        let wire = message_from_json(&json!({
            "role": "assistant",
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "grep", "arguments": "{\"b\":1,\"a\":2}"}}]
        }))
        .unwrap();
        assert_eq!(flat, wire);
        assert_eq!(flat.tool_calls[0].arguments, r#"{"b":1,"a":2}"#);
    }

    #[test]
    fn string_arguments_are_verbatim() {
        let m = message_from_json(&json!({
            "role": "assistant",
            "tool_calls": [{"id": "c1", "name": "x", "arguments": "{ \"a\" : 1.50 }"}]
        }))
        .unwrap();
        assert_eq!(m.tool_calls[0].arguments, "{ \"a\" : 1.50 }");
    }

    #[test]
    fn provider_fields_are_kept_and_bad_input_rejected() {
        let m = message_from_json(
            &json!({"role": "assistant", "content": "hi", "refusal": null,
            "annotations": [], "reasoning_content": "because"}),
        )
        .unwrap();
        assert_eq!(m.metadata["refusal"], "null");
        assert_eq!(m.metadata["annotations"], "[]");
        assert_eq!(m.metadata["reasoning_content"], "\"because\"");
        for bad in [
            json!([]),
            json!({"content": "x"}),
            json!({"role": "robot", "content": "x"}),
            json!({"role": "user", "content": 5}),
            json!({"role": "tool", "content": "x"}),
            json!({"role": "assistant", "tool_calls": [{"name": "x"}]}),
            json!({"role": "user", "content": [{"text": "no type"}]}),
        ] {
            assert!(message_from_json(&bad).is_err(), "{bad}");
        }
        assert!(message_from_str("{not json").is_err());
    }

    /// `{"role":"user","text":"hi"}` was an empty message keeping `text` as metadata.
    #[test]
    fn an_unknown_field_is_refused_with_the_field_meant() {
        let err = |v: Value| message_from_json(&v).unwrap_err().to_string();
        assert_eq!(
            err(json!({"role": "user", "text": "hi"})),
            "invalid input: unknown message field 'text'; did you mean 'content'? \
             (fields of your own go under 'metadata')"
        );
        assert!(err(json!({"role": "user", "Content": "hi"})).contains("did you mean 'content'?"));
        assert!(
            err(json!({"role": "assistant", "toolCalls": []}))
                .contains("did you mean 'tool_calls'?")
        );
        assert!(
            err(json!({"role": "tool", "content": "x", "tool_use_id": "c1"}))
                .contains("did you mean 'tool_call_id'?")
        );
        assert!(
            err(json!({"role": "assistant", "content": "x", "refusl": null}))
                .contains("did you mean 'refusal'?")
        );
        let far = err(json!({"role": "user", "content": "hi", "timestamp": 5}));
        assert_eq!(
            far,
            "invalid input: unknown message field 'timestamp' (fields of your own go under \
             'metadata')"
        );
        // The same field under `metadata` is the caller's own, kept.
        let m = message_from_json(&json!({"role": "user", "content": "hi",
            "metadata": {"timestamp": 5}}))
        .unwrap();
        assert_eq!(m.metadata["timestamp"], "5");
        // A transcript another program wrote keeps what tract does not know.
        let m = message_from_transcript_json(&json!({"role": "user", "content": "hi",
            "timestamp": 5}))
        .unwrap();
        assert_eq!(m.metadata["timestamp"], "5");
    }

    /// Every field an OpenAI chat message can carry (the `openai` package's
    /// `ChatCompletionMessage`, `ChatCompletionStoreMessage`, `ParsedChatCompletionMessage` and
    /// the request's message params) is accepted as it comes.
    #[test]
    fn an_openai_message_is_accepted_whole() {
        let m = message_from_json(&json!({
            "id": "msg_1", "role": "assistant", "content": null, "refusal": null,
            "annotations": [{"type": "url_citation", "url_citation": {"end_index": 1,
                "start_index": 0, "title": "t", "url": "https://example.com"}}],
            "audio": {"id": "a1"}, "function_call": null, "parsed": null,
            "content_parts": null, "name": "bot",
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "grep", "arguments": "{}"}}]
        }))
        .unwrap();
        assert_eq!(m.tool_calls.len(), 1);
        assert_eq!(m.metadata["audio"], r#"{"id":"a1"}"#);
    }

    #[test]
    fn batches_accept_object_list_and_jsonl() {
        let one = messages_from_text("{\n  \"role\": \"user\",\n  \"content\": \"hi\"\n}").unwrap();
        assert_eq!(one.len(), 1);
        let list = messages_from_text(
            r#"[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]"#,
        )
        .unwrap();
        assert_eq!(list.len(), 2);
        let jsonl = messages_from_text(
            "{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"assistant\",\"content\":\"b\"}\n",
        )
        .unwrap();
        assert_eq!(jsonl.len(), 2);
        assert!(messages_from_text("  ").is_err());
    }

    #[test]
    fn a_bad_message_of_a_batch_is_named_once() {
        let err = messages_from_text(
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"robot\",\"content\":\"b\"}\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid input: line 2: unknown role 'robot' (expected system, user, assistant or tool)"
        );
        let err = messages_from_text("{\"role\":\"user\"}\n{oops\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid input: line 2: malformed JSON"),
            "{err}"
        );
        let err = messages_from_list(&json!([{"role": "user"}, {"role": "robot"}])).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid input: message 2: unknown role"),
            "{err}"
        );
    }

    /// Found by fuzzing (json_messages): numbers were read with serde_json's fast float
    /// parsing, which can miss the nearest double by one bit, so a number written back and read
    /// again came out different and a message changed (and got a new id) on each round trip.
    #[test]
    fn numbers_survive_the_neutral_form() {
        for n in [
            "1111111111111111111111",
            "111111111111111111111111111111111",
            "11111111111111111111111111111111111111111111",
            "111111111.1111111111",
        ] {
            let text =
                format!(r#"{{"role":"user","content":"x","metadata":{{"n":{n}}},"parsed":[{n}]}}"#);
            let m = message_from_str(&text).unwrap();
            let again = message_from_json(&message_to_json(&m)).unwrap();
            assert_eq!(again, m, "{n}");
        }
    }

    #[test]
    fn parts_round_trip_through_neutral_form() {
        let v = json!({"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:x"}}
        ]});
        let m = message_from_json(&v).unwrap();
        assert_eq!(message_from_json(&message_to_json(&m)).unwrap(), m);
    }
}
