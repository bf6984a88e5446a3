//! Writing a branch out: provider request bodies (OpenAI Chat, Anthropic Messages), tract's
//! JSONL (the view's messages; or, with history, every commit, which `tract import` reads
//! back to identical ids) and a Markdown transcript a person can read.

use crate::error::{Error, Result};
use crate::formats::compile::Compiled;
use crate::formats::transcript::commit_line;
use crate::id::CommitId;
use crate::json::message_to_json;
use crate::object::{Commit, Content, ContentPart, Message, Op, Role};
use crate::repo::Repo;
use std::collections::HashSet;
use std::fmt::Write;

/// What to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// The OpenAI Chat `messages` of the view.
    OpenAi,
    /// The Anthropic Messages body (`system`, `messages`) of the view.
    Anthropic,
    /// One JSON object a line: the view's messages, or every commit with `history`.
    Jsonl,
    /// A transcript to read: the view, or every commit with `history`.
    Markdown,
}

impl ExportFormat {
    /// The format named `name`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "openai" => Ok(ExportFormat::OpenAi),
            "anthropic" => Ok(ExportFormat::Anthropic),
            "jsonl" => Ok(ExportFormat::Jsonl),
            "markdown" => Ok(ExportFormat::Markdown),
            other => Err(Error::invalid_input(format!(
                "unknown export format '{other}' (openai, anthropic, jsonl, markdown)"
            ))),
        }
    }
}

pub(crate) fn export(repo: &Repo, format: ExportFormat, history: bool) -> Result<String> {
    let snap = repo.read()?;
    let head = repo.head(&snap)?;
    if history {
        let commits = match head.commit {
            Some(tip) => reachable(&snap, tip)?,
            None => Vec::new(),
        };
        let with_messages = commits
            .into_iter()
            .map(|(id, c)| {
                let m = match c.blob {
                    Some(b) => Some(snap.blob(&b)?.0),
                    None => None,
                };
                Ok((id, c, m))
            })
            .collect::<Result<Vec<_>>>()?;
        return match format {
            ExportFormat::Jsonl => Ok(with_messages
                .iter()
                .map(|(id, c, m)| format!("{}\n", commit_line(*id, c, m.as_ref())))
                .collect()),
            ExportFormat::Markdown => Ok(markdown_history(&with_messages)),
            ExportFormat::OpenAi | ExportFormat::Anthropic => Err(Error::invalid_input(
                "a request body holds the view only: history goes to jsonl or markdown",
            )),
        };
    }
    let compiled = repo.with_view(&snap, head.commit, |v| {
        Compiled::new(v, &repo.store, &repo.views)
    })?;
    let pretty = |v: &serde_json::Value| {
        serde_json::to_string_pretty(v)
            .map(|s| s + "\n")
            .map_err(|e| Error::invalid_input(e.to_string()))
    };
    match format {
        ExportFormat::OpenAi => pretty(&serde_json::json!({ "messages": compiled.to_openai()? })),
        ExportFormat::Anthropic => pretty(&compiled.to_anthropic()?),
        ExportFormat::Jsonl => Ok(compiled
            .messages()?
            .iter()
            .map(|m| format!("{}\n", message_to_json(&m.message)))
            .collect()),
        ExportFormat::Markdown => {
            let mut out = String::new();
            for m in compiled.messages()? {
                message_section(&mut out, &m.message, None);
            }
            Ok(out)
        }
    }
}

/// Every commit `tip` reaches (parents, edit targets, compress sources, merge bases), oldest
/// first: every commit is newer than what it links to.
fn reachable(
    snap: &crate::storage::store::snapshot::Snapshot,
    tip: CommitId,
) -> Result<Vec<(CommitId, Commit)>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut stack = vec![tip];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let c = snap.commit(&id)?;
        stack.extend(c.links());
        out.push((id, c));
    }
    out.sort_by_key(|(id, c)| (c.timestamp_us, *id.as_bytes()));
    Ok(out)
}

fn markdown_history(commits: &[(CommitId, Commit, Option<Message>)]) -> String {
    let mut out = String::new();
    for (id, c, m) in commits {
        let what = match &c.op {
            Op::Append => "append".to_string(),
            Op::Edit { target } => format!("edit of {}", target.short()),
            Op::Compress { sources, .. } => format!("compress of {} messages", sources.len()),
            Op::Merge { branch, .. } => format!("merge of {branch}"),
            Op::Record { kind } => format!("record {kind}"),
        };
        let mut heading = format!("{} · {what}", id.short());
        if let Some(note) = &c.message {
            let _ = write!(heading, " · {note}");
        }
        match m {
            Some(m) => message_section(&mut out, m, Some(&heading)),
            None => {
                let _ = writeln!(out, "## {heading}\n");
            }
        }
    }
    out
}

/// One message as Markdown: a heading for who speaks, the text, each tool call and result as
/// its own section with the JSON or output fenced.
fn message_section(out: &mut String, m: &Message, commit: Option<&str>) {
    let who = match m.role {
        Role::System => "System".to_string(),
        Role::User => "User".to_string(),
        Role::Assistant => "Assistant".to_string(),
        Role::Tool => format!(
            "Tool result: {} ({}){}",
            m.name.as_deref().unwrap_or("tool"),
            m.tool_call_id.as_deref().unwrap_or("?"),
            if m.is_error { ", error" } else { "" }
        ),
    };
    let _ = match commit {
        Some(c) => writeln!(out, "## {who} · {c}\n"),
        None => writeln!(out, "## {who}\n"),
    };
    let text = content_markdown(&m.content);
    if m.role == Role::Tool {
        let _ = writeln!(out, "{}\n", fenced(&text, ""));
    } else if !text.is_empty() {
        let _ = writeln!(out, "{text}\n");
    }
    for call in &m.tool_calls {
        let args = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| call.arguments.clone());
        let _ = writeln!(out, "### Tool call: {} ({})\n", call.name, call.id);
        let _ = writeln!(out, "{}\n", fenced(&args, "json"));
    }
}

fn content_markdown(c: &Content) -> String {
    match c {
        Content::Text(t) => t.clone(),
        Content::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                ContentPart::Text(t) => t.clone(),
                ContentPart::Raw(raw) => {
                    let kind = serde_json::from_str::<serde_json::Value>(raw)
                        .ok()
                        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
                        .unwrap_or_else(|| "part".into());
                    format!("*[{kind}]*")
                }
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
    }
}

/// Text in a code fence longer than any run of backticks inside it.
fn fenced(text: &str, lang: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{text}\n{fence}")
}
