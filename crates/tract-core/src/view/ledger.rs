//! The usage ledger: what the model requests of a history cost, summed along first parents and
//! kept per commit as derived data in the store's metadata (as view checkpoints are), so a
//! branch's totals are read from the row of a commit near its tip, never from its messages.
//!
//! A row under `ledger.<commit>` holds the totals of the commit's first-parent history, the
//! commit included, with its depth and root (two commits with one root may share history; two
//! with different roots never do): every request counted once, where its answer was appended (an edit keeps
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
use crate::usage::{Ledger, Usage};
use crate::view::Source;
use crate::view::info::CommitInfo;
use serde::{Deserialize, Serialize};

/// What every row's key starts with.
pub(crate) const PREFIX: &str = "ledger.";

/// At most this many commits between a commit and the nearest row before it, on chains the
/// write path wrote.
const SPACING: u64 = 64;

/// The metadata key of the row of `at`.
pub(crate) fn key(at: &CommitId) -> String {
    format!("{PREFIX}{}", at.to_hex())
}

/// A row as stored: the layout, how many commits the history holds and its first commit, its
/// totals.
#[derive(Deserialize)]
struct Row {
    version: u8,
    depth: u64,
    root: CommitId,
    ledger: Ledger,
}

/// A row being written (the same layout as [`Row`], borrowing its totals).
#[derive(Serialize)]
struct RowOut<'a> {
    version: u8,
    depth: u64,
    root: CommitId,
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

/// A commit's place in the ledger: the totals of its first-parent history, how many commits
/// that holds, its first commit (`None` for the empty history before a first commit), and how
/// many commits were walked back to the nearest row to learn it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Place {
    pub(crate) ledger: Ledger,
    pub(crate) depth: u64,
    pub(crate) root: Option<CommitId>,
    pub(crate) walked: u64,
}

/// The row of `at`, if it has one of this layout.
fn row(src: &impl Source, at: &CommitId) -> Result<Option<Row>> {
    let Some(bytes) = src.meta(&key(at))? else {
        return Ok(None);
    };
    Ok(decode_small::<Row>(&bytes)
        .ok()
        .filter(|r| r.version == VERSION))
}

/// The place of `at` (`None`: the empty history): from the nearest row back along first
/// parents, and the usage of the commits after it, read from their messages.
pub(crate) fn at(src: &impl Source, at: Option<CommitId>) -> Result<Place> {
    let mut walked: Vec<(CommitId, Commit)> = Vec::new();
    let mut next = at;
    let mut place = Place::default();
    while let Some(id) = next {
        if let Some(r) = row(src, &id)? {
            place = Place {
                ledger: r.ledger,
                depth: r.depth,
                root: Some(r.root),
                walked: 0,
            };
            break;
        }
        let c = src.commit(&id)?;
        next = c.parents.first().copied();
        if next.is_none() {
            place.root = Some(id);
        }
        walked.push((id, c));
    }
    place.walked = walked.len() as u64;
    for (_, c) in walked.iter().rev() {
        place.depth += 1;
        if let Some(blob) = &c.blob
            && !matches!(c.op, Op::Edit { .. })
        {
            let (m, _) = src.blob(blob)?;
            if let Some(u) = counted(c, &m) {
                place.ledger.add(&u);
            }
        }
    }
    Ok(place)
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
    let (Some(first), Some(last)) = (infos.first(), infos.last()) else {
        return Ok(());
    };
    // Nothing to write when nothing counts and a row is near: a chain without usage costs a
    // walk of a few commits only.
    let mut place = at(&*w, start)?;
    if paid.iter().all(Option::is_none) && place.walked + (infos.len() as u64) < SPACING {
        return Ok(());
    }
    let root = place.root.unwrap_or(first.id);
    for (info, u) in infos.iter().zip(&paid) {
        place.depth += 1;
        place.walked += 1;
        let Some(u) = u else {
            if info.id == last.id && place.walked >= SPACING {
                put(w, &info.id, &place, root)?;
            }
            continue;
        };
        place.ledger.add(u);
        put(w, &info.id, &place, root)?;
        place.walked = 0;
    }
    Ok(())
}

/// Writes the row of `at`, whose history starts at `root`.
fn put(
    w: &mut crate::storage::store::writer::Writer,
    at: &CommitId,
    place: &Place,
    root: CommitId,
) -> Result<()> {
    let bytes = encode_small(&RowOut {
        version: VERSION,
        depth: place.depth,
        root,
        ledger: &place.ledger,
    })?;
    w.set_meta(&key(at), Some(&bytes))
}

/// The totals of the union of the first-parent histories of `tips`: each request once, however
/// many of them reach it. Tips with different roots share nothing; those with one root are
/// walked back together, deepest first, until they meet (a tip that meets another adds what it
/// holds past the meeting point), so the walk costs what they hold apart, not what they share.
pub(crate) fn union(src: &impl Source, tips: &[CommitId]) -> Result<Ledger> {
    let mut total = Ledger::default();
    // Per root, the tips' places.
    let mut groups: std::collections::BTreeMap<CommitId, Vec<(CommitId, Place)>> =
        std::collections::BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for tip in tips {
        if !seen.insert(*tip) {
            continue;
        }
        let place = at(src, Some(*tip))?;
        let Some(root) = place.root else { continue };
        groups.entry(root).or_default().push((*tip, place));
    }
    for (_, group) in groups {
        // The largest input and the kinds not summed are each tip's history's, whole.
        for (_, p) in &group {
            total.merge(&p.ledger);
        }
        if group.len() == 1 {
            continue;
        }
        // Walking back: each frontier's commit and depth, and the tip it started from.
        let mut frontier: Vec<(u64, CommitId, usize)> = group
            .iter()
            .enumerate()
            .map(|(k, (tip, p))| (p.depth, *tip, k))
            .collect();
        // What the tips hold in common counts once: take away, for each tip that meets another,
        // the totals at the meeting point (its history from there on is the other's too).
        while frontier.len() > 1 {
            frontier.sort();
            let Some((depth, id, k)) = frontier.pop() else {
                break;
            };
            if frontier.iter().any(|(d, c, _)| *d == depth && *c == id) {
                let met = at(src, Some(id))?;
                total.take_away(&met.ledger);
                continue;
            }
            // At the root alone, nothing is left to share.
            if let Some(p) = src.commit(&id)?.parents.first().copied() {
                frontier.push((depth.saturating_sub(1), p, k));
            }
        }
    }
    Ok(total)
}
