//! `tract capture`.

use crate::context::{Context, user_store};
use crate::error::CommandError;
use crate::progress::Progress;
use crate::render::count;
use crate::ui::Ui;
use crate::vocabulary::ImportReport;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use tract_core::capture::{self, Capture, Pass, PassProgress};
use tract_core::{Bind, OpenMode};

/// Follow Claude Code's sessions: import every session of a projects folder (default
/// `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`), with its sub-agents, onto its
/// own branch `claude/<project>/<session>` as Claude Code writes it, and keep it there after
/// Claude Code deletes the file; and Codex's rollouts (`$CODEX_HOME/sessions`, else
/// `~/.codex/sessions`, when it is there), each onto `codex/<project key>/<thread id>`, and
/// Gemini CLI's sessions (`$GEMINI_CLI_HOME/.gemini/tmp`, else `~/.gemini/tmp`, when it is
/// there), each onto `gemini/<project>/<session id>`. Each line is imported once, whenever capture runs or
/// restarts. The store is the one every command finds (--store, TRACT_STORE, the nearest
/// .tract, the per-user store when it exists), else the per-user store
/// `$XDG_DATA_HOME/tract/store.redb` (`~/.local/share/tract/store.redb`), created then;
/// --once prints it with the totals.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Claude Code's projects folder.
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Import what is new once and exit (for cron or a Claude Code hook).
    #[arg(long)]
    once: bool,
    /// How often to look for new lines, in milliseconds.
    #[arg(long, default_value_t = 100, value_name = "MS")]
    interval: u64,
    /// JSON lines instead of text: one object per import (and, with --once, the totals last).
    #[arg(long)]
    json: bool,
}

/// The totals of `tract capture` (the last line of `--once --json`, and on standard error
/// while following).
#[derive(Serialize)]
struct StatusJson {
    store: String,
    projects: String,
    sessions: usize,
    messages: usize,
    records: usize,
    last_import: Option<String>,
}

/// The store capture writes to: the one every command finds (`--store`, `TRACT_STORE`, the
/// nearest `.tract`, the per-user store when it exists), else the per-user store, made now
/// (its folder too). Called only once the projects folder is known to be there, so a capture
/// that cannot start leaves no store behind.
fn store_to_capture_into(ctx: &Context) -> Result<PathBuf, CommandError> {
    match ctx.store_path() {
        Err(e) if e.is_no_store() => {}
        found => return found,
    }
    let path = user_store().ok_or_else(|| {
        CommandError::invalid_input(
            "neither XDG_DATA_HOME nor HOME is set: name a store with --store",
        )
    })?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| tract_core::Error::io(dir, e))?;
    }
    Ok(path)
}

/// Runs `tract capture`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let projects = match &a.dir {
        Some(d) => d.clone(),
        None => ctx.env().claude_projects_dir().ok_or_else(|| {
            CommandError::invalid_input(
                "cannot tell where Claude Code keeps its sessions (HOME is not set): name the projects folder",
            )
        })?,
    };
    capture::check_projects(&projects)?;
    // Codex's rollouts, followed beside when its sessions folder is there.
    let codex = ctx.env().codex_sessions_dir().filter(|d| d.is_dir());
    // And Gemini CLI's sessions, when its folder is there.
    let gemini = ctx.env().gemini_tmp_dir().filter(|d| d.is_dir());
    let store_path = store_to_capture_into(ctx)?;
    let t = ctx.open_bound(&store_path, OpenMode::CreateIfMissing, Bind::StoreHead)?;
    let location = t.store().location().unwrap_or_default();
    crate::notes::note_unscrubbed(ui, &t)?;
    let mut capture = Capture::new(t.store().clone(), &projects)?;
    if let Some(dir) = &codex {
        capture.follow_codex(dir)?;
    }
    if let Some(dir) = &gemini {
        capture.follow_gemini(dir)?;
    }
    if !a.once {
        let mut out = std::io::stdout().lock();
        if !a.json {
            let also: String = codex
                .iter()
                .chain(&gemini)
                .map(|d| format!(" and {}", d.display()))
                .collect();
            let _ = writeln!(
                out,
                "tract capture: following {}{also} into {location}; Ctrl-C stops it",
                projects.display()
            );
        }
        let _ = out.flush();
    }
    let interval = Duration::from_millis(a.interval.max(1));
    loop {
        // How far a pass over many sessions got (the first one, most of all), on a terminal.
        let bar = Progress::new("{msg} {bar:30} {pos}/{len} sessions");
        let pass = capture.pass_with(&|p| match p {
            PassProgress::Read { done, of } if of > 1 => {
                bar.step(done as u64, Some(of as u64), "reading")
            }
            PassProgress::Imported { done, of } if of > 1 => {
                bar.step(done as u64, Some(of as u64), "importing")
            }
            _ => {}
        });
        drop(bar);
        let pass = pass?;
        report(ui, &pass, a.json, !a.once);
        let s = capture.status();
        let status = StatusJson {
            store: location.clone(),
            projects: projects.display().to_string(),
            sessions: s.sessions,
            messages: s.messages,
            records: s.records,
            last_import: s.last_import.as_ref().map(|(t, _)| time(*t)),
        };
        if !a.once && !pass.imported.is_empty() {
            // Following, the status after each pass that imported something, on standard
            // error (standard output is the imports, one a line).
            if a.json {
                ui.note(&serde_json::to_string(&status).unwrap_or_default());
            } else {
                ui.note(&format!(
                    "{}, {} imported, last import {}",
                    count(status.sessions as u64, "session", "sessions"),
                    count(status.messages as u64, "message", "messages"),
                    status.last_import.as_deref().unwrap_or("-")
                ));
            }
        }
        if a.once {
            use std::fmt::Write as _;
            if a.json {
                // JSON lines: one object per import, then the totals.
                let _ = writeln!(ui, "{}", serde_json::to_string(&status).unwrap_or_default());
            } else {
                let _ = writeln!(
                    ui,
                    "{}, {} imported, {}; store {}",
                    count(status.sessions as u64, "session", "sessions"),
                    count(status.messages as u64, "message", "messages"),
                    records(status.records),
                    status.store
                );
            }
            if let Some((file, e)) = pass.failed.into_iter().next() {
                return Err(CommandError::from(e).with_hint(format!(
                    "while importing {}; the other sessions were imported",
                    file.display()
                )));
            }
            return Ok(());
        }
        std::thread::sleep(interval);
    }
}

/// What a pass did: one line per session imported, a warning per failure. Following, each
/// line is written at once (a command's output is otherwise written when it ends).
fn report(ui: &mut Ui<'_>, pass: &Pass, json: bool, now: bool) {
    let mut lines = Vec::new();
    for i in &pass.imported {
        let r = &i.report;
        if json {
            let j = ImportReport::new(&i.file, &i.branch, r);
            lines.push(serde_json::to_string(&j).unwrap_or_default());
        } else {
            let mut line = format!("{}: {} added", i.branch, r.added);
            if r.edited > 0 {
                line.push_str(&format!(
                    ", {} edited",
                    count(r.edited as u64, "grown response", "grown responses")
                ));
            }
            if r.recorded > 0 {
                line.push_str(&format!(", {}", records(r.recorded)));
            }
            if r.rewound {
                line.push_str(" (moved to the conversation's new path)");
            }
            if !r.waiting_agents.is_empty() {
                line.push_str(&format!(
                    ", sub-agents running: {}",
                    r.waiting_agents.join(", ")
                ));
            }
            lines.push(line);
        }
    }
    for (file, e) in &pass.failed {
        let again = match tract_core::capture::refused(e) {
            true => "tried again when the file changes",
            false => "tried again on the next pass",
        };
        ui.warning(&format!("{}: {e} ({again})", file.display()));
    }
    for (file, branch) in &pass.session_store {
        ui.note(&format!(
            "{}: its branch {branch} is kept by the Claude Agent SDK session store: left to it",
            file.display()
        ));
    }
    for (file, branch) in &pass.deleted {
        ui.note(&format!(
            "{}: its branch {branch} was deleted in tract: not imported again",
            file.display()
        ));
    }
    if now {
        let mut out = std::io::stdout().lock();
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
        let _ = out.flush();
    } else {
        use std::fmt::Write as _;
        for l in lines {
            let _ = writeln!(ui, "{l}");
        }
    }
}

/// `N lines kept as records`, or `1 line kept as a record`.
fn records(n: usize) -> String {
    match n {
        1 => "1 line kept as a record".to_string(),
        n => format!("{n} lines kept as records"),
    }
}

/// A time as RFC 3339 UTC.
fn time(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}
