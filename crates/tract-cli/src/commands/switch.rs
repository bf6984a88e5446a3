//! `tract switch`.

use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::fmt::Write;
use tract_core::BranchName;

/// Make NAME the current branch.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The branch.
    name: String,
    /// Create it at HEAD first.
    #[arg(short = 'c', long)]
    create: bool,
}

/// Runs `tract switch`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open_head()?;
    if a.create {
        t.switch_new(&BranchName::new(&a.name)?)?;
    } else {
        t.switch(&a.name)?;
    }
    let _ = writeln!(ui, "switched to branch {}", a.name);
    Ok(())
}
