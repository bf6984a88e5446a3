//! `tract clone`.

use crate::commands::push::{Peer, TransferProgress, is_url, peer_error, print_report};
use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::path::PathBuf;

/// Copy a store into a new one (files or postgresql:// URLs, either way): every branch with its
/// history, the settings and HEAD; every id stays the same.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store to copy.
    src: PathBuf,
    /// The new store (a file that does not exist yet, its directories made if needed, or a
    /// schema that holds no store).
    dest: PathBuf,
    /// The report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tract clone`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    if a.dest.exists() {
        return Err(CommandError::invalid_input(format!(
            "{} exists; clone into a new file",
            a.dest.display()
        )));
    }
    let options = ctx.env().store_options()?;
    // As `git clone` makes its directory: `tract clone SRC .tract/store.redb` makes `.tract`.
    if let Some(dir) = a
        .dest
        .parent()
        .filter(|d| !is_url(&a.dest) && !d.as_os_str().is_empty())
        && !dir.exists()
    {
        // The source is checked first, so a mistyped source leaves no directory behind.
        tract_core::Store::open_with(&a.src, tract_core::OpenMode::Existing, options)
            .map_err(|e| peer_error(e, &a.src, Peer::Source))?;
        std::fs::create_dir_all(dir).map_err(|e| tract_core::Error::io(dir, e))?;
    }
    let bar = TransferProgress::new(a.json);
    let show = |p| bar.show(p);
    let cloned = tract_core::clone_store_with(&a.src, &a.dest, options, Some(&show));
    drop(bar);
    let (_, report) = cloned.map_err(|e| peer_error(e, &a.src, Peer::Source))?;
    print_report(ui, &report, a.json);
    Ok(())
}
