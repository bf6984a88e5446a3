//! The search index of a store in PostgreSQL: the database's own full-text search, so nothing
//! runs beside the database and every process and machine shares one index.
//!
//! One row per commit in `search` beside the store's tables: its words as a `tsvector` (cut by
//! [`crate::storage::search::tokenizer`] here, each word a lexeme at its position, so code and logs are
//! cut as on a store file), a GIN index over them, its role, tools, operation, error flag,
//! time, place in the [`crate::storage::search::lanes`] and first id key as columns the query filters
//! on. `search_state` holds the [`State`] (tips, lanes, counts applied) the rows go with; both
//! change in one transaction, under an advisory lock of the index's writer, taken without
//! waiting: a second writer leaves the batch to the first.
//!
//! A query is a `tsquery` ([`tsquery`]: `&`, `|`, `<->` for phrases, `!`), ranked by `ts_rank_cd` (cover density, divided by 1 + the log of the
//! message's length): not BM25, so words are not weighed by how rare they are, and the scores
//! of the two backends do not compare. Commits not indexed yet are ranked by the same function
//! in the same query's terms, so they compare with the rows.
//!
//! A query is ranked among its newest [`NEWEST`] matching rows (by commit time, then id), or
//! the newest `offset + limit` when a page reaches further, every match with no limit; the
//! matching commits not indexed yet beside them. A GIN index gives matches in no order, so
//! ranking every match of a word in much of a big store reads every one; the newest are
//! found through the time index, walked from the newest, for a common query, and through the
//! words' index for a rare one, chosen from the table's statistics.
//!
//! What a `tsvector` can hold bounds a message's words: positions past 16,383 count as 16,383
//! (a phrase further in is not matched as one; its words still are), 256 positions per word,
//! and about 1 MB in all (past that, the words a longer text has not used yet are left out).

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId};
use crate::storage::backend::own;
use crate::storage::postgres::backend::{Params, PgBackend, PgTx};
use crate::storage::search::catch_up::{self, Caught, Doc};
use crate::storage::search::lanes::Place;
use crate::storage::search::query::{Parsed, Weights};
use crate::storage::search::state::{State, key_of};
use crate::storage::search::{
    Ask, Filters, Found, Hit, Ranking, Reading, SearchIndex, Upkeep, Whereabouts,
};
use crate::storage::store::Store;
use crate::storage::store::snapshot::Snapshot;
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::types::Type;

/// The tables and their indexes, made by the first catch-up (a store made before them gets
/// them then). The GIN index takes new rows in its pending list, merged by `VACUUM` (or
/// when the list is full), so a batch's inserts stay cheap.
const TABLES: &str = "
    CREATE TABLE IF NOT EXISTS @.search (
        id bytea PRIMARY KEY,
        blob bytea,
        role text,
        tools text[],
        op text NOT NULL,
        error boolean NOT NULL,
        time bigint NOT NULL,
        lane integer NOT NULL,
        height integer NOT NULL,
        k0 bigint NOT NULL,
        words tsvector
    );
    CREATE INDEX IF NOT EXISTS search_words ON @.search USING gin (words);
    CREATE INDEX IF NOT EXISTS search_blob ON @.search (blob);
    CREATE INDEX IF NOT EXISTS search_place ON @.search (lane, height);
    CREATE INDEX IF NOT EXISTS search_time ON @.search (time);
    CREATE INDEX IF NOT EXISTS search_tools ON @.search USING gin (tools);
    CREATE TABLE IF NOT EXISTS @.search_state (key text PRIMARY KEY, value bytea NOT NULL);";

/// The lock of the index's writer.
const WRITER: &str = "search index";

/// Lanes a search's bounds may cover for its rows to be reached through the lanes.
const LANES_JOINED: usize = 64;

/// Matches a query is ranked among at most, the newest (by commit time, then id): a GIN index
/// gives the matches in no order, so ranking every match of a word in a large share of a big
/// store reads and scores every one (1.5 s for a word in 39% of 1M messages; docs/decisions.md).
pub(crate) const NEWEST: usize = 1_000;

/// What a row the time index's walk reads costs against a match the words' index gives: the
/// two ways cost the same at about 1.4% of 1M rows for 1,000 matches (docs/performance.md).
const WALK_COST: f64 = 5.0;

/// Rows a catch-up adds past which it analyzes the table (a build, a long catch-up; the
/// batches of the writing processes are left to autovacuum).
const ANALYZE_AFTER: u64 = 10_000;

/// How a query's newest matches are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// As the planner chooses.
    Planner,
    /// The time index walked from the newest, each row's words matched, until enough match.
    Walk,
    /// Every match through the words' index, then the newest of them.
    Words,
}

/// Rank normalization of `ts_rank_cd`: divided by 1 + the log of the document's length.
const NORMALIZATION: i32 = 1;

/// What a `tsvector` holds: positions up to this,
const MAX_POSITION: usize = 16_383;
/// this many positions of one word,
const MAX_POSITIONS: usize = 256;
/// and, in all, under a megabyte (kept well under it: the encoding's overhead is estimated).
const MAX_BYTES: usize = 900_000;

/// A word quoted as a lexeme of PostgreSQL's `tsvector` and `tsquery` text.
pub(crate) fn lexeme(word: &str) -> String {
    format!("'{}'", word.replace('\\', "\\\\").replace('\'', "''"))
}

/// The query as PostgreSQL's `tsquery` text: the groups joined by `&`, alternatives by `|`, a
/// phrase's words by `<->`, an excluded one after `!`; each word quoted as the lexeme it is
/// (the text's words are cut here, not by the database).
pub(crate) fn tsquery(parsed: &Parsed) -> String {
    let phrase = |ws: &[String]| -> String {
        let inner: Vec<String> = ws.iter().map(|w| lexeme(w)).collect();
        format!("( {} )", inner.join(" <-> "))
    };
    let mut all: Vec<String> = parsed
        .groups()
        .iter()
        .map(|g| {
            let alts: Vec<String> = g.iter().map(|ws| phrase(ws)).collect();
            format!("( {} )", alts.join(" | "))
        })
        .collect();
    all.extend(
        parsed
            .excluded()
            .iter()
            .map(|ws| format!("!{}", phrase(ws))),
    );
    all.join(" & ")
}

/// The largest share of the rows `parsed` can match, from each word's (`share`): a phrase no
/// more than its rarest word, alternatives their sum, all the groups no more than the least of
/// them (exclusions left out: at most).
fn share_at_most(parsed: &Parsed, share: impl Fn(&str) -> f64) -> f64 {
    parsed
        .groups()
        .iter()
        .map(|g| {
            g.iter()
                .map(|ws| ws.iter().map(|w| share(w)).fold(1.0, f64::min))
                .sum::<f64>()
                .min(1.0)
        })
        .fold(1.0, f64::min)
}

/// A message's words as `tsvector` text: each lexeme quoted, with its positions (1-based).
pub(crate) fn tsvector(text: &str) -> String {
    let mut at: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut bytes = 0usize;
    crate::storage::search::tokenizer::each_word(text, true, |w, _, _, position, _| {
        let p = (position + 1).min(MAX_POSITION);
        match at.get_mut(w) {
            Some(ps) if ps.len() < MAX_POSITIONS && ps.last() != Some(&p) => {
                ps.push(p);
                bytes += 2;
            }
            Some(_) => {}
            None if bytes + w.len() + 8 <= MAX_BYTES => {
                bytes += w.len() + 8;
                at.insert(w.to_string(), vec![p]);
            }
            None => {}
        }
    });
    let mut out = String::with_capacity(bytes + at.len() * 4);
    for (w, mut ps) in at {
        // The whole of a split word sits at its first piece's position, after the pieces.
        ps.sort_unstable();
        ps.dedup();
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&lexeme(&w));
        out.push(':');
        let list: Vec<String> = ps.iter().map(|p| p.to_string()).collect();
        out.push_str(&list.join(","));
    }
    out
}

/// The index as one transaction sees it: the state its rows go with.
struct Read {
    /// The state (the default when there are no tables or no state yet).
    pub(crate) state: State,
    /// Whether the tables exist.
    pub(crate) exists: bool,
    /// A state of another layout, or one that does not decode: the rows are not read.
    pub(crate) stale: bool,
}

/// The index as a snapshot's transaction sees it: its rows read (and, in the upkeep's,
/// written) on the store's own connection, in the same state as the store.
struct Table<'a> {
    tx: &'a PgTx,
}

/// A row a query found: its commit, its score and its place.
#[derive(Debug, Clone, Copy)]
struct Row {
    id: CommitId,
    score: f32,
    place: Place,
}

/// A commit id from a row's bytes.
fn commit_id(bytes: &[u8]) -> Result<CommitId> {
    let b: [u8; 32] = bytes
        .try_into()
        .map_err(|_| Error::invalid_op("the search table holds an id that is not 32 bytes"))?;
    Ok(CommitId::from_bytes(b))
}

/// A place from a row's lane and height.
fn place(lane: i32, height: i32) -> Place {
    (lane.max(0) as u32, height.max(0) as u32)
}

impl<'a> Table<'a> {
    /// The index in `snap`'s transaction (a snapshot of a store in PostgreSQL).
    fn of(snap: &'a Snapshot) -> Result<Table<'a>> {
        let tx = own::<PgTx>(snap.tx())
            .ok_or_else(|| Error::invalid_op("a database's search index read in another store"))?;
        Ok(Table { tx })
    }

    fn query(&self, sql: &str, params: &Params<'_>) -> Result<Vec<tokio_postgres::Row>> {
        self.tx.sql(sql, params)
    }

    /// Whether the tables exist, and the state they hold.
    fn reading(&self) -> Result<Read> {
        let rows = self.query("SELECT to_regclass('@.search_state') IS NOT NULL", &[])?;
        if !rows.first().is_some_and(|r| r.get::<_, bool>(0)) {
            return Ok(Read {
                state: State::default(),
                exists: false,
                stale: false,
            });
        }
        let rows = self.query("SELECT value FROM @.search_state WHERE key = 'state'", &[])?;
        Ok(match rows.first() {
            None => Read {
                state: State::default(),
                exists: true,
                stale: false,
            },
            Some(r) => match State::decode(r.get::<_, &[u8]>(0)) {
                Some(state) => Read {
                    state,
                    exists: true,
                    stale: false,
                },
                None => Read {
                    state: State::default(),
                    exists: true,
                    stale: true,
                },
            },
        })
    }

    /// The place of commit `id`, if the index holds it.
    fn locate(&self, id: &CommitId) -> Result<Option<Place>> {
        let id = id.as_bytes().as_slice();
        let rows = self.query(
            "SELECT lane, height FROM @.search WHERE id = $1",
            &[(&id, Type::BYTEA)],
        )?;
        Ok(rows.first().map(|r| place(r.get(0), r.get(1))))
    }

    /// The best `n` rows matching `parsed` within `f`, best first (ties in id order, so a
    /// page follows the one before it), ranked among the newest [`NEWEST`] matches (or the
    /// newest `n`, if more; all of them when `n` is `usize::MAX`).
    ///
    /// Within lane bounds, the rows are reached through the lanes (an index of places): one
    /// branch's history is a few ranges of a few lanes, so its rows are read and matched there
    /// rather than every match of a common word being read to be left out. Without bounds (or
    /// past [`LANES_JOINED`] lanes) the words' index finds the rows of a rare query and the
    /// time index, walked from the newest, those of a common one ([`Table::way`]).
    fn best(&self, parsed: &Parsed, f: &Filters<'_>, n: usize) -> Result<Vec<Row>> {
        let tsquery = tsquery(parsed);
        let role = f.role.map(|r| r.as_str());
        let reached: Option<(Vec<i32>, Vec<i32>)> = f.bounds.as_deref().map(|b| {
            b.iter()
                .enumerate()
                .filter(|(_, h)| **h > 0)
                .map(|(lane, &h)| (lane as i32, h.min(i32::MAX as u32) as i32))
                .unzip()
        });
        let joined = reached
            .as_ref()
            .is_some_and(|(lanes, _)| lanes.len() <= LANES_JOINED);
        let bounds: Option<Vec<i32>> = match joined {
            true => None,
            false => f
                .bounds
                .as_deref()
                .map(|b| b.iter().map(|&h| h.min(i32::MAX as u32) as i32).collect()),
        };
        let (lanes, heights) = match (joined, reached) {
            (true, Some((l, h))) => (Some(l), Some(h)),
            _ => (None, None),
        };
        let view: Option<Vec<i64>> = f
            .view
            .as_deref()
            .map(|v| v.iter().map(|&k| k as i64).collect());
        let since = f.since_us.map(|t| t.min(i64::MAX as u64) as i64);
        let until = f.until_us.map(|t| t.min(i64::MAX as u64) as i64);
        let limit = n.min(i64::MAX as usize) as i64;
        let newest: Option<i64> = (n != usize::MAX).then(|| n.max(NEWEST) as i64);
        let from = match joined {
            true => {
                "unnest($12::integer[], $13::integer[]) AS r(lane, bound) \
                 JOIN @.search AS s ON s.lane = r.lane AND s.height < r.bound"
            }
            false => "@.search AS s",
        };
        // The columns' tests before the words': a row they leave out is not read for its
        // words (often from TOAST).
        let filters = "($2::text IS NULL OR s.role = $2)
               AND ($3::text IS NULL OR s.tools @> ARRAY[$3::text])
               AND ($4::text IS NULL OR s.op = $4)
               AND (NOT $5 OR s.error)
               AND ($6::bigint IS NULL OR s.time >= $6)
               AND ($7::bigint IS NULL OR s.time < $7)
               AND ($8::integer[] IS NULL
                    OR s.height < coalesce(($8::integer[])[s.lane + 1], 0))
               AND ($9::bigint[] IS NULL OR s.k0 = ANY ($9))
               AND s.words @@ $1::tsquery";
        let sql = match newest {
            Some(_) => format!(
                "SELECT c.id, ts_rank_cd(c.words, $1::tsquery, $11) AS score, c.lane, c.height
                 FROM (SELECT s.id, s.words, s.lane, s.height FROM {from}
                       WHERE {filters}
                       ORDER BY s.time DESC, s.id DESC
                       LIMIT $14) AS c
                 ORDER BY score DESC, c.id
                 LIMIT $10"
            ),
            None => format!(
                "SELECT s.id, ts_rank_cd(s.words, $1::tsquery, $11) AS score, s.lane, s.height
                 FROM {from}
                 WHERE {filters}
                 ORDER BY score DESC, s.id
                 LIMIT $10"
            ),
        };
        let filtered = f.role.is_some() || f.tool.is_some() || f.op.is_some() || f.errors;
        let way = match (newest, joined) {
            (Some(newest), false) => self.way(parsed, newest as usize, filtered)?,
            _ => Way::Planner,
        };
        let settings: &[(&str, &str)] = match way {
            Way::Planner => &[],
            Way::Walk => &[("enable_bitmapscan", "off"), ("enable_seqscan", "off")],
            Way::Words => &[("enable_indexscan", "off")],
        };
        self.set(settings)?;
        let rows = self.query(
            &sql,
            &[
                (&tsquery, Type::TEXT),
                (&role, Type::TEXT),
                (&f.tool, Type::TEXT),
                (&f.op, Type::TEXT),
                (&f.errors, Type::BOOL),
                (&since, Type::INT8),
                (&until, Type::INT8),
                (&bounds, Type::INT4_ARRAY),
                (&view, Type::INT8_ARRAY),
                (&limit, Type::INT8),
                (&NORMALIZATION, Type::INT4),
                (&lanes, Type::INT4_ARRAY),
                (&heights, Type::INT4_ARRAY),
                (&newest, Type::INT8),
            ],
        )?;
        self.reset(settings)?;
        rows.iter()
            .map(|r| {
                Ok(Row {
                    id: commit_id(r.get(0))?,
                    score: r.get(1),
                    place: place(r.get(2), r.get(3)),
                })
            })
            .collect()
    }

    /// How the newest `newest` matches of `parsed` are best found, from the share of the rows
    /// its words are in at most (the table's statistics: `ANALYZE`, autovacuum's, keeps
    /// them). The planner estimates a phrase as if its words were independent, so it reads
    /// every match of a common phrase through the words' index; and it misjudges the walk
    /// near where the two cost the same. Without statistics, or with filters that may leave
    /// a common query rare (role, tool, operation, errors), the planner chooses.
    fn way(&self, parsed: &Parsed, newest: usize, filtered: bool) -> Result<Way> {
        let words: Vec<&str> = parsed.words().map(String::as_str).collect();
        let rows = self.query(
            "SELECT c.reltuples::float8, st.attname IS NOT NULL, e.w, e.f::float8
             FROM pg_class AS c
             JOIN pg_namespace AS n ON n.oid = c.relnamespace
             LEFT JOIN pg_stats AS st
               ON st.schemaname = n.nspname AND st.tablename = c.relname
              AND st.attname = 'words'
             LEFT JOIN LATERAL unnest(st.most_common_elems::text::text[],
                                      st.most_common_elem_freqs) AS e(w, f)
               ON e.w = ANY ($1)
             WHERE c.oid = to_regclass('@.search')",
            &[(&words, Type::TEXT_ARRAY)],
        )?;
        let Some(first) = rows.first() else {
            return Ok(Way::Planner);
        };
        let (table_rows, known): (f64, bool) = (first.get(0), first.get(1));
        if !known || table_rows <= 0.0 {
            return Ok(Way::Planner);
        }
        let shares: HashMap<String, f64> = rows
            .iter()
            .filter_map(|r| Some((r.get::<_, Option<String>>(2)?, r.get::<_, Option<f64>>(3)?)))
            .collect();
        // A word the statistics do not list is rarer than every word they do.
        let share = share_at_most(parsed, |w| shares.get(w).copied().unwrap_or(0.0));
        // The walk reads about newest / share rows, the words' index share * rows matches.
        let walk = share * share * table_rows >= newest as f64 / WALK_COST;
        Ok(match (walk, filtered) {
            (true, false) => Way::Walk,
            (true, true) => Way::Planner,
            (false, _) => Way::Words,
        })
    }

    /// Planner settings for this transaction's next statement.
    fn set(&self, settings: &[(&str, &str)]) -> Result<()> {
        for (name, value) in settings {
            self.query(
                "SELECT set_config($1, $2, true)",
                &[(name, Type::TEXT), (value, Type::TEXT)],
            )?;
        }
        Ok(())
    }

    /// The settings [`Table::set`] changed, back to what the session has.
    fn reset(&self, settings: &[(&str, &str)]) -> Result<()> {
        if settings.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = settings.iter().map(|(n, _)| *n).collect();
        self.query(
            "SELECT set_config(name, reset_val, true) FROM pg_settings WHERE name = ANY ($1)",
            &[(&names, Type::TEXT_ARRAY)],
        )?;
        Ok(())
    }

    /// The scores of texts not indexed yet (their [`tsvector`]s) for `tsquery`, by the
    /// function that scores the rows; `None` for one that does not match.
    fn rank(&self, tsquery: &str, vectors: &[String]) -> Result<Vec<Option<f32>>> {
        let mut out = vec![None; vectors.len()];
        if vectors.is_empty() {
            return Ok(out);
        }
        let rows = self.query(
            "SELECT i, ts_rank_cd(v, q, $3)
             FROM unnest($1::text[]::tsvector[]) WITH ORDINALITY AS t(v, i),
                  (SELECT $2::tsquery AS q) AS query
             WHERE v @@ q",
            &[
                (&vectors, Type::TEXT_ARRAY),
                (&tsquery, Type::TEXT),
                (&NORMALIZATION, Type::INT4),
            ],
        )?;
        for r in rows {
            let i: i64 = r.get(0);
            if let Some(slot) = usize::try_from(i - 1).ok().and_then(|i| out.get_mut(i)) {
                *slot = Some(r.get(1));
            }
        }
        Ok(out)
    }

    /// Every commit the rows are of (for `fsck`).
    fn ids(&self) -> Result<Vec<CommitId>> {
        self.query("SELECT id FROM @.search", &[])?
            .iter()
            .map(|r| commit_id(r.get(0)))
            .collect()
    }

    /// Rows it holds.
    fn documents(&self) -> Result<u64> {
        let rows = self.query("SELECT count(*) FROM @.search", &[])?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64))
    }

    /// Bytes of its tables and their indexes.
    fn bytes(&self) -> Result<u64> {
        let rows = self.query(
            "SELECT (coalesce(pg_total_relation_size(to_regclass('@.search')), 0)
                  + coalesce(pg_total_relation_size(to_regclass('@.search_state')), 0))::bigint",
            &[],
        )?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64))
    }

    /// Writes `docs` (a row already there is replaced: a redacted message's words).
    fn put(&self, docs: &[Doc]) -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        let ids: Vec<&[u8]> = docs.iter().map(|d| d.id.as_bytes().as_slice()).collect();
        let blobs: Vec<Option<&[u8]>> = docs
            .iter()
            .map(|d| d.blob.as_ref().map(|b| b.as_bytes().as_slice()))
            .collect();
        let roles: Vec<Option<&str>> = docs
            .iter()
            .map(|d| d.said.as_ref().map(|s| s.role.as_str()))
            .collect();
        // Each row's tools, joined by a unit separator (arrays of arrays must be even).
        let tools: Vec<Option<String>> = docs
            .iter()
            .map(|d| {
                d.said
                    .as_ref()
                    .filter(|s| !s.tools.is_empty())
                    .map(|s| s.tools.join("\u{1f}"))
            })
            .collect();
        let ops: Vec<&str> = docs.iter().map(|d| d.op).collect();
        let errors: Vec<bool> = docs
            .iter()
            .map(|d| d.said.as_ref().is_some_and(|s| s.error))
            .collect();
        let times: Vec<i64> = docs
            .iter()
            .map(|d| d.time.min(i64::MAX as u64) as i64)
            .collect();
        let lanes: Vec<i32> = docs.iter().map(|d| d.place.0 as i32).collect();
        let heights: Vec<i32> = docs.iter().map(|d| d.place.1 as i32).collect();
        let keys: Vec<i64> = docs.iter().map(|d| key_of(&d.id)[0] as i64).collect();
        let words: Vec<Option<String>> = docs
            .iter()
            .map(|d| d.said.as_ref().map(|s| tsvector(&s.text)))
            .collect();
        self.query(
            "INSERT INTO @.search (id, blob, role, tools, op, error, time, lane, height, k0, words)
             SELECT id, blob, role, string_to_array(tools, chr(31)), op, error, time, lane,
                    height, k0, words::tsvector
             FROM unnest($1::bytea[], $2::bytea[], $3::text[], $4::text[], $5::text[],
                         $6::boolean[], $7::bigint[], $8::integer[], $9::integer[],
                         $10::bigint[], $11::text[])
                  AS t(id, blob, role, tools, op, error, time, lane, height, k0, words)
             ON CONFLICT (id) DO UPDATE SET blob = excluded.blob, role = excluded.role,
                 tools = excluded.tools, op = excluded.op, error = excluded.error,
                 time = excluded.time, lane = excluded.lane, height = excluded.height,
                 k0 = excluded.k0, words = excluded.words",
            &[
                (&ids, Type::BYTEA_ARRAY),
                (&blobs, Type::BYTEA_ARRAY),
                (&roles, Type::TEXT_ARRAY),
                (&tools, Type::TEXT_ARRAY),
                (&ops, Type::TEXT_ARRAY),
                (&errors, Type::BOOL_ARRAY),
                (&times, Type::INT8_ARRAY),
                (&lanes, Type::INT4_ARRAY),
                (&heights, Type::INT4_ARRAY),
                (&keys, Type::INT8_ARRAY),
                (&words, Type::TEXT_ARRAY),
            ],
        )?;
        Ok(())
    }

    /// Deletes with `sql` (its parameters `params`) and counts the rows deleted.
    fn delete(&self, sql: &str, params: &Params<'_>) -> Result<u64> {
        let rows = self.query(
            &format!("WITH gone AS ({sql} RETURNING 1) SELECT count(*) FROM gone"),
            params,
        )?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64))
    }
}

/// The search index of a store in PostgreSQL: the database's own full-text search, in tables
/// beside the store's.
pub(crate) struct PgSearch {
    backend: Arc<PgBackend>,
}

impl PgSearch {
    /// The index of the store `backend` opened.
    pub(crate) fn new(backend: Arc<PgBackend>) -> PgSearch {
        PgSearch { backend }
    }

    /// One catch-up, as a file's: in one transaction holding the index writer's lock (`None`:
    /// another process holds it; it is taken without waiting), the redactions and collections
    /// it has not applied, then the commits it does not hold. The tables are made by the
    /// first (unless `upkeep` only takes out what was removed).
    fn once(&self, upkeep: Upkeep<'_>) -> Result<Option<Caught>> {
        // One transaction on one connection reads the store and writes the index (a pool of one
        // connection is enough); at read committed, the state is read after the lock is had.
        let snap = Snapshot::new(Box::new(self.backend.read_write()?));
        let table = Table::of(&snap)?;
        let key = self.backend.lock_of(WRITER);
        let got = table.query(
            "SELECT pg_try_advisory_xact_lock($1)",
            &[(&key, Type::INT8)],
        )?;
        if !got.first().is_some_and(|r| r.get::<_, bool>(0)) {
            return Ok(None);
        }
        let mut reading = table.reading()?;
        if !reading.exists {
            if upkeep.only_existing {
                return Ok(Some(Caught::default()));
            }
            for statement in TABLES.split(';').filter(|s| !s.trim().is_empty()) {
                table.query(statement, &[])?;
            }
        }
        let mut caught = Caught::default();
        let redactions = snap.redactions()?;
        let mut state = reading.state.clone();
        let mut rebuild = upkeep.rebuild || reading.stale || state.redactions > redactions;
        let mut redacted: Vec<BlobId> = Vec::new();
        for n in state.redactions + 1..=redactions {
            match snap.redacted_blob(n)? {
                Some(b) => redacted.push(b),
                // A redaction this build did not record: what it removed is not known.
                None => rebuild = true,
            }
        }
        if rebuild {
            // Emptied by new files, so the old rows leave no bytes behind (searches of other
            // processes wait for the rebuild to commit: it is asked for, after `fsck` finds the
            // index wrong). Each statement of a build is short: the indexes take the rows as
            // they come (a GIN index made after them, in one statement, outlasts the statement
            // timeout at a million rows).
            let rows = table.query("SELECT count(*) FROM @.search", &[])?;
            caught.removed = rows.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64);
            table.query("TRUNCATE @.search", &[])?;
            caught.rebuilt = true;
            state = State::default();
            reading.state = State::default();
        } else {
            for blob in &redacted {
                let b = blob.as_bytes().as_slice();
                let rows = table.query(
                    "SELECT id, lane, height FROM @.search WHERE blob = $1",
                    &[(&b, Type::BYTEA)],
                )?;
                let mut docs = Vec::with_capacity(rows.len());
                for r in &rows {
                    let id = commit_id(r.get(0))?;
                    docs.push(catch_up::doc_of(&snap, id, place(r.get(1), r.get(2)))?);
                }
                table.put(&docs)?;
                caught.removed += docs.len() as u64;
            }
            let collections = snap.collections()?;
            if state.collections < collections {
                caught.removed += match upkeep
                    .collected
                    .filter(|_| state.collections + 1 == collections)
                {
                    Some(ids) => {
                        let ids: Vec<&[u8]> = ids.iter().map(|i| i.as_bytes().as_slice()).collect();
                        table.delete(
                            "DELETE FROM @.search WHERE id = ANY ($1)",
                            &[(&ids, Type::BYTEA_ARRAY)],
                        )?
                    }
                    None => table.delete(
                        "DELETE FROM @.search s WHERE NOT EXISTS \
                         (SELECT 1 FROM @.commits c WHERE c.id = s.id)",
                        &[],
                    )?,
                };
            }
        }
        let mut at = |id: &CommitId| table.locate(id);
        let mut added = 0u64;
        let walked = catch_up::walk(
            &snap,
            &reading.state,
            &mut at,
            &[],
            rebuild,
            None,
            &mut |docs| {
                added += docs.len() as u64;
                table.put(&docs)?;
                if let Some(tell) = upkeep.indexed {
                    tell(added);
                }
                Ok(())
            },
        )?;
        caught.added = walked.commits;
        walked.applied_to(&mut state, redactions, snap.collections()?);
        if !caught.changed() && reading.exists && reading.state == state {
            return Ok(Some(caught));
        }
        if caught.added >= ANALYZE_AFTER {
            // The statistics a search chooses its way by (`Table::way`), at once rather than
            // when autovacuum comes to a build; this transaction's rows count.
            table.query("ANALYZE @.search", &[])?;
        }
        let bytes = state.encode()?;
        table.query(
            "INSERT INTO @.search_state (key, value) VALUES ('state', $1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[(&bytes, Type::BYTEA)],
        )?;
        let tx: Box<dyn Any + Send + Sync> = snap.into_tx();
        let tx = tx
            .downcast::<PgTx>()
            .map_err(|_| Error::invalid_op("a database's search index written in another store"))?;
        tx.commit_sql()?;
        Ok(Some(caught))
    }
}

impl SearchIndex for PgSearch {
    // The keeper asks again until `wait` is over: the writer's lock is tried without waiting,
    // as a transaction waiting on it would hold a connection and its snapshot.
    fn catch_up(
        &self,
        _store: &Store,
        _wait: Duration,
        upkeep: Upkeep<'_>,
    ) -> Result<Option<Caught>> {
        self.once(upkeep)
    }

    fn read(
        &self,
        snapshot: &mut dyn FnMut() -> Result<Snapshot>,
    ) -> Result<(Box<dyn Reading + '_>, Snapshot)> {
        // The index's rows and the store in one transaction: one state of both.
        let snap = snapshot()?;
        let read = Table::of(&snap)?.reading()?;
        Ok((Box::new(read), snap))
    }

    fn read_in<'s>(&self, snap: &'s Snapshot) -> Result<Option<Box<dyn Reading + 's>>> {
        Ok(Some(Box::new(Table::of(snap)?.reading()?)))
    }

    fn exists(&self) -> bool {
        // Whether its tables exist is for a transaction to say: a catch-up that only takes
        // out what was removed finds none and does nothing.
        true
    }

    fn shared(&self) -> bool {
        true
    }

    fn whereabouts(&self) -> Whereabouts {
        Whereabouts {
            path: None,
            in_database: true,
        }
    }
}

impl Reading for Read {
    fn state(&self) -> &State {
        &self.state
    }

    fn usable(&self) -> bool {
        self.exists && !self.stale
    }

    fn stale(&self) -> bool {
        self.stale
    }

    fn locate(&self, snap: &Snapshot, id: &CommitId) -> Result<Option<Place>> {
        match self.usable() {
            true => Table::of(snap)?.locate(id),
            false => Ok(None),
        }
    }

    fn rank(&self, snap: &Snapshot, ask: &Ask<'_>) -> Result<Ranking> {
        let table = Table::of(snap)?;
        let parsed = ask.parsed;
        let mut found: Vec<Found> = match self.usable() {
            true => table.best(parsed, &ask.filters, ask.n)?,
            false => Vec::new(),
        }
        .into_iter()
        .map(|r| Found {
            score: r.score,
            hit: Hit::Commit(r.id, r.place),
        })
        .collect();
        // The commits not indexed yet that hold a word of the query, scored by the database
        // as its rows are.
        let candidates: Vec<&Doc> = ask
            .walked
            .iter()
            .filter(|(_, pos)| parsed.words().any(|w| pos.holds(w)))
            .map(|(d, _)| *d)
            .collect();
        let vectors: Vec<String> = candidates
            .iter()
            .map(|d| {
                d.said
                    .as_ref()
                    .map(|s| tsvector(&s.text))
                    .unwrap_or_default()
            })
            .collect();
        let scores = table.rank(&tsquery(parsed), &vectors)?;
        found.extend(candidates.iter().zip(scores).filter_map(|(d, score)| {
            score.map(|score| Found {
                score,
                hit: Hit::Commit(d.id, d.place),
            })
        }));
        // The database's scores weigh every word alike.
        Ok(Ranking {
            found,
            weights: Weights::default(),
        })
    }

    fn hit(&self, _snap: &Snapshot, _document: u64) -> Result<(CommitId, Option<Place>)> {
        Err(Error::invalid_op(
            "a database's search names its hits by commit, not by document",
        ))
    }

    fn ids(&self, snap: &Snapshot) -> Result<Vec<CommitId>> {
        Table::of(snap)?.ids()
    }

    fn documents(&self, snap: &Snapshot) -> Result<u64> {
        Table::of(snap)?.documents()
    }

    fn bytes(&self, snap: &Snapshot) -> Result<u64> {
        Table::of(snap)?.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lexemes_at_their_positions_quoted_and_bounded() {
        assert_eq!(
            tsvector("getUserName failed: it's"),
            "'failed':4 'get':1 'getusername':1 'it':5 'name':3 's':6 'user':2"
        );
        assert_eq!(lexeme("it's\\"), "'it''s\\\\'");
        let long: String = (0..20_000).map(|i| format!("w{} ", i % 3)).collect();
        let v = tsvector(&long);
        // Each word keeps at most 256 positions, none past the last one a tsvector holds.
        assert!(v.split(' ').all(|l| l.split(',').count() <= MAX_POSITIONS));
        let many: String = (0..200_000).map(|i| format!("word{i} ")).collect();
        assert!(tsvector(&many).len() < 1_000_000);
    }
}
