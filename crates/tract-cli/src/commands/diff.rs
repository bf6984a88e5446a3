//! `tract diff`.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render::{count, cut};
use crate::ui::Ui;
use crate::vocabulary::{HistoryDiffReport, ViewDiffReport};
use std::fmt::Write;
use tract_core::{HistoryDiff, Message, PageEntry, ViewDiff};

/// Compare two contexts as the model saw them: where the views of A and B part, the messages
/// only one holds, and those both hold with other content (an edit: a patch of its text),
/// with the tokens of each. With one revision, what that commit did to its view: for a
/// compression or a clear, the messages it took out of view and what replaced them. A and B
/// are any revisions: branches, commits, `HEAD~3`, `NAME@{N}` (where ref NAME was N moves
/// ago, as `tract reflog NAME` lists them).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The view compared from (with B), or the commit whose change is shown (alone).
    #[arg(value_name = "A")]
    a: String,
    /// The view compared to.
    #[arg(value_name = "B")]
    b: Option<String>,
    /// Only the counts, and one line per message that differs (no text).
    #[arg(long)]
    stat: bool,
    /// Compare the histories instead: the commits only one of them holds, and where they
    /// meet.
    #[arg(long, requires = "b")]
    history: bool,
    /// The report as JSON.
    #[arg(long, conflicts_with = "stat")]
    json: bool,
}

/// Runs `tract diff`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open_to_read()?;
    let from = rev(&a.a)?;
    let to = a.b.as_deref().map(rev).transpose()?;
    let paint = Paint(ui.colour());
    if a.history {
        let to =
            to.ok_or_else(|| CommandError::invalid_input("--history compares two revisions"))?;
        let d = t.diff_history(&from, &to)?;
        match a.json {
            true => output::print(ui, &HistoryDiffReport::from(&d), false),
            false => history(ui, &d, a.stat, paint),
        }
        return Ok(());
    }
    let d = match &to {
        Some(to) => t.diff(&from, to)?,
        None => t.diff_commit(&from)?,
    };
    if a.json {
        output::print(ui, &ViewDiffReport::from(&d), false);
        return Ok(());
    }
    view(ui, &d, a.stat, paint);
    Ok(())
}

/// Colours for a terminal, as `git diff` uses them; nothing elsewhere.
#[derive(Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        match self.0 {
            true => format!("\x1b[{code}m{text}\x1b[0m"),
            false => text.to_string(),
        }
    }
    fn removed(self, text: &str) -> String {
        self.wrap("31", text)
    }
    fn added(self, text: &str) -> String {
        self.wrap("32", text)
    }
    fn header(self, text: &str) -> String {
        self.wrap("1", text)
    }
    fn hunk(self, text: &str) -> String {
        self.wrap("36", text)
    }
}

/// A view diff for people.
fn view(ui: &mut Ui<'_>, d: &ViewDiff, stat: bool, paint: Paint) {
    let mut out = String::new();
    if let Some(c) = &d.commit {
        let what = match c.edit_target() {
            Some(t) => format!("edit of {}", t.short()),
            None => c.op().to_string(),
        };
        let _ = writeln!(
            out,
            "{}",
            paint.header(&format!("commit {} ({what})", c.id))
        );
    }
    let side = |s: &tract_core::DiffSide| {
        format!(
            "{} ({}, {})",
            s.rev,
            count(s.messages as u64, "message", "messages"),
            count(s.token_count, "token", "tokens")
        )
    };
    let delta = i128::from(d.b.token_count) - i128::from(d.a.token_count);
    let _ = writeln!(out, "{}", paint.header(&format!("--- {}", side(&d.a))));
    let _ = writeln!(
        out,
        "{}",
        paint.header(&format!("+++ {} ({delta:+} tokens)", side(&d.b)))
    );
    let differ = d.only_a.len() + d.only_b.len() + d.changed.len();
    let _ = writeln!(
        out,
        "{}; {} only in {}, {} only in {}, {} changed",
        match (d.shared_prefix, differ) {
            (_, 0) => "the same view".to_string(),
            (0, _) => "they part at the first message".to_string(),
            (n, _) => format!("they part after {}", count(n as u64, "message", "messages")),
        },
        d.only_a.len(),
        d.a.rev,
        d.only_b.len(),
        d.b.rev,
        d.changed.len()
    );
    for e in &d.only_a {
        entry(&mut out, '-', &d.a.rev, e, stat, paint);
    }
    for e in &d.only_b {
        entry(&mut out, '+', &d.b.rev, e, stat, paint);
    }
    for (a, b) in &d.changed {
        let _ = writeln!(
            out,
            "{}",
            paint.hunk(&format!(
                "~ message {} of {} ({}, {} tokens) is message {} of {} ({}, {} tokens)",
                a.index + 1,
                d.a.rev,
                a.entry.commit.short(),
                a.entry.tokens,
                b.index + 1,
                d.b.rev,
                b.entry.commit.short(),
                b.entry.tokens,
            ))
        );
        if stat {
            continue;
        }
        let (old, new) = (text_of(&a.message), text_of(&b.message));
        let patch = similar::TextDiff::from_lines(&old, &new);
        for op in patch.iter_all_changes() {
            let line = op.value().trim_end_matches('\n');
            let _ = writeln!(
                out,
                "{}",
                match op.tag() {
                    similar::ChangeTag::Delete => paint.removed(&format!("-{line}")),
                    similar::ChangeTag::Insert => paint.added(&format!("+{line}")),
                    similar::ChangeTag::Equal => format!(" {line}"),
                }
            );
        }
    }
    ui.print(&out);
}

/// One message only one side holds: its header, then (unless `stat`) its whole text, each
/// line marked with `sign`.
fn entry(out: &mut String, sign: char, rev: &str, e: &PageEntry, stat: bool, paint: Paint) {
    let m = &e.message;
    let mut what = m.role.to_string();
    if let Some(name) = &m.name {
        let _ = write!(what, " {name}");
    }
    let marks: Vec<&str> = e.marks.iter().map(|k| k.as_str()).collect();
    if !marks.is_empty() {
        let _ = write!(what, ", {}", marks.join(", "));
    }
    let header = format!(
        "{sign} message {} of {rev}: {} {what} ({} tokens)",
        e.index + 1,
        e.entry.commit.short(),
        e.entry.tokens
    );
    let colour = |t: &str| match sign {
        '-' => paint.removed(t),
        _ => paint.added(t),
    };
    let _ = writeln!(out, "{}", colour(&header));
    if stat {
        return;
    }
    for line in text_of(m).lines() {
        let _ = writeln!(out, "{}", colour(&format!("{sign}   {line}")));
    }
}

/// A message's text as a diff shows it: its content, then a line per tool call.
fn text_of(m: &Message) -> String {
    let mut text = m.content.text().into_owned();
    for c in &m.tool_calls {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let _ = write!(text, "[call {} {}({})]", c.id, c.name, c.arguments);
    }
    text
}

/// A history diff for people.
fn history(ui: &mut Ui<'_>, d: &HistoryDiff, stat: bool, paint: Paint) {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        paint.header(&match d.merge_base {
            Some(base) => format!("merge base {base}"),
            None => format!("{} and {} share no history", d.a.rev, d.b.rev),
        })
    );
    for (sign, side, only) in [('-', &d.a, &d.only_a), ('+', &d.b, &d.only_b)] {
        let _ = writeln!(
            out,
            "{}",
            paint.header(&format!(
                "{} only in {}",
                count(only.len() as u64, "commit", "commits"),
                side.rev
            ))
        );
        if stat {
            continue;
        }
        for c in only {
            let line = format!("{sign} {} {}", c.id.short(), cut(&c.preview(), 72));
            let _ = writeln!(
                out,
                "{}",
                match sign {
                    '-' => paint.removed(&line),
                    _ => paint.added(&line),
                }
            );
        }
    }
    ui.print(&out);
}
