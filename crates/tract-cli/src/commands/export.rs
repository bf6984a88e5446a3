//! `tract export`.

use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use tract_core::formats::exports::ExportFormat;

/// Write the branch out: a provider request body (openai, anthropic), tract JSONL or a
/// Markdown transcript, to standard output.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// openai, anthropic, jsonl or markdown.
    #[arg(long, default_value = "jsonl")]
    format: String,
    /// Every commit instead of the view (jsonl: read back by `tract import` to identical ids;
    /// markdown: each commit with its operation).
    #[arg(long)]
    history: bool,
}

/// Runs `tract export`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let format = ExportFormat::parse(&a.format)?;
    let t = ctx.open_to_read()?;
    ui.print(&t.export(format, a.history)?);
    Ok(())
}
