//! `tract search`, and what other commands show as it does: its default number of hits
//! (`tract mcp`'s too) and its lines of hits (`tract demo`'s).

use crate::arguments::when_us;
use crate::context::Context;
use crate::error::CommandError;
use crate::notes::note_if_branch_empty;
use crate::output;
use crate::progress::Progress;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::SearchHit;
use std::collections::BTreeMap;
use std::fmt::Write;
use tract_core::{AgentSession, Role, SearchQuery, SearchScope};

/// The hits a ranked search shows when `-n` does not say.
pub(super) const DEFAULT_HITS: usize = 20;

/// How the query reads, after the options in `--help`.
const QUERY_HELP: &str = "\
Query syntax (ranked search):
  word word       every word must appear, in any order; the best matches first (BM25)
  \"a phrase\"      these words in this order
  -word           must not appear (-\"a phrase\" too)
  a OR b          either
Identifiers and paths (getUserName, src/main.rs, DATABASE_URL) match as phrases of their
parts. Case does not matter; punctuation is not searched: use --regex for it. In a store in
PostgreSQL, hits are ranked by the database's ts_rank_cd, and a query matching more than
1,000 commits is ranked among its newest 1,000 matches.

WHEN is an RFC 3339 time (2026-01-31T09:00:00Z, 2026-01-31T10:00:00+01:00, 2026-01-31) or
a duration ago (7d, 2h, 30min; from TRACT_TIMESTAMP when it is set).";

/// Search message text, tool calls and tool results: ranked by relevance, best first, or
/// scanned with a regular expression.
#[derive(Debug, clap::Args)]
#[command(after_help = QUERY_HELP)]
pub struct Args {
    /// What to look for: words, "phrases", -excluded, a OR b (below); with --regex, a regular
    /// expression.
    query: String,
    /// Scan with QUERY as a regular expression (case-insensitive unless it says otherwise):
    /// hits in conversation order, not ranked; one branch, not --all.
    #[arg(long)]
    regex: bool,
    /// Only messages of this role.
    #[arg(long, value_name = "ROLE")]
    role: Option<String>,
    /// Only results of this tool and messages that call it.
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// Search every version in history, originals of edited messages included, not only the
    /// view.
    #[arg(long)]
    history: bool,
    /// Search every branch, not only the current one (or --branch's); each hit names the
    /// branches that hold it.
    #[arg(long)]
    all: bool,
    /// Only commits of this operation: append, edit, compress or merge.
    #[arg(long, value_name = "OP")]
    op: Option<String>,
    /// Only tool results marked as errors.
    #[arg(long)]
    errors: bool,
    /// Only commits made at or after WHEN.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Only commits made before WHEN.
    #[arg(long, value_name = "WHEN")]
    until: Option<String>,
    /// At most N hits (default: 20 for a ranked search, all of them with --regex).
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    limit: Option<usize>,
    /// Skip the first N hits: the next page (--offset 20 after 20 hits).
    #[arg(long, value_name = "N", default_value_t = 0)]
    offset: usize,
    /// As JSON: a list of hits.
    #[arg(long)]
    json: bool,
}

/// Runs `tract search`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    // The input is read whole before the store is opened: a mistake costs nothing.
    if a.all && ctx.branch_on_command_line() {
        return Err(CommandError::invalid_input(
            "--all searches every branch and --branch names one: give one of them",
        ));
    }
    let now_us = ctx.env().store_options()?.clock.now_us();
    let when = |flag: &str, v: &Option<String>| {
        v.as_deref()
            .map(|text| when_us(flag, text, now_us))
            .transpose()
    };
    let since_us = when("--since", &a.since)?;
    let until_us = when("--until", &a.until)?;
    let role = a.role.as_deref().map(Role::parse).transpose()?;
    let limit = match (a.limit, a.regex) {
        (Some(n), _) => Some(n),
        (None, false) => Some(DEFAULT_HITS),
        (None, true) => None,
    };
    // Every branch: which one the handle is on (TRACT_BRANCH's, maybe not born yet) does not
    // matter.
    let t = match a.all {
        true => ctx.open()?,
        false => ctx.open_existing_branch()?,
    };
    let q = SearchQuery {
        query: a.query.clone(),
        regex: a.regex,
        role,
        tool: a.tool.clone(),
        history: a.history,
        scope: match a.all {
            true => SearchScope::All,
            false => SearchScope::Here,
        },
        op: a.op.clone(),
        errors: a.errors,
        since_us,
        until_us,
        offset: a.offset,
        // One more than shown tells whether a next page follows.
        limit: limit.map(|n| if n == 0 { 0 } else { n.saturating_add(1) }),
    };
    // The first search of a store (or one past many new commits) indexes them first.
    let bar = Progress::new("indexing for search: {pos} commits");
    let steps = bar.steps();
    t.set_progress(Some(std::sync::Arc::new(move |p| {
        if let tract_core::Progress::Indexing { commits } = p {
            steps.step(commits, None, "");
        }
    })));
    let hits = t.search(&q);
    t.set_progress(None);
    drop(bar);
    let mut hits = hits?;
    if !a.all {
        note_if_branch_empty(&t, ui, "`--all` searches them")?;
    }
    let more = limit.is_some_and(|n| hits.len() > n);
    if let Some(n) = limit {
        hits.truncate(n);
    }
    let agents = t.agents()?;
    if a.json {
        let list: Vec<_> = hits
            .iter()
            .map(|h| SearchHit::from(h).with_agents(&agents))
            .collect();
        output::print(ui, &list, false);
        return Ok(());
    }
    // Which branches hold a hit says something only when there is more than one. The tips
    // alone: listing branches with their counts replays the view of every branch whose counts
    // the store does not keep (a clone's), seconds at a thousand branches in a database.
    let show_branches = t.store().read()?.branches()?.len() > 1;
    print_hits(ui, &hits, show_branches.then_some(&agents));
    if more && let Some(n) = limit {
        // The same page size again, when it was not the default.
        let size = a.limit.map(|n| format!(" -n {n}")).unwrap_or_default();
        ui.note(&format!(
            "more hits follow: --offset {}{size} shows the next page",
            a.offset.saturating_add(n)
        ));
    }
    Ok(())
}

/// One line per hit: its short id, role, tools and snippet (its matches in colour on a
/// terminal), and with `branches` the branches that hold it, each with the agent whose session
/// it holds (`branches` gives them by branch).
pub(super) fn print_hits(
    ui: &mut Ui<'_>,
    hits: &[tract_core::SearchHit],
    branches: Option<&BTreeMap<String, AgentSession>>,
) {
    let colour = ui.colour();
    for h in hits {
        let role = render::role(&h.info);
        let tools = h.info.tool_names().join(",");
        let mut line = format!(
            "{} {:<9} {:<12} {}",
            h.info.id.short(),
            role,
            render::cut(if tools.is_empty() { "-" } else { &tools }, 12),
            snippet(&h.snippet, &h.highlights, colour)
        );
        if let Some(agents) = branches
            && !h.branches.is_empty()
        {
            let named: Vec<String> = h
                .branches
                .iter()
                .map(|b| match agents.get(b) {
                    Some(a) => format!("{b} [{}]", a.label()),
                    None => b.clone(),
                })
                .collect();
            line = format!("{}  ({})", line.trim_end(), branch_list(&named));
        }
        let _ = writeln!(ui, "{}", line.trim_end());
    }
}

/// Branch names shown after a hit: the first three, and how many more.
const BRANCHES_SHOWN: usize = 3;

/// `names`, the first [`BRANCHES_SHOWN`] of them and a count of the rest.
fn branch_list(names: &[String]) -> String {
    let mut out = names
        .iter()
        .take(BRANCHES_SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > BRANCHES_SHOWN {
        let _ = write!(out, " +{} more", names.len() - BRANCHES_SHOWN);
    }
    out
}

/// Bold red, as `grep --color` marks a match, and back to plain.
const MARK: (&str, &str) = ("\x1b[1;31m", "\x1b[0m");

/// `text` with the byte ranges `ranges` marked in colour when `colour` is on; as it is
/// otherwise. A range that is out of order, overlaps the one before, or does not fall on
/// character boundaries is left unmarked.
fn snippet(text: &str, ranges: &[(usize, usize)], colour: bool) -> String {
    if !colour || ranges.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + ranges.len() * 12);
    let mut at = 0;
    for &(start, end) in ranges {
        let fits = at <= start
            && start < end
            && end <= text.len()
            && text.is_char_boundary(start)
            && text.is_char_boundary(end);
        if !fits {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(MARK.0);
        out.push_str(&text[start..end]);
        out.push_str(MARK.1);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_are_coloured_only_where_they_fit() {
        assert_eq!(snippet("a needle b", &[(2, 8)], false), "a needle b");
        assert_eq!(
            snippet("a needle b", &[(2, 8)], true),
            "a \x1b[1;31mneedle\x1b[0m b"
        );
        // Out of bounds, inside a character, overlapping: left plain.
        assert_eq!(
            snippet("é x", &[(1, 2), (3, 9), (0, 2), (1, 2)], true),
            "\x1b[1;31mé\x1b[0m x"
        );
    }

    #[test]
    fn long_branch_lists_are_cut() {
        let names: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
        assert_eq!(branch_list(&names[..2]), "a, b");
        assert_eq!(branch_list(&names), "a, b, c +2 more");
    }
}
