//! `tract tools` and `tract search`.

use crate::args::{ClearArgs, SearchArgs, ToolsArgs, ToolsWhat};
use crate::commands::pretty;
use crate::render;
use std::fmt::Write;
use tract_core::{ClearOptions, CommitInfo, Error, Role, SearchQuery, Tract};

fn json_list<T>(items: &[T], f: impl Fn(&T) -> serde_json::Value) -> String {
    pretty(
        &serde_json::Value::Array(items.iter().map(f).collect()),
        false,
    )
}

/// Lists calls, results or turns of the current view.
pub fn run(t: &Tract, a: &ToolsArgs, out: &mut String) -> Result<(), Error> {
    let name = a.name.as_deref();
    if a.what != ToolsWhat::Results && (a.after.is_some() || a.before.is_some()) {
        return Err(Error::InvalidInput {
            message: "--after and --before apply to `tract tools results`".into(),
        });
    }
    match a.what {
        ToolsWhat::Calls | ToolsWhat::Results => {
            let infos = if a.what == ToolsWhat::Calls {
                t.find_tool_calls(name)?
            } else {
                t.find_tool_results(name, a.after.as_deref(), a.before.as_deref())?
            };
            if a.json {
                *out = json_list(&infos, CommitInfo::to_json);
            } else {
                for info in &infos {
                    render::position_line(out, info);
                }
            }
        }
        ToolsWhat::Turns => {
            let turns = t.find_tool_turns(name)?;
            if a.json {
                *out = json_list(&turns, tract_core::ToolTurn::to_json);
                return Ok(());
            }
            for turn in &turns {
                for (i, c) in turn.calls.iter().enumerate() {
                    let id = if i == 0 {
                        turn.call.id.short()
                    } else {
                        String::new()
                    };
                    let duration = c
                        .duration_us
                        .map_or_else(|| "-".into(), |d| format!("{:.1} ms", d as f64 / 1000.0));
                    let tokens = c
                        .result_tokens
                        .map_or_else(|| "-".into(), |n| n.to_string());
                    let bytes = c.result_bytes.map_or_else(|| "-".into(), |n| n.to_string());
                    let _ = writeln!(
                        out,
                        "{id:<10} {:<12} {:<7} {duration:>10} {tokens:>7} tok {bytes:>8} B  {}",
                        render::cut(&c.name, 12),
                        c.state.as_str(),
                        render::cut(&c.arguments, 60)
                    );
                }
            }
        }
    }
    Ok(())
}

/// `tract search`.
pub fn search(t: &Tract, a: &SearchArgs, out: &mut String) -> Result<(), Error> {
    let q = SearchQuery {
        query: a.query.clone(),
        regex: a.regex,
        role: a.role.as_deref().map(Role::parse).transpose()?,
        tool: a.tool.clone(),
        history: a.history,
        limit: a.limit,
    };
    let hits = t.search(&q)?;
    if a.json {
        *out = json_list(&hits, |h| {
            let mut v = h.info.to_json();
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("snippet".into(), h.snippet.clone().into());
            }
            v
        });
        return Ok(());
    }
    for h in &hits {
        let role = h.info.role().map_or("-", |r| r.as_str());
        let tools = h.info.tool_names().join(",");
        let _ = writeln!(
            out,
            "{} {:<9} {:<12} {}",
            h.info.id.short(),
            role,
            render::cut(if tools.is_empty() { "-" } else { &tools }, 12),
            h.snippet
        );
    }
    Ok(())
}

/// `tract clear`.
pub fn clear(t: &Tract, a: &ClearArgs, out: &mut String) -> Result<(), Error> {
    let opts = ClearOptions {
        keep: a.keep,
        exclude_tools: a.exclude_tools.clone(),
        clear_at_least: a.clear_at_least,
        placeholder: a.placeholder.clone(),
    };
    if a.dry_run {
        let plan = t.plan_clear_tool_results(&opts)?;
        let before = t.status()?.token_count;
        let mut freed = 0u64;
        for c in &plan {
            freed += c.saving();
            let _ = writeln!(
                out,
                "would clear {} {:<12} {:>7} -> {} tokens",
                c.position.short(),
                render::cut(&c.tool, 12),
                c.tokens,
                c.placeholder_tokens
            );
        }
        let _ = writeln!(
            out,
            "{} result(s): tokens {before} -> {} (dry run, nothing committed)",
            plan.len(),
            before - freed
        );
        return Ok(());
    }
    let done = t.clear_tool_results(&opts)?;
    render::outcome(
        out,
        &done.cleared,
        "cleared {n} result(s)",
        done.tokens_before,
        done.tokens_after,
    );
    Ok(())
}
