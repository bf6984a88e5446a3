//! `tract push`, and what `pull` and `clone` share with it: the options, the progress bar, the
//! report, and the errors that name the other store.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::progress::Progress;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use tract_core::{BranchSpec, ErrorCategory, SyncOptions, SyncProgress, SyncReport};

/// Send branches and the history they reach to another store (a file or a postgresql:// URL):
/// only what it lacks. Each branch moves only by fast-forward: one that has diverged is
/// refused (the others move, and the command exits non-zero naming it).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The receiving store: a file or a postgresql:// URL (it must be a tract store; `tract
    /// clone` makes a new one).
    dest: PathBuf,
    #[command(flatten)]
    sync: SyncArgs,
}

/// The options of `push` and `pull`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// The branches to transfer (default: every branch); SRC:DST takes the sending store's
    /// branch SRC as the receiving store's DST (`main:theirs/main`, to merge it there).
    #[arg(value_name = "BRANCH")]
    branches: Vec<String>,
    /// Move a receiver's branch that has diverged; its old tip stays in its reflog.
    #[arg(long)]
    force: bool,
    /// Transfer the store's settings (the tool-summarization, retention and secrets policies)
    /// too.
    #[arg(long)]
    settings: bool,
    /// The report as JSON.
    #[arg(long)]
    pub json: bool,
}

impl SyncArgs {
    /// The core's options, reporting progress to `progress`.
    pub fn options<'a>(
        &self,
        progress: &'a (dyn Fn(SyncProgress) + Sync),
    ) -> Result<SyncOptions<'a>, CommandError> {
        let branches = if self.branches.is_empty() {
            None
        } else {
            Some(
                self.branches
                    .iter()
                    .map(|b| BranchSpec::parse(b))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        };
        Ok(SyncOptions {
            branches,
            force: self.force,
            settings: self.settings,
            on_progress: Some(progress),
        })
    }
}

/// Runs `tract push`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    let bar = TransferProgress::new(a.sync.json);
    let pushed = tract_core::push(t.store(), &a.dest, &a.sync.options(&|p| bar.show(p))?);
    drop(bar);
    let here = shown_store(t.store().location());
    let report = pushed.map_err(|e| peer_error(e, &a.dest, Peer::Destination { here: &here }))?;
    finish(ui, ctx, &t, &report, a.sync.json, Direction::Push)
}

/// Which way a transfer went, from this store's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// This store sent (`push`): the other store's branches were refused.
    Push,
    /// This store received (`pull`): its own branches were refused.
    Pull,
}

/// Prints the report of a push or pull and fails, after it, when a branch was refused: the
/// error names each, and the hint gives the commands, as they run from here, that bring it
/// in under another name and merge it.
pub fn finish(
    ui: &mut Ui<'_>,
    ctx: &Context,
    t: &tract_core::Tract,
    report: &SyncReport,
    json: bool,
    direction: Direction,
) -> Result<(), CommandError> {
    print_report(ui, report, json);
    let Some(message) = report.refusal_message() else {
        return Ok(());
    };
    let moved = match report.branches.iter().filter(|b| !b.up_to_date()).count() {
        0 => String::new(),
        1 => " (1 other branch moved)".to_string(),
        n => format!(" ({n} other branches moved)"),
    };
    // The branch `tract merge` merges into without --branch: none to count on when this
    // command named one with --branch (the next command would not).
    let current = if ctx.branch_on_command_line() {
        None
    } else {
        t.head()?.branch().map(str::to_string)
    };
    let store = ctx
        .store_flag()
        .map(|s| format!("--store {} ", shell_word(&s.display().to_string())))
        .unwrap_or_default();
    let hint = refusal_hint(report, direction, current.as_deref(), &store);
    let error = CommandError::other(
        ErrorCategory::Conflict,
        Refused(format!("{message}{moved}")),
    );
    Err(error.with_hint(hint).after_report())
}

/// Some branches of a transfer were not moved.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

/// The next step for refused branches: pull each under `theirs/NAME` and merge it into the
/// branch it was refused for, then (after a push) push those branches again; or force.
/// `current` is the branch `tract merge` merges into without `--branch`; `store` is the
/// `--store` option the commands need to work on this store (empty when found from here).
fn refusal_hint(
    report: &SyncReport,
    direction: Direction,
    current: Option<&str>,
    store: &str,
) -> String {
    let peer = shell_word(report.peer.as_deref().unwrap_or("STORE"));
    // (the other store's branch, this store's branch it merges into)
    let pairs: Vec<(&str, &str)> = report
        .refused
        .iter()
        .map(|r| match direction {
            Direction::Push => (r.name.as_str(), r.source.as_str()),
            Direction::Pull => (r.source.as_str(), r.name.as_str()),
        })
        .collect();
    let specs: Vec<String> = pairs
        .iter()
        .map(|(theirs, _)| format!("{theirs}:theirs/{theirs}"))
        .collect();
    let merges: Vec<String> = pairs
        .iter()
        .map(|(theirs, ours)| {
            if current == Some(*ours) {
                format!("`tract {store}merge theirs/{theirs}`")
            } else {
                format!("`tract {store}--branch {ours} merge theirs/{theirs}`")
            }
        })
        .collect();
    let (it, receiver) = match (pairs.len(), direction) {
        (1, Direction::Push) => ("it", "the receiver's"),
        (_, Direction::Push) => ("each", "the receiver's"),
        (1, Direction::Pull) => ("it", "this store's"),
        (_, Direction::Pull) => ("each", "this store's"),
    };
    let again = match direction {
        Direction::Push => {
            let specs: Vec<String> = report
                .refused
                .iter()
                .map(|r| {
                    if r.source == r.name {
                        r.name.clone()
                    } else {
                        format!("{}:{}", r.source, r.name)
                    }
                })
                .collect();
            format!(", then `tract {store}push {peer} {}`", specs.join(" "))
        }
        Direction::Pull => String::new(),
    };
    format!(
        "bring {it} in under another name and merge it: `tract {store}pull {peer} {}`, then \
         {}{again}; or pass --force to move {it} anyway ({receiver} old tip stays in its reflog)",
        specs.join(" "),
        merges.join(" and "),
    )
}

/// `word` as a shell takes it: as is when it holds nothing a shell reads, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@~,+%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Prints what a push, pull or clone did: one line per branch, then the objects sent.
pub fn print_report(ui: &mut Ui<'_>, r: &SyncReport, json: bool) {
    if json {
        output::print(ui, &vocabulary::SyncReport::from(r), false);
        return;
    }
    for b in &r.branches {
        let name = if b.source == b.name {
            b.name.clone()
        } else {
            format!("{} as {}", b.source, b.name)
        };
        let line = match b.old {
            Some(old) if let Some(sender) = b.ahead_of => format!(
                "{name}: ahead at {} (it contains the sender's {})",
                old.short(),
                sender.short()
            ),
            Some(old) if old == b.new => format!("{name}: up to date at {}", b.new.short()),
            Some(old) if b.forced => format!(
                "{name}: {} -> {} (forced; {} stays in the reflog)",
                old.short(),
                b.new.short(),
                old.short()
            ),
            Some(old) => format!("{name}: {} -> {}", old.short(), b.new.short()),
            None => format!("{name}: new branch at {}", b.new.short()),
        };
        let _ = writeln!(ui, "{line}");
    }
    for refused in &r.refused {
        let name = if refused.source == refused.name {
            refused.name.clone()
        } else {
            format!("{} as {}", refused.source, refused.name)
        };
        let _ = writeln!(
            ui,
            "{name}: refused, {} (the receiver is at {}, the sender at {})",
            refused.reason.as_str(),
            refused.receiver.short(),
            refused.sender.short()
        );
    }
    let _ = writeln!(
        ui,
        "sent {} and {}{}",
        render::count(r.commits, "commit", "commits"),
        render::count(r.blobs, "blob", "blobs"),
        if r.settings { ", and the settings" } else { "" }
    );
}

/// Which end of a transfer the store a command names is.
#[derive(Debug, Clone, Copy)]
pub enum Peer<'a> {
    /// It receives (`push`); `here` is this store, as `tract clone` would take it.
    Destination {
        /// This store.
        here: &'a str,
    },
    /// It sends (`pull`, `clone`).
    Source,
}

/// The core's error for a transfer, where it is about the other store (`arg`, as the command
/// line gave it): not a tract store, or nothing there, named as the destination or the source
/// (not as this store, which the core's own hint would suggest fixing with `--store`); a
/// destination's hint is the `tract clone` that makes it.
pub fn peer_error(e: tract_core::Error, arg: &Path, peer: Peer<'_>) -> CommandError {
    use tract_core::Error;
    let (path, reason, category, exists) = match &e {
        Error::NotAStore { path, reason } if path.as_path() == arg || is_url(arg) => (
            path.clone(),
            reason.clone(),
            ErrorCategory::InvalidInput,
            true,
        ),
        Error::Io { path, source }
            if source.kind() == std::io::ErrorKind::NotFound && path.as_path() == arg =>
        {
            (
                path.clone(),
                "nothing is there".to_string(),
                ErrorCategory::NotFound,
                false,
            )
        }
        _ => return e.into(),
    };
    let shown = path.display().to_string();
    let (side, hint) = match peer {
        Peer::Destination { here } if exists && arg.exists() => (
            "destination",
            Some(format!(
                "push sends to an existing store; `tract clone {} NEW.redb` copies this one into a \
                 new file",
                shell_word(here)
            )),
        ),
        Peer::Destination { here } => (
            "destination",
            Some(format!(
                "push sends to an existing store; `tract clone {} {}` copies this one there",
                shell_word(here),
                shell_word(&shown)
            )),
        ),
        Peer::Source => ("source", None),
    };
    let error = CommandError::other(
        category,
        NotAStore {
            side,
            path: shown,
            reason,
            source: e,
        },
    );
    match hint {
        Some(h) => error.with_hint(h),
        None => error,
    }
}

/// Whether a store argument is a URL (a database), not a file.
pub fn is_url(arg: &Path) -> bool {
    arg.to_str().is_some_and(|a| a.contains("://"))
}

/// The other store of a transfer is not a tract store.
#[derive(Debug, thiserror::Error)]
#[error("the {side} {path} is not a tract store: {reason}")]
struct NotAStore {
    side: &'static str,
    path: String,
    reason: String,
    #[source]
    source: tract_core::Error,
}

/// A store's location as a command typed here would name it: relative to the working
/// directory when it is under it.
pub fn shown_store(location: Option<String>) -> String {
    let location = location.unwrap_or_default();
    let relative = std::env::current_dir().ok().and_then(|cwd| {
        Path::new(&location)
            .strip_prefix(&cwd)
            .ok()
            .map(|p| p.display().to_string())
    });
    relative.unwrap_or(location)
}

/// The progress of a transfer at a terminal ([`crate::progress`]; never with `--json`): a
/// count while the sender's history is walked, then a bar as the commits are stored.
pub struct TransferProgress(Option<(Progress, Progress)>);

impl TransferProgress {
    /// Hidden until the transfer has gone on for a moment; none with `--json`.
    pub fn new(json: bool) -> Self {
        TransferProgress((!json).then(|| {
            (
                Progress::new("finding what to send: {pos} commits"),
                Progress::new("sending {bar:30} {pos}/{len} commits"),
            )
        }))
    }

    /// Shows where the transfer is (the core's report).
    pub fn show(&self, p: SyncProgress) {
        let Some((finding, sending)) = &self.0 else {
            return;
        };
        match p {
            SyncProgress::Finding { commits } => finding.step(commits, None, ""),
            SyncProgress::Sending { done, total } => {
                finding.clear();
                sending.step(done, Some(total), "");
            }
            _ => {}
        }
    }
}
