//! Search over message text, tool-call names and arguments, and tool results: ranked by the
//! store's search index (`storage::search`: BM25 in a store file or memory, the database's
//! full-text search and its `ts_rank_cd` in PostgreSQL), or scanned with a regular expression;
//! in the view or over every version in history; of the handle's branch, one branch, or every
//! branch.

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId};
use crate::object::{Message, Op, Role};
use crate::repo::Repo;
use crate::storage::search::catch_up::{self, Indexed, searchable};
use crate::storage::search::keeper::{self, Keeper};
use crate::storage::search::lanes::{self, Lanes, Place, Reach, within};
use crate::storage::search::query::{Parsed, Positions, Weights};
use crate::storage::search::snippet::{Passages, one_line};
use crate::storage::search::{Ask, Filters, Found, Hit, Ranking, Reading, Upkeep};
use crate::storage::store::snapshot::Snapshot;
use crate::view::info::CommitInfo;
use crate::view::{ancestry, checkpoint};
use regex::{Regex, RegexBuilder};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// Characters of context on each side of a match in a scan's snippet.
const SNIPPET_CONTEXT: usize = 40;

/// Which branches a search covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SearchScope {
    /// The handle's position (its branch, or the commit it is detached at).
    #[default]
    Here,
    /// One branch, by name.
    Branch(String),
    /// Every branch.
    All,
}

/// What to look for.
#[derive(Debug, Clone, Default)]
pub struct SearchQuery {
    /// The words to look for (ranked; the syntax is `index::query`'s: words, `"phrases"`,
    /// `-excluded`, `OR`), or a regular expression with `regex`.
    pub query: String,
    /// Scan with `query` as a regular expression (case-insensitive unless it says otherwise),
    /// hits in store order, instead of ranking. Scans the scope's branch (not `All`).
    pub regex: bool,
    /// Only messages of this role.
    pub role: Option<Role>,
    /// Only results of this tool, and assistant messages that call it.
    pub tool: Option<String>,
    /// Search every version in history (originals of edited messages included, and the
    /// history of every branch merged in), not just what is in view.
    pub history: bool,
    /// Which branches.
    pub scope: SearchScope,
    /// Only commits of this operation: `append`, `edit`, `compress`, `merge`.
    pub op: Option<String>,
    /// Only tool results marked as errors.
    pub errors: bool,
    /// Only commits made at or after this time (microseconds since the epoch).
    pub since_us: Option<u64>,
    /// Only commits made before this time (microseconds since the epoch).
    pub until_us: Option<u64>,
    /// Hits skipped before the first returned (paging).
    pub offset: usize,
    /// At most this many hits (`None`: all).
    pub limit: Option<usize>,
}

/// One match.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// The commit whose message matched (for the view: the version in view).
    pub info: CommitInfo,
    /// Where it matched: a ranked hit's best passage, a scan's matching line, with some
    /// context.
    pub snippet: String,
    /// The byte ranges of `snippet` that matched.
    pub highlights: Vec<(usize, usize)>,
    /// The ranking's score (BM25, or PostgreSQL's `ts_rank_cd`; `None` for a scan's hit).
    pub score: Option<f32>,
    /// Every branch whose history holds the commit, by name (a fork shares its source's
    /// commits: one hit names them all).
    pub branches: Vec<String>,
}

/// The operations a search can filter on.
const OPS: [&str; 4] = ["append", "edit", "compress", "merge"];

fn matcher(q: &SearchQuery) -> Result<Regex> {
    if q.query.is_empty() {
        return Err(Error::invalid_input("an empty search query"));
    }
    let pattern = if q.regex {
        q.query.clone()
    } else {
        regex::escape(&q.query)
    };
    RegexBuilder::new(&pattern)
        .case_insensitive(true)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| {
            // The engine's message spans lines (pattern, caret, reason): keep the reason.
            let text = e.to_string();
            let reason = text
                .lines()
                .last()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            Error::invalid_input(format!(
                "invalid regular expression '{}': {reason}",
                q.query
            ))
        })
}

/// Whether a message of `role`, `name` and tools `calls` passes the query's role and tool
/// filters.
fn wanted<'a>(
    role: Role,
    name: Option<&str>,
    mut calls: impl Iterator<Item = &'a str>,
    q: &SearchQuery,
) -> bool {
    if q.role.is_some_and(|r| r != role) {
        return false;
    }
    match &q.tool {
        None => true,
        Some(t) => name == Some(t.as_str()) && role == Role::Tool || calls.any(|c| c == t),
    }
}

/// [`wanted`] of a message, with the error filter.
fn wanted_message(m: &Message, q: &SearchQuery) -> bool {
    (!q.errors || m.is_error)
        && wanted(
            m.role,
            m.name.as_deref(),
            m.tool_calls.iter().map(|c| c.name.as_str()),
            q,
        )
}

/// Whether a commit passes the query's operation and time filters.
fn wanted_commit(info: &CommitInfo, q: &SearchQuery) -> bool {
    let t = info.commit.timestamp_us;
    q.op.as_deref()
        .is_none_or(|op| catch_up::op_name(&info.commit.op) == op)
        && q.since_us.is_none_or(|s| t >= s)
        && q.until_us.is_none_or(|u| t < u)
}

/// A snippet and where the match is in it.
type Snippet = (String, (usize, usize));

/// The snippet of the first match in `m`, if any, and where the match is in it.
fn find(re: &Regex, m: &Message) -> Option<Snippet> {
    let text = m.content.text();
    if let Some(hit) = re.find(&text) {
        return Some(snippet(&text, hit.start(), hit.end()));
    }
    m.tool_calls.iter().find_map(|c| {
        let call = format!("{}({})", c.name, c.arguments);
        re.find(&call)
            .map(|hit| snippet(&call, hit.start(), hit.end()))
    })
}

/// The line around `start..end`, with at most [`SNIPPET_CONTEXT`] characters each side, and
/// where `start..end` is in it.
fn snippet(text: &str, start: usize, end: usize) -> Snippet {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let before: String = text[line_start..start]
        .chars()
        .rev()
        .take(SNIPPET_CONTEXT)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let after: String = text[end..line_end].chars().take(SNIPPET_CONTEXT).collect();
    let lead = if before.len() < start - line_start {
        "…"
    } else {
        ""
    };
    let tail = if after.len() < line_end - end {
        "…"
    } else {
        ""
    };
    let at = lead.len() + before.len();
    let s = format!("{lead}{before}{}{after}{tail}", &text[start..end]);
    (s, (at, at + end - start))
}

/// Checks what a query asks for before any work: bad input changes nothing and costs little.
fn check(q: &SearchQuery) -> Result<()> {
    if q.query.trim().is_empty() {
        return Err(Error::invalid_input("an empty search query"));
    }
    if let Some(op) = &q.op
        && !OPS.contains(&op.as_str())
    {
        return Err(Error::invalid_input(format!(
            "unknown operation '{op}' to search (one of: {})",
            OPS.join(", ")
        )));
    }
    if let (Some(s), Some(u)) = (q.since_us, q.until_us)
        && s >= u
    {
        return Err(Error::invalid_input(
            "a search's time range ends before it starts",
        ));
    }
    if q.regex && q.scope == SearchScope::All {
        return Err(Error::invalid_input(
            "a regular expression scans one branch: search one branch, or search by words",
        ));
    }
    Ok(())
}

/// Messages matching `q`: ranked by the index, best first, or scanned with a regular
/// expression, oldest first. `indexed` is told how many commits the index has taken so far
/// when the search brings it up to the store first.
pub(crate) fn search(repo: &Repo, q: &SearchQuery, indexed: Indexed<'_>) -> Result<Vec<SearchHit>> {
    check(q)?;
    if q.regex {
        let re = matcher(q)?;
        return scan(repo, q, &re, indexed);
    }
    ranked(repo, q, indexed)
}

/// Where a scan or a ranking starts: the index as read, the store read with it, and what is
/// not indexed yet, walked (and, for a ranking, made documents).
struct Ground<'i> {
    reading: Box<dyn Reading + 'i>,
    snap: Snapshot,
    /// The commits not indexed yet (none for a scan), searched as they are.
    pending: Vec<catch_up::Doc>,
    lanes: Lanes,
    /// Each branch's tip and its place.
    tips: Vec<(String, CommitId, Place)>,
    /// Places of the commits not indexed yet, and of the handle's detached commit.
    placed: HashMap<CommitId, Place>,
}

/// The commit a handle's detached `HEAD` is at, walked beside the branches.
fn detached(repo: &Repo, snap: &Snapshot) -> Result<Vec<CommitId>> {
    Ok(match repo.head(snap)?.target {
        crate::refs::HeadRef::Detached(id) => vec![id],
        crate::refs::HeadRef::Branch(_) => Vec::new(),
    })
}

impl<'i> Ground<'i> {
    /// Reads the index and the store, and walks to the commits not indexed yet (made
    /// documents with `rank`). When those are many, or the index is of another layout, it is
    /// brought up to date first (once).
    fn new(
        repo: &Repo,
        keeper: &'i Keeper,
        rank: bool,
        indexed: Indexed<'_>,
    ) -> Result<Ground<'i>> {
        let index = keeper.index();
        let mut tried = false;
        loop {
            let (reading, snap) = index.read(&mut || repo.read())?;
            let extra = detached(repo, &snap)?;
            let mut docs = Vec::new();
            // The first walk stops past a batch: those are indexed, not read here.
            let limit = (!tried).then_some(keeper::SEARCH_BATCH);
            let usable = reading.usable();
            let mut at = |id: &CommitId| match usable {
                true => reading.locate(&snap, id),
                false => Ok(None),
            };
            let walked = catch_up::walk(
                &snap,
                reading.state(),
                &mut at,
                &extra,
                !usable,
                limit,
                &mut |d| {
                    if rank {
                        docs.extend(d);
                    }
                    Ok(())
                },
            )?;
            if (walked.stopped || reading.stale()) && !tried {
                tried = true;
                drop((reading, snap));
                // An index that cannot be written now (another process's writer, a full disk,
                // a database role that may only read) leaves this search to walk all of them.
                let upkeep = Upkeep {
                    indexed,
                    ..Upkeep::default()
                };
                let _ = keeper.catch_up(&repo.store, Duration::ZERO, upkeep);
                continue;
            }
            return Ok(Ground {
                reading,
                snap,
                pending: docs,
                lanes: walked.lanes,
                tips: walked.tip_places,
                placed: walked.placed,
            });
        }
    }

    /// The place of commit `id`, if it is indexed or was walked.
    fn place(&self, id: &CommitId) -> Result<Option<Place>> {
        if let Some(p) = self.placed.get(id) {
            return Ok(Some(*p));
        }
        if let Some((_, _, p)) = self.tips.iter().find(|(_, t, _)| t == id) {
            return Ok(Some(*p));
        }
        self.reading.locate(&self.snap, id)
    }

    /// The history a scope covers, as lane bounds.
    fn reach(&self, repo: &Repo, scope: &SearchScope) -> Result<Reach> {
        let mut reach = Reach::new();
        match scope {
            SearchScope::All => {
                for (_, _, p) in &self.tips {
                    self.lanes.extend(&mut reach, *p);
                }
            }
            SearchScope::Here | SearchScope::Branch(_) => {
                if let Some(head) = self.head(repo, scope)?
                    && let Some(p) = self.place(&head)?
                {
                    self.lanes.extend(&mut reach, p);
                }
            }
        }
        Ok(reach)
    }

    /// The commit a one-branch scope starts from (`None`: a branch with no commits yet).
    fn head(&self, repo: &Repo, scope: &SearchScope) -> Result<Option<CommitId>> {
        match scope {
            SearchScope::Here => Ok(repo.head(&self.snap)?.commit),
            SearchScope::Branch(name) => self.snap.require_branch(name).map(Some),
            SearchScope::All => Ok(None),
        }
    }

    /// Which branches hold each place.
    fn membership(&self) -> Membership {
        let mut by_lane: HashMap<u32, Vec<(usize, u32)>> = HashMap::new();
        let names: Vec<String> = self.tips.iter().map(|(n, _, _)| n.clone()).collect();
        for (i, (_, _, p)) in self.tips.iter().enumerate() {
            for (lane, height) in self.lanes.reach(*p) {
                by_lane.entry(lane).or_default().push((i, height));
            }
        }
        Membership { names, by_lane }
    }

    /// The first key of every commit in the view of each branch the scope covers.
    fn view_keys(&self, repo: &Repo, scope: &SearchScope) -> Result<HashSet<u64>> {
        let mut keys = HashSet::new();
        let mut add = |v: &crate::view::View| {
            keys.extend(
                v.entries()
                    .iter()
                    .map(|e| crate::storage::search::state::key_of(&e.commit)[0]),
            );
        };
        match scope {
            SearchScope::Here => {
                let head = repo.head(&self.snap)?.commit;
                repo.with_view(&self.snap, head, &mut add)?;
            }
            SearchScope::Branch(name) => {
                let tip = self.snap.require_branch(name)?;
                let snap = &self.snap;
                repo.views.with_view(
                    snap,
                    Some(tip),
                    || checkpoint::of_branch(snap, name),
                    &mut add,
                )?;
            }
            SearchScope::All => {
                for (name, tip, _) in &self.tips {
                    let snap = &self.snap;
                    repo.views.with_view(
                        snap,
                        Some(*tip),
                        || checkpoint::of_branch(snap, name),
                        &mut add,
                    )?;
                }
            }
        }
        Ok(keys)
    }
}

/// Which branches hold a place: each lane's branches and how high they reach on it.
struct Membership {
    names: Vec<String>,
    by_lane: HashMap<u32, Vec<(usize, u32)>>,
}

impl Membership {
    fn branches(&self, place: Option<Place>) -> Vec<String> {
        let Some((lane, height)) = place else {
            return Vec::new();
        };
        let mut out: Vec<String> = self
            .by_lane
            .get(&lane)
            .into_iter()
            .flatten()
            .filter(|(_, h)| *h >= height)
            .map(|(i, _)| self.names[*i].clone())
            .collect();
        out.sort();
        out
    }
}

/// Whether a commit not indexed yet passes the query's filters (the index's own, in code).
fn wanted_doc(d: &catch_up::Doc, q: &SearchQuery) -> bool {
    let Some(said) = &d.said else {
        return false;
    };
    q.role.is_none_or(|r| r == said.role)
        && q.tool.as_ref().is_none_or(|t| said.tools.contains(t))
        && q.op.as_deref().is_none_or(|op| op == d.op)
        && (!q.errors || said.error)
        && q.since_us.is_none_or(|t| d.time >= t)
        && q.until_us.is_none_or(|t| d.time < t)
}

/// A ranked search: the index and the commits not indexed yet, scored together, filtered to
/// the scope's history (and view), best first, paged.
fn ranked(repo: &Repo, q: &SearchQuery, indexed: Indexed<'_>) -> Result<Vec<SearchHit>> {
    // Bad input is refused before the index is opened (or made).
    let parsed = crate::storage::search::query::parse(&q.query)?;
    if q.limit == Some(0) {
        return Ok(Vec::new());
    }
    let keeper = keeper::of(&repo.store);
    let ground = Ground::new(repo, &keeper, true, indexed)?;
    if let SearchScope::Branch(name) = &q.scope {
        ground.snap.require_branch(name)?;
    }
    let reach = ground.reach(repo, &q.scope)?;
    let view = match q.history {
        true => None,
        false => Some(Arc::new(ground.view_keys(repo, &q.scope)?)),
    };
    // Every indexed commit is in the scope when it reaches every lane to its newest commit
    // (every branch's history, no commit left behind by a reset or a deleted branch): then no
    // place is read.
    let bounds = Arc::new(ground.lanes.bounds(&reach));
    let places = match ground.lanes.all_reached(&reach) {
        true => None,
        false => Some(Arc::clone(&bounds)),
    };
    // The commits not indexed yet that pass the filters, with the query's words in them.
    let words = parsed.all_words();
    let walked: Vec<(&catch_up::Doc, Positions)> = ground
        .pending
        .iter()
        .filter(|d| wanted_doc(d, q) && within(&bounds, lanes::pack(d.place)))
        .filter(|d| {
            view.as_ref()
                .is_none_or(|v| v.contains(&crate::storage::search::state::key_of(&d.id)[0]))
        })
        .filter_map(|d| {
            d.said
                .as_ref()
                .map(|s| (d, Positions::of(&s.text, Some(&words))))
        })
        .collect();
    let ask = Ask {
        parsed: &parsed,
        filters: Filters {
            role: q.role,
            tool: q.tool.as_deref(),
            op: q.op.as_deref(),
            errors: q.errors,
            since_us: q.since_us,
            until_us: q.until_us,
            bounds: places,
            view,
        },
        pending: &ground.pending,
        walked: &walked,
        words: &words,
        n: q.limit.map_or(usize::MAX, |l| q.offset.saturating_add(l)),
    };
    let Ranking { mut found, weights } = ground.reading.rank(&ground.snap, &ask)?;
    found.sort_by(|a, b| b.score.total_cmp(&a.score));
    let page: Vec<Found> = found
        .into_iter()
        .skip(q.offset)
        .take(q.limit.unwrap_or(usize::MAX))
        .collect();
    hits(&ground, &page, &parsed, &weights)
}

/// The hits of ranked documents: their commits read, a passage of each, their branches.
fn hits(
    ground: &Ground<'_>,
    page: &[Found],
    parsed: &Parsed,
    weights: &Weights,
) -> Result<Vec<SearchHit>> {
    let mut ids = Vec::with_capacity(page.len());
    for f in page {
        let (id, place) = match f.hit {
            Hit::Commit(id, place) => (id, Some(place)),
            Hit::Document(d) => ground.reading.hit(&ground.snap, d)?,
        };
        ids.push((id, place, f.score));
    }
    // A commit a collection removed while the index still held it is left out.
    let held = ground
        .snap
        .has_commits(&ids.iter().map(|(id, _, _)| *id).collect::<Vec<_>>())?;
    let passages = Passages::new(parsed, weights);
    let members = ground.membership();
    let mut out = Vec::with_capacity(ids.len());
    for ((id, place, score), held) in ids.into_iter().zip(held) {
        if !held {
            continue;
        }
        let info = CommitInfo::load(&ground.snap, id)?;
        let whole = info.message.as_deref().map(searchable).unwrap_or_default();
        let (snippet, highlights) = passages.of(&whole);
        out.push(SearchHit {
            info,
            snippet,
            highlights,
            score: Some(score),
            branches: members.branches(place),
        });
    }
    Ok(out)
}

/// A regular expression's scan: the view at the scope's head (or its history), oldest first.
fn scan(repo: &Repo, q: &SearchQuery, re: &Regex, indexed: Indexed<'_>) -> Result<Vec<SearchHit>> {
    let limit = q.limit.map_or(usize::MAX, |l| l.saturating_add(q.offset));
    let keeper = keeper::of(&repo.store);
    let ground = Ground::new(repo, &keeper, false, indexed)?;
    let snap = &ground.snap;
    let head = ground.head(repo, &q.scope)?;
    let mut found: Vec<(CommitInfo, Snippet)> = Vec::new();
    if q.history {
        let heads: Vec<CommitId> = head.into_iter().collect();
        for (id, commit) in ancestry::ancestors(snap, &heads, None)? {
            // A record's data is its owner's (a framework's state), not something said.
            if matches!(commit.op, Op::Record { .. }) {
                continue;
            }
            let info = CommitInfo::with_commit(snap, id, commit)?;
            let m = info.message.as_deref().filter(|m| wanted_message(m, q));
            if let Some(s) = m.and_then(|m| find(re, m))
                && wanted_commit(&info, q)
            {
                found.push((info, s));
            }
        }
        found.reverse();
        found.truncate(limit);
    } else {
        // The entries the filters keep, taken under the view's lock; their messages are read
        // in batches after, and the scan stops at the limit.
        let pick = |v: &crate::view::View| -> Vec<(CommitId, BlobId)> {
            v.entries()
                .iter()
                .filter(|e| {
                    let s = &e.shape;
                    (!q.errors || s.is_error)
                        && wanted(
                            s.role,
                            s.name.as_deref(),
                            s.tool_calls.iter().map(|c| c.name.as_str()),
                            q,
                        )
                })
                .map(|e| (e.commit, e.blob))
                .collect()
        };
        let candidates = match &q.scope {
            SearchScope::Branch(name) => {
                let tip = snap.require_branch(name)?;
                repo.views
                    .with_view(snap, Some(tip), || checkpoint::of_branch(snap, name), pick)?
            }
            _ => repo.with_view(snap, head, pick)?,
        };
        const BATCH: usize = 256;
        for part in candidates.chunks(BATCH) {
            let blobs: Vec<BlobId> = part.iter().map(|(_, b)| *b).collect();
            let texts = repo.blob_texts(snap, &blobs)?;
            for ((commit, _), m) in part.iter().zip(texts) {
                if found.len() < limit
                    && let Some(s) = find(re, &m)
                {
                    let info = CommitInfo::load(snap, *commit)?;
                    if wanted_commit(&info, q) {
                        found.push((info, s));
                    }
                }
            }
            if found.len() >= limit {
                break;
            }
        }
    }
    let members = ground.membership();
    found
        .into_iter()
        .skip(q.offset)
        .map(|(info, (snippet, at))| {
            let place = ground.place(&info.id)?;
            let (snippet, highlights) = one_line(&snippet, &[at]);
            Ok(SearchHit {
                branches: members.branches(place),
                info,
                snippet: snippet.trim_end().to_string(),
                highlights,
                score: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_cut_long_lines_around_the_match() {
        let line = format!("{}needle{}", "a".repeat(100), "b".repeat(100));
        let (s, at) = snippet(&line, 100, 106);
        assert_eq!(&s[at.0..at.1], "needle");
        assert!(
            s.starts_with('…') && s.ends_with('…') && s.contains("needle"),
            "{s}"
        );
        assert_eq!(s.chars().count(), 2 + 40 + 6 + 40);
        let text = "first\nsecond needle line\nthird";
        let start = text.find("needle").unwrap_or(0);
        assert_eq!(snippet(text, start, start + 6).0, "second needle line");
    }

    #[test]
    fn queries_are_case_insensitive_and_bad_regexes_are_errors() {
        let q = SearchQuery {
            query: "Database_URL".into(),
            ..SearchQuery::default()
        };
        let m = Message::text(Role::User, "where is DATABASE_URL read?");
        assert!(find(&matcher(&q).unwrap(), &m).is_some());
        let bad = SearchQuery {
            query: "(unclosed".into(),
            regex: true,
            ..SearchQuery::default()
        };
        assert!(matches!(matcher(&bad), Err(Error::InvalidInput { .. })));
        let literal = SearchQuery {
            query: "(unclosed".into(),
            ..SearchQuery::default()
        };
        assert!(matcher(&literal).is_ok());
    }
}
