//! The answers of the web API (docs/serve.md): each endpoint's envelope around the
//! vocabulary's types ([`crate::vocabulary`]), with what only the page needs beside them.

use crate::vocabulary::{Branch, Commit, Redaction, SearchHit, Version, ViewMessage};
use serde::Serialize;

/// `GET /api/store`: the store the server reads.
#[derive(Serialize)]
pub(super) struct StoreAnswer {
    /// Its file, or its URL without the password.
    pub store: Option<String>,
    /// The branch the store's `HEAD` names (`null` when detached).
    pub head: Option<String>,
    /// How many branches it holds.
    pub branches: usize,
    /// tract's version.
    pub version: &'static str,
}

/// `GET /api/sessions`: every branch, most recently active first.
#[derive(Serialize)]
pub(super) struct SessionsAnswer {
    /// The branches with their counts.
    pub sessions: Vec<Branch>,
}

/// `GET /api/view`: a page of a branch's view.
#[derive(Serialize)]
pub(super) struct ViewAnswer {
    /// The branch.
    pub branch: String,
    /// The commit the view is of (`null` for an empty branch).
    pub head: Option<String>,
    /// Messages in the whole view.
    pub total: usize,
    /// Tokens of the whole compiled request (framing included).
    pub token_count: u64,
    /// The index of the page's first message.
    pub offset: usize,
    /// The most messages a page holds, as asked.
    pub limit: usize,
    /// The page's messages, in view order.
    pub entries: Vec<ViewMessage>,
}

/// `GET /api/commit/ID`: one commit with what the history knows around it.
#[derive(Serialize)]
pub(super) struct CommitAnswer {
    /// The commit in full, with the version of its position in view and the summary that
    /// replaced it, as `tract show --json` prints it.
    pub commit: Commit,
    /// For a commit that is, or edits, a position of the view: the position's versions,
    /// oldest first, `current` on the one in view; empty otherwise.
    pub versions: Vec<Version>,
    /// For a compression: the commits it summarized (their versions in view then).
    pub sources: Vec<Commit>,
    /// For a redacted message: when and why.
    pub redacted: Option<Redaction>,
    /// The branches whose tip this commit is.
    pub branches: Vec<String>,
}

/// `GET /api/history`: a branch's commits in graph order, newest first.
#[derive(Serialize)]
pub(super) struct HistoryAnswer {
    /// The branch.
    pub branch: String,
    /// Its tip.
    pub head: Option<String>,
    /// Whether the history goes on past the commits listed.
    pub more: bool,
    /// The commits.
    pub commits: Vec<HistoryRow>,
    /// Where other branches fork from this one, within the commits listed.
    pub forks: Vec<Fork>,
}

/// One commit of a history: the commit without its texts (a graph lists thousands; its page
/// has them), and its place in the graph.
#[derive(Serialize)]
pub(super) struct HistoryRow {
    /// The commit, without `content` and `message`.
    #[serde(flatten)]
    pub commit: Commit,
    /// Whether it is on the branch's own line (first parents from its tip), not brought in
    /// by a merge.
    pub first_parent: bool,
    /// Its first line, cut to 200 characters.
    pub preview: String,
    /// The branches whose tip it is.
    pub branches: Vec<String>,
}

/// Where another branch forks from the one listed.
#[derive(Serialize)]
pub(super) struct Fork {
    /// The other branch.
    pub branch: String,
    /// The commit of this branch's line it forks at.
    pub at: String,
}

/// `GET /api/search`: a page of the hits of a search.
#[derive(Serialize)]
pub(super) struct SearchAnswer {
    /// The hits, best first.
    pub hits: Vec<Hit>,
    /// How many hits before these were skipped, as asked.
    pub offset: usize,
    /// Whether more hits follow (the next page starts at `offset` plus these hits).
    pub more: bool,
}

/// One hit: the search hit without its texts (the snippet shows what matched; the commit's
/// page has the rest) and its place in the view.
#[derive(Serialize)]
pub(super) struct Hit {
    /// The hit: its commit's fields, the snippet and its highlights, the score and the
    /// branches that hold it.
    #[serde(flatten)]
    pub hit: SearchHit,
    /// Its index in the branch's view when the view shows that content (`null` for an
    /// earlier version of an edited message, a compressed source, or, searching all
    /// branches, a message of another branch's).
    pub index: Option<usize>,
}
