//! `tract edit`.

use crate::arguments::{rev, text_or_stdin};
use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::fmt::Write;
use std::path::PathBuf;
use tract_core::{Content, Error};

/// Replace the content of a message in the view; the original stays in history.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The commit to edit (an id prefix, a branch, HEAD~N).
    target: String,
    /// The new content; `-` reads standard input.
    #[arg(conflicts_with_all = ["content", "file"])]
    text: Option<String>,
    /// The new content.
    #[arg(long, value_name = "TEXT", conflicts_with = "file")]
    content: Option<String>,
    /// Read the new content from this file.
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
}

/// Runs `tract edit`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    let text = match (&a.text, &a.content, &a.file) {
        (Some(text), _, _) => text_or_stdin(text)?,
        (_, Some(content), _) => content.clone(),
        (_, _, Some(path)) => {
            std::fs::read_to_string(path).map_err(|source| Error::io(path.clone(), source))?
        }
        (None, None, None) => {
            return Err(CommandError::invalid_input(
                "give the new content: TEXT, --content, --file or -",
            ));
        }
    };
    let info = t.edit(rev(&a.target)?, Content::Text(text))?;
    let _ = writeln!(ui, "{}", info.id.short());
    Ok(())
}
