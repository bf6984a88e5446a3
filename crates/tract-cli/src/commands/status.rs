//! `tract status`.

use crate::context::Context;
use crate::error::CommandError;
use crate::notes::note_if_branch_empty;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::Status;

/// Where HEAD is and what the model would see.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// As JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tract status`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open_to_read()?;
    let s = t.status()?;
    note_if_branch_empty(&t, ui, "`tract switch BRANCH` goes to one")?;
    if a.json {
        output::print(ui, &Status::from(&s), false);
    } else {
        render::status(ui, &s);
    }
    Ok(())
}
