//! How commits, statuses and refs are printed for people.

use renderdag::{Ancestor, GraphRowRenderer, Renderer};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use tract_core::{
    BranchInfo, CommitId, CommitInfo, HeadRef, MergeStrategy, Op, ReflogEntry, Status,
};

/// The widest first line `log` prints before cutting it with an ellipsis.
const PREVIEW_CHARS: usize = 96;

/// `n` and the noun that counts it: `1 session`, `2 sessions` (`plural` for every `n` but 1).
pub fn count(n: u64, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// A duration given in microseconds, for people: milliseconds under a second (`350.0 ms`),
/// seconds under a minute (`1.5 s`), then minutes and seconds (`2 min 5 s`).
pub fn duration(us: u64) -> String {
    // Bounds where the rounded value would read as the next unit's first (`1000.0 ms`).
    match us {
        0..999_950 => format!("{:.1} ms", us as f64 / 1e3),
        999_950..59_950_000 => format!("{:.1} s", us as f64 / 1e6),
        _ => {
            let s = us.saturating_add(500_000) / 1_000_000;
            format!("{} min {} s", s / 60, s % 60)
        }
    }
}

/// `text` cut to `max` characters.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// The role a line shows: the message's, none (`-`) for a commit without one and for a record
/// (a framework's data kept beside the conversation, never sent to a model: its kind is in
/// the preview, and its blob's role says nothing).
pub fn role(info: &CommitInfo) -> &'static str {
    match info.record_kind() {
        Some(_) => "-",
        None => info.role().map_or("-", |r| r.as_str()),
    }
}

/// One `log` line: short id, op, role, tool, tokens, first line; edits name their target.
pub fn log_line(out: &mut impl Write, info: &CommitInfo) {
    let role = role(info);
    let tools = info.tool_names().join(",");
    let tools = if tools.is_empty() {
        "-".to_string()
    } else {
        tools
    };
    let mut preview = info.preview();
    if let Some(target) = info.edit_target() {
        preview = format!("(edit of {}) {preview}", target.short());
    }
    if let Some((branch, _, MergeStrategy::ToolResult { call_id })) = info.merged() {
        preview = format!("({branch} answers {call_id}) {preview}");
    }
    if let [first, .., last] | [first @ last] = info.sources() {
        let n = info.sources().len();
        preview = format!(
            "(summary of {n}: {}..{}) {preview}",
            first.short(),
            last.short()
        );
    }
    let rules = info
        .message
        .as_deref()
        .map(scrubbed_rules)
        .unwrap_or_default();
    if !rules.is_empty() {
        preview = format!("(scrubbed: {}) {preview}", rules.join(", "));
    }
    let error = match &info.message {
        Some(m) if m.is_error => "[error] ",
        _ => "",
    };
    let _ = writeln!(
        out,
        "{} {:<6} {:<9} {:<12} {:>6}  {}",
        info.id.short(),
        info.op(),
        role,
        cut(&tools, 12),
        info.token_count,
        cut(&format!("{error}{preview}"), PREVIEW_CHARS)
    );
}

/// The header row of `log`'s table, over [`log_line`]'s columns: printed for a person at a
/// terminal only, so what scripts read stays one line per commit.
pub fn log_header(out: &mut impl Write) {
    let _ = writeln!(
        out,
        "{:<10} {:<6} {:<9} {:<12} {:>6}  message",
        "commit", "op", "role", "tools", "tokens"
    );
}

/// One line for a view position from a query: like `log`, with the version in view when
/// the position has been edited.
pub fn position_line(out: &mut impl Write, info: &CommitInfo) {
    match &info.current {
        None => log_line(out, info),
        Some(c) => {
            let mut shown = info.clone();
            shown.message = Some(c.message.clone());
            shown.token_count = c.token_count;
            let mut line = String::new();
            log_line(&mut line, &shown);
            let _ = write!(out, "{}", line.trim_end());
            let _ = writeln!(out, "  (edited: {})", c.commit.short());
        }
    }
}

/// `log --graph`: `infos` (newest first) as a graph, each commit a `log` line with the
/// branches whose tip it is.
pub fn graph(out: &mut impl Write, infos: &[CommitInfo], branches: &[BranchInfo]) {
    let mut tips: HashMap<CommitId, Vec<String>> = HashMap::new();
    for b in branches {
        // A branch holding an agent's session says which agent's.
        let name = match &b.agent {
            Some(a) => format!("{} [{}]", b.name, a.label()),
            None => b.name.clone(),
        };
        tips.entry(b.head).or_default().push(name);
    }
    let shown: HashSet<CommitId> = infos.iter().map(|i| i.id).collect();
    let mut renderer = GraphRowRenderer::new()
        .output()
        .with_min_row_height(1)
        .build_box_drawing();
    for info in infos {
        let parents = info
            .commit
            .parents
            .iter()
            .map(|p| match shown.contains(p) {
                true => Ancestor::Parent(*p),
                // Cut off by -n: drawn as a line that goes on.
                false => Ancestor::Anonymous,
            })
            .collect();
        let mut line = String::new();
        log_line(&mut line, info);
        let mut line = line.trim_end().to_string();
        if let Some(names) = tips.get(&info.id) {
            line = format!("{line}  ({})", names.join(", "));
        }
        let glyph = if matches!(info.commit.op, Op::Merge { .. }) {
            "◆"
        } else {
            "○"
        };
        let row = renderer.next_row(info.id, parents, glyph.to_string(), line);
        let _ = write!(out, "{row}");
    }
}

/// One `log --oneline` line.
pub fn oneline(out: &mut impl Write, info: &CommitInfo) {
    let _ = writeln!(
        out,
        "{} {}",
        info.id.short(),
        cut(&info.preview(), PREVIEW_CHARS)
    );
}

/// `show`: the commit's header and its whole message.
pub fn show(out: &mut impl Write, info: &CommitInfo) {
    let _ = writeln!(out, "commit  {}", info.id);
    match info.edit_target() {
        Some(t) => {
            let _ = writeln!(out, "op      edit of {}", t.short());
        }
        None => match info.record_kind() {
            Some(kind) => {
                let _ = writeln!(out, "op      record {kind}");
            }
            None => {
                let _ = writeln!(out, "op      {}", info.op());
            }
        },
    }
    for p in &info.commit.parents {
        let _ = writeln!(out, "parent  {}", p.short());
    }
    if let Some((branch, tip, strategy)) = info.merged() {
        let how = match strategy {
            MergeStrategy::Append => "its messages appended".to_string(),
            MergeStrategy::ToolResult { call_id } => match info.summarizer() {
                Some(s) => format!("a summary by {s} is the result of call {call_id}"),
                None => format!("its final answer is the result of call {call_id}"),
            },
        };
        let _ = writeln!(out, "merged  {branch} at {} ({how})", tip.short());
    }
    let _ = writeln!(out, "date    {}", info.created_at());
    if !info.sources().is_empty() {
        let ids: Vec<String> = info.sources().iter().map(|s| s.short()).collect();
        let _ = writeln!(out, "summary of {}: {}", ids.len(), ids.join(" "));
        if let Some(s) = info.summarizer() {
            let _ = writeln!(out, "by      {s}");
        }
    }
    if let Some(note) = &info.commit.message {
        let _ = writeln!(out, "note    {note}");
    }
    let Some(m) = &info.message else { return };
    let _ = write!(out, "role    {}", m.role);
    if let Some(name) = &m.name {
        let _ = write!(out, "  name {name}");
    }
    if let Some(id) = &m.tool_call_id {
        let _ = write!(out, "  tool_call_id {id}");
    }
    if m.is_error {
        let _ = write!(out, "  [error]");
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "tokens  {}", info.token_count);
    let scrubbed = scrubbed_rules(m);
    if !scrubbed.is_empty() {
        let _ = writeln!(
            out,
            "scrubbed {} (before it was stored)",
            scrubbed.join(", ")
        );
    }
    for c in &m.tool_calls {
        let _ = writeln!(out, "call    {} {}({})", c.id, c.name, c.arguments);
    }
    let text = m.content.text();
    if !text.is_empty() {
        let _ = writeln!(out, "\n{text}");
    }
}

/// `status` for people.
pub fn status(out: &mut impl Write, s: &Status) {
    match &s.head.target {
        HeadRef::Branch(b) => {
            let _ = writeln!(out, "On branch {b}");
        }
        HeadRef::Detached(id) => {
            let _ = writeln!(out, "HEAD detached at {}", id.short());
        }
    }
    let head = s
        .head
        .commit
        .map_or_else(|| "(no commits yet)".into(), |c| c.short());
    let _ = writeln!(out, "head      {head}");
    let _ = writeln!(out, "messages  {}", s.messages);
    let _ = writeln!(out, "tokens    {}", s.token_count);
    if let Some(p) = &s.store {
        let _ = writeln!(out, "store     {p}");
    }
    match s.unanswered_calls {
        0 => {}
        1 => {
            let _ = writeln!(
                out,
                "warning: 1 tool call has no result; compile sends a synthetic error result for it"
            );
        }
        n => {
            let _ = writeln!(
                out,
                "warning: {n} tool calls have no result; compile sends a synthetic error result for each"
            );
        }
    }
    if s.reused_call_ids > 0 {
        let _ = writeln!(
            out,
            "warning: {}",
            reused_call_ids(s.reused_call_ids, "view")
        );
    }
}

/// What `status` and `fsck` say of `n` tool calls whose ids earlier calls in a view have.
pub fn reused_call_ids(n: u64, view: &str) -> String {
    match n {
        1 => format!(
            "1 tool call has an id an earlier call in {view} has; compile sends it under a new id (tract compile names it)"
        ),
        n => format!(
            "{n} tool calls have ids earlier calls in {view} have; compile sends each under a new id (tract compile names them)"
        ),
    }
}

/// One reflog line.
pub fn reflog_line(out: &mut impl Write, name: &str, i: usize, e: &ReflogEntry) {
    let show = |c: Option<tract_core::CommitId>| c.map_or_else(|| "(none)".into(), |c| c.short());
    if e.old.is_none() && e.new.is_none() {
        // The deletion of a ref whose commits gc has collected since: what is left of it.
        let _ = writeln!(
            out,
            "(none) {name}@{{{i}}}: {} (its commits expired)",
            e.reason
        );
        return;
    }
    let _ = writeln!(
        out,
        "{} {name}@{{{i}}}: {} (was {})",
        show(e.new),
        e.reason,
        show(e.old)
    );
}

/// The commits a bulk command made, then `VERB N NOUNS: tokens A -> B` (`verb` and the
/// noun, singular and plural: `compressed`, `run`, `runs`).
pub fn outcome(
    out: &mut impl Write,
    infos: &[CommitInfo],
    (verb, one, many): (&str, &str, &str),
    before: u64,
    after: u64,
) {
    for info in infos {
        log_line(out, info);
    }
    let _ = writeln!(
        out,
        "{verb} {}: tokens {before} -> {after}",
        count(infos.len() as u64, one, many)
    );
}

/// A time in microseconds since the Unix epoch, as RFC 3339 UTC to the second.
pub fn time_seconds(us: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_micros(us);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The rules that scrubbed something from `message` as it was written, each once, in order of
/// name (none for a message nothing was scrubbed from).
pub fn scrubbed_rules(message: &tract_core::Message) -> Vec<String> {
    let mut rules: Vec<String> = tract_core::secrets::listed(message)
        .into_iter()
        .map(|s| s.rule)
        .collect();
    rules.sort_unstable();
    rules.dedup();
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_the_unit_that_fits() {
        let shown: Vec<String> = [
            0,
            350_000,
            999_949,
            999_950,
            1_500_000,
            59_949_999,
            59_950_000,
            125_000_000,
            3_600_000_000,
        ]
        .into_iter()
        .map(duration)
        .collect();
        assert_eq!(
            shown,
            [
                "0.0 ms",
                "350.0 ms",
                "999.9 ms",
                "1.0 s",
                "1.5 s",
                "59.9 s",
                "1 min 0 s",
                "2 min 5 s",
                "60 min 0 s"
            ]
        );
    }

    #[test]
    fn counts_take_the_singular_for_one_only() {
        assert_eq!(count(0, "session", "sessions"), "0 sessions");
        assert_eq!(count(1, "session", "sessions"), "1 session");
        assert_eq!(count(2, "branch", "branches"), "2 branches");
    }
}
