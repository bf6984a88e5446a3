//! `tract search`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::SearchHit;
use std::fmt::Write;
use tract_core::{Role, SearchQuery};

/// Search message text, tool calls and tool results.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to look for (case-insensitive substring).
    query: String,
    /// Treat QUERY as a regular expression.
    #[arg(long)]
    regex: bool,
    /// Only messages of this role.
    #[arg(long, value_name = "ROLE")]
    role: Option<String>,
    /// Only results of this tool and messages that call it.
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// Search every version in history, originals of edited messages included.
    #[arg(long)]
    history: bool,
    /// At most this many hits.
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    limit: Option<usize>,
    /// As JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tract search`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open_to_read()?;
    let q = SearchQuery {
        query: a.query.clone(),
        regex: a.regex,
        role: a.role.as_deref().map(Role::parse).transpose()?,
        tool: a.tool.clone(),
        history: a.history,
        limit: a.limit,
        ..SearchQuery::default()
    };
    let hits = t.search(&q)?;
    if a.json {
        let list: Vec<_> = hits.iter().map(SearchHit::from).collect();
        output::print(ui, &list, false);
        return Ok(());
    }
    for h in &hits {
        let role = h.info.role().map_or("-", |r| r.as_str());
        let tools = h.info.tool_names().join(",");
        let _ = writeln!(
            ui,
            "{} {:<9} {:<12} {}",
            h.info.id.short(),
            role,
            render::cut(if tools.is_empty() { "-" } else { &tools }, 12),
            h.snippet
        );
    }
    Ok(())
}
