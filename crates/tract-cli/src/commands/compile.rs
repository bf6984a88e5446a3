//! `tract compile`.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::ui::Ui;
use clap::ValueEnum;

/// Print the view as a provider request body.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The provider format.
    #[arg(long, value_enum, default_value_t = Format::Openai)]
    format: Format,
    /// Compile the view at this commit instead of HEAD.
    #[arg(long, value_name = "REV")]
    at: Option<String>,
    /// One line of JSON instead of indented.
    #[arg(long)]
    compact: bool,
    /// Print OpenAI's `prompt_cache_key` for this conversation instead: the same in every
    /// process for the branch and its forks (derived from its first commit).
    #[arg(long, conflicts_with_all = ["format", "compact"])]
    cache_key: bool,
    /// With `--format anthropic`: `cache_control` breakpoints where the prefix stays the same
    /// from request to request (at most 4: the end of the system prompt, of the newest
    /// summary, of the newest message).
    #[arg(long)]
    cache_breakpoints: bool,
}

/// Provider formats for `compile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// OpenAI chat completions `messages`.
    Openai,
    /// Anthropic Messages `{"system", "messages"}`.
    Anthropic,
    /// OpenAI Responses `input` items.
    Responses,
}

/// Runs `tract compile`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    if a.cache_breakpoints && a.format != Format::Anthropic {
        return Err(CommandError::invalid_input(
            "--cache-breakpoints places Anthropic's cache_control: use it with --format anthropic",
        ));
    }
    let t = ctx.open_to_read()?;
    let compiled = match &a.at {
        Some(at) => t.compile_at(&rev(at)?)?,
        None => t.compile()?,
    };
    if a.cache_key {
        match compiled.prompt_cache_key()? {
            Some(key) => ui.print(&format!("{key}\n")),
            None => {
                return Err(CommandError::invalid_input(
                    "the branch has no commit yet: it has no prompt cache key",
                ));
            }
        }
        return Ok(());
    }
    for w in compiled.warnings() {
        ui.warning(&w);
    }
    let body = match a.format {
        Format::Openai => compiled.to_openai()?,
        Format::Anthropic if a.cache_breakpoints => {
            compiled.to_anthropic_with_cache_breakpoints()?
        }
        Format::Anthropic => compiled.to_anthropic()?,
        Format::Responses => compiled.to_responses(None)?,
    };
    output::print(ui, &body, a.compact);
    Ok(())
}
