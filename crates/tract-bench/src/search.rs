//! Ranked search: `tract-bench --search [--messages 1000000] [--branches 1000] [--needles 20]
//! [--dir DIR] [--runs 200] [--index-runs 3] [--append-pairs 7] [--append-count 10752]
//! [--postgres URL]`.
//!
//! A seeded corpus of agent sessions ([`Gen`]: users asking about identifiers and paths,
//! assistants calling grep, read_file, bash, list_dir and edit_file, results of code, logs and
//! test output, answers), its words drawn from a vocabulary of [`VOCAB`] words with a Zipf law,
//! is written over `--branches` branches, `--messages` messages in all (each counted once:
//! a fork shares its source's commits). About [`FORK_SHARE`] of the branches are forks of an
//! earlier one, at a commit of its history, and the branch after each needle's is forked at
//! that branch's tip, so the forks that share a needle are known. `--needles` rare made-up
//! identifiers, phrases and word pairs are planted once each in a known commit, with decoys
//! (their words elsewhere, out of order or in longer messages) on other branches. The store
//! (`DIR/search-<messages>x<branches>.redb`) is written with `index_batch: 0` (no indexing
//! while it is built) and reused by a later run whose marker (`<store>.built.json`: format,
//! seed, sizes, needles) matches.
//!
//! Measured, on the store file:
//! 1. the index built anew ([`tract_core::update_index`] with `rebuild`), `--index-runs` times
//!    (0: the index kept as it is, brought up to date, its size reported and no build figure):
//!    its time, messages a second, and its bytes beside the store's (the store file and its
//!    journal directory without `index/`);
//! 2. queries across every branch's history (`SearchScope::All`, `history`, 10 hits) on one
//!    open handle, `--runs` each, round-robin after warm-ups: a common word, a phrase, a
//!    filtered query (tool results of bash in a time range) and one branch's history; and a
//!    cold first query, each in a child process that opens the store and searches once;
//! 3. each needle searched by its text: its rank (1 is the target) and the branches its hit
//!    names against those that hold the commit;
//! 4. the index's cost per append: child processes appending `--append-count` durable single
//!    messages to a fresh branch of a copy of the store (the built store is left as built),
//!    with `index_batch` at its default (the process indexes each batch of commits in the
//!    background) and at 0 (it never indexes), alternating, `--append-pairs` pairs; each
//!    window starts with the index current. On the same copy, what one catch-up of 1 and of
//!    a batch of commits costs, and the word query right after commits no process has indexed
//!    yet (a search indexes those in memory itself).
//!
//! With `--postgres URL`, once the file store is measured, the built store is cloned
//! ([`tract_core::clone_store`]: same commits and ids, as `--history` does) into the schema
//! `bench_search_<messages>x<branches>` of that database (whatever schema the URL names is
//! replaced; that schema, left by an earlier run, is dropped first, so runs repeat; it stays
//! after the run, for a look at it, until the next one). On it, under `"postgres"`, with the
//! file store's shapes: the clone's time; the index built anew `--index-runs` times, its bytes
//! as [`tract_core::IndexReport`] gives them (the `search` tables and their indexes) beside
//! the schema's (every table with its indexes and TOAST, after the clone and after the
//! builds); the queries (against [`TARGET_POSTGRES_P50_MS`] and [`TARGET_POSTGRES_P95_MS`]),
//! the cold first query (children opening the URL), the needles and the append windows. The
//! windows, catch-ups and queries after commits not indexed run on fresh branches of that
//! same schema instead of a copy: they only add branches, after the queries and needles are
//! measured. The bench drops and measures the schema on a connection of its own, without TLS
//! (tract's parameters and the TLS ones left out of the URL).

use crate::history::{beside, remove_store};
use crate::{SEED, median, ms, peak_rss_kib, percentile};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tract_core::{
    Bind, BranchName, CommitId, Content, IndexReport, Message, OpenMode, OpenOptions, Rev, Role,
    SearchQuery, SearchScope, Store, StoreOptions, ToolCall, Tract, update_index,
};

/// The marker's format: a marker of another format (or seed, or sizes) is not reused.
const FORMAT: u64 = 1;
/// Words in the vocabulary (the common words first, then made-up ones).
const VOCAB: usize = 40_000;
/// The Zipf exponent of word draws.
const ZIPF_S: f64 = 1.07;
/// Share of the branches (after the first) forked from an earlier one.
const FORK_SHARE: f64 = 0.3;
/// Messages per transaction while building.
const BUILD_BATCH: usize = 2_000;
/// Warm-up searches of each query before the timed ones.
const WARMUPS: usize = 5;
/// Child processes for the cold first query.
const COLD_RUNS: usize = 5;
/// Hits asked for.
const LIMIT: usize = 10;
/// Commits not indexed yet when the word query is timed (a search matches up to 1,024 as they
/// are, the index's `SEARCH_BATCH`; past that it brings the index up to date first).
const PENDING: [usize; 4] = [0, 256, 1024, 2000];
/// Searches timed for each of [`PENDING`].
const PENDING_RUNS: usize = 30;

/// Target: a query's median, on the file store.
const TARGET_P50_MS: f64 = 20.0;
/// Target: a query's 95th percentile, on the file store.
const TARGET_P95_MS: f64 = 50.0;
/// Target: a query's median, on PostgreSQL.
const TARGET_POSTGRES_P50_MS: f64 = 50.0;
/// Target: a query's 95th percentile, on PostgreSQL.
const TARGET_POSTGRES_P95_MS: f64 = 100.0;
/// Target: the index's cost per append, in percent of an append.
const TARGET_APPEND_COST_PERCENT: f64 = 10.0;

/// The word, the phrase and the filtered query's word searched for.
const WORD: &str = "error";
const PHRASE: &str = "failed to parse";

use crate::history::copy_file;

/// Errors are reported as text, as the other modes do.
type Res<T> = Result<T, String>;

/// A store error as text.
fn err(e: tract_core::Error) -> String {
    e.to_string()
}

/// Common words, most frequent first: the head of the Zipf law.
const COMMON: &str = "\
    the to a is in and of for it that this not with on be error file test when if we from \
    function value should now but at as can by return type config request data new call run set \
    use get change line code first after before missing check fails failed build path name user \
    result cache server client time start read write update handler query parse default option \
    state session token retry timeout connection index module field struct list map key count \
    size limit message event version local remote load save open close flag input output log \
    debug warn info trace async task thread lock queue worker job schema table row column \
    commit branch merge deploy service api route auth password account order payment invoice \
    price email report metric sample batch stream buffer chunk page offset header body status \
    response method context scope store model view layout style theme button form dialog still \
    again only also then every which where because instead while without into over";

/// Consonants of made-up words: no `q`, `x` or `z`, which only needles have.
const CONSONANTS: &[u8] = b"bcdfghjklmnprstvw";
const VOWELS: &[u8] = b"aeiou";

/// The vocabulary: words by rank, and the Zipf law's cumulative shares.
struct Vocab {
    words: Vec<String>,
    cdf: Vec<f64>,
    known: HashSet<String>,
}

impl Vocab {
    fn new() -> Vocab {
        let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ 0x0076_6f63_6162);
        let mut words: Vec<String> = Vec::with_capacity(VOCAB);
        let mut known = HashSet::with_capacity(VOCAB);
        for w in COMMON.split_whitespace() {
            if known.insert(w.to_string()) {
                words.push(w.to_string());
            }
        }
        while words.len() < VOCAB {
            let mut w = String::new();
            for _ in 0..rng.random_range(2..=3) {
                w.push(char::from(
                    CONSONANTS[rng.random_range(0..CONSONANTS.len())],
                ));
                w.push(char::from(VOWELS[rng.random_range(0..VOWELS.len())]));
                if rng.random_bool(0.3) {
                    w.push(char::from(
                        CONSONANTS[rng.random_range(0..CONSONANTS.len())],
                    ));
                }
            }
            if known.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut total = 0.0;
        let mut cdf: Vec<f64> = (1..=words.len())
            .map(|r| {
                total += 1.0 / (r as f64).powf(ZIPF_S);
                total
            })
            .collect();
        for c in &mut cdf {
            *c /= total;
        }
        Vocab { words, cdf, known }
    }
}

/// A word with its first letter in capitals.
fn cap(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The generator of agent messages; the same seed always gives the same messages.
struct Gen<'v> {
    v: &'v Vocab,
    rng: ChaCha8Rng,
    /// Tool calls made (ids).
    call: u64,
    /// Seconds into the day the log lines are at.
    clock: u64,
}

impl<'v> Gen<'v> {
    fn new(v: &'v Vocab, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let clock = rng.random_range(0..80_000);
        Gen {
            v,
            rng,
            call: 0,
            clock,
        }
    }

    /// A word drawn by the Zipf law.
    fn w(&mut self) -> &'v str {
        let u: f64 = self.rng.random();
        let i = self
            .v
            .cdf
            .partition_point(|&c| c < u)
            .min(self.v.words.len() - 1);
        &self.v.words[i]
    }

    fn n(&mut self, hi: u32) -> u32 {
        self.rng.random_range(1..hi.max(2))
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.rng.random_range(0..xs.len())]
    }

    /// An identifier of 1–3 words, in one of the usual cases.
    fn ident(&mut self) -> String {
        let pieces: Vec<&str> = (0..self.rng.random_range(1..=3))
            .map(|_| self.w())
            .collect();
        match self.rng.random_range(0..10) {
            0..=4 => pieces.join("_"),
            5..=7 => {
                let mut s = pieces[0].to_string();
                s.extend(pieces[1..].iter().map(|p| cap(p)));
                s
            }
            8 => pieces.iter().map(|p| cap(p)).collect(),
            _ => pieces.join("_").to_uppercase(),
        }
    }

    /// A type name: 1–2 words in Pascal case.
    fn ty(&mut self) -> String {
        (0..self.rng.random_range(1..=2))
            .map(|_| cap(self.w()))
            .collect()
    }

    fn path(&mut self) -> String {
        let top = self.pick(&["src", "crates", "tests", "web", "lib", "app"]);
        let ext = self.pick(&["rs", "py", "ts", "tsx", "go", "rs", "py"]);
        match self.rng.random_range(0..3) {
            0 => format!("{top}/{}.{ext}", self.w()),
            1 => format!("{top}/{}/{}.{ext}", self.w(), self.ident().to_lowercase()),
            _ => format!("{top}/{}/{}/{}.{ext}", self.w(), self.w(), self.w()),
        }
    }

    /// Words of prose, 5–15 of them, as a sentence.
    fn sentence(&mut self) -> String {
        let n = self.rng.random_range(5..=15);
        let words: Vec<&str> = (0..n).map(|_| self.w()).collect();
        format!("{}.", cap(&words.join(" ")))
    }

    fn code_line(&mut self) -> String {
        let (a, b, c) = (self.ident(), self.ident(), self.ident());
        let (t, n) = (self.ty(), self.n(100_000));
        match self.rng.random_range(0..11) {
            0 => format!("let {a} = {b}.{c}({n});"),
            1 => format!("fn {a}(&self, {b}: &{t}) -> Result<{t}, Error> {{"),
            2 => format!("    if {a}.len() > {n} {{ return Err(Error::{t}); }}"),
            3 => format!("def {a}(self, {b}={n}):"),
            4 => format!("    return self.{a}[{b}]"),
            5 => format!("import {{ {t} }} from '../{}/{}';", self.w(), self.w()),
            6 => format!("const {}: u64 = {n};", a.to_uppercase()),
            7 => format!("// TODO({}): {}", self.w(), self.sentence()),
            8 => format!("    {a}.{b}().await?;"),
            9 => format!("pub struct {t} {{ {a}: {}, {b}: u{n} }}", self.ty()),
            _ => format!("class {t}({}):", self.ty()),
        }
    }

    /// A log timestamp, a little after the last one.
    fn stamp(&mut self) -> String {
        self.clock += u64::from(self.n(30));
        let s = self.clock % 86_400;
        format!(
            "2026-11-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            1 + (self.clock / 86_400) % 28,
            s / 3600,
            s / 60 % 60,
            s % 60,
            self.n(1000)
        )
    }

    fn log_line(&mut self) -> String {
        let ts = self.stamp();
        let (m1, m2, id, n) = (self.w(), self.w(), self.ident(), self.n(100_000));
        match self.rng.random_range(0..10) {
            0..=2 => format!("{ts} INFO  {m1}::{m2}: {} {id}={n}", self.sentence()),
            3 => format!("{ts} WARN  {m1}: retrying {id} after {n}ms"),
            4 => format!(
                "{ts} ERROR {m1}::{m2}: failed to parse {id}: expected {} at line {} column {}",
                self.w(),
                self.n(400),
                self.n(120)
            ),
            5 => format!(
                "{ts} ERROR {m1}: connection refused (os error 111) while connecting to {m2}.{}.internal:{}",
                self.w(),
                self.n(65_000)
            ),
            6 => format!(
                "error[E0{:03}]: {}\n  --> {}:{}:{}",
                self.n(800),
                self.sentence(),
                self.path(),
                self.n(400),
                self.n(80)
            ),
            7 => format!(
                "thread 'main' panicked at {}:{}:{}:\n{}",
                self.path(),
                self.n(400),
                self.n(80),
                self.sentence()
            ),
            8 => format!(
                "   Compiling {m1} v0.{}.{} ({})",
                self.n(20),
                self.n(20),
                self.path()
            ),
            _ => format!("{ts} DEBUG {m1}: {id} took {n}us"),
        }
    }

    /// Tool output of `tool`, of a size drawn from a log-normal law (median about 700 bytes,
    /// 120 B to 12 KB).
    fn output(&mut self, tool: &str) -> String {
        let (u1, u2): (f64, f64) = (self.rng.random(), self.rng.random());
        let z = (-2.0 * u1.max(1e-12).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let target = (700.0 * (0.9 * z).exp()).clamp(120.0, 12_000.0) as usize;
        let mut out = String::with_capacity(target + 256);
        let mut line_no = self.n(400);
        let dir = self.path();
        while out.len() < target {
            let line = match tool {
                "grep" => format!("{}:{line_no}:{}", self.path(), self.code_line()),
                "read_file" => format!("{line_no:>5}  {}", self.code_line()),
                "list_dir" => self.path(),
                "edit_file" => format!("Applied the edit to {dir}: {} lines changed", self.n(40)),
                _ => match self.rng.random_range(0..3) {
                    0 => format!(
                        "test {}::{} ... {}",
                        self.w(),
                        self.ident().to_lowercase(),
                        self.pick(&["ok", "ok", "ok", "FAILED", "ignored"])
                    ),
                    _ => self.log_line(),
                },
            };
            out.push_str(&line);
            out.push('\n');
            line_no += self.n(12);
        }
        out
    }

    fn user(&mut self) -> String {
        let (id, path) = (self.ident(), self.path());
        match self.rng.random_range(0..6) {
            0 => format!("Why does {id} fail with an error on CI but not locally?"),
            1 => format!(
                "Where is {} read, and what happens when it is missing?",
                id.to_uppercase()
            ),
            2 => format!(
                "Refactor {id} in {path} so that it no longer clones the {}. {}",
                self.w(),
                self.sentence()
            ),
            3 => format!(
                "The tests in {path} fail after my change to {id}. {}",
                self.sentence()
            ),
            4 => format!("{} Look at {path}.", self.sentence()),
            _ => format!(
                "Add a retry with backoff around {id}; keep the {} API the same.",
                self.w()
            ),
        }
    }

    /// One turn: a user message, an assistant calling 1–2 tools, their results, an answer.
    fn turn(&mut self, out: &mut Vec<Message>) {
        let q = self.user();
        out.push(Message::text(Role::User, q));
        let calls: Vec<ToolCall> = (0..self.rng.random_range(1..=2))
            .map(|_| {
                self.call += 1;
                let name = match self.rng.random_range(0..20) {
                    0..=5 => "grep",
                    6..=11 => "read_file",
                    12..=16 => "bash",
                    17..=18 => "list_dir",
                    _ => "edit_file",
                };
                let arguments = match name {
                    "grep" => json!({"pattern": self.ident(), "path": self.pick(&[".", "src", "crates", "tests"])}),
                    "read_file" | "edit_file" => json!({"path": self.path()}),
                    "list_dir" => json!({"path": self.pick(&["src", "crates", "tests", "web"])}),
                    _ => json!({"command": self.pick(&["cargo test --workspace", "pytest -x", "npm test", "go test ./...", "cargo build --release"])}),
                };
                ToolCall {
                    id: format!("call_{:08x}", self.call),
                    name: name.into(),
                    arguments: arguments.to_string(),
                }
            })
            .collect();
        let text = match self.rng.random_range(0..3) {
            0 => String::new(),
            _ => format!("Let me look at {} first.", self.path()),
        };
        let mut a = Message::text(Role::Assistant, text);
        a.tool_calls = calls.clone();
        out.push(a);
        for c in &calls {
            let body = self.output(&c.name);
            let failed = c.name == "bash" && self.rng.random_bool(0.08);
            out.push(Message::tool_result(
                c.id.clone(),
                c.name.clone(),
                body,
                failed,
            ));
        }
        let mut answer: Vec<String> = (0..self.rng.random_range(1..=4))
            .map(|_| self.sentence())
            .collect();
        if self.rng.random_bool(0.4) {
            let lines: Vec<String> = (0..self.rng.random_range(1..=5))
                .map(|_| self.code_line())
                .collect();
            answer.push(format!("```\n{}\n```", lines.join("\n")));
        }
        out.push(Message::text(Role::Assistant, answer.join(" ")));
    }

    /// `n` messages: a system prompt first on a branch of its own (`root`), then whole turns,
    /// the last one cut at `n`.
    fn messages(&mut self, n: usize, root: bool) -> Vec<Message> {
        let mut out = Vec::with_capacity(n + 8);
        if root {
            out.push(crate::workload::system_prompt());
        }
        while out.len() < n {
            self.turn(&mut out);
        }
        out.truncate(n);
        out
    }

    /// A made-up word no other message has: letters with `q`, `x` and `z` (the vocabulary has
    /// none of them).
    fn needle_word(&mut self) -> String {
        loop {
            let mut w = String::new();
            for i in 0..4 {
                let c = match i {
                    0 => b"qxz"[self.rng.random_range(0..3)],
                    2 => b"qxz"[self.rng.random_range(0..3)],
                    _ => CONSONANTS[self.rng.random_range(0..CONSONANTS.len())],
                };
                w.push(char::from(c));
                w.push(char::from(VOWELS[self.rng.random_range(0..VOWELS.len())]));
            }
            if !self.v.known.contains(&w) {
                return w;
            }
        }
    }
}

/// What a needle is, and how it is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A camelCase identifier of two made-up words around a common one, in a tool result;
    /// searched as written (a phrase of its pieces). Decoys hold the pieces apart.
    Ident,
    /// Three made-up words in a user message; searched as a quoted phrase. Decoys hold them
    /// in another order.
    Phrase,
    /// Two made-up words in a short answer; searched as two words. A decoy holds both in a
    /// long tool result (BM25 ranks the short message first), another only one.
    Words,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Ident => "identifier",
            Kind::Phrase => "phrase",
            Kind::Words => "words",
        }
    }
}

/// A planted needle: its words, the text planted, the query, and (once built) where it is.
#[derive(Debug, Clone)]
struct Needle {
    kind: Kind,
    words: Vec<String>,
    /// The common word inside an identifier needle.
    common: String,
    query: String,
    branch: usize,
    /// Where it landed: the commit, and its height in the branch's first-parent chain.
    commit: Option<(CommitId, u64)>,
    /// The branches whose history holds it.
    expected: Vec<String>,
}

impl Needle {
    fn new(k: usize, branch: usize, g: &mut Gen) -> Needle {
        let kind = [Kind::Ident, Kind::Phrase, Kind::Words][k % 3];
        let n = if kind == Kind::Phrase { 3 } else { 2 };
        let words: Vec<String> = (0..n).map(|_| g.needle_word()).collect();
        let common = g
            .pick(&["retry", "cache", "token", "session", "handler"])
            .to_string();
        let query = match kind {
            Kind::Ident => format!("{}{}{}", words[0], cap(&common), cap(&words[1])),
            Kind::Phrase => format!("\"{}\"", words.join(" ")),
            Kind::Words => words.join(" "),
        };
        Needle {
            kind,
            words,
            common,
            query,
            branch,
            commit: None,
            expected: Vec::new(),
        }
    }

    /// The text planted in the needle's message.
    fn text(&self) -> String {
        match self.kind {
            Kind::Ident => format!(
                "2026-11-28T12:00:00.000Z ERROR worker: {}{}{} returned 503 after 3 attempts",
                self.words[0],
                cap(&self.common),
                cap(&self.words[1])
            ),
            Kind::Phrase => format!(
                "Please check the {} setting before the next deploy.",
                self.words.join(" ")
            ),
            Kind::Words => format!(
                "The {} cache needs {} before it starts.",
                self.words[0], self.words[1]
            ),
        }
    }

    /// The text of decoy `d` (0 or 1).
    fn decoy(&self, d: usize) -> String {
        let w = &self.words;
        match (self.kind, d) {
            (Kind::Ident, 0) => format!("{} was renamed; {} is used instead", w[0], w[1]),
            (Kind::Ident, _) => format!("{}{}{}", w[1], cap(&self.common), cap(&w[0])),
            (Kind::Phrase, 0) => format!("Is {} {} {} still needed?", w[2], w[1], w[0]),
            (Kind::Phrase, _) => format!("{} and then {} {}", w[0], w[2], w[1]),
            (Kind::Words, 0) => format!("{} {}", w[0], w[1]),
            (Kind::Words, _) => format!("The {} is gone.", w[0]),
        }
    }
}

/// Something planted in a branch's messages: a needle, or a decoy of one.
#[derive(Debug, Clone, Copy)]
enum Plant {
    Needle(usize),
    Decoy(usize, usize),
}

/// A branch of the corpus: its name, where it forks from (a branch and the height of the
/// commit in its first-parent chain), its own messages, and what is planted in them.
#[derive(Debug, Clone)]
struct BranchPlan {
    name: String,
    parent: Option<(usize, u64)>,
    own: usize,
    plants: Vec<Plant>,
}

/// The corpus's sizes.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub messages: usize,
    pub branches: usize,
    pub needles: usize,
}

/// The length of branch `i`'s first-parent chain.
fn chain_len(plan: &[BranchPlan], i: usize) -> u64 {
    let b = &plan[i];
    b.parent.map_or(0, |(_, f)| f + 1) + b.own as u64
}

/// The branches, their forks and sizes, the needles and where their plants go.
fn plan(p: Params, vocab: &Vocab) -> (Vec<BranchPlan>, Vec<Needle>) {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ 0x706c_616e);
    let weights: Vec<f64> = (0..p.branches)
        .map(|_| 0.25 + 1.5 * rng.random::<f64>())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut own: Vec<usize> = weights
        .iter()
        .map(|w| ((p.messages as f64 * w / total) as usize).max(1))
        .collect();
    // Exactly `messages` in all: the rounding's difference spread one message at a time.
    let mut sum: usize = own.iter().sum();
    let mut i = 0;
    while sum != p.messages {
        let k = i % own.len();
        if sum < p.messages {
            own[k] += 1;
            sum += 1;
        } else if own[k] > 1 {
            own[k] -= 1;
            sum -= 1;
        }
        i += 1;
    }
    let needle_branch = |k: usize| k * p.branches / p.needles.max(1);
    let needle_branches: HashSet<usize> = (0..p.needles).map(needle_branch).collect();
    let mut plan: Vec<BranchPlan> = Vec::with_capacity(p.branches);
    for (i, own) in own.into_iter().enumerate() {
        let parent = if i == 0 {
            None
        } else if needle_branches.contains(&(i - 1)) && !needle_branches.contains(&i) {
            // The branch after a needle's: a fork at its tip, sharing the needle.
            Some((i - 1, chain_len(&plan, i - 1) - 1))
        } else if rng.random_bool(FORK_SHARE) {
            let j = rng.random_range(0..i);
            Some((j, rng.random_range(0..chain_len(&plan, j))))
        } else {
            None
        };
        plan.push(BranchPlan {
            name: format!("agent-{i:04}"),
            parent,
            own,
            plants: Vec::new(),
        });
    }
    let mut g = Gen::new(vocab, SEED ^ 0x6e65_6564);
    let mut needles = Vec::with_capacity(p.needles);
    for k in 0..p.needles {
        let b = needle_branch(k);
        needles.push(Needle::new(k, b, &mut g));
        plan[b].plants.push(Plant::Needle(k));
        for d in 0..2 {
            let mut other = rng.random_range(0..p.branches);
            if other == b && p.branches > 1 {
                other = (other + 1) % p.branches;
            }
            plan[other].plants.push(Plant::Decoy(k, d));
        }
    }
    (plan, needles)
}

/// The id of the commit at `height` of branch `i`'s first-parent chain.
fn id_at(
    plan: &[BranchPlan],
    own_ids: &[Vec<CommitId>],
    mut i: usize,
    height: u64,
) -> Res<CommitId> {
    loop {
        let base = plan[i].parent.map_or(0, |(_, f)| f + 1);
        if height >= base {
            let k = usize::try_from(height - base).map_err(|e| e.to_string())?;
            return own_ids
                .get(i)
                .and_then(|ids| ids.get(k))
                .copied()
                .ok_or_else(|| format!("no commit at height {height} of {}", plan[i].name));
        }
        match plan[i].parent {
            Some((j, _)) => i = j,
            None => return Err(format!("no commit at height {height} of {}", plan[i].name)),
        }
    }
}

/// The branches whose history holds the commit at `height` of branch `b`'s own commits.
fn holders(plan: &[BranchPlan], b: usize, height: u64) -> Vec<String> {
    let holds = |mut c: usize| loop {
        if c == b {
            return true;
        }
        match plan[c].parent {
            Some((d, f)) if f >= height => c = d,
            _ => return false,
        }
    };
    let mut out: Vec<String> = (0..plan.len())
        .filter(|&c| holds(c))
        .map(|c| plan[c].name.clone())
        .collect();
    out.sort();
    out
}

/// Puts `line` in the middle of a tool result's text, or after another message's text.
fn insert(m: &mut Message, line: &str) {
    let text = m.content.text().into_owned();
    let new = if m.role == Role::Tool {
        let mid = text[..text.len() / 2].rfind('\n').map_or(0, |i| i + 1);
        format!("{}{line}\n{}", &text[..mid], &text[mid..])
    } else if text.is_empty() {
        line.to_string()
    } else {
        format!("{text} {line}")
    };
    m.content = Content::Text(new);
}

/// Plants what `plan` puts in a branch's messages; returns each needle's index there.
fn plant(
    messages: &mut [Message],
    plants: &[Plant],
    needles: &[Needle],
    rng: &mut ChaCha8Rng,
) -> Vec<(usize, usize)> {
    let mut used: HashSet<usize> = HashSet::new();
    let mut placed = Vec::new();
    let is_answer = |m: &Message| m.role == Role::Assistant && m.tool_calls.is_empty();
    for p in plants {
        let (k, d) = match *p {
            Plant::Needle(k) => (k, None),
            Plant::Decoy(k, d) => (k, Some(d)),
        };
        let needle = &needles[k];
        let free: Vec<usize> = (0..messages.len()).filter(|i| !used.contains(i)).collect();
        let of = |f: &dyn Fn(&Message) -> bool| -> Vec<usize> {
            free.iter().copied().filter(|&i| f(&messages[i])).collect()
        };
        let candidates = match (needle.kind, d) {
            (Kind::Ident, None | Some(0)) => of(&|m| m.role == Role::Tool),
            (Kind::Phrase, _) | (Kind::Ident, Some(_)) => of(&|m| m.role == Role::User),
            (Kind::Words, None | Some(1)) => of(&is_answer),
            // Both words in the longest tool result of the branch.
            (Kind::Words, Some(_)) => {
                let tools = of(&|m| m.role == Role::Tool);
                tools
                    .iter()
                    .copied()
                    .max_by_key(|&i| messages[i].content.text().len())
                    .into_iter()
                    .collect()
            }
        };
        let pool = if candidates.is_empty() {
            free
        } else {
            candidates
        };
        let Some(&at) = pool.get(rng.random_range(0..pool.len().max(1))) else {
            continue;
        };
        used.insert(at);
        match d {
            None => {
                insert(&mut messages[at], &needle.text());
                placed.push((k, at));
            }
            Some(0) if needle.kind == Kind::Words => {
                // Far apart: the first word at the start, the second at the end.
                let text = messages[at].content.text().into_owned();
                messages[at].content = Content::Text(format!(
                    "{}\n{text}\nnote: {}",
                    needle.words[0], needle.words[1]
                ));
            }
            Some(d) => insert(&mut messages[at], &needle.decoy(d)),
        }
    }
    placed
}

/// Lowercased words of `text`, cut at punctuation and where a capital follows a small
/// letter (near enough to the index's cutting to count messages holding a word).
fn rough_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .flat_map(|w| {
            let mut parts = Vec::new();
            let mut start = 0;
            let b: Vec<char> = w.chars().collect();
            for i in 1..b.len() {
                if b[i - 1].is_lowercase() && b[i].is_uppercase() {
                    parts.push(b[start..i].iter().collect::<String>());
                    start = i;
                }
            }
            if start < b.len() {
                parts.push(b[start..].iter().collect::<String>());
            }
            parts
        })
        .map(|w| w.to_lowercase())
}

/// What the store holds and how it was built, as its marker records it.
#[derive(Debug, Clone)]
struct Built {
    messages: u64,
    branches: u64,
    forked: u64,
    text_bytes: u64,
    build_s: f64,
    /// The first and last commit times (microseconds since the epoch).
    first_us: u64,
    last_us: u64,
    /// Messages holding [`WORD`], and [`PHRASE`] (counted roughly, as [`rough_words`] cuts).
    word_messages: u64,
    phrase_messages: u64,
    needles: Vec<Needle>,
}

impl Built {
    fn to_json(&self, p: Params) -> Value {
        json!({
            "format": FORMAT,
            "seed": SEED,
            "requested": {"messages": p.messages, "branches": p.branches, "needles": p.needles},
            "messages": self.messages,
            "branches": self.branches,
            "forked_branches": self.forked,
            "text_bytes": self.text_bytes,
            "build_s": (self.build_s * 10.0).round() / 10.0,
            "first_us": self.first_us,
            "last_us": self.last_us,
            "word_messages": self.word_messages,
            "phrase_messages": self.phrase_messages,
            "needles": self.needles.iter().map(needle_json).collect::<Vec<_>>(),
        })
    }

    fn from_json(v: &Value, p: Params, needles: &[Needle]) -> Option<Built> {
        let n = |k: &str| v.get(k).and_then(Value::as_u64);
        let r = v.get("requested")?;
        let rn = |k: &str| r.get(k).and_then(Value::as_u64);
        if n("format") != Some(FORMAT)
            || n("seed") != Some(SEED)
            || rn("messages") != Some(p.messages as u64)
            || rn("branches") != Some(p.branches as u64)
            || rn("needles") != Some(p.needles as u64)
        {
            return None;
        }
        let stored = v.get("needles")?.as_array()?;
        let mut out = needles.to_vec();
        for (needle, s) in out.iter_mut().zip(stored) {
            let commit = CommitId::from_hex(s.get("commit")?.as_str()?)?;
            needle.commit = Some((commit, s.get("height")?.as_u64()?));
            needle.expected = s
                .get("expected_branches")?
                .as_array()?
                .iter()
                .filter_map(|b| b.as_str().map(str::to_string))
                .collect();
            if s.get("query")?.as_str()? != needle.query {
                return None;
            }
        }
        if stored.len() != needles.len() {
            return None;
        }
        Some(Built {
            messages: n("messages")?,
            branches: n("branches")?,
            forked: n("forked_branches")?,
            text_bytes: n("text_bytes")?,
            build_s: v.get("build_s")?.as_f64()?,
            first_us: n("first_us")?,
            last_us: n("last_us")?,
            word_messages: n("word_messages")?,
            phrase_messages: n("phrase_messages")?,
            needles: out,
        })
    }
}

fn needle_json(n: &Needle) -> Value {
    json!({
        "kind": n.kind.name(),
        "query": n.query,
        "branch": format!("agent-{:04}", n.branch),
        "commit": n.commit.map(|(c, _)| c.to_hex()),
        "height": n.commit.map(|(_, h)| h),
        "expected_branches": n.expected,
    })
}

/// Bytes of the files under `dir`, every level.
fn tree_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// The store's bytes without its index, and the index's: the store file and its journal
/// directory (segments, packs) apart from `index/`.
fn store_and_index_bytes(store: &Path) -> (u64, u64) {
    let journal = beside(store, "-journal");
    let index = tree_bytes(&journal.join("index"));
    let file = std::fs::metadata(store).map_or(0, |m| m.len());
    (file + tree_bytes(&journal) - index, index)
}

/// Segments of the index: its `.term` files.
fn index_segments(store: &Path) -> usize {
    std::fs::read_dir(beside(store, "-journal").join("index")).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".term"))
            .count()
    })
}

/// Copies a directory tree (a closed store's journal directory with its index).
fn copy_tree(from: &Path, to: &Path) -> Res<()> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for e in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let kind = e.file_type().map_err(|e| e.to_string())?;
        let dest = to.join(e.file_name());
        if kind.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else if kind.is_file() {
            copy_file(&e.path(), &dest)?;
        }
    }
    Ok(())
}

/// Copies a closed store (file, journal directory, index) and makes it durable, so the
/// appends measured next do not wait for the copy's writeback.
fn copy_store(from: &Path, to: &Path) -> Res<()> {
    remove_store(to)?;
    copy_file(from, to)?;
    copy_tree(&beside(from, "-journal"), &beside(to, "-journal"))
}

/// The process's CPU time so far (user and system, every thread, those ended included), in
/// seconds, from `/proc/self/stat` (ticks of 10 ms).
fn cpu_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return 0.0;
    };
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 of the file; the first after the name is field 3.
    (tick(11) + tick(12)) / 100.0
}

/// Builds the corpus into `path`. Returns what the marker records.
fn build(path: &Path, p: Params, vocab: &Vocab) -> Res<Built> {
    let (mut plan, mut needles) = plan(p, vocab);
    let start = Instant::now();
    let store = Store::open_with(
        path,
        OpenMode::CreateIfMissing,
        StoreOptions {
            index_batch: 0,
            ..StoreOptions::default()
        },
    )
    .map_err(err)?;
    let first_us = now_us();
    let mut own_ids: Vec<Vec<CommitId>> = Vec::with_capacity(plan.len());
    let (mut text_bytes, mut word_messages, mut phrase_messages) = (0u64, 0u64, 0u64);
    let mut said = Instant::now();
    let mut written = 0usize;
    for i in 0..plan.len() {
        let b = plan[i].clone();
        let name = BranchName::new(&b.name).map_err(err)?;
        let t = Tract::from_store(store.clone(), &Bind::Branch(name.clone())).map_err(err)?;
        if let Some((j, f)) = b.parent {
            let at = id_at(&plan, &own_ids, j, f)?;
            t.create_branch(&name, &Rev::from(at)).map_err(err)?;
        }
        let mut g = Gen::new(vocab, SEED.wrapping_add(1 + i as u64));
        let mut messages = g.messages(b.own, b.parent.is_none());
        let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ ((i as u64) << 20));
        let placed = plant(&mut messages, &b.plants, &needles, &mut rng);
        text_bytes += crate::workload::text_bytes(&messages);
        for m in &messages {
            let text = m.content.text();
            if rough_words(&text).any(|w| w == WORD) {
                word_messages += 1;
            }
            if text.to_lowercase().contains(PHRASE) {
                phrase_messages += 1;
            }
        }
        let mut ids = Vec::with_capacity(messages.len());
        let mut rest = messages.into_iter().peekable();
        while rest.peek().is_some() {
            let batch: Vec<Message> = rest.by_ref().take(BUILD_BATCH).collect();
            ids.extend(
                t.append_batch(batch)
                    .map_err(err)?
                    .into_iter()
                    .map(|c| c.id),
            );
        }
        let base = b.parent.map_or(0, |(_, f)| f + 1);
        for (k, at) in placed {
            if let Some(&id) = ids.get(at) {
                needles[k].commit = Some((id, base + at as u64));
            }
        }
        written += b.own;
        own_ids.push(ids);
        if said.elapsed() > Duration::from_secs(15) {
            said = Instant::now();
            eprintln!(
                "search: {written} of {} messages, {} of {} branches ({:.0} messages/s)",
                p.messages,
                i + 1,
                plan.len(),
                written as f64 / start.elapsed().as_secs_f64()
            );
        }
    }
    let last_us = now_us();
    for n in &mut needles {
        if let Some((_, h)) = n.commit {
            n.expected = holders(&plan, n.branch, h);
        }
    }
    plan.iter_mut().for_each(|b| b.plants.clear());
    // Closing folds what the journal holds: part of building.
    drop(store);
    Ok(Built {
        messages: written as u64,
        branches: plan.len() as u64,
        forked: plan.iter().filter(|b| b.parent.is_some()).count() as u64,
        text_bytes,
        build_s: start.elapsed().as_secs_f64(),
        first_us,
        last_us,
        word_messages,
        phrase_messages,
        needles,
    })
}

fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The corpus in `dir`, built or reused. Returns its path, what it holds, and what this run
/// built.
fn corpus(dir: &Path, p: Params, vocab: &Vocab) -> Res<(PathBuf, Built, Value)> {
    let path = dir.join(format!("search-{}x{}.redb", p.messages, p.branches));
    let marker = beside(&path, ".built.json");
    let (_, needles) = plan(p, vocab);
    let reused = std::fs::read_to_string(&marker)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| Built::from_json(&v, p, &needles))
        .filter(|_| path.is_file());
    if let Some(built) = reused {
        eprintln!("search: reusing {}", path.display());
        return Ok((path, built, json!({"reused": true})));
    }
    remove_store(&path)?;
    eprintln!(
        "search: building {} ({} messages over {} branches)",
        path.display(),
        p.messages,
        p.branches
    );
    let built = build(&path, p, vocab)?;
    let text = serde_json::to_string_pretty(&built.to_json(p)).map_err(|e| e.to_string())?;
    std::fs::write(&marker, text).map_err(|e| e.to_string())?;
    let info = json!({
        "reused": false,
        "built_s": (built.build_s * 10.0).round() / 10.0,
        "messages_per_s": (built.messages as f64 / built.build_s).round(),
    });
    Ok((path, built, info))
}

/// The index of the store at `store` (a file or a URL) built anew `runs` times, each on a
/// store opened anew (0 runs: kept as it is, brought up to date once): each run's time, the
/// runs' CPU seconds of this process (sorted), and the last run's report.
fn index_builds(store: &Path, runs: usize) -> Res<(Vec<Duration>, Vec<f64>, IndexReport)> {
    let mut times = Vec::new();
    let mut cpus = Vec::new();
    let mut report = None;
    let rebuild = runs > 0;
    for run in 0..runs.max(1) {
        if rebuild {
            eprintln!("search: index build {} of {runs}", run + 1);
        }
        let store = Store::open_with(
            store,
            OpenMode::Existing,
            StoreOptions {
                index_batch: 0,
                ..StoreOptions::default()
            },
        )
        .map_err(err)?;
        let (cpu, start) = (cpu_s(), Instant::now());
        let r = update_index(&store, rebuild).map_err(err)?;
        times.push(start.elapsed());
        cpus.push(cpu_s() - cpu);
        report = Some(r);
    }
    cpus.sort_by(f64::total_cmp);
    Ok((times, cpus, report.ok_or("no index build")?))
}

/// The build figures of [`index_builds`]' runs: median time, CPU, messages a second.
fn build_figures(built: &Built, times: &[Duration], cpus: &[f64], r: &IndexReport) -> Value {
    let took = median(times.to_vec());
    json!({
        "runs": times.len(),
        "ms": ms(took),
        "runs_ms": times.iter().map(|d| ms(*d)).collect::<Vec<_>>(),
        "cpu_s": cpus.get(cpus.len() / 2),
        "messages_per_s": (built.messages as f64 / took.as_secs_f64()).round(),
        "text_mb_per_s": ((built.text_bytes as f64 / 1e6) / took.as_secs_f64() * 10.0).round() / 10.0,
        "added": r.added,
        "rebuilt": r.rebuilt,
    })
}

/// The index built anew `runs` times: median time, messages a second, its size.
fn index_build(path: &Path, built: &Built, runs: usize) -> Res<Value> {
    // 0 runs: the index kept as it is, brought up to date (its size, no build figure).
    let rebuild = runs > 0;
    let (times, cpus, r) = index_builds(path, runs)?;
    let took = median(times.clone());
    let (store_bytes, index_bytes) = store_and_index_bytes(path);
    let sizes = json!({
        "documents": r.documents,
        "index_bytes": r.bytes,
        "index_bytes_all_files": index_bytes,
        "store_bytes_without_index": store_bytes,
        "index_per_store_byte": ((index_bytes as f64 / store_bytes as f64) * 1000.0).round() / 1000.0,
        "index_per_text_byte": ((index_bytes as f64 / built.text_bytes as f64) * 1000.0).round() / 1000.0,
        "segments": index_segments(path),
    });
    if !rebuild {
        return Ok(json!({"runs": 0, "kept": sizes, "caught_up_ms": ms(took), "added": r.added}));
    }
    Ok(with_fields(build_figures(built, &times, &cpus, &r), sizes))
}

/// `out` with the fields of `more` added (both objects).
fn with_fields(mut out: Value, more: Value) -> Value {
    if let (Some(o), Value::Object(more)) = (out.as_object_mut(), more) {
        o.extend(more);
    }
    out
}

/// The measured queries: a word, a phrase, a filtered query, one branch's history.
fn query_specs(built: &Built) -> Vec<(&'static str, SearchQuery)> {
    let all = |query: &str| SearchQuery {
        query: query.into(),
        scope: SearchScope::All,
        history: true,
        limit: Some(LIMIT),
        ..SearchQuery::default()
    };
    let span = built.last_us.saturating_sub(built.first_us);
    let middle = format!("agent-{:04}", built.branches / 2);
    vec![
        ("word", all(WORD)),
        ("phrase", all(&format!("\"{PHRASE}\""))),
        (
            "filtered",
            SearchQuery {
                role: Some(Role::Tool),
                tool: Some("bash".into()),
                since_us: Some(built.first_us + span * 2 / 5),
                until_us: Some(built.first_us + span * 3 / 5),
                ..all(WORD)
            },
        ),
        (
            "branch",
            SearchQuery {
                scope: SearchScope::Branch(middle),
                ..all(WORD)
            },
        ),
    ]
}

fn describe(q: &SearchQuery) -> Value {
    json!({
        "query": q.query,
        "scope": match &q.scope {
            SearchScope::All => "all".to_string(),
            SearchScope::Here => "here".to_string(),
            SearchScope::Branch(b) => format!("branch {b}"),
        },
        "history": q.history,
        "role": q.role.map(|r| r.as_str()),
        "tool": q.tool,
        "since_us": q.since_us,
        "until_us": q.until_us,
        "limit": q.limit,
    })
}

/// Each query `runs` times on the open handle `t`, round-robin after [`WARMUPS`] of each:
/// median and 95th percentile, against `target` (the median's and the 95th percentile's, ms).
fn queries(
    t: &Tract,
    specs: &[(&'static str, SearchQuery)],
    runs: usize,
    target: (f64, f64),
) -> Res<Value> {
    let (target_p50, target_p95) = target;
    for (_, q) in specs {
        for _ in 0..WARMUPS {
            std::hint::black_box(t.search(q).map_err(err)?);
        }
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); specs.len()];
    let mut hits = vec![0usize; specs.len()];
    for _ in 0..runs {
        for (i, (_, q)) in specs.iter().enumerate() {
            let start = Instant::now();
            let found = t.search(q).map_err(err)?;
            times[i].push(start.elapsed());
            hits[i] = found.len();
        }
    }
    let mut out = serde_json::Map::new();
    for (i, (name, q)) in specs.iter().enumerate() {
        let (p50, p95) = (median(times[i].clone()), percentile(times[i].clone(), 0.95));
        out.insert(
            (*name).to_string(),
            json!({
                "search": describe(q),
                "runs": runs,
                "hits": hits[i],
                "p50_ms": ms(p50),
                "p95_ms": ms(p95),
                "max_ms": ms(times[i].iter().copied().max().unwrap_or_default()),
                "meets_target": ms(p50) <= target_p50 && ms(p95) <= target_p95,
            }),
        );
    }
    out.insert(
        "target".into(),
        json!({"p50_ms": target_p50, "p95_ms": target_p95}),
    );
    Ok(Value::Object(out))
}

/// Each needle searched by its text across every branch's history: its rank and branches.
fn needles(t: &Tract, needles: &[Needle]) -> Res<Value> {
    let mut rows = Vec::with_capacity(needles.len());
    let (mut first, mut branches_ok) = (0, 0);
    for n in needles {
        let q = SearchQuery {
            query: n.query.clone(),
            scope: SearchScope::All,
            history: true,
            limit: Some(LIMIT),
            ..SearchQuery::default()
        };
        let start = Instant::now();
        let hits = t.search(&q).map_err(err)?;
        let took = start.elapsed();
        let planted = n.commit.map(|(c, _)| c);
        let at = hits.iter().position(|h| Some(h.info.id) == planted);
        let got: Vec<String> = at
            .and_then(|i| hits.get(i))
            .map(|h| {
                let mut b = h.branches.clone();
                b.sort();
                b
            })
            .unwrap_or_default();
        let same = at.is_some() && got == n.expected;
        first += usize::from(at == Some(0));
        branches_ok += usize::from(same);
        let missing: Vec<&String> = n.expected.iter().filter(|b| !got.contains(b)).collect();
        let extra: Vec<&String> = got.iter().filter(|b| !n.expected.contains(b)).collect();
        rows.push(json!({
            "kind": n.kind.name(),
            "query": n.query,
            "branch": format!("agent-{:04}", n.branch),
            "rank": at.map(|i| i + 1),
            "hits": hits.len(),
            "ms": ms(took),
            "branches_expected": n.expected.len(),
            "branches_match": same,
            "branches_missing": missing,
            "branches_extra": extra,
        }));
    }
    Ok(json!({
        "needles": needles.len(),
        "at_rank_1": first,
        "branches_match": branches_ok,
        "target": "every needle at rank 1, its hit naming every branch that holds it",
        "each": rows,
    }))
}

/// Runs `tract-bench --search-worker ARGS` and returns what it printed.
fn child(args: &[&str]) -> Res<Value> {
    crate::worker("--search-worker", args)
}

/// [`COLD_RUNS`] children that each open the store and search for [`WORD`] once.
fn cold(store: &str) -> Res<Value> {
    let runs = (0..COLD_RUNS)
        .map(|_| child(&["cold", store, WORD]))
        .collect::<Res<Vec<_>>>()?;
    let f = |k: &str| -> Vec<f64> {
        let mut v: Vec<f64> = runs.iter().filter_map(|r| r.get(k)?.as_f64()).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let mid = |v: &[f64]| v.get(v.len() / 2).copied().unwrap_or(0.0);
    let (total, open, search) = (f("ms"), f("open_ms"), f("search_ms"));
    Ok(json!({
        "query": WORD,
        "children": runs.len(),
        "open_and_search_ms": mid(&total),
        "open_ms": mid(&open),
        "search_ms": mid(&search),
        "runs_ms": total,
        "peak_rss_kib": runs.iter().filter_map(|r| r.get("peak_rss_kib")?.as_u64()).max(),
    }))
}

/// The append windows on a copy of the store (see [`append_windows`]); the copy is removed
/// after them.
fn append_cost(path: &Path, pairs: usize, count: usize) -> Res<(Value, Value)> {
    let copy = path.with_file_name("search-appends.redb");
    eprintln!("search: copying the store to {}", copy.display());
    copy_store(path, &copy)?;
    let got = append_windows(
        &copy.display().to_string(),
        pairs,
        count,
        "a copy of the built store (its index current); each window a fresh branch",
    );
    remove_store(&copy)?;
    got
}

/// The append windows on `store` (a file or a URL; `what` says which): `pairs` pairs of
/// children, one with the default `index_batch` and one with 0, their order alternating; and
/// the catch-ups and the queries with commits not indexed yet, each on fresh branches.
fn append_windows(store: &str, pairs: usize, count: usize, what: &str) -> Res<(Value, Value)> {
    let default_batch = StoreOptions::default().index_batch;
    eprintln!("search: catch-ups of 1 and of {default_batch} commits");
    let catch_up_1 = child(&["catch-up", store, "20", "1"]);
    let catch_up_batch = child(&["catch-up", store, "5", &default_batch.to_string()]);
    eprintln!("search: queries with commits not indexed yet");
    let pending: Res<Vec<Value>> = PENDING
        .iter()
        .map(|n| child(&["pending", store, &n.to_string(), &PENDING_RUNS.to_string()]))
        .collect();
    let (mut with, mut without) = (Vec::new(), Vec::new());
    let mut result = Ok(());
    for r in 0..pairs {
        let order = if r % 2 == 0 {
            [default_batch, 0]
        } else {
            [0, default_batch]
        };
        for batch in order {
            eprintln!(
                "search: append window {} of {}, index_batch {batch}",
                2 * r + usize::from(batch == order[1]) + 1,
                2 * pairs
            );
            let got = child(&[
                "appends",
                store,
                &batch.to_string(),
                &count.to_string(),
                &r.to_string(),
            ]);
            match got {
                Ok(v) if batch == 0 => without.push(v),
                Ok(v) => with.push(v),
                Err(e) => result = Err(e),
            }
        }
        if result.is_err() {
            break;
        }
    }
    result?;
    let (catch_up_1, catch_up_batch, pending) = (catch_up_1?, catch_up_batch?, pending?);
    let f = |runs: &[Value], k: &str| -> Vec<f64> {
        runs.iter().filter_map(|r| r.get(k)?.as_f64()).collect()
    };
    let mid = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let (a, b) = (
        mid(f(&with, "appends_per_s")),
        mid(f(&without, "appends_per_s")),
    );
    // Each pair's ratio, so a pair's shared drift cancels.
    let ratios: Vec<f64> = f(&with, "appends_per_s")
        .iter()
        .zip(f(&without, "appends_per_s"))
        .map(|(x, y)| x / y)
        .collect();
    let ratio = mid(ratios.clone());
    let cpu_with = mid(f(&with, "window_cpu_us_per_append"));
    let cpu_without = mid(f(&without, "window_cpu_us_per_append"));
    let index_cpu = mid(f(&without, "settle_cpu_us_per_commit"));
    let r2 = |x: f64| (x * 100.0).round() / 100.0;
    let appends = json!({
        "store": what,
        "appends_per_window": count,
        "pairs": pairs,
        "index_batch_default": {"index_batch": default_batch, "appends_per_s": a.round(), "runs": with},
        "index_batch_0": {"index_batch": 0, "appends_per_s": b.round(), "runs": without},
        "ratio": r2(a / b),
        "pair_ratios": ratios.iter().map(|x| r2(*x)).collect::<Vec<_>>(),
        "median_pair_ratio": r2(ratio),
        "cost_percent": r2((1.0 - ratio) * 100.0),
        "target_percent": TARGET_APPEND_COST_PERCENT,
        "cpu_us_per_append_with_index": cpu_with.round(),
        "cpu_us_per_append_without": cpu_without.round(),
        "index_cpu_us_per_commit_in_one_catch_up": index_cpu.round(),
        "catch_up_of_1_commit": catch_up_1,
        "catch_up_of_a_batch": catch_up_batch,
    });
    let pending = json!({
        "what": format!("the word query ({WORD}, every branch's history) right after a batch of commits \
            no process indexed yet (a search matches up to {} of them as they are, each time; past \
            that it indexes them first)", 1024),
        "runs_each": PENDING_RUNS,
        "by_commits_not_indexed": pending,
    });
    Ok((appends, pending))
}

/// How many times each thing is measured.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    /// Timed rounds of the queries (`--runs`).
    pub runs: usize,
    /// Index builds (`--index-runs`; 0: the index kept as it is).
    pub index_runs: usize,
    /// Pairs of append windows (`--append-pairs`; 0: none).
    pub append_pairs: usize,
    /// Appends per window (`--append-count`).
    pub append_count: usize,
}

/// `tract-bench --search`: builds (or reuses) the corpus in `dir` and measures it, then, with
/// `postgres`, its clone into that database.
pub fn run(p: Params, dir: &Path, counts: Counts, postgres: Option<&str>) -> Res<Value> {
    let Counts {
        runs,
        index_runs,
        append_pairs,
        append_count,
    } = counts;
    if p.branches == 0 || p.messages < 10 * p.branches {
        return Err("--messages: give at least 10 a branch".into());
    }
    if p.needles == 0 || p.needles > p.branches {
        return Err("--needles: give between 1 and --branches".into());
    }
    // Before the file store's figures, which take long at full size: a server the bench
    // cannot reach fails the run now, not after them.
    let postgres = postgres.map(|url| Schema::replace(url, p)).transpose()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let vocab = Vocab::new();
    let (path, built, build) = corpus(dir, p, &vocab)?;
    let missing = built.needles.iter().filter(|n| n.commit.is_none()).count();
    if missing > 0 {
        return Err(format!("{missing} needles were not planted"));
    }
    eprintln!("search: building the index of {}", path.display());
    let index = index_build(&path, &built, index_runs)?;
    eprintln!("search: queries");
    let specs = query_specs(&built);
    let (latency, needle_ranks) = {
        let t = Tract::open_existing(&path).map_err(err)?;
        // Current before timing (the index was just built: nothing to add).
        let current = update_index(t.store(), false).map_err(err)?;
        if current.added > 0 {
            eprintln!("search: {} commits were not indexed", current.added);
        }
        let target = (TARGET_P50_MS, TARGET_P95_MS);
        (
            queries(&t, &specs, runs, target)?,
            needles(&t, &built.needles)?,
        )
    };
    let cold = cold(&path.display().to_string())?;
    eprintln!("search: append windows");
    let (appends, pending) = match append_pairs {
        0 => (Value::Null, Value::Null),
        n => append_cost(&path, n, append_count)?,
    };
    let postgres = match postgres {
        Some(schema) => on_postgres(&schema, &path, &built, &specs, counts)?,
        None => Value::Null,
    };
    Ok(json!({
        "corpus": {
            "seed": SEED,
            "messages": built.messages,
            "branches": built.branches,
            "forked_branches": built.forked,
            "text_bytes": built.text_bytes,
            "vocabulary": format!("{} common words then made-up ones, {VOCAB} in all, drawn with a Zipf law of exponent {ZIPF_S}", COMMON.split_whitespace().count()),
            "shape": "per branch: a system prompt (not on forks), then turns: user -> assistant calling 1-2 of grep, read_file, bash, list_dir, edit_file -> results (code, logs, test output; 120 B-12 KB, median ~700 B; 8% of bash results errors) -> answer",
            "messages_with_word": built.word_messages,
            "messages_with_phrase": built.phrase_messages,
            "needles": built.needles.len(),
        },
        "store_path": path.display().to_string(),
        "build": build,
        "index_build": index,
        "queries": latency,
        "cold_first_query": cold,
        "needles": needle_ranks,
        "append_cost": appends,
        "queries_with_commits_not_indexed": pending,
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "peak_rss_kib": peak_rss_kib(),
        "postgres": postgres,
    }))
}

/// The bench's schema on PostgreSQL: the URL that names it, and the SQL tract's API has no
/// call for (dropping it, measuring it).
struct Schema {
    /// The URL given, its `schema` parameter set to [`Schema::name`].
    url: String,
    /// `bench_search_<messages>x<branches>`.
    name: String,
    /// The URL for the bench's own connection: tract's parameters and TLS ones left out.
    plain: String,
}

impl Schema {
    /// The schema for the corpus `p` on the database `url` names, dropped if an earlier run
    /// left it (with everything in it), so the clone starts from nothing.
    fn replace(url: &str, p: Params) -> Res<Schema> {
        let name = format!("bench_search_{}x{}", p.messages, p.branches);
        // The client takes libpq's parameters only: not tract's (`schema`, ...), nor the TLS
        // ones, which need a TLS connector this connection goes without.
        let plain = crate::backends::without_params(
            url,
            &[
                "schema",
                "pool_size",
                "statement_timeout",
                "sslmode",
                "sslrootcert",
                "sslcert",
                "sslkey",
            ],
        );
        let schema = Schema {
            url: crate::backends::with_param(url, "schema", &name),
            name,
            plain,
        };
        schema
            .client()?
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                schema.name
            ))
            .map_err(|e| {
                format!(
                    "--postgres: dropping schema {}: {}",
                    schema.name,
                    causes(&e)
                )
            })?;
        Ok(schema)
    }

    /// A connection of the bench's own, without TLS.
    fn client(&self) -> Res<postgres::Client> {
        postgres::Client::connect(&self.plain, postgres::NoTls).map_err(|e| {
            format!(
                "--postgres: connecting without TLS for the bench's SQL: {}",
                causes(&e)
            )
        })
    }

    /// Bytes of the schema's tables, each with its indexes and TOAST.
    fn bytes(&self) -> Res<u64> {
        let row = self
            .client()?
            .query_one(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relkind = 'r'",
                &[&self.name],
            )
            .map_err(|e| {
                format!(
                    "--postgres: the size of schema {}: {}",
                    self.name,
                    causes(&e)
                )
            })?;
        let bytes: i64 = row
            .try_get(0)
            .map_err(|e| format!("--postgres: the size of schema {}: {e}", self.name))?;
        Ok(u64::try_from(bytes).unwrap_or(0))
    }
}

/// An error and its causes, as text: the client's says "error connecting to server" and
/// leaves why to its source.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(e), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// The built store at `path` cloned into the bench's schema, and the same figures there:
/// the index's build, the queries (`specs`), the cold first query, the needles and the
/// append windows (on fresh branches of the schema).
fn on_postgres(
    schema: &Schema,
    path: &Path,
    built: &Built,
    specs: &[(&'static str, SearchQuery)],
    counts: Counts,
) -> Res<Value> {
    eprintln!(
        "search: cloning {} into PostgreSQL, schema {}",
        path.display(),
        schema.name
    );
    let options = StoreOptions {
        index_batch: 0,
        ..StoreOptions::default()
    };
    let start = Instant::now();
    let (store, report) = tract_core::clone_store(path, &schema.url, options).map_err(err)?;
    let clone_s = start.elapsed().as_secs_f64();
    drop(store);
    let clone = json!({
        "s": (clone_s * 10.0).round() / 10.0,
        "branches": report.branches.len(),
        "commits": report.commits,
        "blobs": report.blobs,
        "messages_per_s": (built.messages as f64 / clone_s).round(),
    });
    let before = schema.bytes()?;
    eprintln!("search: building the index on PostgreSQL");
    let (times, cpus, r) = index_builds(Path::new(&schema.url), counts.index_runs)?;
    let sizes = json!({
        "documents": r.documents,
        "index_bytes": r.bytes,
        "schema_bytes_before_index": before,
        "schema_bytes": schema.bytes()?,
    });
    let index = match counts.index_runs {
        0 => json!({"runs": 0, "kept": sizes, "caught_up_ms": ms(median(times)), "added": r.added}),
        _ => with_fields(build_figures(built, &times, &cpus, &r), sizes),
    };
    eprintln!("search: queries on PostgreSQL");
    let (caught_up, latency, needle_ranks) = {
        let t = Tract::open_existing(&schema.url).map_err(err)?;
        // A handle opened anew: an index the builds above kept only in their memory is
        // built again here, before timing.
        let start = Instant::now();
        let current = update_index(t.store(), false).map_err(err)?;
        let caught_up = json!({"ms": ms(start.elapsed()), "added": current.added});
        let target = (TARGET_POSTGRES_P50_MS, TARGET_POSTGRES_P95_MS);
        let latency = queries(&t, specs, counts.runs, target)?;
        (caught_up, latency, needles(&t, &built.needles)?)
    };
    let cold = cold(&schema.url)?;
    eprintln!("search: append windows on PostgreSQL");
    let (appends, pending) = match counts.append_pairs {
        0 => (Value::Null, Value::Null),
        n => append_windows(
            &schema.url,
            n,
            counts.append_count,
            "the cloned schema (its index current), its queries and needles measured first; each window a fresh branch",
        )?,
    };
    Ok(json!({
        "schema": schema.name,
        "clone": clone,
        "index_build": index,
        "index_caught_up_before_queries": caught_up,
        "queries": latency,
        "cold_first_query": cold,
        "needles": needle_ranks,
        "append_cost": appends,
        "queries_with_commits_not_indexed": pending,
    }))
}

/// One measurement in a child process: `cold STORE WORD` (open the store, search once) or
/// `appends STORE INDEX_BATCH COUNT RUN` (one append window).
pub fn worker(args: &[String]) -> Res<Value> {
    let arg = |k: usize| {
        args.get(k)
            .map(String::as_str)
            .ok_or("--search-worker: missing argument")
    };
    let number = |k: usize| -> Res<u64> {
        arg(k)?
            .parse::<u64>()
            .map_err(|e| format!("--search-worker: argument {k}: {e}"))
    };
    match arg(0)? {
        "cold" => cold_once(arg(1)?, arg(2)?),
        "appends" => appends(
            arg(1)?,
            number(2)?,
            usize::try_from(number(3)?).map_err(|e| e.to_string())?,
            number(4)?,
        ),
        "catch-up" => catch_ups(
            arg(1)?,
            usize::try_from(number(2)?).map_err(|e| e.to_string())?,
            usize::try_from(number(3)?).map_err(|e| e.to_string())?,
        ),
        "pending" => pending(
            arg(1)?,
            usize::try_from(number(2)?).map_err(|e| e.to_string())?,
            usize::try_from(number(3)?).map_err(|e| e.to_string())?,
        ),
        other => Err(format!("--search-worker: unknown measurement {other}")),
    }
}

/// Opens `store` and searches every branch's history for `word`, once.
fn cold_once(store: &str, word: &str) -> Res<Value> {
    let start = Instant::now();
    let t = Tract::open_existing(store).map_err(err)?;
    let opened = start.elapsed();
    let hits = t
        .search(&SearchQuery {
            query: word.into(),
            scope: SearchScope::All,
            history: true,
            limit: Some(LIMIT),
            ..SearchQuery::default()
        })
        .map_err(err)?;
    let took = start.elapsed();
    Ok(json!({
        "ms": ms(took),
        "open_ms": ms(opened),
        "search_ms": ms(took - opened),
        "hits": hits.len(),
        "peak_rss_kib": peak_rss_kib(),
    }))
}

/// One append window: `count` durable single appends of agent messages to a fresh branch,
/// with `index_batch`, the index brought up to date first; then what is left to index.
fn appends(store: &str, index_batch: u64, count: usize, run: u64) -> Res<Value> {
    let name = BranchName::new(&format!("appends-{run}-{index_batch}")).map_err(err)?;
    let options = OpenOptions {
        mode: OpenMode::Existing,
        store: StoreOptions {
            index_batch,
            ..StoreOptions::default()
        },
        bind: Bind::Branch(name),
    };
    let t = Tract::open_with(store, &options).map_err(err)?;
    let before = update_index(t.store(), false).map_err(err)?;
    let vocab = Vocab::new();
    let messages = Gen::new(&vocab, SEED ^ 0x6170 ^ (run << 8) ^ index_batch).messages(count, true);
    // The tokenizer loaded and the branch made before the window.
    let mut messages = messages.into_iter();
    if let Some(first) = messages.next() {
        t.append(first).map_err(err)?;
    }
    let mut latencies = Vec::with_capacity(count);
    let (cpu, start) = (cpu_s(), Instant::now());
    for m in messages {
        let s = Instant::now();
        t.append(m).map_err(err)?;
        latencies.push(s.elapsed());
    }
    let (window, window_cpu) = (start.elapsed(), cpu_s() - cpu);
    let n = latencies.len().max(1) as f64;
    let (cpu, start) = (cpu_s(), Instant::now());
    let after = update_index(t.store(), false).map_err(err)?;
    let (settle, settle_cpu) = (start.elapsed(), cpu_s() - cpu);
    Ok(json!({
        "index_batch": index_batch,
        "appends": latencies.len(),
        "appends_per_s": (n / window.as_secs_f64()).round(),
        "latency_ms": {"p50": ms(median(latencies.clone())), "p99": ms(percentile(latencies, 0.99))},
        "window_cpu_us_per_append": (window_cpu * 1e6 / n).round(),
        "index_added_before": before.added,
        "settle_ms": ms(settle),
        "settle_added": after.added,
        "settle_cpu_us_per_commit": match after.added {
            0 => Value::Null,
            a => json!((settle_cpu * 1e6 / a as f64).round()),
        },
    }))
}

/// A handle on a fresh branch `name` of `store` that never indexes (`index_batch: 0`), with
/// the index brought up to date first.
fn not_indexing(store: &str, name: BranchName) -> Res<Tract> {
    let options = OpenOptions {
        mode: OpenMode::Existing,
        store: StoreOptions {
            index_batch: 0,
            ..StoreOptions::default()
        },
        bind: Bind::Branch(name),
    };
    let t = Tract::open_with(store, &options).map_err(err)?;
    update_index(t.store(), false).map_err(err)?;
    Ok(t)
}

/// `rounds` catch-ups of the index (`update_index`), each after `each` durable appends to a
/// fresh branch with `index_batch: 0`: what one batch of the background indexing costs, its
/// part that does not grow with the batch included.
fn catch_ups(store: &str, rounds: usize, each: usize) -> Res<Value> {
    let name = BranchName::new(&format!("catch-up-{each}")).map_err(err)?;
    let t = not_indexing(store, name)?;
    let vocab = Vocab::new();
    let mut messages = Gen::new(&vocab, SEED ^ 0x6375 ^ each as u64)
        .messages(rounds * each, true)
        .into_iter();
    let (mut times, mut cpus) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        for m in messages.by_ref().take(each) {
            t.append(m).map_err(err)?;
        }
        let (cpu, start) = (cpu_s(), Instant::now());
        let r = update_index(t.store(), false).map_err(err)?;
        times.push(start.elapsed());
        cpus.push(cpu_s() - cpu);
        if r.added != each as u64 {
            return Err(format!("a catch-up added {} commits, not {each}", r.added));
        }
    }
    cpus.sort_by(f64::total_cmp);
    Ok(json!({
        "commits_each": each,
        "rounds": rounds,
        "ms": ms(median(times.clone())),
        "p95_ms": ms(percentile(times, 0.95)),
        "cpu_ms": (cpus.get(cpus.len() / 2).copied().unwrap_or(0.0) * 1e4).round() / 10.0,
    }))
}

/// The word query `runs` times right after `n` commits were appended (in one transaction, by
/// a handle that does not index), with the index current before them; then they are indexed,
/// so the next measurement starts from a current index.
fn pending(store: &str, n: usize, runs: usize) -> Res<Value> {
    let name = BranchName::new(&format!("pending-{n}")).map_err(err)?;
    let t = not_indexing(store, name)?;
    if n > 0 {
        let vocab = Vocab::new();
        let messages = Gen::new(&vocab, SEED ^ 0x7065 ^ n as u64).messages(n, true);
        t.append_batch(messages).map_err(err)?;
    }
    let q = SearchQuery {
        query: WORD.into(),
        scope: SearchScope::All,
        history: true,
        limit: Some(LIMIT),
        ..SearchQuery::default()
    };
    for _ in 0..WARMUPS {
        std::hint::black_box(t.search(&q).map_err(err)?);
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        std::hint::black_box(t.search(&q).map_err(err)?);
        times.push(start.elapsed());
    }
    let after = update_index(t.store(), false).map_err(err)?;
    Ok(json!({
        "commits_not_indexed": n,
        "p50_ms": ms(median(times.clone())),
        "p95_ms": ms(percentile(times, 0.95)),
        "indexed_after": after.added,
    }))
}
