//! Transcripts other tools wrote, read as tract messages: Claude Code session JSONL, OpenAI
//! Chat messages or request bodies, OpenAI Responses items or request bodies, Anthropic
//! Messages request bodies, and tract's own JSONL (messages, or commits as `tract export`
//! writes them).
//!
//! Parsing is pure and complete before anything is written: a bad line is an error naming its
//! line, and nothing of the file is committed. Provider-native content (thinking blocks with
//! their signatures, images, documents) is kept verbatim as raw parts.
//!
//! This file reads a text or a file in the format named or detected; `steps` holds what a
//! transcript is read into, `values` the text as JSON values with their lines, and each format
//! has its file.

pub(crate) mod anthropic;
mod claude_code;
mod codex;
mod gemini;
mod openai_chat;
mod openai_responses;
mod rfc3339;
mod steps;
mod tract_jsonl;
mod values;

pub use crate::formats::transcript::claude_code::{
    CLAUDE_CODE_LINE_RECORD, NO_CLAUDE_CODE_LINE, agent_files_of, check_claude_code,
    claude_code_branch,
};
pub use crate::formats::transcript::codex::{CODEX_LINE_RECORD, codex_branch, codex_project_key};
pub use crate::formats::transcript::gemini::{GEMINI_RECORD, gemini_branch};
pub use crate::formats::transcript::steps::{Format, Step, Transcript};
pub use crate::formats::transcript::tract_jsonl::commit_line;

use crate::error::{Error, Result};
use crate::formats::transcript::anthropic::{anthropic, has_anthropic_blocks};
use crate::formats::transcript::claude_code::{read_agent_files, read_session};
use crate::formats::transcript::openai_chat::{is_wire_calls, openai};
use crate::formats::transcript::openai_responses::{is_responses_item, openai_responses};
use crate::formats::transcript::steps::bad;
use crate::formats::transcript::tract_jsonl::jsonl;
use crate::formats::transcript::values::Values;
use serde_json::Value;
use std::path::Path;

/// Reads a transcript; `format` `None` detects it.
pub fn parse(text: &str, format: Option<Format>) -> Result<Transcript> {
    let values = Values::read(text)?;
    let format = format_of(&values, format)?;
    parse_values(values, format, text)
}

/// Reads a transcript file; for a Claude Code session, also the sub-agent files Claude Code
/// keeps beside it (`<session>/subagents/agent-<id>.jsonl`, its internal compaction agents
/// left out).
pub fn parse_file(path: &Path, format: Option<Format>) -> Result<Transcript> {
    let text = read_text(path)?;
    parse_session(path, &text, format)
}

/// The text of a transcript file; a `.zst` file (a Codex rollout Codex compressed) is
/// decompressed whole first, and one cut short or damaged is an error naming the file.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path.to_path_buf(), e))?;
    text_of_file(path, bytes)
}

/// The text of the transcript file at `path`, from its `bytes` already read: decompressed for a
/// `.zst` file.
pub fn text_of_file(path: &Path, bytes: Vec<u8>) -> Result<String> {
    let bytes = match path.extension().and_then(|e| e.to_str()) {
        Some("zst") => zstd::stream::decode_all(bytes.as_slice()).map_err(|e| {
            bad(
                1,
                format!("the zstd-compressed file does not decompress whole: {e}"),
            )
            .in_file(path)
        })?,
        _ => bytes,
    };
    String::from_utf8(bytes)
        .map_err(|e| bad(1, format!("the file is not UTF-8 text: {e}")).in_file(path))
}

/// Reads the text of the transcript file at `path` (its sub-agent files, for a Claude Code
/// session, from beside it): what [`parse_file`] does with the file's text already read (up to
/// its last complete line, for a file being written).
pub fn parse_session(path: &Path, text: &str, format: Option<Format>) -> Result<Transcript> {
    let values = Values::read(text).map_err(|e| e.in_file(path))?;
    let format = format_of(&values, format).map_err(|e| e.in_file(path))?;
    if format != Format::ClaudeCode {
        return parse_values(values, format, text).map_err(|e| e.in_file(path));
    }
    let values = values.into_session(text);
    let agent_files = read_agent_files(path)?;
    read_session(&values, &agent_files).map_err(|e| e.in_file(path))
}

/// The format of `values`: `format` when named, else detected.
fn format_of(values: &Values, format: Option<Format>) -> Result<Format> {
    match format {
        Some(f) => Ok(f),
        None if values.values.is_empty() => match values.unreadable.first() {
            Some((line, reason)) => Err(bad(*line, reason.clone())),
            None => Err(bad(1, "the file holds no JSON value")),
        },
        None => detect(&values.values),
    }
}

/// The transcript in `format` (`text`: what was read, for a Claude Code session, which is
/// read line by line even where the whole text is one JSON document). Only Claude Code's
/// format skips lines that are not JSON, as Claude Code does.
fn parse_values(values: Values, format: Format, text: &str) -> Result<Transcript> {
    let steps = |steps| Ok(Transcript::of_steps(format, steps));
    match format {
        Format::ClaudeCode => read_session(&values.into_session(text), &[]),
        Format::OpenAi => steps(openai(&values.strict()?)?),
        Format::OpenAiResponses => steps(openai_responses(&values.strict()?)?),
        Format::Anthropic => steps(anthropic(&values.strict()?)?),
        Format::Jsonl => jsonl(&values.strict()?),
        Format::Codex => codex::read_rollout(&values),
        Format::Gemini => gemini::read_session(text),
    }
}

/// The format of a transcript, from its first value.
fn detect(values: &[(usize, Value)]) -> Result<Format> {
    let Some((_, first)) = values.first() else {
        return Err(bad(1, "the file holds no JSON value"));
    };
    let has = |k: &str| first.get(k).is_some();
    let kind = first.get("type").and_then(Value::as_str);
    // A Claude Code file may open with lines that carry no message (snapshots).
    let claude = values.iter().take(16).any(|(_, v)| {
        v.get("sessionId").is_some() || v.get("parentUuid").is_some() || v.get("leafUuid").is_some()
    });
    let format = if gemini::is_metadata(first) {
        Format::Gemini
    } else if codex::is_rollout(values) {
        Format::Codex
    } else if claude {
        Format::ClaudeCode
    } else if has("op") && has("id") {
        Format::Jsonl
    } else if has("input") || is_responses_item(first) {
        Format::OpenAiResponses
    } else if has("messages") {
        let messages = first.get("messages").and_then(Value::as_array);
        let anthropic_blocks = messages.is_some_and(|ms| ms.iter().any(has_anthropic_blocks));
        if has("system") || anthropic_blocks {
            Format::Anthropic
        } else {
            Format::OpenAi
        }
    } else if has("role") {
        // Anthropic's messages are the user's and the assistant's alone: a file with any other
        // role (tract's own export, whose tool results may hold Claude's blocks) is not its.
        let only_user_and_assistant = values.iter().all(|(_, v)| {
            matches!(
                v.get("role").and_then(Value::as_str),
                Some("user" | "assistant")
            )
        });
        if only_user_and_assistant && values.iter().any(|(_, v)| has_anthropic_blocks(v)) {
            Format::Anthropic
        } else if values.iter().any(|(_, v)| is_responses_item(v)) {
            Format::OpenAiResponses
        } else if values
            .iter()
            .any(|(_, v)| v.get("tool_calls").is_some_and(is_wire_calls))
        {
            Format::OpenAi
        } else {
            Format::Jsonl
        }
    } else {
        return Err(bad(
            values[0].0,
            format!(
                "cannot tell the format (a value of type {}); name it with --format",
                kind.unwrap_or("object")
            ),
        ));
    };
    Ok(format)
}

/// The branch a transcript read from `file` goes to by default: a Claude Code session's own
/// ([`claude_code_branch`], its project from its working directory, else from the folder the
/// file is in), else `import/<session id or file name>`, with what a branch name cannot hold
/// replaced by `-`.
pub fn default_branch(t: &Transcript, file: &Path) -> String {
    if let Transcript::Steps {
        format: Format::ClaudeCode,
        session,
        project,
        ..
    } = t
    {
        let folder = || {
            file.parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
        };
        let stem = || {
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let project = project
            .clone()
            .or_else(folder)
            .unwrap_or_else(|| "-".into());
        let session = session.clone().unwrap_or_else(stem);
        return claude_code_branch(&project, &session);
    }
    if let Transcript::Steps {
        format: Format::Codex,
        session: Some(session),
        project,
        ..
    } = t
    {
        return codex_branch(project.as_deref().unwrap_or("unknown"), session);
    }
    if let Transcript::Steps {
        format: Format::Gemini,
        session: Some(session),
        project,
        ..
    } = t
    {
        // Gemini CLI's folder for the project (`tmp/<project>/chats/<file>`), else the
        // beginning of the session's project hash.
        let folder = file
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == "chats"))
            .and_then(Path::parent)
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        let project = folder
            .or_else(|| project.clone())
            .unwrap_or_else(|| "unknown".into());
        return gemini_branch(&project, session);
    }
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match t {
        Transcript::Steps {
            session: Some(s), ..
        } => s.clone(),
        _ => stem,
    };
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("import/{}", clean.trim_matches('.'))
}
