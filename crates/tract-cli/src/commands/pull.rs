//! `tract pull`.

use crate::commands::push::{SyncArgs, print_report};
use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::path::PathBuf;

/// Receive branches and their history from another store (a file or a postgresql:// URL): only
/// what this one lacks; branches move only by fast-forward.
#[derive(Debug, clap::Args)]
// The options are push's; their help is said from this side.
#[command(
    mut_arg("branches", |a| a.help("The branches to receive (default: every branch)")),
    mut_arg("force", |a| a.help(
        "Move a branch of this store that has diverged; its old tip stays in the reflog"
    )),
    mut_arg("settings", |a| a.help(
        "Take the sending store's settings (the tool-summarization and retention policies) in \
         place of this store's"
    )),
)]
pub struct Args {
    /// The sending store: a file or a postgresql:// URL.
    src: PathBuf,
    #[command(flatten)]
    sync: SyncArgs,
}

/// Runs `tract pull`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    let report = tract_core::pull(t.store(), &a.src, &a.sync.options()?)?;
    print_report(ui, &report, a.sync.json);
    Ok(())
}
