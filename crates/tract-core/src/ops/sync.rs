//! Sync by hash: `push`, `pull` and `clone` between any two stores (files, PostgreSQL).
//!
//! Only what the receiver lacks travels: from each branch tip it lacks, the walk follows a
//! commit's links (parents, edit target, compressed sources, merge base) and stops at commits
//! the receiver has (a store that holds a commit holds everything it reaches). Every object is
//! read through verified reads and hashed again as the receiver stores it. Objects go in
//! batches, oldest first, each batch one transaction, so an interrupted transfer leaves the
//! receiver valid (what it received reaches only what it had or received before) and a second
//! run sends only the rest. Branches move last, in one transaction, each by compare-and-swap
//! and only by fast-forward: a receiver's tip that the sender's history does not contain is
//! refused (listed in [`SyncReport::refused`], its history not sent) while every other branch
//! moves, as git's push and fetch do, unless forced (the old tip stays in the reflog). A
//! receiver's tip that already contains the sender's (it merged it) stays, and is no refusal.

use crate::agents;
use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId, IdHasher};
use crate::object::Commit;
use crate::refs::HeadRef;
use crate::storage::store::snapshot::Snapshot;
use crate::storage::store::{OpenMode, Store, StoreOptions};
use crate::tools::policy;
use crate::view::ancestry;
use crate::view::revision::BranchName;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::BuildHasherDefault;
use std::path::Path;
use std::str::FromStr;

/// Commits written per transaction.
const BATCH: usize = 2000;

/// Commits between two progress reports within a phase: a report is a call through a pointer,
/// but the walk finds a commit in microseconds.
const PROGRESS_EVERY: u64 = 64;

/// The settings `settings` sends: the tool-summarization, retention and secrets policies (not
/// the secrets' fingerprint key, which is the store's own: a clone alone copies it).
const SETTINGS: [&str; 3] = [
    policy::SETTING,
    crate::retention_policy::SETTING,
    crate::storage::store::meta::SECRETS_SETTING,
];

/// One branch to send and the name it takes in the receiver, as git's refspec `src:dst`:
/// `main` sends `main` as `main`, `main:theirs/main` sends the sender's `main` as the
/// receiver's `theirs/main` (to merge it there when the two have diverged).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BranchSpec {
    /// The sender's branch.
    pub source: BranchName,
    /// The receiver's branch it moves.
    pub target: BranchName,
}

impl BranchSpec {
    /// `source` sent as `target`.
    pub fn new(source: BranchName, target: BranchName) -> Self {
        BranchSpec { source, target }
    }

    /// Parses `NAME` or `SRC:DST` (branch names; git's forced `+SRC:DST` and deleting `:DST`
    /// are refused: a transfer is forced as a whole, and sync never deletes).
    pub fn parse(spec: &str) -> Result<Self> {
        if spec.starts_with('+') {
            return Err(Error::invalid_input(format!(
                "'{spec}': a leading '+' (a forced refspec) is not supported; force the whole \
                 transfer instead"
            )));
        }
        match spec.split_once(':') {
            None => Ok(BranchName::new(spec)?.into()),
            Some((source, target)) if !source.is_empty() && !target.contains(':') => Ok(
                BranchSpec::new(BranchName::new(source)?, BranchName::new(target)?),
            ),
            Some(_) => Err(Error::invalid_input(format!(
                "'{spec}' is not a branch to send: give NAME, or SRC:DST to send the branch SRC \
                 as DST"
            ))),
        }
    }
}

impl From<BranchName> for BranchSpec {
    fn from(name: BranchName) -> Self {
        BranchSpec {
            source: name.clone(),
            target: name,
        }
    }
}

impl FromStr for BranchSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        BranchSpec::parse(s)
    }
}

impl fmt::Display for BranchSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.source == self.target {
            write!(f, "{}", self.source)
        } else {
            write!(f, "{}:{}", self.source, self.target)
        }
    }
}

/// How far a transfer is, for a progress display (see [`SyncOptions::on_progress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyncProgress {
    /// Walking the sender's history for the commits the receiver lacks: how many so far.
    Finding {
        /// Commits found so far.
        commits: u64,
    },
    /// Storing them in the receiver, oldest first.
    Sending {
        /// Commits stored so far.
        done: u64,
        /// Commits to store.
        total: u64,
    },
}

/// What to send.
#[derive(Clone, Default)]
pub struct SyncOptions<'a> {
    /// The branches to send, each under its own name or another (`None`: every branch of the
    /// sender, each under its own name).
    pub branches: Option<Vec<BranchSpec>>,
    /// Move a receiver's branch that has diverged (its old tip stays in the reflog).
    pub force: bool,
    /// Send the store's settings (the tool-summarization, retention and secrets policies) too.
    pub settings: bool,
    /// Called as the transfer goes, every few dozen commits and at the end of each phase
    /// (for a progress bar; it runs on the transfer's thread, so keep it cheap).
    pub on_progress: Option<&'a (dyn Fn(SyncProgress) + Sync)>,
}

impl fmt::Debug for SyncOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncOptions")
            .field("branches", &self.branches)
            .field("force", &self.force)
            .field("settings", &self.settings)
            .field("on_progress", &self.on_progress.is_some())
            .finish()
    }
}

/// What one branch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchSync {
    /// The receiver's branch.
    pub name: String,
    /// The sender's branch it took (`name` unless sent under another name).
    pub source: String,
    /// Its tip in the receiver before (`None`: it had no such branch).
    pub old: Option<CommitId>,
    /// Its tip now.
    pub new: CommitId,
    /// Whether it was moved although it had diverged (`force`).
    pub forced: bool,
    /// The sender's tip, when the receiver's tip already contained it (the receiver merged
    /// it, or built on it): the branch stays where it is, nothing of either side is lost.
    pub ahead_of: Option<CommitId>,
}

impl BranchSync {
    /// Whether the receiver already had this tip, or one that contains it.
    pub fn up_to_date(&self) -> bool {
        self.old == Some(self.new)
    }
}

/// Why a branch was not moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The receiver's tip is not in the sender's history: both moved since they last agreed,
    /// and moving it would drop the receiver's commits from the branch.
    Diverged,
}

impl Refusal {
    /// Its name in reports: `diverged`.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Diverged => "diverged",
        }
    }
}

/// A branch a transfer did not move (the others moved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedBranch {
    /// The receiver's branch, which stays where it is.
    pub name: String,
    /// The sender's branch that was to move it.
    pub source: String,
    /// Its tip in the receiver.
    pub receiver: CommitId,
    /// The sender's tip.
    pub sender: CommitId,
    /// Why it was not moved.
    pub reason: Refusal,
}

impl fmt::Display for RefusedBranch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}'", self.name)?;
        if self.source != self.name {
            write!(f, " (from '{}')", self.source)?;
        }
        match self.reason {
            Refusal::Diverged => write!(
                f,
                " has diverged: the receiver is at {} and the sender at {}; neither contains \
                 the other",
                self.receiver.short(),
                self.sender.short()
            ),
        }
    }
}

/// What a transfer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use = "a transfer moves the branches it can and lists the others in `refused`"]
pub struct SyncReport {
    /// Every branch moved or found up to date, by name.
    pub branches: Vec<BranchSync>,
    /// Every branch not moved, and why; its history was not sent (see
    /// [`SyncReport::is_complete`]).
    pub refused: Vec<RefusedBranch>,
    /// Commits the receiver did not have.
    pub commits: u64,
    /// Blobs the receiver did not have.
    pub blobs: u64,
    /// Whether the settings were sent.
    pub settings: bool,
    /// The other store (the receiver of a push, the sender of a pull or clone): a file's path
    /// or a URL without its password.
    pub peer: Option<String>,
}

impl SyncReport {
    /// Whether every branch asked for moved (or was up to date): nothing refused.
    pub fn is_complete(&self) -> bool {
        self.refused.is_empty()
    }

    /// What was refused, in one line (`None` when nothing was): the branch, both tips and why.
    pub fn refusal_message(&self) -> Option<String> {
        match self.refused.as_slice() {
            [] => None,
            [one] => Some(format!("branch {one}")),
            many => Some(format!(
                "{} branches were refused: {}",
                many.len(),
                many.iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        }
    }
}

type IdSet = HashSet<CommitId, BuildHasherDefault<IdHasher>>;

/// Sends branches (every one, or `options.branches`) of `from` and the history they reach to
/// the store at `dest` (a file or a URL; it must be a tract store): only the objects it lacks,
/// each hashed again as it is stored. Each branch moves only by fast-forward: one that has
/// diverged is refused ([`SyncReport::refused`]) and the others move, unless `options.force`.
/// `dest` opens with `from`'s options.
pub fn push(from: &Store, dest: impl AsRef<Path>, options: &SyncOptions) -> Result<SyncReport> {
    let to = Store::open_with(dest, OpenMode::Existing, from.options())?;
    let reason = format!("push from {}", from.location().unwrap_or_default());
    let mut report = transfer(from, &to, options, &reason)?;
    report.peer = to.location();
    Ok(report)
}

/// Receives branches (every one, or `options.branches`) and their history from the store at
/// `src` into `into`, as [`push`] sends them.
pub fn pull(into: &Store, src: impl AsRef<Path>, options: &SyncOptions) -> Result<SyncReport> {
    let from = Store::open_with(src, OpenMode::Existing, into.options())?;
    let reason = format!("pull from {}", from.location().unwrap_or_default());
    let mut report = transfer(&from, into, options, &reason)?;
    report.peer = from.location();
    Ok(report)
}

/// Copies the store at `src` into a new store at `dest` (a file or a URL that holds no store
/// yet): every branch with its history, the settings, and `HEAD`. Ids are identical. Returns
/// the new store.
pub fn clone_store(
    src: impl AsRef<Path>,
    dest: impl AsRef<Path>,
    options: StoreOptions,
) -> Result<(Store, SyncReport)> {
    clone_store_with(src, dest, options, None)
}

/// [`clone_store`], reporting how far it is to `on_progress` (see [`SyncOptions::on_progress`]).
pub fn clone_store_with(
    src: impl AsRef<Path>,
    dest: impl AsRef<Path>,
    options: StoreOptions,
    on_progress: Option<&(dyn Fn(SyncProgress) + Sync)>,
) -> Result<(Store, SyncReport)> {
    let from = Store::open_with(src, OpenMode::Existing, options)?;
    let to = Store::open_with(dest, OpenMode::CreateIfMissing, options)?;
    let reason = format!("clone from {}", from.location().unwrap_or_default());
    let mut report = clone(&from, &to, &reason, on_progress)?;
    report.peer = from.location();
    Ok((to, report))
}

/// A branch to move: its place in the report, the sender's branch and tip, the receiver's
/// branch and its tip when the transfer began, and whether it moves although it has
/// diverged.
struct Move {
    at: usize,
    source: String,
    target: String,
    tip: CommitId,
    old: Option<CommitId>,
    forced: bool,
}

/// Sends branches (and their history) from `from` to `to`. `reason` goes into the receiver's
/// reflog (`push from ...`).
pub(crate) fn transfer(
    from: &Store,
    to: &Store,
    options: &SyncOptions,
    reason: &str,
) -> Result<SyncReport> {
    let src = from.read()?;
    let chosen = chosen_tips(&src, options)?;
    let mut report = SyncReport::default();
    // Outcomes with their place in the request, so the report keeps its order.
    let mut moved: Vec<(usize, BranchSync)> = Vec::new();
    let mut refused: Vec<(usize, RefusedBranch)> = Vec::new();
    let (missing, moves) = {
        let dst = to.read()?;
        let mut moves = Vec::with_capacity(chosen.len());
        for (at, (source, target, tip)) in chosen.into_iter().enumerate() {
            let old = dst.branch(&target)?;
            let diverged = match old {
                Some(old) => !contains(&src, tip, old)?,
                None => false,
            };
            let Some(old) = old.filter(|_| diverged) else {
                moves.push(Move {
                    at,
                    source,
                    target,
                    tip,
                    old,
                    forced: false,
                });
                continue;
            };
            if options.force {
                moves.push(Move {
                    at,
                    source,
                    target,
                    tip,
                    old: Some(old),
                    forced: true,
                });
            } else if contains(&dst, old, tip)? {
                // The receiver is ahead (it merged the sender's tip, or built on it): nothing
                // to move, nothing lost.
                moved.push((
                    at,
                    BranchSync {
                        name: target,
                        source,
                        old: Some(old),
                        new: old,
                        forced: false,
                        ahead_of: Some(tip),
                    },
                ));
            } else {
                // Refused before anything travels: its history is not sent (as git's push).
                refused.push((
                    at,
                    RefusedBranch {
                        name: target,
                        source,
                        receiver: old,
                        sender: tip,
                        reason: Refusal::Diverged,
                    },
                ));
            }
        }
        let tips: Vec<CommitId> = moves.iter().map(|m| m.tip).collect();
        (missing_commits(&src, &dst, &tips, options)?, moves)
    };
    let total = missing.len() as u64;
    for batch in missing.chunks(BATCH) {
        report.blobs += send_batch(&src, to, batch, report.commits, total, options)?;
        report.commits += batch.len() as u64;
    }
    let mut settings = Vec::new();
    if options.settings {
        for name in SETTINGS {
            let value = src.setting(name)?;
            // A sender an older tract made has no secrets policy, which is not a policy of
            // "off": the receiver keeps its own.
            if value.is_none() && name == crate::storage::store::meta::SECRETS_SETTING {
                continue;
            }
            settings.push((name, value));
        }
    }
    // The branches, in one transaction, each by compare-and-swap: one that another writer
    // moved meanwhile is judged again from where it is now.
    let mut w = to.write()?;
    for m in moves {
        let now = w.branch(&m.target)?;
        let (old, forced) = if now == m.old {
            (m.old, m.forced)
        } else {
            match now {
                Some(now) if !contains(&src, m.tip, now)? => {
                    if !options.force {
                        refused.push((
                            m.at,
                            RefusedBranch {
                                name: m.target,
                                source: m.source,
                                receiver: now,
                                sender: m.tip,
                                reason: Refusal::Diverged,
                            },
                        ));
                        continue;
                    }
                    (Some(now), true)
                }
                now => (now, false),
            }
        };
        if old != Some(m.tip) {
            w.set_branch(&m.target, Some(m.tip), reason)?;
            w.set_branch_stats(&m.target, None)?;
        }
        // Which agent wrote the session travels with it (a sender that does not say leaves
        // the receiver's word).
        if let Some(session) = agents::of(&src, &m.source)? {
            agents::set(&mut w, &m.target, Some(&session))?;
        }
        moved.push((
            m.at,
            BranchSync {
                name: m.target,
                source: m.source,
                old,
                new: m.tip,
                forced,
                ahead_of: None,
            },
        ));
    }
    for (name, value) in &settings {
        w.set_setting(name, value.as_deref())?;
        report.settings = true;
    }
    w.commit()?;
    received(&src, to, moved.iter().map(|(_, b)| b));
    moved.sort_by_key(|(at, _)| *at);
    refused.sort_by_key(|(at, _)| *at);
    report.branches = moved.into_iter().map(|(_, b)| b).collect();
    report.refused = refused.into_iter().map(|(_, r)| r).collect();
    Ok(report)
}

/// Checkpoints the view of each branch a transfer moved on the receiver (DESIGN §14: a cold
/// read costs the view, whatever wrote the branch), unless the receiver's handle keeps none:
/// from the receiver's checkpoint of the branch, else from the sender's (as `src`, the state
/// the transfer sent, holds it), copied, else by a replay ([`crate::view::checkpoint::after_write`]).
fn received<'a>(src: &Snapshot, to: &Store, moved: impl Iterator<Item = &'a BranchSync>) {
    if to.options().checkpoint_interval == 0 {
        return;
    }
    let mut names = Vec::new();
    for b in moved {
        let _ = crate::view::checkpoint::copy(src, to, &b.source, &b.name);
        names.push(b.name.clone());
    }
    crate::view::checkpoint::after_write(to, &names);
}

/// Copies a store into a new one at `to` (which must not hold a store yet): every branch, the
/// settings, and `HEAD` on the branch the source's `HEAD` names.
pub(crate) fn clone(
    from: &Store,
    to: &Store,
    reason: &str,
    on_progress: Option<&(dyn Fn(SyncProgress) + Sync)>,
) -> Result<SyncReport> {
    if !to.read()?.branches()?.is_empty() {
        return Err(Error::invalid_op(format!(
            "{} already holds a store with branches; clone into a new one, or pull",
            to.location().unwrap_or_else(|| "the receiver".into())
        )));
    }
    let options = SyncOptions {
        settings: true,
        on_progress,
        ..SyncOptions::default()
    };
    let report = transfer(from, to, &options, reason)?;
    // A clone is the same history: its markers keep the fingerprints the source's make.
    if let Some(key) = from
        .read()?
        .meta(crate::storage::store::meta::META_SECRETS_KEY)?
    {
        let mut w = to.write()?;
        w.set_meta(crate::storage::store::meta::META_SECRETS_KEY, Some(&key))?;
        w.commit()?;
    }
    // Only another writer filling the new store meanwhile can make a branch refused.
    if let Some(r) = report.refused.first() {
        return Err(Error::Diverged {
            branch: r.name.clone(),
            receiver: r.receiver,
            sender: r.sender,
        });
    }
    let src = from.read()?;
    let same_encoding = src.encoding()? == to.read()?.encoding()?;
    let mut w = to.write()?;
    if let HeadRef::Branch(b) = src.head_ref()? {
        w.set_head(&HeadRef::Branch(b), reason)?;
    }
    // The copy holds exactly the sender's objects, so the counts the sender keeps for a tip
    // are the copy's too: kept, a listing of the copy's branches replays no view (seconds a
    // hundred branches in a database). Not for a pull or a push, whose receiver may hold
    // content of its own (a copy the sender redacted since), nor across token encodings.
    if same_encoding {
        for b in &report.branches {
            let counted = w.branch_stats(&b.name)?.is_some_and(|s| s.tip == b.new);
            if let Some(stats) = src
                .branch_stats(&b.name)?
                .filter(|s| s.tip == b.new && !counted)
            {
                w.set_branch_stats(&b.name, Some(&stats))?;
            }
        }
    }
    w.commit()?;
    Ok(report)
}

/// The branches to send, as (the sender's branch, the receiver's, the sender's tip). Two
/// different branches sent under one name are refused; the same one twice is sent once.
fn chosen_tips(src: &Snapshot, options: &SyncOptions) -> Result<Vec<(String, String, CommitId)>> {
    let Some(specs) = &options.branches else {
        return Ok(src
            .branches()?
            .into_iter()
            .map(|(name, tip)| (name.clone(), name, tip))
            .collect());
    };
    let mut targets: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::with_capacity(specs.len());
    for spec in specs {
        let (source, target) = (spec.source.as_str(), spec.target.as_str());
        match targets.insert(target, source) {
            Some(other) if other == source => continue,
            Some(other) => {
                return Err(Error::invalid_input(format!(
                    "two branches sent as '{target}': '{other}' and '{source}'"
                )));
            }
            None => {}
        }
        let tip = src.require_branch(source)?;
        out.push((source.to_string(), target.to_string(), tip));
    }
    Ok(out)
}

/// Whether `old` is `tip` or one of its ancestors in `snap` (`tip` is in it).
fn contains(snap: &Snapshot, tip: CommitId, old: CommitId) -> Result<bool> {
    if tip == old {
        return Ok(true);
    }
    if !snap.has_commit(&old)? {
        return Ok(false);
    }
    Ok(ancestry::merge_base(snap, old, tip)? == Some(old))
}

/// The commits reachable from `tips` that the receiver lacks, oldest first (every commit is
/// newer than everything it links to, so parents come before children).
fn missing_commits(
    src: &Snapshot,
    dst: &Snapshot,
    tips: &[CommitId],
    options: &SyncOptions,
) -> Result<Vec<(CommitId, Commit)>> {
    let mut seen = IdSet::default();
    let mut out = Vec::new();
    let mut frontier: Vec<CommitId> = tips.to_vec();
    let mut walked_chains = false;
    let report = |found: usize| {
        if let Some(progress) = options.on_progress {
            progress(SyncProgress::Finding {
                commits: found as u64,
            });
        }
    };
    while !frontier.is_empty() {
        frontier.retain(|id| seen.insert(*id));
        let present = dst.has_commits(&frontier)?;
        let lacking: Vec<CommitId> = frontier
            .iter()
            .zip(present)
            .filter(|(_, p)| !p)
            .map(|(id, _)| *id)
            .collect();
        if !walked_chains && !lacking.is_empty() && src.batched() {
            // A database sender reads each lacking tip's first-parent chain in one query;
            // the walk below then finds those commits without a round trip each.
            for tip in &lacking {
                src.first_parents(*tip, None)?;
            }
            walked_chains = true;
        }
        let mut next = Vec::new();
        for id in lacking {
            let commit = src.commit(&id)?;
            next.extend(commit.links());
            out.push((id, commit));
            if (out.len() as u64).is_multiple_of(PROGRESS_EVERY) {
                report(out.len());
            }
        }
        frontier = next;
    }
    report(out.len());
    out.sort_by_key(|(id, c)| (c.timestamp_us, *id.as_bytes()));
    Ok(out)
}

/// Writes one batch of commits and the blobs the receiver lacks in one transaction; returns
/// how many blobs it sent. `sent` commits of `total` were stored before it (for progress).
fn send_batch(
    src: &Snapshot,
    to: &Store,
    batch: &[(CommitId, Commit)],
    sent: u64,
    total: u64,
    options: &SyncOptions,
) -> Result<u64> {
    let report = |done: u64| {
        if let Some(progress) = options.on_progress {
            progress(SyncProgress::Sending { done, total });
        }
    };
    let mut blob_ids: Vec<BlobId> = batch.iter().filter_map(|(_, c)| c.blob).collect();
    blob_ids.sort_by_key(|b| *b.as_bytes());
    blob_ids.dedup();
    let lacking: Vec<BlobId> = {
        let dst = to.read()?;
        let present = dst.has_blobs(&blob_ids)?;
        blob_ids
            .into_iter()
            .zip(present)
            .filter(|(_, p)| !p)
            .map(|(id, _)| id)
            .collect()
    };
    let copies = src.blob_copies(&lacking)?;
    let mut w = to.write()?;
    {
        let mut objects = w.objects()?;
        for (id, copy) in lacking.iter().zip(&copies) {
            objects.put_copy(id, copy)?;
        }
        for (n, (id, commit)) in (1..).zip(batch) {
            // Encoded again here: a commit is stored only under the id its bytes hash to.
            if objects.put_commit(commit)? != *id {
                return Err(crate::storage::store::verify::damaged(
                    "commit",
                    id.to_hex(),
                    "its bytes do not hash to its id",
                ));
            }
            if u64::is_multiple_of(n, PROGRESS_EVERY) {
                report(sent + n);
            }
        }
    }
    w.commit()?;
    report(sent + batch.len() as u64);
    Ok(lacking.len() as u64)
}
