//! Reading what `tract add` and `tract edit` are given.

use serde_json::Value;
use std::io::Read;
use tract_core::json::{message_from_json, tool_calls_from_json};
use tract_core::{Error, Message, Role};

/// `text`, or all of standard input when it is `-`.
pub fn text_or_stdin(text: &str) -> Result<String, Error> {
    if text != "-" {
        return Ok(text.to_string());
    }
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .map_err(|source| Error::Io {
            path: "<stdin>".into(),
            source,
        })?;
    Ok(s)
}

/// Messages from JSON text: one object, a list of objects, or JSONL (one object a line).
/// Any bad message is an error naming it, so nothing of a bad stream is committed.
pub fn messages_from_json_text(text: &str) -> Result<Vec<Message>, Error> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(Error::InvalidInput {
            message: "no message JSON given".into(),
        });
    }
    // The whole text as one value first: a pretty-printed object spans several lines.
    if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        return match v {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, m)| message_from_json(m).map_err(|e| at("message", i + 1, e)))
                .collect(),
            other => Ok(vec![message_from_json(&other)?]),
        };
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| Error::InvalidInput {
            message: format!("line {}: malformed JSON: {e}", i + 1),
        })?;
        out.push(message_from_json(&v).map_err(|e| at("line", i + 1, e))?);
    }
    Ok(out)
}

fn at(what: &str, n: usize, e: Error) -> Error {
    match e {
        Error::InvalidInput { message } => Error::InvalidInput {
            message: format!("{what} {n}: {message}"),
        },
        other => other,
    }
}

/// A message from `--role R TEXT` and its flags.
pub fn message_from_flags(
    role: &str,
    text: String,
    name: Option<String>,
    tool_call_id: Option<String>,
    is_error: bool,
    tool_calls: Option<&str>,
) -> Result<Message, Error> {
    let mut m = Message::text(Role::parse(role)?, text);
    m.name = name;
    m.tool_call_id = tool_call_id;
    m.is_error = is_error;
    if let Some(raw) = tool_calls {
        let v: Value = serde_json::from_str(raw).map_err(|e| Error::InvalidInput {
            message: format!("--tool-calls: malformed JSON: {e}"),
        })?;
        m.tool_calls = tool_calls_from_json(&v)?;
    }
    m.validate()?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_object_list_and_jsonl() {
        let one =
            messages_from_json_text("{\n  \"role\": \"user\",\n  \"content\": \"hi\"\n}").unwrap();
        assert_eq!(one.len(), 1);
        let list = messages_from_json_text(
            r#"[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]"#,
        )
        .unwrap();
        assert_eq!(list.len(), 2);
        let jsonl = messages_from_json_text(
            "{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"assistant\",\"content\":\"b\"}\n",
        )
        .unwrap();
        assert_eq!(jsonl.len(), 2);
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = messages_from_json_text(
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"robot\",\"content\":\"b\"}\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = messages_from_json_text("{\"role\":\"user\"}\n{oops\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }
}
