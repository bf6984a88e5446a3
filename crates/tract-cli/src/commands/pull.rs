//! `tract pull`.

use crate::commands::push::{SyncArgs, print_report};
use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::path::PathBuf;

/// Receive branches and their history from another store (a file or a postgresql:// URL): only
/// what this one lacks; branches move only by fast-forward.
#[derive(Debug, clap::Args)]
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
