//! OpenAI Chat Completions transcripts: message objects, or request bodies holding `messages`.

use crate::error::Result;
use crate::formats::transcript::steps::{
    Step, bad, message_step, name_result, reason_of, remember_calls,
};
use crate::json::message_from_transcript_json;
use serde_json::Value;
use std::collections::HashMap;

/// OpenAI Chat: message objects (or request bodies holding `messages`). `developer` is a
/// system message; a tool result takes its call's tool name.
pub(super) fn openai(values: &[(usize, Value)]) -> Result<Vec<Step>> {
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
            let mut message =
                message_from_transcript_json(&m).map_err(|e| bad(*line, reason_of(e)))?;
            remember_calls(&mut names, &message);
            name_result(&names, &mut message);
            out.push(message_step(message, *line));
        }
    }
    Ok(out)
}

/// Whether `v` lists tool calls as OpenAI Chat writes them (each with its `function`).
pub(super) fn is_wire_calls(v: &Value) -> bool {
    v.as_array()
        .is_some_and(|calls| calls.iter().any(|c| c.get("function").is_some()))
}
