//! Anthropic Messages transcripts: request bodies (`system`, `messages`) or message objects,
//! content blocks as tract content (tool uses as calls, tool results as tool messages, other
//! blocks verbatim).

use crate::error::Result;
use crate::formats::transcript::steps::{Step, bad, message_step, reason_of, remember_calls};
use crate::object::{Content, ContentPart, Message, Role, ToolCall};
use serde_json::Value;
use std::collections::HashMap;

/// Anthropic Messages: request bodies (`system`, `messages`), or message objects.
pub(super) fn anthropic(values: &[(usize, Value)]) -> Result<Vec<Step>> {
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

/// Whether message `m` holds a block only Anthropic's content has (tool use and result,
/// thinking, a document, an image with a `source`).
pub(super) fn has_anthropic_blocks(m: &Value) -> bool {
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
