//! Sync by hash: `push`, `pull` and `clone` between any two stores (files, PostgreSQL).
//!
//! Only what the receiver lacks travels: from each branch tip it lacks, the walk follows a
//! commit's links (parents, edit target, compressed sources, merge base) and stops at commits
//! the receiver has (a store that holds a commit holds everything it reaches). Every object is
//! read through verified reads and hashed again as the receiver stores it. Objects go in
//! batches, oldest first, each batch one transaction, so an interrupted transfer leaves the
//! receiver valid (what it received reaches only what it had or received before) and a second
//! run sends only the rest. Branches move last, in one transaction, and only by fast-forward:
//! a receiver's tip that the sender's history does not contain is refused as
//! [`Error::Diverged`], unless forced (the old tip stays in the reflog).

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId, IdHasher};
use crate::object::Commit;
use crate::refs::HeadRef;
use crate::storage::store::snapshot::Snapshot;
use crate::storage::store::{OpenMode, Store, StoreOptions};
use crate::tools::policy;
use crate::view::ancestry;
use crate::view::revision::BranchName;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::path::Path;

/// Commits written per transaction.
const BATCH: usize = 2000;

/// The settings `settings` sends: the tool-summarization policy and the retention policy.
const SETTINGS: [&str; 2] = [policy::SETTING, crate::retention::SETTING];

/// What to send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncOptions {
    /// The branches to send (`None`: every branch of the sender).
    pub branches: Option<Vec<BranchName>>,
    /// Move a receiver's branch that has diverged (its old tip stays in the reflog).
    pub force: bool,
    /// Send the store's settings (the tool-summarization and retention policies) too.
    pub settings: bool,
}

/// What one branch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchSync {
    /// The branch.
    pub name: String,
    /// Its tip in the receiver before (`None`: it had no such branch).
    pub old: Option<CommitId>,
    /// Its tip now.
    pub new: CommitId,
    /// Whether it was moved although it had diverged (`force`).
    pub forced: bool,
}

impl BranchSync {
    /// Whether the receiver already had this tip.
    pub fn up_to_date(&self) -> bool {
        self.old == Some(self.new)
    }
}

/// What a transfer sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Every branch sent, by name.
    pub branches: Vec<BranchSync>,
    /// Commits the receiver did not have.
    pub commits: u64,
    /// Blobs the receiver did not have.
    pub blobs: u64,
    /// Whether the settings were sent.
    pub settings: bool,
}

type IdSet = HashSet<CommitId, BuildHasherDefault<IdHasher>>;

/// Sends branches (every one, or `options.branches`) of `from` and the history they reach to
/// the store at `dest` (a file or a URL; it must be a tract store): only the objects it lacks,
/// each hashed again as it is stored; its branches move only by fast-forward
/// ([`Error::Diverged`] otherwise, unless `options.force`). `dest` opens with `from`'s options.
pub fn push(from: &Store, dest: impl AsRef<Path>, options: &SyncOptions) -> Result<SyncReport> {
    let to = Store::open_with(dest, OpenMode::Existing, from.options())?;
    let reason = format!("push from {}", from.location().unwrap_or_default());
    transfer(from, &to, options, &reason)
}

/// Receives branches (every one, or `options.branches`) and their history from the store at
/// `src` into `into`, as [`push`] sends them.
pub fn pull(into: &Store, src: impl AsRef<Path>, options: &SyncOptions) -> Result<SyncReport> {
    let from = Store::open_with(src, OpenMode::Existing, into.options())?;
    let reason = format!("pull from {}", from.location().unwrap_or_default());
    transfer(&from, into, options, &reason)
}

/// Copies the store at `src` into a new store at `dest` (a file or a URL that holds no store
/// yet): every branch with its history, the settings, and `HEAD`. Ids are identical. Returns
/// the new store.
pub fn clone_store(
    src: impl AsRef<Path>,
    dest: impl AsRef<Path>,
    options: StoreOptions,
) -> Result<(Store, SyncReport)> {
    let from = Store::open_with(src, OpenMode::Existing, options)?;
    let to = Store::open_with(dest, OpenMode::CreateIfMissing, options)?;
    let reason = format!("clone from {}", from.location().unwrap_or_default());
    let report = clone(&from, &to, &reason)?;
    Ok((to, report))
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
    let tips = chosen_tips(&src, options)?;
    let (missing, before) = {
        let dst = to.read()?;
        let before: Vec<Option<CommitId>> = tips
            .iter()
            .map(|(name, _)| dst.branch(name))
            .collect::<Result<_>>()?;
        (missing_commits(&src, &dst, &tips)?, before)
    };
    // A diverged branch is refused before anything travels.
    let mut forced = Vec::with_capacity(tips.len());
    for ((name, tip), old) in tips.iter().zip(&before) {
        let diverged = match old {
            Some(old) => !contains(&src, *tip, *old)?,
            None => false,
        };
        if diverged
            && !options.force
            && let Some(old) = old
        {
            return Err(Error::Diverged {
                branch: name.clone(),
                receiver: *old,
                sender: *tip,
            });
        }
        forced.push(diverged);
    }
    let mut report = SyncReport::default();
    for batch in missing.chunks(BATCH) {
        report.blobs += send_batch(&src, to, batch)?;
        report.commits += batch.len() as u64;
    }
    // The branches, in one transaction, each only if it is still where it was read.
    let mut settings = Vec::new();
    if options.settings {
        for name in SETTINGS {
            settings.push((name, src.setting(name)?));
        }
    }
    let mut w = to.write()?;
    for (((name, tip), old), forced) in tips.iter().zip(&before).zip(forced) {
        let now = w.branch(name)?;
        if now != *old {
            return Err(Error::HeadMoved {
                branch: name.clone(),
                expected: *old,
                actual: now,
            });
        }
        if *old != Some(*tip) {
            w.set_branch(name, Some(*tip), reason)?;
            w.set_branch_stats(name, None)?;
        }
        report.branches.push(BranchSync {
            name: name.clone(),
            old: *old,
            new: *tip,
            forced,
        });
    }
    for (name, value) in &settings {
        w.set_setting(name, value.as_deref())?;
        report.settings = true;
    }
    w.commit()?;
    Ok(report)
}

/// Copies a store into a new one at `to` (which must not hold a store yet): every branch, the
/// settings, and `HEAD` on the branch the source's `HEAD` names.
pub(crate) fn clone(from: &Store, to: &Store, reason: &str) -> Result<SyncReport> {
    if !to.read()?.branches()?.is_empty() {
        return Err(Error::invalid_op(format!(
            "{} already holds a store with branches; clone into a new one, or pull",
            to.location().unwrap_or_else(|| "the receiver".into())
        )));
    }
    let options = SyncOptions {
        branches: None,
        force: false,
        settings: true,
    };
    let report = transfer(from, to, &options, reason)?;
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
            if let Some(stats) = src.branch_stats(&b.name)?.filter(|s| s.tip == b.new) {
                w.set_branch_stats(&b.name, Some(&stats))?;
            }
        }
    }
    w.commit()?;
    Ok(report)
}

/// The branches to send and their tips in the sender.
fn chosen_tips(src: &Snapshot, options: &SyncOptions) -> Result<Vec<(String, CommitId)>> {
    match &options.branches {
        None => src.branches(),
        Some(names) => names
            .iter()
            .map(|b| Ok((b.as_str().to_string(), src.require_branch(b.as_str())?)))
            .collect(),
    }
}

/// Whether `old` is `tip` or one of its ancestors in the sender.
fn contains(src: &Snapshot, tip: CommitId, old: CommitId) -> Result<bool> {
    if tip == old {
        return Ok(true);
    }
    if !src.has_commit(&old)? {
        return Ok(false);
    }
    Ok(ancestry::merge_base(src, old, tip)? == Some(old))
}

/// The commits reachable from `tips` that the receiver lacks, oldest first (every commit is
/// newer than everything it links to, so parents come before children).
fn missing_commits(
    src: &Snapshot,
    dst: &Snapshot,
    tips: &[(String, CommitId)],
) -> Result<Vec<(CommitId, Commit)>> {
    let mut seen = IdSet::default();
    let mut out = Vec::new();
    let mut frontier: Vec<CommitId> = tips.iter().map(|(_, t)| *t).collect();
    let mut walked_chains = false;
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
        }
        frontier = next;
    }
    out.sort_by_key(|(id, c)| (c.timestamp_us, *id.as_bytes()));
    Ok(out)
}

/// Writes one batch of commits and the blobs the receiver lacks in one transaction; returns
/// how many blobs it sent.
fn send_batch(src: &Snapshot, to: &Store, batch: &[(CommitId, Commit)]) -> Result<u64> {
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
        for (id, commit) in batch {
            // Encoded again here: a commit is stored only under the id its bytes hash to.
            if objects.put_commit(commit)? != *id {
                return Err(crate::storage::store::verify::damaged(
                    "commit",
                    id.to_hex(),
                    "its bytes do not hash to its id",
                ));
            }
        }
    }
    w.commit()?;
    Ok(lacking.len() as u64)
}
