//! tract's own JSONL: neutral messages (as `tract add --json` takes them), or commits as
//! `tract export --format jsonl` writes them ([`commit_line`]), read back to identical ids.

use crate::error::Result;
use crate::formats::transcript::steps::{Format, Transcript, bad, message_step, reason_of};
use crate::id::{BlobId, CommitId};
use crate::json::{message_from_json, message_from_transcript_json, message_to_json};
use crate::object::{Commit, Message, Op};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// tract's JSONL: every line a neutral message, or every line a commit.
pub(super) fn jsonl(values: &[(usize, Value)]) -> Result<Transcript> {
    let commits = values.first().is_some_and(|(_, v)| v.get("op").is_some());
    if !commits {
        let mut steps = Vec::with_capacity(values.len());
        for (line, v) in values {
            if v.get("op").is_some() {
                return Err(bad(*line, "a commit line among message lines"));
            }
            // Lines of messages are often another program's chat log: a field tract does not
            // know is kept, as for an OpenAI transcript.
            let message = message_from_transcript_json(v).map_err(|e| bad(*line, reason_of(e)))?;
            steps.push(message_step(message, *line));
        }
        return Ok(Transcript::of_steps(Format::Jsonl, steps));
    }
    let mut out = Vec::with_capacity(values.len());
    for (line, v) in values {
        out.push(commit_from_line(v).map_err(|r| bad(*line, r))?);
    }
    Ok(Transcript::Commits(out))
}

/// One exported commit as a JSON line: its id, parents, operation, timestamp, note and the
/// message it carries (neutral form).
pub fn commit_line(id: CommitId, c: &Commit, message: Option<&Message>) -> Value {
    let ids = |v: &[CommitId]| Value::Array(v.iter().map(|i| i.to_hex().into()).collect());
    let mut o = Map::new();
    o.insert("id".into(), id.to_hex().into());
    o.insert("parents".into(), ids(&c.parents));
    o.insert("op".into(), c.op.name().into());
    match &c.op {
        Op::Append => {}
        Op::Edit { target } => {
            o.insert("target".into(), target.to_hex().into());
        }
        Op::Record { kind } => {
            o.insert("kind".into(), kind.clone().into());
        }
        Op::Compress {
            sources,
            preserved,
            summarizer,
            params,
        } => {
            o.insert("sources".into(), ids(sources));
            o.insert("preserved".into(), ids(preserved));
            o.insert("summarizer".into(), summarizer.clone().into());
            o.insert(
                "params".into(),
                serde_json::to_value(params).unwrap_or_default(),
            );
        }
        Op::Merge {
            base,
            branch,
            strategy,
            summarizer,
        } => {
            o.insert("base".into(), base.to_hex().into());
            o.insert("branch".into(), branch.clone().into());
            match strategy {
                crate::object::MergeStrategy::Append => {
                    o.insert("strategy".into(), "append".into());
                }
                crate::object::MergeStrategy::ToolResult { call_id } => {
                    o.insert("strategy".into(), "tool_result".into());
                    o.insert("call_id".into(), call_id.clone().into());
                }
            }
            if let Some(s) = summarizer {
                o.insert("summarizer".into(), s.clone().into());
            }
        }
    }
    o.insert("timestamp_us".into(), c.timestamp_us.into());
    if let Some(note) = &c.message {
        o.insert("note".into(), note.clone().into());
    }
    if let Some(m) = message {
        o.insert("message".into(), message_to_json(m));
    }
    Value::Object(o)
}

fn commit_from_line(v: &Value) -> std::result::Result<(CommitId, Commit, Option<Message>), String> {
    let id_at = |key: &str| -> std::result::Result<CommitId, String> {
        v.get(key)
            .and_then(Value::as_str)
            .and_then(CommitId::from_hex)
            .ok_or_else(|| format!("'{key}' must be a full commit id"))
    };
    let ids_at = |key: &str| -> std::result::Result<Vec<CommitId>, String> {
        match v.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(list)) => list
                .iter()
                .map(|x| {
                    x.as_str()
                        .and_then(CommitId::from_hex)
                        .ok_or_else(|| format!("'{key}' must list full commit ids"))
                })
                .collect(),
            Some(_) => Err(format!("'{key}' must be a list")),
        }
    };
    let string_at = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let id = id_at("id")?;
    let op = match v.get("op").and_then(Value::as_str) {
        Some("append") => Op::Append,
        Some("edit") => Op::Edit {
            target: id_at("target")?,
        },
        Some("compress") => Op::Compress {
            sources: ids_at("sources")?,
            preserved: ids_at("preserved")?,
            summarizer: string_at("summarizer").ok_or("a compress needs its 'summarizer'")?,
            params: match v.get("params") {
                None => BTreeMap::new(),
                Some(p) => serde_json::from_value(p.clone())
                    .map_err(|_| "'params' must map names to strings".to_string())?,
            },
        },
        Some("merge") => Op::Merge {
            base: id_at("base")?,
            branch: string_at("branch").ok_or("a merge needs its 'branch'")?,
            strategy: match v.get("strategy").and_then(Value::as_str) {
                Some("append") => crate::object::MergeStrategy::Append,
                Some("tool_result") => crate::object::MergeStrategy::ToolResult {
                    call_id: string_at("call_id").ok_or("a tool_result merge needs 'call_id'")?,
                },
                _ => return Err("'strategy' must be append or tool_result".into()),
            },
            summarizer: string_at("summarizer"),
        },
        Some("record") => {
            let kind = string_at("kind").ok_or("a record needs its 'kind'")?;
            crate::object::check_record_kind(&kind).map_err(reason_of)?;
            Op::Record { kind }
        }
        Some(other) => return Err(format!("unknown op '{other}'")),
        None => return Err("'op' must be a string".into()),
    };
    let message = match v.get("message") {
        None | Some(Value::Null) => None,
        Some(m) => Some(message_from_json(m).map_err(reason_of)?),
    };
    let blob: Option<BlobId> = match &message {
        Some(m) => Some(m.id().map_err(reason_of)?),
        None => None,
    };
    let commit = Commit {
        parents: ids_at("parents")?,
        op,
        blob,
        timestamp_us: v
            .get("timestamp_us")
            .and_then(Value::as_u64)
            .ok_or("'timestamp_us' must be a whole number")?,
        message: string_at("note"),
    };
    let computed = commit.id().map_err(reason_of)?;
    if computed != id {
        return Err(format!(
            "the commit's fields hash to {}, not to its id {}: the line was changed",
            computed.short(),
            id.short()
        ));
    }
    Ok((id, commit, message))
}
