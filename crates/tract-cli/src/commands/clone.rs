//! `tract clone`.

use crate::commands::push::print_report;
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
    /// The new store (a file that does not exist yet, or a schema that holds no store).
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
    let (_, report) = tract_core::clone_store(&a.src, &a.dest, ctx.env().store_options()?)?;
    print_report(ui, &report, a.json);
    Ok(())
}
