//! `tract push`, and what `pull` and `clone` share with it: the options and the report.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary;
use std::fmt::Write;
use std::path::PathBuf;
use tract_core::{BranchName, SyncOptions, SyncReport};

/// Send branches and the history they reach to another store (a file or a postgresql:// URL):
/// only what it lacks; its branches move only by fast-forward.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The receiving store: a file or a postgresql:// URL (it must be a tract store).
    dest: PathBuf,
    #[command(flatten)]
    sync: SyncArgs,
}

/// The options of `push` and `pull`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// The branches to send (default: every branch).
    #[arg(value_name = "BRANCH")]
    branches: Vec<String>,
    /// Move a receiver's branch that has diverged; its old tip stays in its reflog.
    #[arg(long)]
    force: bool,
    /// Send the store's settings (the tool-summarization and retention policies) too.
    #[arg(long)]
    settings: bool,
    /// The report as JSON.
    #[arg(long)]
    pub json: bool,
}

impl SyncArgs {
    /// The core's options.
    pub fn options(&self) -> Result<SyncOptions, CommandError> {
        let branches = if self.branches.is_empty() {
            None
        } else {
            Some(
                self.branches
                    .iter()
                    .map(|b| BranchName::new(b))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        };
        Ok(SyncOptions {
            branches,
            force: self.force,
            settings: self.settings,
        })
    }
}

/// Runs `tract push`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    let report = tract_core::push(t.store(), &a.dest, &a.sync.options()?)?;
    print_report(ui, &report, a.sync.json);
    Ok(())
}

/// Prints what a push, pull or clone did: one line per branch, then the objects sent.
pub fn print_report(ui: &mut Ui<'_>, r: &SyncReport, json: bool) {
    if json {
        output::print(ui, &vocabulary::SyncReport::from(r), false);
        return;
    }
    for b in &r.branches {
        let line = match b.old {
            Some(old) if old == b.new => format!("{}: up to date at {}", b.name, b.new.short()),
            Some(old) if b.forced => format!(
                "{}: {} -> {} (forced; {} stays in the reflog)",
                b.name,
                old.short(),
                b.new.short(),
                old.short()
            ),
            Some(old) => format!("{}: {} -> {}", b.name, old.short(), b.new.short()),
            None => format!("{}: new branch at {}", b.name, b.new.short()),
        };
        let _ = writeln!(ui, "{line}");
    }
    let _ = writeln!(
        ui,
        "sent {} and {}{}",
        render::count(r.commits, "commit", "commits"),
        render::count(r.blobs, "blob", "blobs"),
        if r.settings { ", and the settings" } else { "" }
    );
}
