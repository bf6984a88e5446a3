//! The usage ledger: what the model requests of a history cost, summed along first parents and
//! kept per commit as derived data in the store's metadata (as view checkpoints are), so a
//! branch's totals are read from the row of a commit near its tip, never from its messages.
//!
//! A row under `ledger.<commit>` holds the totals of the commit's first-parent history, the
//! commit included, with its depth and root (two commits with one root may share history; two
//! with different roots never do), and its place among the rows of that history: the row before
//! it and a jump to one further back (skew-binary jumps: any row's ancestor, and the last row
//! two histories share, are found in a number of steps logarithmic in the rows), so the rows of
//! many branches are put together without walking what they share or hold apart.
//!
//! Every request is counted once, where its answer was appended (an edit keeps the usage of the
//! message it edits, and adds nothing; a record of an answer a transcript kept off its
//! conversation counts, as it was paid for too). The write path writes a row for each
//! commit whose message carries usage, and one at the end of a chain that is 16 commits or
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
/// write path wrote: a write without usage looks back this far, commits only, for a row.
const SPACING: u64 = 16;

/// The metadata key of the row of `at`.
pub(crate) fn key(at: &CommitId) -> String {
    format!("{PREFIX}{}", at.to_hex())
}

/// A row as stored: the layout, how many commits the history holds and its first commit, where
/// it is among the history's rows, its totals.
#[derive(Debug, Clone, Deserialize)]
struct Row {
    version: u8,
    depth: u64,
    root: CommitId,
    /// The rows of the history up to this one, this one included.
    rank: u64,
    /// The row before this one on the history.
    prev: Option<CommitId>,
    /// A row further back (skew-binary), and its rank.
    jump: Option<(CommitId, u64)>,
    /// Whether every commit of the history that counts usage has a row: only then do rows
    /// alone say what two histories share.
    complete: bool,
    ledger: Ledger,
}

/// A row being written: [`Row`]'s layout, its totals borrowed.
#[derive(Serialize)]
struct RowOut<'a> {
    version: u8,
    depth: u64,
    root: CommitId,
    rank: u64,
    prev: Option<CommitId>,
    jump: Option<(CommitId, u64)>,
    complete: bool,
    ledger: &'a Ledger,
}

/// The layout of a row; a row of another is not read (the history is summed again).
const VERSION: u8 = 2;

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
/// that holds, its first commit (`None` for the empty history before a first commit), how many
/// commits were walked back to the nearest row to learn it, that row, and whether a commit
/// walked past counted usage (a history no row tells whole).
#[derive(Debug, Clone, Default)]
pub(crate) struct Place {
    pub(crate) ledger: Ledger,
    pub(crate) depth: u64,
    pub(crate) root: Option<CommitId>,
    pub(crate) walked: u64,
    row: Option<(CommitId, Row)>,
    unrowed: bool,
}

impl Place {
    /// Whether rows alone tell this history: its nearest row's does, and nothing after the row
    /// counted usage.
    fn rowed(&self) -> bool {
        !self.unrowed && self.row.as_ref().is_none_or(|(_, r)| r.complete)
    }
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

/// Every row that does not read, by the commit it is kept for (a row of an older layout, which
/// [`at`] reads past as written by an older build, reads).
pub(crate) fn unreadable_rows(
    snap: &crate::storage::store::snapshot::Snapshot,
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for key in snap.meta_keys(PREFIX)? {
        let Some(bytes) = snap.meta(&key)? else {
            continue;
        };
        let older = bytes.first().is_some_and(|&v| v < VERSION);
        if !older && decode_small::<Row>(&bytes).is_err() {
            out.push(key[PREFIX.len()..].to_string());
        }
    }
    Ok(out)
}

/// The row of `at`, which a row names: its absence is a store changed behind tract's back.
fn named_row(src: &impl Source, at: &CommitId) -> Result<Row> {
    row(src, at)?.ok_or_else(|| {
        crate::error::Error::corrupt(format!("the usage ledger has no row of {}", at.short()))
    })
}

/// The place of `at` (`None`: the empty history): from the nearest row back along first
/// parents, and the usage of the commits after it, read from their messages.
pub(crate) fn at(src: &impl Source, at: Option<CommitId>) -> Result<Place> {
    let mut walked: Vec<(CommitId, Commit)> = Vec::new();
    let mut next = at;
    let mut place = Place::default();
    while let Some(id) = next {
        if let Some(r) = row(src, &id)? {
            place.ledger = r.ledger.clone();
            place.depth = r.depth;
            place.root = Some(r.root);
            place.row = Some((id, r));
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
                place.unrowed = true;
            }
        }
    }
    Ok(place)
}

/// Whether a row, or the history's first commit, is fewer than `limit` commits back from `at`
/// (it included): commits and keys read, no message.
fn near(src: &impl Source, at: Option<CommitId>, limit: u64) -> Result<bool> {
    let mut next = at;
    for _ in 0..limit {
        let Some(id) = next else {
            return Ok(true);
        };
        if src.meta(&key(&id))?.is_some() {
            return Ok(true);
        }
        next = src.commit(&id)?.parents.first().copied();
    }
    Ok(next.is_none())
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
    // Nothing to write when nothing counts and a row (or the first commit) is near: a chain
    // without usage reads a few commits back, not their messages.
    let len = infos.len() as u64;
    if paid.iter().all(Option::is_none) && len < SPACING && near(&*w, start, SPACING - len)? {
        return Ok(());
    }
    let mut place = at(&*w, start)?;
    let root = place.root.unwrap_or(first.id);
    let complete = place.rowed();
    // Where each row goes among the history's rows: the one before it (id, rank, jump), and
    // the jumps of the rows written here, for the jumps of the next ones.
    type Jump = Option<(CommitId, u64)>;
    let mut prev: Option<(CommitId, u64, Jump)> =
        place.row.as_ref().map(|(id, r)| (*id, r.rank, r.jump));
    let mut jumps: std::collections::HashMap<CommitId, Jump> = std::collections::HashMap::new();
    for (info, u) in infos.iter().zip(&paid) {
        place.depth += 1;
        place.walked += 1;
        if let Some(u) = u {
            place.ledger.add(u);
        } else if !(info.id == last.id && place.walked >= SPACING) {
            continue;
        }
        let (rank, jump) = match prev {
            None => (1, None),
            Some((p_id, p_rank, p_jump)) => {
                // Skew-binary: two jumps of the same length make one twice as long. (A row
                // that cannot be read makes a shorter jump: a look-up takes it only where it
                // leads where the other side's does.)
                let beyond = match p_jump {
                    Some((j_id, j_rank)) => match jumps.get(&j_id) {
                        Some(&j_jump) => j_jump,
                        None => row(&*w, &j_id)?.and_then(|j| j.jump),
                    }
                    .filter(|&(_, jj_rank)| {
                        p_rank.checked_sub(j_rank) == j_rank.checked_sub(jj_rank)
                    }),
                    None => None,
                };
                (p_rank + 1, beyond.or(Some((p_id, p_rank))))
            }
        };
        let r = RowOut {
            version: VERSION,
            depth: place.depth,
            root,
            rank,
            prev: prev.map(|(id, _, _)| id),
            jump,
            complete,
            ledger: &place.ledger,
        };
        w.set_meta(&key(&info.id), Some(&encode_small(&r)?))?;
        jumps.insert(info.id, jump);
        prev = Some((info.id, rank, jump));
        place.walked = 0;
    }
    Ok(())
}

/// Keeps the rows of the history at `tip` where a write stored its commits without them (an
/// import of commits, a transfer's receiver: rows are derived data, not sent), from the
/// nearest commit back that has a row, or the history's start: what [`keep`] would have
/// written, so `tract usage` reads rows there too. Returns whether it wrote any.
pub(crate) fn catch_up(
    w: &mut crate::storage::store::writer::Writer,
    tip: CommitId,
) -> Result<bool> {
    // In parts: a part's messages are dropped before the next is read.
    const PART: usize = 4096;
    let mut chain = Vec::new();
    let mut next = Some(tip);
    let mut start = None;
    while let Some(id) = next {
        if row(&*w, &id)?.is_some() {
            start = Some(id);
            break;
        }
        let c = w.commit_object(&id)?;
        next = c.parents.first().copied();
        chain.push((id, c));
    }
    if chain.is_empty() {
        return Ok(false);
    }
    chain.reverse();
    for part in chain.chunks(PART) {
        let blobs: Vec<crate::id::BlobId> = part.iter().filter_map(|(_, c)| c.blob).collect();
        let mut texts = crate::view::texts(&*w, &blobs)?.into_iter();
        let infos: Vec<CommitInfo> = part
            .iter()
            .map(|(id, c)| CommitInfo {
                id: *id,
                message: c.blob.and_then(|_| texts.next()),
                commit: std::sync::Arc::new(c.clone()),
                token_count: 0,
                current: None,
            })
            .collect();
        keep(w, start, &infos)?;
        start = part.last().map(|(id, _)| *id);
    }
    Ok(true)
}

/// The row of rank `rank` among `at`'s history's rows (`at` of that rank or more).
fn ancestor(src: &impl Source, mut at: (CommitId, Row), rank: u64) -> Result<(CommitId, Row)> {
    while at.1.rank > rank {
        let next = match (at.1.jump, at.1.prev) {
            (Some((j, j_rank)), _) if j_rank >= rank => j,
            (_, Some(p)) => p,
            _ => break,
        };
        at = (next, named_row(src, &next)?);
    }
    Ok(at)
}

/// The last row the histories of rows `a` and `b` (of one root) share, if any.
fn meeting(
    src: &impl Source,
    a: &(CommitId, Row),
    b: &(CommitId, Row),
) -> Result<Option<(CommitId, Row)>> {
    let rank = a.1.rank.min(b.1.rank);
    let (mut a, mut b) = (
        ancestor(src, a.clone(), rank)?,
        ancestor(src, b.clone(), rank)?,
    );
    while a.0 != b.0 {
        // Rows of one rank jump to one rank: jump together while the jumps differ.
        let next = match ((a.1.jump, b.1.jump), (a.1.prev, b.1.prev)) {
            ((Some((ja, ra)), Some((jb, rb))), _) if ja != jb && ra == rb => (ja, jb),
            (_, (Some(pa), Some(pb))) => (pa, pb),
            _ => return Ok(None),
        };
        a = (next.0, named_row(src, &next.0)?);
        b = (next.1, named_row(src, &next.1)?);
    }
    Ok(Some(a))
}

/// What each tip of `group` (one root, every history told by its rows) shares with those
/// before it: the totals at the last row its history shares with theirs.
fn shared_by_rows(src: &impl Source, group: &[(CommitId, Place)]) -> Result<Vec<Ledger>> {
    let rows: Vec<&(CommitId, Row)> = group.iter().filter_map(|(_, p)| p.row.as_ref()).collect();
    let mut shared = Vec::new();
    for (k, a) in rows.iter().enumerate() {
        let mut deepest: Option<(CommitId, Row)> = None;
        for b in &rows[..k] {
            if let Some(m) = meeting(src, a, b)?
                && deepest.as_ref().is_none_or(|d| m.1.rank > d.1.rank)
            {
                deepest = Some(m);
            }
        }
        if let Some((_, m)) = deepest {
            shared.push(m.ledger);
        }
    }
    Ok(shared)
}

/// The totals of the union of the first-parent histories of `tips` (each with its place): each
/// request once, however
/// many of them reach it. Tips with different roots share nothing. Of those with one root, each
/// takes away what it shares with those before it: the totals at the last row its history
/// shares with theirs, found through the rows' jumps. Where rows do not tell a history whole
/// (a store filled by a pull), the tips are walked back together until they meet instead.
pub(crate) fn union(src: &impl Source, tips: Vec<(CommitId, Place)>) -> Result<Ledger> {
    let mut total = Ledger::default();
    // Per root, the tips' places.
    let mut groups: std::collections::BTreeMap<CommitId, Vec<(CommitId, Place)>> =
        std::collections::BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for (tip, place) in tips {
        if !seen.insert(tip) {
            continue;
        }
        let Some(root) = place.root else { continue };
        groups.entry(root).or_default().push((tip, place));
    }
    for (_, group) in groups {
        // The largest input and the kinds not summed are each tip's history's, whole.
        for (_, p) in &group {
            total.merge(&p.ledger);
        }
        if group.len() == 1 {
            continue;
        }
        if group.iter().all(|(_, p)| p.rowed()) {
            match shared_by_rows(src, &group) {
                Ok(shared) => {
                    for m in &shared {
                        total.take_away(m);
                    }
                    continue;
                }
                // A row missing (removed behind tract's back): the commits still say.
                Err(e) if e.category() == crate::error::ErrorCategory::Corrupt => {}
                Err(e) => return Err(e),
            }
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
