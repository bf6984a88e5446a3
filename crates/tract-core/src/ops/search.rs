//! Search over message text, tool-call names and arguments, and tool results: ranked by the
//! search index (BM25; `index`; in PostgreSQL the database's full-text search and its
//! `ts_rank_cd`), or scanned with a regular expression; in the view or over every
//! version in history; of the handle's branch, one branch, or every branch.

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId};
use crate::index::catch_up::Indexed;
use crate::index::catch_up::{self, key_at, key_columns, searchable};
use crate::index::lanes::{self, Lanes, Place, Reach};
use crate::index::query::{Parsed, Positions, Weights};
use crate::index::{Fields, Index, KEY0, PLACE, keeper};
use crate::object::{Message, Op, Role};
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::view::info::CommitInfo;
use crate::view::{ancestry, checkpoint};
use regex::{Regex, RegexBuilder};
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;
use tantivy::collector::{Count, FilterCollector, TopDocs};
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, Occur, Query, RangeQuery, TermQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::snippet::SnippetGenerator;
use tantivy::{DocAddress, Searcher, Term};

/// Characters of context on each side of a match in a scan's snippet.
const SNIPPET_CONTEXT: usize = 40;

/// Characters of a ranked hit's snippet, at most.
const SNIPPET_CHARS: usize = 160;

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

/// Where a scan or a ranking starts: the index as committed, the store read after it, and
/// what is not indexed yet, walked (and, for a ranking, made documents).
struct Ground {
    engine: Engine,
    snap: Snapshot,
    /// The commits not indexed yet (none for a scan), searched as they are.
    pending: Vec<catch_up::Doc>,
    lanes: Lanes,
    /// Each branch's tip and its place.
    tips: Vec<(String, CommitId, Place)>,
    /// Places of the commits not indexed yet, and of the handle's detached commit.
    placed: HashMap<CommitId, Place>,
}

/// The index a search reads.
enum Engine {
    /// Tantivy's, beside a store file or in this process's memory.
    Tantivy {
        index: Arc<Index>,
        searcher: Searcher,
    },
    /// The database's own full-text search, for a store in PostgreSQL, read in the
    /// snapshot's transaction. `usable`: its rows may be read (not those of another layout,
    /// or of no tables yet).
    #[cfg(feature = "postgres")]
    Sql { usable: bool },
}

/// One walk of a search to the commits not indexed yet (see [`catch_up::walk`]).
struct UnindexedWalk<'a> {
    snap: &'a Snapshot,
    state: &'a crate::index::State,
    /// A detached handle's commit.
    extra: &'a [CommitId],
    /// The index is not read: every commit is walked.
    empty: bool,
    limit: Option<u64>,
    /// Make documents of them (a ranking), or only place them (a scan).
    rank: bool,
}

impl UnindexedWalk<'_> {
    /// Walks, `at` finding the places of indexed commits; the documents go to `docs`.
    fn walk(
        &self,
        at: &mut dyn FnMut(&CommitId) -> Result<Option<Place>>,
        docs: &mut Vec<catch_up::Doc>,
    ) -> Result<catch_up::Walked> {
        catch_up::walk(
            self.snap,
            self.state,
            at,
            self.extra,
            self.empty,
            self.limit,
            &mut |d| {
                if self.rank {
                    docs.extend(d);
                }
                Ok(())
            },
        )
    }
}

/// The commit a handle's detached `HEAD` is at, walked beside the branches.
fn detached(repo: &Repo, snap: &Snapshot) -> Result<Vec<CommitId>> {
    Ok(match repo.head(snap)?.target {
        crate::refs::HeadRef::Detached(id) => vec![id],
        crate::refs::HeadRef::Branch(_) => Vec::new(),
    })
}

impl Ground {
    /// Reads the index and the store, and walks to the commits not indexed yet (made
    /// documents with `rank`). When those are many, or the index is of another layout, it is
    /// brought up to date first (once).
    fn new(repo: &Repo, rank: bool, indexed: Indexed<'_>) -> Result<Ground> {
        #[cfg(feature = "postgres")]
        if repo.store.postgres().is_some() {
            return Self::in_database(repo, rank, indexed);
        }
        let keeper = keeper::of(&repo.store);
        let index = keeper.index(&repo.store)?;
        let mut tried = false;
        loop {
            let reading = index.read()?;
            // After the index: the store holds everything the index does.
            let snap = repo.read()?;
            let extra = detached(repo, &snap)?;
            let mut docs = Vec::new();
            // The first walk stops past a batch: those are indexed, not read here.
            let limit = (!tried).then_some(keeper::SEARCH_BATCH);
            let searcher = &reading.searcher;
            let mut at = |id: &CommitId| catch_up::locate(searcher, &index.fields, id);
            let unindexed = UnindexedWalk {
                snap: &snap,
                state: &reading.state,
                extra: &extra,
                empty: reading.stale,
                limit,
                rank,
            };
            let walked = unindexed.walk(&mut at, &mut docs)?;
            if (walked.stopped || reading.stale) && !tried {
                tried = true;
                // An index that cannot be written now (another process's writer, a full
                // disk) leaves this search to walk all of them.
                let _ = keeper.catch_up(&repo.store, Duration::ZERO, None, false, indexed);
                continue;
            }
            // An index of another layout that could not be rebuilt now is not read: what it
            // holds was walked as not indexed.
            let searcher = match reading.stale {
                true => Index::in_memory()?.read()?.searcher,
                false => reading.searcher,
            };
            return Ok(Ground {
                engine: Engine::Tantivy { index, searcher },
                snap,
                pending: docs,
                lanes: walked.lanes,
                tips: walked.tip_places,
                placed: walked.placed,
            });
        }
    }

    /// [`Ground::new`] for a store in PostgreSQL: the rows as one read-only transaction sees
    /// them, the store read after it.
    #[cfg(feature = "postgres")]
    fn in_database(repo: &Repo, rank: bool, indexed: Indexed<'_>) -> Result<Ground> {
        let mut tried = false;
        loop {
            // The index's rows and the store in one transaction: one state of both.
            let snap = repo.read()?;
            let extra = detached(repo, &snap)?;
            let (table, reading) = crate::index::postgres::Table::read(&snap)?;
            let usable = reading.exists && !reading.stale;
            let mut docs = Vec::new();
            let limit = (!tried).then_some(keeper::SEARCH_BATCH);
            let mut at = |id: &CommitId| match usable {
                true => table.locate(id),
                false => Ok(None),
            };
            let unindexed = UnindexedWalk {
                snap: &snap,
                state: &reading.state,
                extra: &extra,
                empty: !usable,
                limit,
                rank,
            };
            let walked = unindexed.walk(&mut at, &mut docs)?;
            if (walked.stopped || reading.stale) && !tried {
                tried = true;
                drop(snap);
                // A database that refuses the index's tables (a role that may only read)
                // leaves this search to walk all of them.
                let _ = keeper::of(&repo.store).catch_up(
                    &repo.store,
                    Duration::ZERO,
                    None,
                    false,
                    indexed,
                );
                continue;
            }
            return Ok(Ground {
                engine: Engine::Sql { usable },
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
        match &self.engine {
            Engine::Tantivy { index, searcher } => catch_up::locate(searcher, &index.fields, id),
            #[cfg(feature = "postgres")]
            Engine::Sql { usable } => match usable {
                true => crate::index::postgres::Table::of(&self.snap).locate(id),
                false => Ok(None),
            },
        }
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
                    .map(|e| crate::index::key_of(&e.commit)[0]),
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

/// The statistics of the index and of the commits not indexed yet, together, so the scores of
/// both compare: the documents, their words, and each query word's documents.
struct Stats<'a> {
    searcher: &'a Searcher,
    /// Documents and words of the commits not indexed yet.
    docs: u64,
    tokens: u64,
    /// Per query word, the commits not indexed yet that hold it.
    freq: HashMap<String, u64>,
}

impl<'a> Stats<'a> {
    /// The statistics for a search of `parsed` whose commits not indexed yet that pass its
    /// filters are `walked`. Over an index that holds nothing, every such commit is counted as
    /// the index would count it (a store in memory, or a new one: the scores are the index's
    /// own after a batch). Beside an index, the others are counted as its average document:
    /// they are a batch at most among all it holds.
    fn of(
        searcher: &'a Searcher,
        ground: &Ground,
        parsed: &Parsed,
        walked: &[(&catch_up::Doc, Positions)],
        wanted: &HashSet<String>,
        field: tantivy::schema::Field,
    ) -> Result<Stats<'a>> {
        let failed = |e| crate::index::failed("reading its statistics", e);
        let indexed = searcher.total_num_docs().map_err(failed)?;
        let mut freq: HashMap<String, u64> = parsed.words().map(|w| (w.clone(), 0)).collect();
        let mut count = |pos: &Positions| {
            for (w, n) in freq.iter_mut() {
                *n += u64::from(pos.holds(w));
            }
            pos.len() as u64
        };
        let all = ground.pending.len() as u64;
        let in_index = searcher.total_num_tokens(field).map_err(failed)?;
        let tokens = match in_index.checked_div(indexed) {
            None => ground
                .pending
                .iter()
                .map(|d| match &d.said {
                    Some(s) => count(&Positions::of(&s.text, Some(wanted))),
                    None => 0,
                })
                .sum(),
            Some(average) => {
                walked.iter().for_each(|(_, p)| {
                    count(p);
                });
                average * all
            }
        };
        Ok(Stats {
            searcher,
            docs: all,
            tokens,
            freq,
        })
    }

    /// The weights a text not indexed yet is scored with.
    fn weights(&self, field: tantivy::schema::Field) -> Result<Weights> {
        let failed = |e| crate::index::failed("reading its statistics", e);
        let docs = self.total_num_docs().map_err(failed)?;
        let tokens = self.total_num_tokens(field).map_err(failed)?;
        let freq = self
            .freq
            .keys()
            .map(|w| {
                let df = self.doc_freq(&Term::from_field_text(field, w));
                df.map(|n| (w.clone(), n)).map_err(failed)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Weights::new(docs, tokens, freq))
    }
}

impl Bm25StatisticsProvider for Stats<'_> {
    fn total_num_tokens(&self, field: tantivy::schema::Field) -> tantivy::Result<u64> {
        Ok(self.searcher.total_num_tokens(field)? + self.tokens)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.searcher.total_num_docs()? + self.docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let extra = term
            .value()
            .as_str()
            .and_then(|w| self.freq.get(w))
            .copied()
            .unwrap_or(0);
        Ok(self.searcher.doc_freq(term)? + extra)
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

/// The query's filters as queries that match without scoring.
fn filters(q: &SearchQuery, f: &Fields) -> Vec<(Occur, Box<dyn Query>)> {
    let term = |t: Term| -> Box<dyn Query> {
        Box::new(ConstScoreQuery::new(
            Box::new(TermQuery::new(t, IndexRecordOption::Basic)),
            0.0,
        ))
    };
    let mut out = Vec::new();
    if let Some(r) = q.role {
        out.push((Occur::Must, term(Term::from_field_text(f.role, r.as_str()))));
    }
    if let Some(t) = &q.tool {
        out.push((Occur::Must, term(Term::from_field_text(f.tool, t))));
    }
    if let Some(op) = &q.op {
        out.push((Occur::Must, term(Term::from_field_text(f.op, op))));
    }
    if q.errors {
        out.push((Occur::Must, term(Term::from_field_bool(f.error, true))));
    }
    if q.since_us.is_some() || q.until_us.is_some() {
        let at = |v: u64| Term::from_field_u64(f.time, v);
        let low = q
            .since_us
            .map_or(Bound::Unbounded, |v| Bound::Included(at(v)));
        let high = q
            .until_us
            .map_or(Bound::Unbounded, |v| Bound::Excluded(at(v)));
        out.push((
            Occur::Must,
            Box::new(ConstScoreQuery::new(
                Box::new(RangeQuery::new(low, high)),
                0.0,
            )),
        ));
    }
    out
}

/// One ranked hit before its commit is read: its score, and its document in the index or the
/// commit not indexed yet.
struct Ranked {
    score: f32,
    from: From,
}

/// Where a ranked hit is.
#[derive(Clone, Copy)]
enum From {
    /// A document of a tantivy index.
    Index(DocAddress),
    /// A commit and its place: one not indexed yet, or a database's row.
    Commit(CommitId, Place),
}

/// The lane bounds of a reach as a list by lane (lanes are numbered densely): each lane's
/// highest height reached plus one, 0 for a lane not reached.
fn bounds(reach: &Reach, lanes: &Lanes) -> Vec<u32> {
    let mut out = vec![0u32; lanes.count()];
    for (&lane, &height) in reach {
        if let Some(b) = out.get_mut(lane as usize) {
            *b = height.saturating_add(1);
        }
    }
    out
}

/// Whether `bounds` holds the place packed in `v`.
fn within(bounds: &[u32], v: u64) -> bool {
    let (lane, height) = lanes::unpack(v);
    bounds.get(lane as usize).is_some_and(|&b| b > height)
}

/// The best `n` documents of `searcher` for `query` that pass the optional place and view
/// filters (a filter read only where the search needs it: a filter makes the index visit every
/// match, where the best `n` alone can skip most).
fn best(
    searcher: &Searcher,
    query: &dyn Query,
    stats: &Stats<'_>,
    n: usize,
    places: Option<Arc<Vec<u32>>>,
    view: Option<Arc<HashSet<u64>>>,
) -> Result<Vec<(f32, DocAddress)>> {
    let top = TopDocs::with_limit(n.max(1)).order_by_score();
    let run = |found: tantivy::Result<Vec<(f32, DocAddress)>>| {
        found.map_err(|e| crate::index::failed("searching it", e))
    };
    let in_view = |v: Arc<HashSet<u64>>| move |k: u64| v.contains(&k);
    let in_reach = |b: Arc<Vec<u32>>| move |v: u64| within(&b, v);
    match (places, view) {
        (None, None) => run(searcher.search_with_statistics_provider(query, &top, stats)),
        (Some(b), None) => {
            let c = FilterCollector::new(PLACE.to_string(), in_reach(b), top);
            run(searcher.search_with_statistics_provider(query, &c, stats))
        }
        (None, Some(v)) => {
            let c = FilterCollector::new(KEY0.to_string(), in_view(v), top);
            run(searcher.search_with_statistics_provider(query, &c, stats))
        }
        (Some(b), Some(v)) => {
            let c = FilterCollector::new(
                PLACE.to_string(),
                in_reach(b),
                FilterCollector::new(KEY0.to_string(), in_view(v), top),
            );
            run(searcher.search_with_statistics_provider(query, &c, stats))
        }
    }
}

/// How many documents of `searcher` match `query` within the filters.
fn count(
    searcher: &Searcher,
    query: &dyn Query,
    places: Option<Arc<Vec<u32>>>,
    view: Option<Arc<HashSet<u64>>>,
) -> Result<usize> {
    let c = FilterCollector::new(
        PLACE.to_string(),
        move |v: u64| places.as_ref().is_none_or(|b| within(b, v)),
        FilterCollector::new(
            KEY0.to_string(),
            move |k: u64| view.as_ref().is_none_or(|s| s.contains(&k)),
            Count,
        ),
    );
    searcher
        .search(query, &c)
        .map_err(|e| crate::index::failed("counting", e))
}

/// A ranked search: the index and the commits not indexed yet, scored together, filtered to
/// the scope's history (and view), best first, paged.
fn ranked(repo: &Repo, q: &SearchQuery, indexed: Indexed<'_>) -> Result<Vec<SearchHit>> {
    // Bad input is refused before the index is opened (or made).
    let fields = crate::index::fields();
    let parsed = crate::index::query::parse(&q.query)?;
    if q.limit == Some(0) {
        return Ok(Vec::new());
    }
    let ground = Ground::new(repo, true, indexed)?;
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
    let bounds = Arc::new(bounds(&reach, &ground.lanes));
    let places = match ground.lanes.all_reached(&reach) {
        true => None,
        false => Some(Arc::clone(&bounds)),
    };
    // The commits not indexed yet that pass the filters, with the query's words in them.
    let wanted = parsed.all_words();
    let walked: Vec<(&catch_up::Doc, Positions)> = ground
        .pending
        .iter()
        .filter(|d| wanted_doc(d, q) && within(&bounds, lanes::pack(d.place)))
        .filter(|d| {
            view.as_ref()
                .is_none_or(|v| v.contains(&crate::index::key_of(&d.id)[0]))
        })
        .filter_map(|d| {
            d.said
                .as_ref()
                .map(|s| (d, Positions::of(&s.text, Some(&wanted))))
        })
        .collect();
    let wanted_hits = q.limit.map_or(usize::MAX, |l| q.offset.saturating_add(l));
    let (mut found, weights) = match &ground.engine {
        Engine::Tantivy { searcher, .. } => {
            let stats = Stats::of(searcher, &ground, &parsed, &walked, &wanted, fields.text)?;
            let weights = stats.weights(fields.text)?;
            let mut clauses = vec![(Occur::Must, parsed.query(fields.text))];
            clauses.extend(filters(q, &fields));
            let query = BooleanQuery::new(clauses);
            // Past this many, the hits are counted first, so a page far out (or all hits)
            // asks for no more than there are.
            const FIRST: usize = 1 << 12;
            let mut n = wanted_hits.min(FIRST);
            if wanted_hits > FIRST {
                n = wanted_hits.min(count(searcher, &query, places.clone(), view.clone())?);
            }
            let mut found: Vec<Ranked> = best(searcher, &query, &stats, n, places, view)?
                .into_iter()
                .map(|(score, doc)| Ranked {
                    score,
                    from: From::Index(doc),
                })
                .collect();
            found.extend(walked.iter().filter_map(|(d, pos)| {
                parsed.score(pos, &weights).map(|score| Ranked {
                    score,
                    from: From::Commit(d.id, d.place),
                })
            }));
            (found, weights)
        }
        #[cfg(feature = "postgres")]
        Engine::Sql { usable } => {
            let table = crate::index::postgres::Table::of(&ground.snap);
            let tsquery = parsed.tsquery();
            let role = q.role.map(|r| r.as_str());
            let filters = crate::index::postgres::Filters {
                role,
                tool: q.tool.as_deref(),
                op: q.op.as_deref(),
                errors: q.errors,
                since_us: q.since_us,
                until_us: q.until_us,
                bounds: places.as_deref().map(|b| b.as_slice()),
                view: view.as_deref(),
            };
            let mut found: Vec<Ranked> = match usable {
                true => table.best(&parsed, &filters, wanted_hits)?,
                false => Vec::new(),
            }
            .into_iter()
            .map(|f| Ranked {
                score: f.score,
                from: From::Commit(f.id, f.place),
            })
            .collect();
            // The commits not indexed yet that hold a word of the query, scored by the
            // database as its rows are.
            let candidates: Vec<&catch_up::Doc> = walked
                .iter()
                .filter(|(_, pos)| parsed.words().any(|w| pos.holds(w)))
                .map(|(d, _)| *d)
                .collect();
            let vectors: Vec<String> = candidates
                .iter()
                .map(|d| {
                    d.said
                        .as_ref()
                        .map(|s| crate::index::postgres::tsvector(&s.text))
                        .unwrap_or_default()
                })
                .collect();
            let scores = table.rank(&tsquery, &vectors)?;
            found.extend(candidates.iter().zip(scores).filter_map(|(d, score)| {
                score.map(|score| Ranked {
                    score,
                    from: From::Commit(d.id, d.place),
                })
            }));
            // The database's scores weigh every word alike.
            (found, Weights::default())
        }
    };
    found.sort_by(|a, b| b.score.total_cmp(&a.score));
    let page: Vec<Ranked> = found
        .into_iter()
        .skip(q.offset)
        .take(q.limit.unwrap_or(usize::MAX))
        .collect();
    hits(&ground, &page, &parsed, &weights)
}

/// The hits of ranked documents: their commits read, a snippet of each, their branches.
fn hits(
    ground: &Ground,
    page: &[Ranked],
    parsed: &Parsed,
    weights: &Weights,
) -> Result<Vec<SearchHit>> {
    let mut ids = Vec::with_capacity(page.len());
    for r in page {
        match (r.from, &ground.engine) {
            (From::Commit(id, place), _) => ids.push((id, Some(place), r.score)),
            (From::Index(doc), Engine::Tantivy { index, searcher }) => {
                let seg = searcher.segment_reader(doc.segment_ord);
                let keys = key_columns(seg, &index.fields)?;
                let place = seg
                    .fast_fields()
                    .u64(PLACE)
                    .map_err(|e| crate::index::failed("reading its places", e))?
                    .first(doc.doc_id)
                    .map(lanes::unpack);
                ids.push((key_at(&keys, doc.doc_id), place, r.score));
            }
            #[cfg(feature = "postgres")]
            (From::Index(_), Engine::Sql { .. }) => {
                return Err(Error::invalid_op(
                    "a database's search has no index documents",
                ));
            }
        }
    }
    // A commit a collection removed while the index still held it is left out.
    let held = ground
        .snap
        .has_commits(&ids.iter().map(|(id, _, _)| *id).collect::<Vec<_>>())?;
    let (generator, words) = snippets(parsed, weights);
    let members = ground.membership();
    let mut out = Vec::with_capacity(ids.len());
    for ((id, place, score), held) in ids.into_iter().zip(held) {
        if !held {
            continue;
        }
        let info = CommitInfo::load(&ground.snap, id)?;
        let whole = info.message.as_deref().map(searchable).unwrap_or_default();
        let (snippet, highlights) = passage(&whole, &generator.snippet(&whole), &words);
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

/// Snippets of the query's words, rarer words weighing more, and the words to mark.
fn snippets(parsed: &Parsed, weights: &Weights) -> (SnippetGenerator, HashSet<String>) {
    let words: HashSet<String> = parsed.words().cloned().collect();
    let terms = words
        .iter()
        .map(|w| (w.clone(), weights.idf.get(w).copied().unwrap_or(1.0)))
        .collect();
    let generator = SnippetGenerator::new(
        terms,
        tantivy::tokenizer::TextAnalyzer::from(crate::index::tokenizer::CodeTokenizer),
        crate::index::fields().text,
        SNIPPET_CHARS,
    );
    (generator, words)
}

/// Bytes a passage is widened by, at most, to reach whitespace on each side.
const WIDEN: usize = 24;

/// The passage `s` picked from `text`, widened to whole words (the snippet's fragment ends at
/// its last word, cutting `env()` to `env`), on one line, marked `…` where it cuts the text,
/// with the query's `words` in it marked (overlapping or touching ones joined).
fn passage(
    text: &str,
    s: &tantivy::snippet::Snippet,
    words: &HashSet<String>,
) -> (String, Vec<(usize, usize)>) {
    if s.fragment().is_empty() {
        let start: String = text.chars().take(SNIPPET_CHARS).collect();
        let cut = start.len() < text.len();
        let (mut line, _) = one_line(&start, &[]);
        if cut {
            line.push('…');
        }
        return (line, Vec::new());
    }
    let range = s.fragment_range();
    let back = text[..range.start]
        .char_indices()
        .rev()
        .take_while(|(i, _)| range.start - i <= WIDEN)
        .find(|(_, c)| c.is_whitespace())
        .map(|(i, c)| i + c.len_utf8());
    let start = match back {
        Some(i) => i,
        None if range.start <= WIDEN => 0,
        None => range.start,
    };
    let ahead = text[range.end..]
        .char_indices()
        .take_while(|(i, _)| *i <= WIDEN)
        .find(|(_, c)| c.is_whitespace())
        .map(|(i, _)| range.end + i);
    let end = match ahead {
        Some(i) => i,
        None if text.len() - range.end <= WIDEN => text.len(),
        None => range.end,
    };
    let mut marks: Vec<(usize, usize)> = crate::index::tokenizer::words(&text[start..end], true)
        .into_iter()
        .filter(|w| words.contains(&w.text))
        .map(|w| (w.offset_from, w.offset_to))
        .collect();
    marks.sort();
    let mut joined: Vec<(usize, usize)> = Vec::new();
    for (a, b) in marks {
        match joined.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => joined.push((a, b)),
        }
    }
    let (line, marks) = one_line(&text[start..end], &joined);
    let lead = if start > 0 { "…" } else { "" };
    let tail = if end < text.len() { "…" } else { "" };
    let line = format!("{lead}{}{tail}", line.trim_end());
    let marks = marks
        .into_iter()
        .map(|(a, b)| (a + lead.len(), b + lead.len()))
        .collect();
    (line, marks)
}

/// `text` on one line (each run of whitespace one space), with `ranges` moved to match.
fn one_line(text: &str, ranges: &[(usize, usize)]) -> (String, Vec<(usize, usize)>) {
    let mut out = String::with_capacity(text.len());
    // Where each byte of `text` lands in `out`.
    let mut map = vec![0usize; text.len() + 1];
    let mut space = false;
    for (i, c) in text.char_indices() {
        map[i] = out.len();
        if c.is_whitespace() {
            if !space && !out.is_empty() {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    map[text.len()] = out.len();
    let moved = ranges
        .iter()
        .filter(|(a, b)| a < b && *b <= text.len())
        .map(|(a, b)| (map[*a], map[*b]))
        .collect();
    (out, moved)
}

/// A regular expression's scan: the view at the scope's head (or its history), oldest first.
fn scan(repo: &Repo, q: &SearchQuery, re: &Regex, indexed: Indexed<'_>) -> Result<Vec<SearchHit>> {
    let limit = q.limit.map_or(usize::MAX, |l| l.saturating_add(q.offset));
    let ground = Ground::new(repo, false, indexed)?;
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
