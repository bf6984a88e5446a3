//! What differs between two views (`tract diff A B`), what one commit did to its view
//! (`tract diff REV`: for a compression or a clear, what it took out of view and what replaced
//! it), and which commits each of two histories holds (`--history`).
//!
//! A view is a list of positions, each showing one content address, so two views are compared
//! by their ids alone: where they part, the positions only one holds, and those both hold with
//! other content (an edit). Only the messages that differ have their text read; the messages
//! both views share cost an id comparison each.

use crate::error::Result;
use crate::id::CommitId;
use crate::object::{Commit, Op};
use crate::ops::page::{PageEntry, page_entries};
use crate::repo::Repo;
use crate::stats::Tally;
use crate::storage::store::snapshot::Snapshot;
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;
use crate::view::{View, ViewEntry, checkpoint};
use std::collections::{HashMap, HashSet};

/// One side of a diff: the revision as given and the view it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffSide {
    /// The revision as given (for one commit's diff, `REV~1` for the view before it).
    pub rev: String,
    /// The commit it names (`None`: the empty view before a first commit).
    pub commit: Option<CommitId>,
    /// Messages in its view.
    pub messages: usize,
    /// Tokens of its compiled request.
    pub token_count: u64,
}

/// How two views differ.
#[derive(Debug, Clone)]
pub struct ViewDiff {
    /// The view compared from.
    pub a: DiffSide,
    /// The view compared to.
    pub b: DiffSide,
    /// How many messages both views begin with alike: where they part.
    pub shared_prefix: usize,
    /// How many messages both views hold alike, wherever they are.
    pub shared: usize,
    /// The messages only `a` holds, in its order (with their text).
    pub only_a: Vec<PageEntry>,
    /// The messages only `b` holds, in its order.
    pub only_b: Vec<PageEntry>,
    /// The positions both hold with other content (an edit, a clear): `a`'s and `b`'s, in
    /// `b`'s order.
    pub changed: Vec<(PageEntry, PageEntry)>,
    /// For the diff of one commit: the commit.
    pub commit: Option<CommitInfo>,
}

/// Which commits each of two histories holds.
#[derive(Debug, Clone)]
pub struct HistoryDiff {
    /// The history compared from.
    pub a: DiffSide,
    /// The history compared to.
    pub b: DiffSide,
    /// The newest commit both hold (`None`: they share nothing).
    pub merge_base: Option<CommitId>,
    /// The commits only `a`'s history holds, newest first.
    pub only_a: Vec<CommitInfo>,
    /// The commits only `b`'s history holds, newest first.
    pub only_b: Vec<CommitInfo>,
}

/// The views of `a` and `b` compared.
pub(crate) fn views(repo: &Repo, a: &Rev, b: &Rev) -> Result<ViewDiff> {
    let snap = repo.read()?;
    let (ia, ib) = (repo.resolve(&snap, a)?, repo.resolve(&snap, b)?);
    if let Some(d) = tails(repo, &snap, Side::of(a, ia), Side::of(b, ib), None)? {
        return Ok(d);
    }
    let va = view_at(repo, &snap, a, ia)?;
    let vb = view_at(repo, &snap, b, ib)?;
    compare(
        repo,
        &snap,
        (a.to_string(), &va),
        (b.to_string(), &vb),
        None,
    )
}

/// One view to compare: what the diff calls it, the branch it names when its revision is a
/// branch's name, and its commit.
struct Side<'a> {
    label: String,
    branch: Option<&'a str>,
    id: CommitId,
}

impl<'a> Side<'a> {
    /// The view at `id`, which `rev` names.
    fn of(rev: &'a Rev, id: CommitId) -> Side<'a> {
        Side {
            label: rev.to_string(),
            branch: rev.as_branch_name(),
            id,
        }
    }
}

/// A view that is a checkpoint's and the messages appended after it: the checkpoint, the
/// commits after it (oldest first) and, when its branch keeps them at it, the view's counts.
struct Tip {
    at: CommitId,
    chain: Vec<(CommitId, Commit)>,
    kept: Option<Tally>,
}

/// The view at `side` as [`tails`] compares it: from the nearest of the checkpoints `known`
/// on its first-parent line, when the commits since it only append (`None` otherwise).
fn tip(snap: &Snapshot, side: &Side<'_>, known: &HashSet<CommitId>) -> Result<Option<Tip>> {
    let mut kept = None;
    if let Some(name) = side.branch
        && snap.branch(name)? == Some(side.id)
    {
        kept = snap
            .branch_stats(name)?
            .filter(|s| s.tip == side.id)
            .map(|s| s.tally);
    }
    let mut chain = Vec::new();
    let mut next = side.id;
    while !known.contains(&next) {
        let c = snap.commit(&next)?;
        if chain.len() >= CHECKPOINT_REACH || !matches!(c.op, Op::Append | Op::Record { .. }) {
            return Ok(None);
        }
        let Some(p) = c.parents.first().copied() else {
            return Ok(None);
        };
        chain.push((next, c));
        next = p;
    }
    chain.reverse();
    Ok(Some(Tip {
        at: next,
        chain,
        kept,
    }))
}

/// Two views compared from their checkpoints, when each is a checkpoint's and messages
/// appended since (`None` otherwise: the views are built whole). Checkpoints are chunked where
/// positions' ids say, so two views that begin alike begin with the same chunks: those are not
/// read, and only the positions after them, with the messages appended since, are restored and
/// compared. The cost follows what differs: two branches, or a commit and its parent (a
/// compression is checkpointed as it is written).
fn tails(
    repo: &Repo,
    snap: &Snapshot,
    a: Side<'_>,
    b: Side<'_>,
    commit: Option<CommitInfo>,
) -> Result<Option<ViewDiff>> {
    let known = checkpoint::all_at(snap)?;
    if known.is_empty() {
        return Ok(None);
    }
    let (Some(ta), Some(tb)) = (tip(snap, &a, &known)?, tip(snap, &b, &known)?) else {
        return Ok(None);
    };
    let t = match checkpoint::tails(snap, &ta.at, &tb.at) {
        Ok(Some(t)) => t,
        // A checkpoint that does not read is no fault of the views: they are built whole
        // (replayed past it, as a cold open does).
        Ok(None) | Err(crate::error::Error::Corrupt { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    // The appended messages, with their pairing among themselves; each view's counts are its
    // branch's, else its checkpoint's with those messages counted.
    let appended = |tip: Tip, from: Option<Tally>| -> Result<(Vec<ViewEntry>, Option<Tally>)> {
        let view = View::default().fold(snap, tip.chain)?;
        let tally = tip.kept.or_else(|| {
            let mut tally = from?;
            for e in view.entries() {
                let s = &e.shape;
                let calls = s.tool_calls.iter().map(|c| c.id.as_str());
                tally.push_parts(s.role, calls, s.tool_call_id.as_deref(), e.tokens);
            }
            Some(tally)
        });
        Ok((view.entries().to_vec(), tally))
    };
    let (from_a, from_b) = t.tallies;
    let (appended_a, tally_a) = appended(ta, from_a)?;
    let (appended_b, tally_b) = appended(tb, from_b)?;
    let (Some(tally_a), Some(tally_b)) = (tally_a, tally_b) else {
        return Ok(None);
    };
    let mut ea = t.a;
    let mut eb = t.b;
    ea.extend(appended_a);
    eb.extend(appended_b);
    // The counts must tell the same views; else the whole views are compared.
    if tally_a.messages != (t.shared + ea.len()) as u64
        || tally_b.messages != (t.shared + eb.len()) as u64
    {
        return Ok(None);
    }
    let (va, vb) = (View::of_entries(ea), View::of_entries(eb));
    let side = |s: Side<'_>, tally: &Tally| DiffSide {
        rev: s.label,
        commit: Some(s.id),
        messages: tally.messages as usize,
        token_count: tally.token_count(),
    };
    let mut d = compare_entries(
        repo,
        snap,
        (&va, &vb),
        (side(a, &tally_a), side(b, &tally_b)),
        commit,
    )?;
    d.shared_prefix += t.shared;
    d.shared += t.shared;
    for e in d
        .only_a
        .iter_mut()
        .chain(d.only_b.iter_mut())
        .chain(d.changed.iter_mut().flat_map(|(x, y)| [x, y]))
    {
        e.index += t.shared;
    }
    Ok(Some(d))
}

/// What the commit `rev` names did to its view: the view before it (at its first parent;
/// empty for a first commit) against the view at it.
pub(crate) fn commit(repo: &Repo, rev: &Rev) -> Result<ViewDiff> {
    let snap = repo.read()?;
    let id = repo.resolve(&snap, rev)?;
    let info = CommitInfo::load(&snap, id)?;
    let before = match info.commit.parents.first() {
        Some(&p) => {
            let sides = (
                Side {
                    label: format!("{rev}~1"),
                    branch: None,
                    id: p,
                },
                Side::of(rev, id),
            );
            if let Some(d) = tails(repo, &snap, sides.0, sides.1, Some(info.clone()))? {
                return Ok(d);
            }
            view_at(repo, &snap, rev, p)?
        }
        None => View::default(),
    };
    // The view at the commit is the one before it with the commit applied.
    let after = before
        .clone()
        .fold(&snap, vec![(id, (*info.commit).clone())])?;
    compare(
        repo,
        &snap,
        (format!("{rev}~1"), &before),
        (rev.to_string(), &after),
        Some(info),
    )
}

/// The commits only `a`'s history holds and those only `b`'s does.
pub(crate) fn histories(repo: &Repo, a: &Rev, b: &Rev) -> Result<HistoryDiff> {
    let snap = repo.read()?;
    let (ia, ib) = (repo.resolve(&snap, a)?, repo.resolve(&snap, b)?);
    let (only_a, only_b) = crate::view::ancestry::only_in_each(&snap, Some(ia), Some(ib))?;
    let side = |rev: &Rev, id: CommitId| -> Result<DiffSide> {
        let v = view_at(repo, &snap, rev, id)?;
        Ok(DiffSide {
            rev: rev.to_string(),
            commit: Some(id),
            messages: v.len(),
            token_count: v.token_count(),
        })
    };
    let load = |ids: Vec<CommitId>| -> Result<Vec<CommitInfo>> {
        ids.into_iter()
            .map(|id| CommitInfo::load(&snap, id))
            .collect()
    };
    Ok(HistoryDiff {
        a: side(a, ia)?,
        b: side(b, ib)?,
        merge_base: crate::view::ancestry::merge_base(&snap, ia, ib)?,
        only_a: load(only_a)?,
        only_b: load(only_b)?,
    })
}

/// The view at `id`, which `rev` names: the handle's cached view when it is there, else built
/// from the nearest checkpoint on its first-parent line (of the branch `rev` starts from, of
/// the handle's branch, else of any branch), and the commits after it; else replayed.
fn view_at(repo: &Repo, snap: &Snapshot, rev: &Rev, id: CommitId) -> Result<View> {
    let head = repo.head(snap)?;
    if head.commit == Some(id) {
        return repo.with_view(snap, Some(id), View::clone);
    }
    let near = |branches: &mut dyn Iterator<Item = &str>| -> Result<Option<CommitId>> {
        let mut ats = HashSet::new();
        for b in branches {
            if let Some(at) = checkpoint::of_branch(snap, b)? {
                ats.insert(at);
            }
        }
        nearest(snap, id, &ats)
    };
    let mut named = rev.branch_base().into_iter().chain(head.branch());
    let from = match near(&mut named)? {
        Some(at) => Some(at),
        None => {
            let all = snap.branches()?;
            near(&mut all.iter().map(|(name, _)| name.as_str()))?
        }
    };
    checkpoint::build(snap, Some(id), from)
}

/// How far back along first parents a checkpoint is looked for: a branch is checkpointed at
/// most every few hundred commits, so one further back belongs to another line.
const CHECKPOINT_REACH: usize = 4096;

/// The first of `ats` met walking back from `id` along first parents, within
/// [`CHECKPOINT_REACH`] commits.
fn nearest(snap: &Snapshot, id: CommitId, ats: &HashSet<CommitId>) -> Result<Option<CommitId>> {
    if ats.is_empty() {
        return Ok(None);
    }
    let mut next = Some(id);
    for _ in 0..CHECKPOINT_REACH {
        let Some(c) = next else { break };
        if ats.contains(&c) {
            return Ok(Some(c));
        }
        next = snap.commit(&c)?.parents.first().copied();
    }
    Ok(None)
}

/// `a` and `b` (each named) compared: ids alone, and the text of what differs.
fn compare(
    repo: &Repo,
    snap: &Snapshot,
    (rev_a, a): (String, &View),
    (rev_b, b): (String, &View),
    commit: Option<CommitInfo>,
) -> Result<ViewDiff> {
    let side = |rev: String, v: &View| DiffSide {
        rev,
        commit: v.head(),
        messages: v.len(),
        token_count: v.token_count(),
    };
    compare_entries(repo, snap, (a, b), (side(rev_a, a), side(rev_b, b)), commit)
}

/// The entries of `a` and `b` compared, each position looked up by its own id; `sides` say
/// what each view is.
fn compare_entries(
    repo: &Repo,
    snap: &Snapshot,
    (a, b): (&View, &View),
    (side_a, side_b): (DiffSide, DiffSide),
    commit: Option<CommitInfo>,
) -> Result<ViewDiff> {
    let (ea, eb) = (a.entries(), b.entries());
    let alike = |x: &ViewEntry, y: &ViewEntry| x.position == y.position && x.blob == y.blob;
    let shared_prefix = ea.iter().zip(eb).take_while(|(x, y)| alike(x, y)).count();
    let at_b: HashMap<CommitId, usize> = eb
        .iter()
        .enumerate()
        .skip(shared_prefix)
        .map(|(j, e)| (e.position, j))
        .collect();
    let mut shared = shared_prefix;
    let (mut only_a, mut changed) = (Vec::new(), Vec::new());
    let mut matched = HashSet::new();
    for (i, e) in ea.iter().enumerate().skip(shared_prefix) {
        match at_b.get(&e.position) {
            Some(&j) if eb[j].blob == e.blob => {
                shared += 1;
                matched.insert(j);
            }
            Some(&j) => {
                changed.push((i, j));
                matched.insert(j);
            }
            None => only_a.push(i),
        }
    }
    let only_b: Vec<usize> = (shared_prefix..eb.len())
        .filter(|j| !matched.contains(j))
        .collect();
    changed.sort_by_key(|&(_, j)| j);
    let (changed_a, changed_b): (Vec<usize>, Vec<usize>) = changed.into_iter().unzip();
    // A message is shown apart from its view: which message's call a result answers is not
    // said (its calls are not listed either).
    let apart = |es: Vec<PageEntry>| -> Vec<PageEntry> {
        es.into_iter()
            .map(|mut e| {
                e.caller = None;
                e
            })
            .collect()
    };
    Ok(ViewDiff {
        a: side_a,
        b: side_b,
        shared_prefix,
        shared,
        only_a: apart(page_entries(repo, snap, a, &only_a)?),
        only_b: apart(page_entries(repo, snap, b, &only_b)?),
        changed: apart(page_entries(repo, snap, a, &changed_a)?)
            .into_iter()
            .zip(apart(page_entries(repo, snap, b, &changed_b)?))
            .collect(),
        commit,
    })
}
