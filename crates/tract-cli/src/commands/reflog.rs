//! `tract reflog`.

use crate::context::Context;
use crate::error::CommandError;
use crate::notes::note_if_branch_empty;
use crate::render;
use crate::ui::Ui;

/// Show the moves of a ref, newest first: without NAME, the current branch's and HEAD's
/// (switches, checkouts), merged by time, as `git reflog` shows HEAD's.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A branch name or HEAD (default: the current branch and HEAD; with --branch, that
    /// branch).
    name: Option<String>,
    /// At most this many entries.
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    limit: Option<usize>,
}

/// Runs `tract reflog`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    if a.name.is_some() && ctx.branch_on_command_line() {
        return Err(CommandError::invalid_input(
            "--branch and NAME both name the ref to show: give one of them",
        ));
    }
    let limit = a.limit.unwrap_or(usize::MAX);
    // A NAME wins over TRACT_BRANCH, as an argument over the environment.
    let named = a.name.as_deref().or(ctx.branch_flag());
    let t = match named {
        Some(_) => ctx.open_read_only()?,
        None => ctx.open_head_read_only()?,
    };
    if let Some(name) = named {
        for (i, e) in t.reflog(name, limit)?.iter().enumerate() {
            render::reflog_line(ui, name, i, e);
        }
        return Ok(());
    }
    let head = t.store_head()?;
    let moves = t.reflog("HEAD", limit)?;
    let branch = match head.branch() {
        Some(b) => t.reflog(b, limit)?,
        None => Vec::new(),
    };
    // Each ref's own order (newest first, numbered `main@{0}`, `main@{1}`), the two merged by
    // time; at one time (a fixed clock, where nothing tells which came first) the branch's
    // first.
    let (mut b, mut h) = (
        branch.iter().enumerate().peekable(),
        moves.iter().enumerate().peekable(),
    );
    let name = head.branch().unwrap_or("HEAD");
    for _ in 0..limit {
        let take_branch = match (b.peek(), h.peek()) {
            (Some((_, x)), Some((_, y))) => x.timestamp_us >= y.timestamp_us,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let (which, next) = match take_branch {
            true => (name, b.next()),
            false => ("HEAD", h.next()),
        };
        if let Some((i, e)) = next {
            render::reflog_line(ui, which, i, e);
        }
    }
    note_if_branch_empty(&t, ui, "`tract reflog BRANCH` shows one's moves")?;
    Ok(())
}
