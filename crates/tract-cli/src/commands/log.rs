//! `tract log`.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::notes::note_if_branch_empty;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::Commit;
use tract_core::{LogQuery, Role};

/// Show history, newest first.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to start (default: HEAD).
    rev: Option<String>,
    /// At most this many commits.
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    limit: Option<usize>,
    /// One JSON object per commit, as a list.
    #[arg(long, conflicts_with = "oneline")]
    json: bool,
    /// Short id and first line only.
    #[arg(long)]
    oneline: bool,
    /// Draw the commit graph: merged branches' commits too, with the lines between them.
    #[arg(long, conflicts_with_all = ["json", "oneline", "role", "tool"])]
    graph: bool,
    /// Only commits of this role.
    #[arg(long, value_name = "ROLE")]
    role: Option<String>,
    /// Only results of this tool and messages that call it.
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
}

/// Runs `tract log`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let role = a.role.as_deref().map(Role::parse).transpose()?;
    let t = ctx.open_to_read()?;
    let query = LogQuery {
        start: a.rev.as_deref().map(rev).transpose()?,
        limit: a.limit,
        graph: a.graph,
        role,
        tool: a.tool.clone(),
    };
    let infos = t.log(&query)?;
    if a.rev.is_none() {
        note_if_branch_empty(&t, ui, "`tract log BRANCH` shows one")?;
        // Whose session this is, beside the log (on standard error: the log stays the log).
        if !a.json
            && let Some(branch) = t.head()?.branch()
            && let Some(s) = t.agents()?.get(branch)
        {
            let started = s
                .started
                .as_deref()
                .map(|at| format!(", started {at}"))
                .unwrap_or_default();
            ui.note(&format!("a {} session{started}", s.label()));
        }
    }
    if a.graph {
        render::graph(ui, &infos, &t.branches()?);
        return Ok(());
    }
    if a.json {
        let list: Vec<_> = infos.iter().map(Commit::from).collect();
        output::print(ui, &list, false);
    } else {
        if ui.terminal() && !a.oneline && !infos.is_empty() {
            render::log_header(ui);
        }
        for info in &infos {
            if a.oneline {
                render::oneline(ui, info);
            } else {
                render::log_line(ui, info);
            }
        }
    }
    Ok(())
}
