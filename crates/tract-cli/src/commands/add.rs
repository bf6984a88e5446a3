//! `tract add`.

use crate::arguments::text_or_stdin;
use crate::context::Context;
use crate::error::CommandError;
use crate::notes::{NewBranch, note_scrubbed, note_unscrubbed};
use crate::ui::Ui;
use std::fmt::Write;
use tract_core::json::{messages_from_text, tool_calls_from_json};
use tract_core::{Message, RecordOptions, Role, Usage};

/// Append messages: `--role R TEXT`, or `--json` message objects (one, a list, or JSONL).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The message text, or `-` for standard input (a user or system message needs some).
    #[arg(required_unless_present_any = ["json", "response"])]
    text: Option<String>,
    /// The role: system, user, assistant or tool.
    #[arg(short, long, default_value = "user", conflicts_with = "json")]
    role: String,
    /// A tool result's tool name (or a participant name).
    #[arg(long, conflicts_with = "json")]
    name: Option<String>,
    /// The call a tool result answers.
    #[arg(long, conflicts_with = "json")]
    tool_call_id: Option<String>,
    /// Mark a tool result as an error.
    #[arg(long, conflicts_with = "json")]
    error: bool,
    /// An assistant message's tool calls, as a JSON list.
    #[arg(long, value_name = "JSON", conflicts_with = "json")]
    tool_calls: Option<String>,
    /// What an assistant message cost, as the provider reported it: a JSON object in
    /// Anthropic's names (input_tokens, output_tokens, cache_read_input_tokens,
    /// cache_creation_input_tokens) or OpenAI's (prompt_tokens, completion_tokens,
    /// prompt_tokens_details.cached_tokens), with model and request_id.
    #[arg(long, value_name = "JSON", conflicts_with = "json")]
    usage: Option<String>,
    /// Message JSON: an object, a list, or JSONL; `-` reads standard input. All or nothing.
    /// Fields: role, content, name, tool_calls, tool_call_id, is_error, usage, metadata (your
    /// own), and those of OpenAI's messages; any other is refused.
    #[arg(long, value_name = "JSON", conflicts_with = "text")]
    json: Option<String>,
    /// A provider's response body, as its API returned it (an OpenAI Chat Completions,
    /// OpenAI Responses or Anthropic Messages response; `-` reads standard input): the
    /// messages it answers with, the first assistant one with what it cost (its `usage`).
    #[arg(long, value_name = "JSON", conflicts_with_all = ["text", "json", "role", "usage", "tool_calls"])]
    response: Option<String>,
}

/// Runs `tract add`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    note_unscrubbed(ui, &t)?;
    let new_branch = NewBranch::of_flag(ctx, &t)?;
    let messages = match (&a.json, &a.text) {
        _ if a.response.is_some() => {
            let text = text_or_stdin(a.response.as_deref().unwrap_or_default())?;
            let body: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                CommandError::invalid_input(format!("--response: malformed JSON: {e}"))
            })?;
            tract_core::formats::response_body::messages_of(&body)?
        }
        (Some(json), _) => messages_from_text(&text_or_stdin(json)?)?,
        (None, Some(text)) => vec![from_flags(a, text_or_stdin(text)?)?],
        (None, None) => {
            return Err(CommandError::invalid_input(
                "give the message TEXT or --json",
            ));
        }
    };
    // One transaction, whatever the count: a stream with a bad message commits nothing. Tool
    // results go through the store's tool-summarization policy.
    for outcome in t.append_batch_with_policy(messages, &RecordOptions::default())? {
        let _ = writeln!(ui, "{}", outcome.original.id.short());
        note_scrubbed(
            ui,
            &outcome.original.id.short(),
            outcome.original.message.as_deref(),
        );
        if let Some(big) = tract_core::tokens::too_large(outcome.original.token_count) {
            ui.warning(&format!("message {}: {big}", outcome.original.id.short()));
        }
        for w in &outcome.warnings {
            ui.warning(w);
        }
        if let Some(edit) = &outcome.replacement {
            let how = edit.commit.message.as_deref().unwrap_or("edited");
            let tool = outcome
                .original
                .message
                .as_ref()
                .and_then(|m| m.name.as_deref())
                .unwrap_or("tool");
            ui.note(&format!(
                "the {tool} result {} was {how}; the model sees edit {} ({} → {})",
                outcome.original.id.short(),
                edit.id.short(),
                outcome.original.token_count,
                crate::render::count(edit.token_count.into(), "token", "tokens"),
            ));
        }
    }
    if let Some(b) = new_branch {
        b.report(&t, ui)?;
    }
    Ok(())
}

/// The message `--role R TEXT` and its flags describe.
fn from_flags(a: &Args, text: String) -> Result<Message, CommandError> {
    let mut m = Message::text(Role::parse(&a.role)?, text);
    m.name = a.name.clone();
    m.tool_call_id = a.tool_call_id.clone();
    m.is_error = a.error;
    if let Some(raw) = &a.tool_calls {
        let v: serde_json::Value = serde_json::from_str(raw).map_err(|e| {
            CommandError::invalid_input(format!("--tool-calls: malformed JSON: {e}"))
        })?;
        m.tool_calls = tool_calls_from_json(&v)?;
    }
    if let Some(raw) = &a.usage {
        let v: serde_json::Value = serde_json::from_str(raw)
            .map_err(|e| CommandError::invalid_input(format!("--usage: malformed JSON: {e}")))?;
        Usage::from_json(&v)?.put_on(&mut m)?;
    }
    m.validate()?;
    Ok(m)
}
