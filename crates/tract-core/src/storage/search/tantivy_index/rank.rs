//! Ranking with a tantivy index: BM25 over its documents and the commits not indexed yet
//! together (their statistics added to the index's, so the scores of both compare), the
//! filters as queries that match without scoring, places and views as fast-field filters.

use crate::error::Result;
use crate::storage::search::lanes::within;
use crate::storage::search::query::{Positions, Weights};
use crate::storage::search::state::failed;
use crate::storage::search::tantivy_index::index::{Fields, KEY0, PLACE};
use crate::storage::search::{Ask, Filters, Found, Hit, Ranking};
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;
use tantivy::collector::{Count, FilterCollector, TopDocs};
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, Occur, Query, RangeQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, Searcher, Term};

/// Past this many hits asked, they are counted first, so a page far out (or all hits) asks
/// for no more than there are.
const FIRST: usize = 1 << 12;

/// Ranks `searcher`'s documents and the commits not indexed yet for `ask`.
pub(crate) fn rank(searcher: &Searcher, fields: &Fields, ask: &Ask<'_>) -> Result<Ranking> {
    let stats = Stats::of(searcher, ask, fields.text)?;
    let weights = stats.weights(fields.text)?;
    let mut clauses = vec![(Occur::Must, ask.parsed.query(fields.text))];
    clauses.extend(filters(&ask.filters, fields));
    let query = BooleanQuery::new(clauses);
    let (places, view) = (ask.filters.bounds.clone(), ask.filters.view.clone());
    let mut n = ask.n.min(FIRST);
    if ask.n > FIRST {
        n = ask
            .n
            .min(count(searcher, &query, places.clone(), view.clone())?);
    }
    let mut found: Vec<Found> = best(searcher, &query, &stats, n, places, view)?
        .into_iter()
        .map(|(score, doc)| Found {
            score,
            hit: Hit::Document(address(doc)),
        })
        .collect();
    found.extend(ask.walked.iter().filter_map(|(d, pos)| {
        ask.parsed.score(pos, &weights).map(|score| Found {
            score,
            hit: Hit::Commit(d.id, d.place),
        })
    }));
    Ok(Ranking { found, weights })
}

/// A document's address as one number.
fn address(doc: DocAddress) -> u64 {
    (u64::from(doc.segment_ord) << 32) | u64::from(doc.doc_id)
}

/// The document [`address`] numbered.
pub(crate) fn document(n: u64) -> DocAddress {
    DocAddress::new((n >> 32) as u32, n as u32)
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
    /// The statistics for a search of `ask.parsed` whose commits not indexed yet that pass
    /// its filters are `ask.walked`. Over an index that holds nothing, every such commit is counted as
    /// the index would count it (a store in memory, or a new one: the scores are the index's
    /// own after a batch). Beside an index, the others are counted as its average document:
    /// they are a batch at most among all it holds.
    fn of(searcher: &'a Searcher, ask: &Ask<'_>, field: Field) -> Result<Stats<'a>> {
        let (parsed, walked, wanted) = (ask.parsed, ask.walked, ask.words);
        let failed = |e| failed("reading its statistics", e);
        let indexed = searcher.total_num_docs().map_err(failed)?;
        let mut freq: HashMap<String, u64> = parsed.words().map(|w| (w.clone(), 0)).collect();
        let mut count = |pos: &Positions| {
            for (w, n) in freq.iter_mut() {
                *n += u64::from(pos.holds(w));
            }
            pos.len() as u64
        };
        let all = ask.pending.len() as u64;
        let in_index = searcher.total_num_tokens(field).map_err(failed)?;
        let tokens = match in_index.checked_div(indexed) {
            None => ask
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
    fn weights(&self, field: Field) -> Result<Weights> {
        let failed = |e| failed("reading its statistics", e);
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
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
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

/// The query's filters as queries that match without scoring.
fn filters(q: &Filters<'_>, f: &Fields) -> Vec<(Occur, Box<dyn Query>)> {
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
    if let Some(t) = q.tool {
        out.push((Occur::Must, term(Term::from_field_text(f.tool, t))));
    }
    if let Some(op) = q.op {
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
        found.map_err(|e| failed("searching it", e))
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
        .map_err(|e| failed("counting", e))
}
