//! The usage ledger: what the model requests of a history cost, summed along first parents and
//! kept per commit as derived data in the store's metadata (as view checkpoints are), so a
//! branch's totals are read from the row of a commit near its tip, never from its messages.
//!
//! A row under `ledger.<commit>` holds the totals of the commit's first-parent history, the
//! commit included: every request counted once, where its answer was appended (an edit keeps
//! the usage of the message it edits, and adds nothing; a record of an answer a transcript kept
//! off its conversation counts, as it was paid for too). The write path writes a row for each
//! commit whose message carries usage, and one at the end of a chain that is 64 commits or
//! more past the nearest row, so a look-up walks back at most that far. A commit with no row
//! near it (a store filled by a pull, or written before the ledger) is summed from its history
//! once, by the next write after it. Rows go with their commits in `gc`; nothing here is in a
//! hashed object.

use crate::error::Result;
use crate::id::CommitId;
use crate::object::{Commit, Message, Op};
use crate::storage::store::meta::{decode_small, encode_small};
use crate::usage::Usage;
use crate::view::Source;
use crate::view::info::CommitInfo;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What every row's key starts with.
pub(crate) const PREFIX: &str = "ledger.";

/// At most this many commits between a commit and the nearest row before it, on chains the
/// write path wrote.
const SPACING: u64 = 64;

/// The metadata key of the row of `at`.
pub(crate) fn key(at: &CommitId) -> String {
    format!("{PREFIX}{}", at.to_hex())
}

/// Token counts summed over requests, in Anthropic's names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Model requests counted.
    pub requests: u64,
    /// Input tokens neither read from the cache nor written to it.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's cache.
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the provider's cache.
    pub cache_creation_input_tokens: u64,
    /// The largest input of one request, all kinds together: the largest context sent.
    pub largest_input_tokens: u64,
}

impl Totals {
    /// Counts one request.
    pub fn add(&mut self, u: &Usage) {
        self.requests = self.requests.saturating_add(1);
        self.input_tokens = self.input_tokens.saturating_add(u.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(u.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(u.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(u.cache_creation_input_tokens);
        self.largest_input_tokens = self.largest_input_tokens.max(u.all_input_tokens());
    }

    /// Adds totals of other requests.
    pub fn merge(&mut self, o: &Totals) {
        self.requests = self.requests.saturating_add(o.requests);
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(o.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(o.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(o.cache_creation_input_tokens);
        self.largest_input_tokens = self.largest_input_tokens.max(o.largest_input_tokens);
    }

    /// Every input token: not cached, read from the cache and written to it.
    pub fn all_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.cache_creation_input_tokens)
    }

    /// The share of input tokens read from the cache (`None` without input).
    pub fn cache_hit_rate(&self) -> Option<f64> {
        let all = self.all_input_tokens();
        (all > 0).then(|| self.cache_read_input_tokens as f64 / all as f64)
    }

    /// How many times the largest context was written to the cache: tokens written to it over
    /// the largest input of one request (`None` without input). Near 1 when each token was
    /// written once; a prefix that kept breaking writes it again and again.
    pub fn rewrite_factor(&self) -> Option<f64> {
        (self.largest_input_tokens > 0)
            .then(|| self.cache_creation_input_tokens as f64 / self.largest_input_tokens as f64)
    }
}

/// The totals of a history: overall, per model, and the token kinds reported that are not
/// summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Every request.
    pub totals: Totals,
    /// Per model, as the provider named it (`""`: not named).
    pub by_model: BTreeMap<String, Totals>,
    /// Counts of kinds tract does not sum, by name, as reported beside the four it does.
    pub unknown_kinds: BTreeSet<String>,
}

impl Ledger {
    /// Counts one request.
    pub fn add(&mut self, u: &Usage) {
        self.totals.add(u);
        let model = u.model.clone().unwrap_or_default();
        match self.by_model.get_mut(&model) {
            Some(t) => t.add(u),
            None => {
                let mut t = Totals::default();
                t.add(u);
                self.by_model.insert(model, t);
            }
        }
        for k in u.unknown_kinds() {
            if !self.unknown_kinds.contains(k) {
                self.unknown_kinds.insert(k.to_string());
            }
        }
    }

    /// Adds the totals of other requests.
    pub fn merge(&mut self, o: &Ledger) {
        self.totals.merge(&o.totals);
        for (model, t) in &o.by_model {
            self.by_model.entry(model.clone()).or_default().merge(t);
        }
        self.unknown_kinds.extend(o.unknown_kinds.iter().cloned());
    }
}

/// A row as stored: the layout, how many commits the history holds, its totals.
#[derive(Deserialize)]
struct Row {
    version: u8,
    depth: u64,
    ledger: Ledger,
}

/// A row being written (the same layout as [`Row`], borrowing its totals).
#[derive(Serialize)]
struct RowOut<'a> {
    version: u8,
    depth: u64,
    ledger: &'a Ledger,
}

/// The layout of a row; a row of another is not read (the history is summed again).
const VERSION: u8 = 1;

/// The usage a commit counts: its message's, unless it edits another (whose usage counted
/// where that was appended). A message whose usage does not read counts none: it was checked
/// when written, so only damage makes it so, which `fsck` names.
pub(crate) fn counted(commit: &Commit, message: &Message) -> Option<Usage> {
    if matches!(commit.op, Op::Edit { .. }) {
        return None;
    }
    Usage::of(message).ok().flatten()
}

/// The row of `at`, if it has one of this layout: its depth and ledger.
fn row(src: &impl Source, at: &CommitId) -> Result<Option<(u64, Ledger)>> {
    let Some(bytes) = src.meta(&key(at))? else {
        return Ok(None);
    };
    Ok(decode_small::<Row>(&bytes)
        .ok()
        .filter(|r| r.version == VERSION)
        .map(|r| (r.depth, r.ledger)))
}

/// The totals of `at`'s first-parent history, with its depth (commits in it) and how many
/// commits were walked back to the nearest row (`None`: the empty history before a first
/// commit).
pub(crate) fn at(src: &impl Source, at: Option<CommitId>) -> Result<(Ledger, u64, u64)> {
    let mut walked: Vec<(CommitId, Commit)> = Vec::new();
    let mut next = at;
    let (mut depth, mut ledger) = (0, Ledger::default());
    while let Some(id) = next {
        if let Some((d, l)) = row(src, &id)? {
            (depth, ledger) = (d, l);
            break;
        }
        let c = src.commit(&id)?;
        next = c.parents.first().copied();
        walked.push((id, c));
    }
    let steps = walked.len() as u64;
    for (_, c) in walked.iter().rev() {
        depth += 1;
        if let Some(blob) = &c.blob
            && !matches!(c.op, Op::Edit { .. })
        {
            let (m, _) = src.blob(blob)?;
            if let Some(u) = counted(c, &m) {
                ledger.add(&u);
            }
        }
    }
    Ok((ledger, depth, steps))
}

/// Keeps the rows of a chain just written on top of `start` (`infos`, oldest first, each the
/// first parent of the next): one for each commit that counts usage, and one for the last when
/// the nearest row is `SPACING` commits back or more.
pub(crate) fn keep(
    w: &mut crate::storage::store::writer::Writer,
    start: Option<CommitId>,
    infos: &[CommitInfo],
) -> Result<()> {
    let paid: Vec<Option<Usage>> = infos
        .iter()
        .map(|i| i.message.as_ref().and_then(|m| counted(&i.commit, m)))
        .collect();
    let Some(last) = infos.last() else {
        return Ok(());
    };
    // Nothing to write when nothing counts and a row is near: a chain without usage costs a
    // walk of a few commits only.
    let (mut ledger, mut depth, mut since) = at(&*w, start)?;
    if paid.iter().all(Option::is_none) && since + (infos.len() as u64) < SPACING {
        return Ok(());
    }
    for (info, u) in infos.iter().zip(&paid) {
        depth += 1;
        since += 1;
        let Some(u) = u else {
            if info.id == last.id && since >= SPACING {
                put(w, &info.id, depth, &ledger)?;
            }
            continue;
        };
        ledger.add(u);
        put(w, &info.id, depth, &ledger)?;
        since = 0;
    }
    Ok(())
}

/// Writes the row of `at`.
fn put(
    w: &mut crate::storage::store::writer::Writer,
    at: &CommitId,
    depth: u64,
    ledger: &Ledger,
) -> Result<()> {
    let bytes = encode_small(&RowOut {
        version: VERSION,
        depth,
        ledger,
    })?;
    w.set_meta(&key(at), Some(&bytes))
}
