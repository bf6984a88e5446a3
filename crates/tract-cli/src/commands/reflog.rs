//! `tract reflog`.

use crate::context::Context;
use crate::error::CommandError;
use crate::render;
use crate::ui::Ui;

/// Show the moves of a ref (default HEAD), newest first.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A branch name or HEAD.
    #[arg(default_value = "HEAD")]
    name: String,
    /// At most this many entries.
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    limit: Option<usize>,
}

/// Runs `tract reflog`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    for (i, e) in ctx
        .open()?
        .reflog(&a.name, a.limit.unwrap_or(usize::MAX))?
        .iter()
        .enumerate()
    {
        render::reflog_line(ui, &a.name, i, e);
    }
    Ok(())
}
