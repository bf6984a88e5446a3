//! OpenAI Responses transcripts: items, or request bodies holding `input` (and
//! `instructions`), each item read as [`crate::formats::responses`] reads it.

use crate::error::Result;
use crate::formats::responses;
use crate::formats::transcript::steps::{Step, bad, message_step, reason_of, remember_calls};
use crate::object::{Message, Role};
use serde_json::Value;
use std::collections::HashMap;

/// OpenAI Responses: items (or request bodies holding `input`, with `instructions`).
pub(super) fn openai_responses(values: &[(usize, Value)]) -> Result<Vec<Step>> {
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

/// Whether `v` is a Responses item: typed as one, or holding `input_*`/`output_*` parts.
pub(super) fn is_responses_item(v: &Value) -> bool {
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
