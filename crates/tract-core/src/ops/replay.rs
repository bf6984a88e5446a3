//! What a replay needs besides the model (`tract replay`, [`crate::Tract::replay`]): the
//! recording of a session (the results its tool calls got, matched by tool and canonical
//! arguments, and the user messages it was sent), the tools offered to the new model (given, or
//! inferred from the recorded calls), and what a replay reports.
//!
//! A call is matched by its tool's name and its arguments made canonical: parsed as JSON,
//! objects' keys sorted, a number with no fraction written as an integer. The k-th call of one
//! tool with the same arguments gets the k-th result the recording holds for them (the last one
//! once they run out); a call the recording has no result for is a divergence.

use crate::error::{Error, Result};
use crate::object::{Message, Role};
use crate::summarize::llm::Api;
use crate::usage::Totals;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// The record kind a replay's branch starts with: what it replays, from where, on which model.
pub const REPLAY_RECORD_KIND: &str = "tract.replay";

/// A tool offered to the model: its name, what it does and its arguments' JSON schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDef {
    /// The tool's name.
    pub name: String,
    /// What it does, when the definition says.
    pub description: Option<String>,
    /// Its arguments' JSON schema (an object's).
    pub parameters: Value,
}

impl ToolDef {
    /// The definition as `api` takes it in a request's `tools`.
    pub fn to_api(&self, api: Api) -> Value {
        let mut out = match api {
            Api::ChatCompletions => {
                let mut f = json!({"name": self.name, "parameters": self.parameters});
                if let Some(d) = &self.description {
                    f["description"] = json!(d);
                }
                return json!({"type": "function", "function": f});
            }
            Api::Messages => json!({"name": self.name, "input_schema": self.parameters}),
        };
        if let Some(d) = &self.description {
            out["description"] = json!(d);
        }
        out
    }

    /// The definitions a tools file holds: a list (or `{"tools": [...]}`) of OpenAI function
    /// tools (`{"type": "function", "function": {...}}`, or the bare function) or Anthropic
    /// tools (`{"name", "input_schema"}`).
    pub fn parse_all(file: &Value) -> Result<Vec<ToolDef>> {
        let list = match file {
            Value::Array(a) => a,
            Value::Object(o) => o.get("tools").and_then(Value::as_array).ok_or_else(|| {
                Error::invalid_input("a tools file holds a list of tool definitions")
            })?,
            _ => {
                return Err(Error::invalid_input(
                    "a tools file holds a list of tool definitions",
                ));
            }
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, t) in list.iter().enumerate() {
            let wrong = |what: &str| Error::invalid_input(format!("tool definition {i}: {what}"));
            let f = t.get("function").unwrap_or(t);
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| wrong("it has no name"))?;
            let parameters = f
                .get("parameters")
                .or_else(|| f.get("input_schema"))
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            if !parameters.is_object() {
                return Err(wrong("its parameters are not a JSON schema object"));
            }
            out.push(ToolDef {
                name: name.to_string(),
                description: f
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                parameters,
            });
        }
        Ok(out)
    }

    /// Definitions inferred from recorded calls (each tool's name and arguments, in the order
    /// they were made): one per tool, in the order first called, its schema an object whose
    /// properties are every argument seen, typed by the values seen, and required when every
    /// call gave it.
    pub fn infer(calls: &[(String, String)]) -> Vec<ToolDef> {
        let mut order: Vec<&str> = Vec::new();
        let mut seen: HashMap<&str, Vec<Option<Map<String, Value>>>> = HashMap::new();
        for (name, args) in calls {
            let entry = seen.entry(name.as_str()).or_insert_with(|| {
                order.push(name.as_str());
                Vec::new()
            });
            let parsed = serde_json::from_str::<Value>(args).ok();
            entry.push(match parsed {
                Some(Value::Object(o)) => Some(o),
                _ => None,
            });
        }
        order
            .into_iter()
            .map(|name| {
                let objects: Vec<&Map<String, Value>> =
                    seen[name].iter().filter_map(Option::as_ref).collect();
                let mut keys: Vec<&String> = Vec::new();
                for o in &objects {
                    for k in o.keys() {
                        if !keys.contains(&k) {
                            keys.push(k);
                        }
                    }
                }
                let mut properties = Map::new();
                let mut required = Vec::new();
                for k in keys {
                    let values: Vec<&Value> = objects.iter().filter_map(|o| o.get(k)).collect();
                    if values.len() == objects.len() {
                        required.push(json!(k));
                    }
                    properties.insert(k.clone(), schema_of(&values));
                }
                ToolDef {
                    name: name.to_string(),
                    description: None,
                    parameters: json!({
                        "type": "object",
                        "properties": properties,
                        "required": required,
                    }),
                }
            })
            .collect()
    }
}

/// The JSON schema type values share (`{}` when they differ: any value).
fn schema_of(values: &[&Value]) -> Value {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let mut kinds: Vec<&str> = values.iter().map(|v| kind(v)).collect();
    kinds.sort_unstable();
    kinds.dedup();
    // Integers among other numbers are numbers.
    if kinds == ["integer", "number"] {
        kinds = vec!["number"];
    }
    match kinds.as_slice() {
        [one] => json!({"type": one}),
        _ => json!({}),
    }
}

/// `arguments` made canonical, so that two calls meaning the same compare equal: parsed as
/// JSON, objects' keys sorted, a number without a fraction written as an integer, no spaces.
/// Arguments that are not JSON are taken as their text, trimmed.
pub fn canonical_arguments(arguments: &str) -> String {
    fn norm(v: Value) -> Value {
        match v {
            Value::Object(o) => {
                let mut entries: Vec<(String, Value)> =
                    o.into_iter().map(|(k, v)| (k, norm(v))).collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().collect())
            }
            Value::Array(a) => Value::Array(a.into_iter().map(norm).collect()),
            Value::Number(n) => match n.as_f64() {
                Some(f) if !n.is_i64() && !n.is_u64() && f.fract() == 0.0 && f.abs() < 9e15 => {
                    // Exact: an integral float below 2^53.
                    json!(f as i64)
                }
                _ => Value::Number(n),
            },
            other => other,
        }
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(v) => {
            let v = norm(v);
            // Sorted by hand above: the text follows the map's order, whatever its kind.
            write_sorted(&v)
        }
        Err(_) => arguments.trim().to_string(),
    }
}

/// `v` as compact JSON text with every object's keys in sorted order.
fn write_sorted(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), write_sorted(&o[k])))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(a) => {
            let inner: Vec<String> = a.iter().map(write_sorted).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}

/// What a session recorded: each tool call's result by tool and canonical arguments, the
/// calls in order, and the user messages to send.
#[derive(Debug, Default)]
pub struct Recording {
    results: HashMap<(String, String), Vec<Message>>,
    used: HashMap<(String, String), usize>,
    /// Every call made, as (tool, arguments as written), in order.
    pub calls: Vec<(String, String)>,
}

impl Recording {
    /// The recording of a first-parent history, oldest first: results paired with the call
    /// before them that has their call id.
    pub fn of_history<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Recording {
        let mut r = Recording::default();
        let mut open: HashMap<String, (String, String)> = HashMap::new();
        for m in messages {
            match m.role {
                Role::Assistant => {
                    for c in &m.tool_calls {
                        r.calls.push((c.name.clone(), c.arguments.clone()));
                        open.insert(c.id.clone(), (c.name.clone(), c.arguments.clone()));
                    }
                }
                Role::Tool => {
                    let call = m.tool_call_id.as_deref().and_then(|id| open.remove(id));
                    if let Some((name, args)) = call {
                        r.results
                            .entry((name, canonical_arguments(&args)))
                            .or_default()
                            .push(m.clone());
                    }
                }
                Role::System | Role::User => {}
            }
        }
        r
    }

    /// The recorded result for the next call of `tool` with `arguments`, if the recording
    /// has one.
    pub fn take(&mut self, tool: &str, arguments: &str) -> Option<&Message> {
        let key = (tool.to_string(), canonical_arguments(arguments));
        let results = self.results.get(&key)?;
        let n = self.used.entry(key).or_default();
        let m = results.get(*n).or_else(|| results.last());
        *n += 1;
        m
    }
}

/// Where a replay's model called a tool the recording has no result for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The model's answer that made the call, counted from the fork point (1 for the first).
    pub step: u64,
    /// The tool called.
    pub tool: String,
    /// Its arguments as the model wrote them.
    pub arguments: String,
    /// The call's id.
    pub call_id: String,
}

/// What a replay did.
#[derive(Debug, Clone, Default)]
pub struct ReplayOutcome {
    /// The branch replayed.
    pub original: String,
    /// The replay's branch.
    pub branch: String,
    /// The commit the replay's branch was forked at.
    pub from: Option<crate::id::CommitId>,
    /// Requests made to the model (this run).
    pub requests: u64,
    /// Tool calls answered from the recording (this run).
    pub matched: u64,
    /// Tool calls the divergence hook answered (this run).
    pub answered_by_hook: u64,
    /// Recorded user messages sent so far, of `users_total`.
    pub users_sent: u64,
    /// The recorded user messages after the fork point.
    pub users_total: u64,
    /// The first call the recording had no result for, where the replay stopped.
    pub divergence: Option<Divergence>,
    /// Whether every recorded user message was sent and the model's last answer called no
    /// tool.
    pub finished: bool,
    /// Whether it stopped at the request limit.
    pub stopped_at_limit: bool,
    /// What the requests cost, as the answers' usage says (this run).
    pub usage: Totals,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ToolCall;

    #[test]
    fn arguments_meaning_the_same_are_one() {
        assert_eq!(
            canonical_arguments(r#"{"b": 1.0, "a": [2, {"y": 1, "x": 2.5}]}"#),
            r#"{"a":[2,{"x":2.5,"y":1}],"b":1}"#
        );
        assert_eq!(
            canonical_arguments(r#"{"a":[2,{"x":2.5,"y":1}],"b":1}"#),
            canonical_arguments(r#" { "b" : 1, "a" : [ 2, { "y" : 1.0, "x" : 2.5 } ] } "#)
        );
        assert_ne!(
            canonical_arguments(r#"{"a":1}"#),
            canonical_arguments(r#"{"a":"1"}"#)
        );
        assert_eq!(canonical_arguments("  not json "), "not json");
    }

    #[test]
    fn results_come_back_in_the_order_they_were_recorded() {
        let call = |id: &str, args: &str| {
            let mut m = Message::text(Role::Assistant, "");
            m.tool_calls = vec![ToolCall {
                id: id.into(),
                name: "ls".into(),
                arguments: args.into(),
            }];
            m
        };
        let result = |id: &str, text: &str| {
            let mut m = Message::text(Role::Tool, text);
            m.tool_call_id = Some(id.into());
            m.name = Some("ls".into());
            m
        };
        let history = [
            call("1", r#"{"path": "."}"#),
            result("1", "a b"),
            call("2", r#"{"path":"."}"#),
            result("2", "a b c"),
        ];
        let mut r = Recording::of_history(&history);
        let text = |m: Option<&Message>| m.map(|m| m.content.text().into_owned());
        assert_eq!(
            text(r.take("ls", r#"{ "path" : "." }"#)),
            Some("a b".into())
        );
        assert_eq!(text(r.take("ls", r#"{"path":"."}"#)), Some("a b c".into()));
        assert_eq!(text(r.take("ls", r#"{"path":"."}"#)), Some("a b c".into()));
        assert!(r.take("ls", r#"{"path":"src"}"#).is_none());
        assert!(r.take("cat", r#"{"path":"."}"#).is_none());
    }

    #[test]
    fn tools_are_inferred_from_their_calls_and_read_in_either_format() {
        let calls = vec![
            ("grep".to_string(), r#"{"q":"x","n":3}"#.to_string()),
            (
                "grep".to_string(),
                r#"{"q":"y","n":2.5,"i":true}"#.to_string(),
            ),
            ("ls".to_string(), "{}".to_string()),
        ];
        let tools = ToolDef::infer(&calls);
        assert_eq!(tools.len(), 2);
        assert_eq!(
            tools[0].parameters,
            json!({
                "type": "object",
                "properties": {
                    "q": {"type": "string"},
                    "n": {"type": "number"},
                    "i": {"type": "boolean"},
                },
                "required": ["q", "n"],
            })
        );
        let openai = tools[0].to_api(Api::ChatCompletions);
        let anthropic = tools[0].to_api(Api::Messages);
        assert_eq!(openai["function"]["name"], "grep");
        assert_eq!(anthropic["input_schema"], tools[0].parameters);
        let back = ToolDef::parse_all(&json!([openai, anthropic])).unwrap();
        assert_eq!(back, vec![tools[0].clone(), tools[0].clone()]);
        assert!(ToolDef::parse_all(&json!([{"description": "no name"}])).is_err());
        assert!(ToolDef::parse_all(&json!("tools")).is_err());
    }
}
