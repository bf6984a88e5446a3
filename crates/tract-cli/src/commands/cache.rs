//! `tract cache`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render::count;
use crate::ui::Ui;
use crate::vocabulary::{CacheReport, cache_notes};
use std::fmt::Write;
use tract_core::{CacheOptions, Provider};

/// What a provider's prompt cache could have served each model request of the branch, against
/// what the provider reported, and the commit that broke the cached prefix each time a request
/// did not extend the one before it (an edit, a compression, a clear, the system prompt, a
/// redaction, a model switch, a gap past the cache's lifetime). Each request is the view its
/// answer was given, rendered as `compile` renders it; a request is an answer with usage.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The rendering compared (the one the agent sends).
    #[arg(long, value_enum, default_value_t = Format::Anthropic)]
    format: Format,
    /// How long the provider keeps a cached prefix, in seconds (Anthropic's default is 300;
    /// its longer one 3600).
    #[arg(long, value_name = "SECONDS", default_value_t = tract_core::DEFAULT_CACHE_TTL_SECONDS)]
    ttl: u64,
    /// Every request, not only those whose prefix broke.
    #[arg(long, short = 'v')]
    verbose: bool,
    /// The report as JSON (every request).
    #[arg(long)]
    json: bool,
}

/// The renderings compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// Anthropic Messages `{"system", "messages"}`.
    Anthropic,
    /// OpenAI chat completions `messages`.
    Openai,
    /// OpenAI Responses `input` items.
    Responses,
}

/// Runs `tract cache`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open_to_read()?;
    let o = CacheOptions {
        provider: match a.format {
            Format::Anthropic => Provider::Anthropic,
            Format::Openai => Provider::OpenAi,
            Format::Responses => Provider::Responses { limit: None },
        },
        ttl_seconds: a.ttl,
    };
    let r = t.cache_report(None, &o)?;
    if a.json {
        output::print(ui, &CacheReport::from(&r), false);
        return Ok(());
    }
    let mut out = String::new();
    let breaks = r.requests.iter().filter(|q| q.broke.is_some()).count();
    let _ = writeln!(
        out,
        "{}: {}, {} of the cached prefix",
        r.branch,
        count(r.requests.len() as u64, "request", "requests"),
        count(breaks as u64, "break", "breaks"),
    );
    let read: u64 = r
        .requests
        .iter()
        .map(|q| q.usage.cache_read_input_tokens)
        .sum();
    let could: u64 = r.requests.iter().map(|q| q.shared_tokens).sum();
    let _ = writeln!(
        out,
        "  cache read (reported): {read} tokens; shared with the request before (as tract \
         renders them): {could} tokens"
    );
    for (n, q) in r.requests.iter().enumerate() {
        if q.broke.is_none() && !a.verbose {
            continue;
        }
        let time = tract_core::clock::rfc3339_micros(q.time_us);
        let _ = write!(
            out,
            "  request {} ({}, {}): {} of {} tokens shared; {} read from the cache",
            n + 1,
            q.commit.short(),
            time.get(..19).unwrap_or(&time),
            q.shared_tokens,
            q.request_tokens,
            q.usage.cache_read_input_tokens,
        );
        match &q.broke {
            Some(b) => {
                let _ = writeln!(out, "\n    broken by {} {}", b.cause, b.commit.to_hex());
            }
            None => out.push('\n'),
        }
    }
    for note in cache_notes(&r) {
        let _ = writeln!(out, "note: {note}");
    }
    ui.print(&out);
    Ok(())
}
