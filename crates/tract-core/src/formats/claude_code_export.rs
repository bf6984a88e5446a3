//! A view written as a Claude Code session file (`tract export --format claude-code`): one
//! JSON line per message of the view as Anthropic's Messages API is sent it (consecutive
//! messages of one role are one line, tool results in the user line after their call), each
//! line's `parentUuid` the line before, so Claude Code's reader (the Claude Agent SDK's
//! `get_session_messages`) reads back exactly the view, and `claude --resume ID` continues it.
//!
//! Claude Code keeps its own system prompt out of its session files: a system message of the
//! view cannot be written, and is named in the warnings instead. A call with no recorded result
//! gets the synthetic error result `compile` sends, so the session stays one the API takes.

use crate::error::{Error, Result};
use crate::formats::compile::{Compiled, Sent, anthropic_piece};
use crate::id::CommitId;
use crate::object::Role;
use crate::usage::Usage;
use serde_json::{Map, Value, json};

/// What a Claude Code session file is written with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaudeCodeExport {
    /// The session's id (a UUID); `None`: one derived from the view's head, so the same view
    /// always gets the same id, and another view (a fork, a rewind) another.
    pub session_id: Option<String>,
    /// The working directory the session is of (Claude Code's `cwd`, and its project folder's
    /// key).
    pub cwd: String,
}

/// A session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeCodeFile {
    /// Its session id.
    pub session_id: String,
    /// Its lines, each a JSON object and a newline.
    pub text: String,
    /// How many messages (lines) it holds.
    pub lines: usize,
    /// The messages of the view it could not hold, each named.
    pub warnings: Vec<String>,
}

/// Whether `id` is a UUID as Claude Code's reader takes one (8-4-4-4-12 hex digits).
pub fn is_uuid(id: &str) -> bool {
    let parts: Vec<&str> = id.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A UUID (version 4's layout) made from the BLAKE3 of `parts`: the same for the same parts.
fn uuid_of(parts: &[&[u8]]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"tract claude-code export\0");
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let mut b = [0u8; 16];
    b.copy_from_slice(&h.finalize().as_bytes()[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// One piece of a line: its blocks, the message's position (`None` for a synthetic result),
/// its usage and its time.
struct Piece {
    blocks: Value,
    position: Option<CommitId>,
    usage: Option<Usage>,
    timestamp_us: u64,
}

/// `compiled` (the view at `head`) as a Claude Code session file.
pub(crate) fn write(compiled: &Compiled, o: &ClaudeCodeExport) -> Result<ClaudeCodeFile> {
    let session_id = match &o.session_id {
        Some(id) if is_uuid(id) => id.to_ascii_lowercase(),
        Some(id) => {
            return Err(Error::invalid_input(format!(
                "--session-id '{id}' is not a UUID (8-4-4-4-12 hex digits), as Claude Code names \
                 its sessions"
            )));
        }
        None => match compiled.head() {
            Some(head) => uuid_of(&[b"session", head.as_bytes()]),
            None => {
                return Err(Error::invalid_input(
                    "the branch has no messages: there is no session to write",
                ));
            }
        },
    };
    compiled.read(compiled.entries())?;
    let mut warnings = Vec::new();
    let layout = compiled.anthropic_layout(
        |s| -> Result<Piece> {
            let m = compiled.sent_message(s)?;
            Ok(match s {
                Sent::InView(e) => Piece {
                    blocks: anthropic_piece(&m),
                    position: Some(e.position),
                    usage: Usage::of(&m).ok().flatten(),
                    timestamp_us: e.origin.timestamp_us,
                },
                Sent::Synthetic(_) => Piece {
                    blocks: anthropic_piece(&m),
                    position: None,
                    usage: None,
                    timestamp_us: 0,
                },
            })
        },
        |p| {
            p.as_ref()
                .is_ok_and(|p| p.blocks.as_array().is_some_and(Vec::is_empty))
        },
    );
    for (k, p) in layout.system.into_iter().enumerate() {
        let p = p?;
        let at = p.position.map(|c| c.short()).unwrap_or_default();
        warnings.push(format!(
            "system message {} ({at}) is not written: Claude Code keeps its own system prompt \
             out of its session files",
            k + 1
        ));
    }
    let mut text = String::new();
    let mut parent: Option<String> = None;
    let mut last_time = 0u64;
    let mut lines = 0usize;
    for (role, pieces) in layout.messages {
        let pieces = pieces.into_iter().collect::<Result<Vec<_>>>()?;
        let mut blocks = Vec::new();
        let mut first = None;
        let mut usage = None;
        let mut time = last_time;
        for p in &pieces {
            if let Value::Array(b) = &p.blocks {
                blocks.extend(b.iter().cloned());
            }
            first = first.or(p.position);
            usage = usage.or_else(|| p.usage.clone());
            time = time.max(p.timestamp_us);
        }
        last_time = time;
        let anchor = match first {
            Some(c) => c.to_hex(),
            None => format!("synthetic after {}", parent.clone().unwrap_or_default()),
        };
        let uuid = uuid_of(&[session_id.as_bytes(), anchor.as_bytes()]);
        let mut line = Map::new();
        line.insert(
            "parentUuid".into(),
            parent.clone().map_or(Value::Null, Value::from),
        );
        line.insert("isSidechain".into(), false.into());
        line.insert("userType".into(), "external".into());
        line.insert("cwd".into(), o.cwd.clone().into());
        line.insert("sessionId".into(), session_id.clone().into());
        line.insert(
            "type".into(),
            match role {
                Role::Assistant => "assistant",
                _ => "user",
            }
            .into(),
        );
        let message = match role {
            Role::Assistant => {
                let u = usage.unwrap_or_default();
                if let Some(r) = &u.request_id {
                    line.insert("requestId".into(), r.clone().into());
                }
                json!({
                    "id": format!("msg_tract_{}", &uuid.replace('-', "")[..24]),
                    "type": "message",
                    "role": "assistant",
                    "model": u.model.clone().unwrap_or_else(|| "unknown".into()),
                    "content": blocks,
                    "stop_reason": Value::Null,
                    "stop_sequence": Value::Null,
                    "usage": {
                        "input_tokens": u.input_tokens,
                        "output_tokens": u.output_tokens,
                        "cache_read_input_tokens": u.cache_read_input_tokens,
                        "cache_creation_input_tokens": u.cache_creation_input_tokens,
                    },
                })
            }
            _ => json!({"role": "user", "content": blocks}),
        };
        line.insert("message".into(), message);
        line.insert("uuid".into(), uuid.clone().into());
        line.insert(
            "timestamp".into(),
            crate::clock::rfc3339_micros(time)
                .get(..23)
                .map(|t| format!("{t}Z"))
                .unwrap_or_default()
                .into(),
        );
        text.push_str(&Value::Object(line).to_string());
        text.push('\n');
        parent = Some(uuid);
        lines += 1;
    }
    Ok(ClaudeCodeFile {
        session_id,
        text,
        lines,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_stable_and_well_formed() {
        let a = uuid_of(&[b"x", b"y"]);
        assert_eq!(a, uuid_of(&[b"x", b"y"]));
        assert_ne!(a, uuid_of(&[b"xy"]));
        assert!(is_uuid(&a), "{a}");
        assert_eq!(&a[14..15], "4");
        assert!(!is_uuid("not-a-uuid"));
        assert!(!is_uuid("550e8400-e29b-41d4-a716-44665544000g"));
        assert!(is_uuid("550e8400-e29b-41d4-a716-446655440000"));
    }
}
