//! A provider's response body as the messages it answers with, carrying what it cost: an
//! OpenAI Chat Completions response (`"object": "chat.completion"`: its first choice's
//! message), an OpenAI Responses response (`"object": "response"`: its `output` items) or an
//! Anthropic Messages response (`"type": "message"`). The body's `usage` (with its `model`, and
//! its `id` as the request's) goes on the first assistant message, read as [`Usage::from_json`]
//! reads it, in Anthropic's names.

use crate::error::{Error, Result};
use crate::formats::responses;
use crate::formats::transcript::anthropic::anthropic_message;
use crate::object::{Message, Role};
use crate::usage::Usage;
use serde_json::Value;
use std::collections::HashMap;

/// Which provider's response a body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    OpenAiChat,
    OpenAiResponses,
    Anthropic,
}

/// The kind of `body`, told by its own marks (`object`, `type`), else by its fields.
fn kind(body: &serde_json::Map<String, Value>) -> Result<Kind> {
    let text = |k: &str| body.get(k).and_then(Value::as_str);
    match (text("object"), text("type")) {
        (Some("chat.completion"), _) => Ok(Kind::OpenAiChat),
        (Some("response"), _) => Ok(Kind::OpenAiResponses),
        (_, Some("message")) => Ok(Kind::Anthropic),
        _ if body.contains_key("choices") => Ok(Kind::OpenAiChat),
        _ if body.contains_key("output") => Ok(Kind::OpenAiResponses),
        _ => Err(Error::invalid_input(
            "not a response body: give an OpenAI Chat Completions response (\"object\": \
             \"chat.completion\"), an OpenAI Responses response (\"object\": \"response\") or \
             an Anthropic Messages response (\"type\": \"message\")",
        )),
    }
}

/// The messages `body` answers with, the first assistant one carrying the body's usage.
/// Nothing is returned for a body that does not read (so nothing is appended).
pub fn messages_of(body: &Value) -> Result<Vec<Message>> {
    let obj = body
        .as_object()
        .ok_or_else(|| Error::invalid_input("a response body must be a JSON object"))?;
    let mut messages = match kind(obj)? {
        Kind::OpenAiChat => {
            let choice = obj
                .get("choices")
                .and_then(Value::as_array)
                .and_then(|c| c.first())
                .ok_or_else(|| Error::invalid_input("the response has no choices"))?;
            let m = choice
                .get("message")
                .ok_or_else(|| Error::invalid_input("the response's choice has no message"))?;
            vec![crate::json::message_from_transcript_json(m)?]
        }
        Kind::OpenAiResponses => {
            let items = obj
                .get("output")
                .and_then(Value::as_array)
                .ok_or_else(|| Error::invalid_input("the response has no output list"))?;
            responses::messages_from_items(items, &HashMap::new())?
        }
        Kind::Anthropic => anthropic_message(body, &HashMap::new())
            .map_err(|e| Error::invalid_input(format!("the response's message: {e}")))?,
    };
    if let Some(raw) = obj.get("usage").filter(|u| !u.is_null()) {
        let mut usage = Usage::from_json(raw)?;
        let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
        usage.model = usage.model.or_else(|| text("model"));
        usage.request_id = usage.request_id.or_else(|| text("id"));
        let first = messages
            .iter_mut()
            .find(|m| m.role == Role::Assistant)
            .ok_or_else(|| {
                Error::invalid_input("the response has usage but no assistant message to carry it")
            })?;
        usage.put_on(first)?;
    }
    if messages.is_empty() {
        return Err(Error::invalid_input("the response holds no message"));
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cost(m: &Message) -> Usage {
        Usage::of(m).unwrap().unwrap()
    }

    #[test]
    fn each_providers_response_gives_its_messages_and_what_they_cost() {
        let chat = messages_of(&json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null, "refusal": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "grep", "arguments": "{\"q\":\"x\"}"}}]}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020,
                "prompt_tokens_details": {"cached_tokens": 900}}
        }))
        .unwrap();
        assert_eq!(chat.len(), 1);
        assert_eq!(chat[0].tool_calls[0].name, "grep");
        let u = cost(&chat[0]);
        assert_eq!((u.input_tokens, u.cache_read_input_tokens), (100, 900));
        assert_eq!(
            (u.model.as_deref(), u.request_id.as_deref()),
            (Some("gpt-4.1"), Some("chatcmpl-1"))
        );

        let anthropic = messages_of(&json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Reading it."},
                        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"p": 1}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 4, "output_tokens": 60, "cache_read_input_tokens": 20000,
                      "cache_creation_input_tokens": 300}
        }))
        .unwrap();
        assert_eq!(anthropic[0].tool_calls[0].id, "toolu_1");
        assert_eq!(cost(&anthropic[0]).cache_creation_input_tokens, 300);

        let responses = messages_of(&json!({
            "id": "resp_1", "object": "response", "model": "gpt-5",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}],
            "usage": {"input_tokens": 500, "output_tokens": 9, "total_tokens": 509,
                      "input_tokens_details": {"cached_tokens": 256},
                      "output_tokens_details": {"reasoning_tokens": 4}}
        }))
        .unwrap();
        assert_eq!(responses.len(), 2);
        let carrying: Vec<bool> = responses
            .iter()
            .map(|m| Usage::of(m).unwrap().is_some())
            .collect();
        assert_eq!(carrying.iter().filter(|c| **c).count(), 1);
        let u = responses
            .iter()
            .find_map(|m| Usage::of(m).unwrap())
            .unwrap();
        assert_eq!((u.input_tokens, u.cache_read_input_tokens), (244, 256));
    }

    #[test]
    fn a_body_that_does_not_read_gives_nothing() {
        for bad in [
            json!([]),
            json!({"hello": 1}),
            json!({"object": "chat.completion", "choices": []}),
            json!({"type": "message", "role": "assistant", "content": "x",
                   "usage": {"input_tokens": -1, "output_tokens": 1}}),
            json!({"object": "response", "output": []}),
        ] {
            assert!(
                matches!(
                    messages_of(&bad),
                    Err(Error::InvalidInput { .. } | Error::InvalidMessage { .. })
                ),
                "{bad}"
            );
        }
    }
}
