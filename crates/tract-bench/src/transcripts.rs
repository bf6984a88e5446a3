//! Transcripts: `tract-bench --transcripts [--messages N]` writes the seeded workload as a
//! Claude Code session file (one line per content block, as Claude Code writes them) and
//! measures importing it into a new store, importing it again (nothing to add), exporting the
//! branch's history as JSONL and importing that into another store; and writes it as a Codex
//! rollout (a `response_item` line per item, a `token_count` event after each answer, as Codex
//! writes them) and as a Gemini CLI session (JSON lines: a record per user message and per
//! answer, its calls with their results), and measures importing each.

use crate::workload::Workload;
use crate::{SEED, median, ms};
use serde_json::{Value, json};
use std::time::Instant;
use tract_core::{Bind, BranchName, OpenOptions, Role, Tract};

/// The workload's messages as a Claude Code session file.
fn claude_code_session(n: usize) -> (String, usize) {
    let lines = claude_code_lines(n, SEED, "bench-session");
    let count = lines.len();
    (lines.concat(), count)
}

/// The messages of the workload seeded `seed` as the lines of Claude Code session `session`
/// (one per content block, as Claude Code streams a response), each ending in a newline.
pub fn claude_code_lines(n: usize, seed: u64, session: &str) -> Vec<String> {
    let messages = Workload::new(seed).messages(n);
    let mut out: Vec<String> = Vec::new();
    let mut parent: Option<String> = None;
    let mut lines = 0usize;
    let mut t0 = 1_795_165_200u64;
    let mut push = |out: &mut Vec<String>,
                    parent: &mut Option<String>,
                    kind: &str,
                    message: Value,
                    k: usize| {
        let uuid = format!("{:08x}-0000-4000-8000-{k:012x}", seed as u32);
        t0 += 1;
        let line = json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/app", "sessionId": session, "version": "2.1.37",
            "type": kind, "uuid": uuid,
            "timestamp": format!("2026-11-20T{:02}:{:02}:{:02}.000Z", (t0 / 3600) % 24, (t0 / 60) % 60, t0 % 60),
            "message": message,
        });
        out.push(format!("{line}\n"));
        *parent = Some(uuid);
    };
    for (i, m) in messages.iter().enumerate() {
        let text = m.content.text().into_owned();
        match m.role {
            Role::System | Role::User => {
                push(
                    &mut out,
                    &mut parent,
                    "user",
                    json!({"role": "user", "content": text}),
                    lines,
                );
                lines += 1;
            }
            Role::Assistant => {
                let id = format!("msg_{i:08}");
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in &m.tool_calls {
                    let input: Value = serde_json::from_str(&c.arguments).unwrap_or(json!({}));
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                // One line per content block, as Claude Code writes a streamed response.
                for b in blocks {
                    let message =
                        json!({"id": id, "type": "message", "role": "assistant", "content": [b]});
                    push(&mut out, &mut parent, "assistant", message, lines);
                    lines += 1;
                }
            }
            Role::Tool => {
                let block =
                    json!({"type": "tool_result", "tool_use_id": m.tool_call_id, "content": text});
                push(
                    &mut out,
                    &mut parent,
                    "user",
                    json!({"role": "user", "content": [block]}),
                    lines,
                );
                lines += 1;
            }
        }
    }
    out
}

/// The messages of the workload seeded `seed` as the lines of Codex rollout `thread`: its
/// `session_meta`, a `response_item` per item (a system message as developer instructions, an
/// answer's text and each of its calls, a result as the call's output), and after each answer
/// the `token_count` event Codex writes, each line ending in a newline.
pub fn codex_lines(n: usize, seed: u64, thread: &str) -> Vec<String> {
    let messages = Workload::new(seed).messages(n);
    let mut t = 0u64;
    let mut stamp = || {
        t += 1;
        format!(
            "2026-11-20T{:02}:{:02}:{:02}.000Z",
            (t / 3600) % 24,
            (t / 60) % 60,
            t % 60
        )
    };
    let mut out = vec![format!(
        "{}\n",
        json!({"timestamp": stamp(), "type": "session_meta", "payload": {
            "id": thread, "timestamp": "2026-11-20T00:00:00.000Z", "cwd": "/home/dev/app",
            "originator": "codex_cli_rs", "cli_version": "0.125.0", "source": "cli",
            "model_provider": "openai"}})
    )];
    let mut item = |out: &mut Vec<String>, payload: Value| {
        out.push(format!(
            "{}\n",
            json!({"timestamp": stamp(), "type": "response_item", "payload": payload})
        ));
    };
    let mut total = 0u64;
    for m in &messages {
        let text = m.content.text().into_owned();
        match m.role {
            Role::System => item(
                &mut out,
                json!({"type": "message", "role": "developer",
                "content": [{"type": "input_text", "text": text}]}),
            ),
            Role::User => item(
                &mut out,
                json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": text}]}),
            ),
            Role::Assistant => {
                if !text.is_empty() {
                    item(
                        &mut out,
                        json!({"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}),
                    );
                }
                for c in &m.tool_calls {
                    item(
                        &mut out,
                        json!({"type": "function_call", "name": c.name,
                        "arguments": c.arguments, "call_id": c.id}),
                    );
                }
                let used = 1000 + text.len() as u64 / 4;
                total += used;
                let usage = |n: u64| {
                    json!({"input_tokens": n, "cached_input_tokens": n / 2,
                    "output_tokens": 50, "reasoning_output_tokens": 0, "total_tokens": n + 50})
                };
                out.push(format!(
                    "{}\n",
                    json!({"timestamp": "2026-11-20T00:00:00.000Z",
                    "type": "event_msg", "payload": {"type": "token_count", "info": {
                        "total_token_usage": usage(total), "last_token_usage": usage(used),
                        "model_context_window": 258400}, "rate_limits": null}})
                ));
            }
            Role::Tool => item(
                &mut out,
                json!({"type": "function_call_output",
                "call_id": m.tool_call_id, "output": text}),
            ),
        }
    }
    out
}

/// The messages of the workload seeded `seed` as Gemini CLI session `session`'s JSON lines:
/// its metadata line, then a record per user message and per answer (its calls, each with the
/// result that followed it, and its tokens), as Gemini CLI writes them once a turn is done;
/// system messages, which Gemini CLI keeps out of its files, are left out.
pub fn gemini_lines(n: usize, seed: u64, session: &str) -> Vec<String> {
    let messages = Workload::new(seed).messages(n);
    let results: std::collections::HashMap<&str, String> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| Some((m.tool_call_id.as_deref()?, m.content.text().into_owned())))
        .collect();
    let mut out = vec![format!(
        "{}\n",
        json!({"sessionId": session, "projectHash": "0123456789abcdef", "startTime":
            "2026-11-20T00:00:00.000Z", "lastUpdated": "2026-11-20T00:00:00.000Z", "kind": "main"})
    )];
    for (i, m) in messages.iter().enumerate() {
        let text = m.content.text().into_owned();
        let id = format!("{i:08x}-0000-4000-8000-000000000000");
        let record = match m.role {
            Role::User => json!({"id": id, "timestamp": "2026-11-20T00:00:00.000Z",
                "type": "user", "content": [{"text": text}]}),
            Role::Assistant => {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let args: Value = serde_json::from_str(&c.arguments).unwrap_or(json!({}));
                        json!({"id": c.id, "name": c.name, "args": args, "status": "success",
                            "timestamp": "2026-11-20T00:00:00.000Z",
                            "result": results.get(c.id.as_str()).cloned().unwrap_or_default()})
                    })
                    .collect();
                json!({"id": id, "timestamp": "2026-11-20T00:00:00.000Z", "type": "gemini",
                    "content": text, "toolCalls": calls, "model": "gemini-2.5-pro",
                    "tokens": {"input": 1000, "output": 50, "cached": 500, "thoughts": 0,
                               "tool": 0, "total": 1050}})
            }
            Role::System | Role::Tool => continue,
        };
        out.push(format!("{record}\n"));
    }
    out
}

/// The figures.
pub fn measure(n: usize) -> Result<Value, String> {
    let err = |e: tract_core::Error| e.to_string();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (text, lines) = claude_code_session(n);
    let file = dir.path().join("session.jsonl");
    std::fs::write(&file, &text).map_err(|e| e.to_string())?;
    let bind = |store: &std::path::Path| -> Result<Tract, String> {
        let options = OpenOptions {
            bind: Bind::Branch(BranchName::new("import").map_err(err)?),
            ..OpenOptions::default()
        };
        Tract::open_with(store, &options).map_err(err)
    };
    let (mut first, mut again, mut export, mut reimport) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut messages = 0;
    for run in 0..3 {
        let t = bind(&dir.path().join(format!("a{run}.redb")))?;
        let start = Instant::now();
        let report = t.import_file(&file, None).map_err(err)?;
        first.push(start.elapsed());
        messages = report.added;
        let start = Instant::now();
        let report = t.import_file(&file, None).map_err(err)?;
        again.push(start.elapsed());
        if report.added != 0 {
            return Err("a second import added commits".into());
        }
        let start = Instant::now();
        let history = t
            .export(tract_core::formats::exports::ExportFormat::Jsonl, true)
            .map_err(err)?;
        export.push(start.elapsed());
        let exported = dir.path().join(format!("history{run}.jsonl"));
        std::fs::write(&exported, history).map_err(|e| e.to_string())?;
        let copy = bind(&dir.path().join(format!("b{run}.redb")))?;
        let start = Instant::now();
        copy.import_file(&exported, None).map_err(err)?;
        reimport.push(start.elapsed());
    }
    // The same workload as a Codex rollout, imported into a new store each run.
    let rollout = codex_lines(n, SEED, "019e0000-0000-7000-8000-000000000000").concat();
    let codex_file = dir
        .path()
        .join("rollout-2026-11-20T00-00-00-019e0000-0000-7000-8000-000000000000.jsonl");
    std::fs::write(&codex_file, &rollout).map_err(|e| e.to_string())?;
    // A file imported into a new store (named `prefix` and the run) each of three runs: the
    // median time and the messages it added.
    let import_three = |file: &std::path::Path, prefix: &str| {
        let (mut times, mut added) = (Vec::new(), 0);
        for run in 0..3 {
            let t = bind(&dir.path().join(format!("{prefix}{run}.redb")))?;
            let start = Instant::now();
            let report = t.import_file(file, None).map_err(err)?;
            times.push(start.elapsed());
            added = report.added;
        }
        Ok::<_, String>((median(times), added))
    };
    let (codex, codex_messages) = import_three(&codex_file, "c")?;
    // And as a Gemini CLI session.
    let session = gemini_lines(n, SEED, "bench-gemini").concat();
    let gemini_file = dir.path().join("session-2026-11-20T00-00-bench.jsonl");
    std::fs::write(&gemini_file, &session).map_err(|e| e.to_string())?;
    let (gemini, gemini_messages) = import_three(&gemini_file, "g")?;
    let per_s = |d: std::time::Duration| (messages as f64 / d.as_secs_f64()).round();
    let first = median(first);
    Ok(json!({
        "messages": messages,
        "claude_code_lines": lines,
        "file_mb": (text.len() as f64 / 1e6 * 10.0).round() / 10.0,
        "import_claude_code_ms": ms(first),
        "import_claude_code_messages_per_s": per_s(first),
        "import_again_ms": ms(median(again)),
        "export_history_jsonl_ms": ms(median(export)),
        "import_history_jsonl_ms": ms(median(reimport)),
        "codex_commits": codex_messages,
        "codex_file_mb": (rollout.len() as f64 / 1e6 * 10.0).round() / 10.0,
        "import_codex_ms": ms(codex),
        "import_codex_messages_per_s": (codex_messages as f64 / codex.as_secs_f64()).round(),
        "gemini_messages": gemini_messages,
        "gemini_file_mb": (session.len() as f64 / 1e6 * 10.0).round() / 10.0,
        "import_gemini_ms": ms(gemini),
        "import_gemini_messages_per_s": (gemini_messages as f64 / gemini.as_secs_f64()).round(),
    }))
}
