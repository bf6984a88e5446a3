//! Garbage collection: removing the objects nothing reaches any more. What a branch, `HEAD` or
//! a reflog entry younger than the grace period reaches stays (reflog entries older than it
//! are expired first, as git's `reflog expire` does); everything runs in one write
//! transaction, so a writer in another process waits for it and nothing it adds can be taken.
//! View checkpoints are derived data: all but the one each branch names go with it.

use crate::error::Result;
use crate::id::CommitId;
use crate::ops::reach::Objects;
use crate::ops::retention::{self, RuleOutcome};
use crate::refs::HeadRef;
use crate::retention_policy::RetentionPolicy;
use crate::storage::backend::ObjectTable;
use crate::storage::store::Store;
use crate::storage::store::meta::setting_key;
use crate::view::checkpoint;
use std::collections::HashSet;
use std::time::Duration;

/// How long reflog entries keep what they name when nothing else does: 14 days.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(14 * 24 * 3600);

/// What `gc` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcOutcome {
    /// Commits removed.
    pub commits: u64,
    /// Blobs removed.
    pub blobs: u64,
    /// Chunks removed.
    pub chunks: u64,
    /// Bytes of records removed.
    pub bytes: u64,
    /// Reflog entries expired (older than the grace period).
    pub reflog_entries: u64,
    /// View checkpoints removed: every one but the newest of each branch (only that one is
    /// read), and those of commits removed.
    pub checkpoints: u64,
    /// Checkpoint chunks removed, no kept checkpoint using them.
    pub checkpoint_chunks: u64,
    /// What each rule of the retention policy removed, in the policy's order (empty without
    /// a policy).
    pub retention: Vec<RuleOutcome>,
    /// Whether this was a dry run: the figures say what would go, nothing went.
    pub dry_run: bool,
}

/// How `gc` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcOptions {
    /// How long reflog entries keep what they name ([`DEFAULT_GRACE`]; zero prunes now).
    pub grace: Duration,
    /// Only report what would go: nothing changes (view checkpoints are not counted).
    pub dry_run: bool,
}

impl Default for GcOptions {
    fn default() -> Self {
        GcOptions {
            grace: DEFAULT_GRACE,
            dry_run: false,
        }
    }
}

/// Applies the store's retention policy, then removes the objects nothing reaches: not a
/// branch, not `HEAD`, not a reflog entry younger than `grace` (older entries are expired;
/// [`DEFAULT_GRACE`] is 14 days, zero prunes now). See [`gc_with`].
pub fn gc(store: &Store, grace: Duration) -> Result<GcOutcome> {
    gc_with(
        store,
        &GcOptions {
            grace,
            dry_run: false,
        },
    )
}

/// Applies the store's retention policy (each rule's branches deleted and tool results
/// replaced, nothing without a rule: [`crate::retention_policy`]), then removes the objects nothing
/// reaches any more, as [`gc`] says; with `dry_run`, only reports what both would do. One
/// write transaction: another process's writes wait, and nothing they add is removed. Refuses
/// (changing nothing) on a store where an object it must read does not verify (`fsck` first):
/// a damaged commit could hide what it reaches.
pub fn gc_with(store: &Store, options: &GcOptions) -> Result<GcOutcome> {
    let mut w = store.write()?;
    let now = w.clock().now_us();
    let grace = u64::try_from(options.grace.as_micros()).unwrap_or(u64::MAX);
    let mut out = GcOutcome {
        dry_run: options.dry_run,
        ..Default::default()
    };
    let policy = RetentionPolicy::decode(
        w.meta(&setting_key(crate::retention_policy::SETTING))?
            .as_deref(),
    )?;
    let mut objects = Objects::scan(&mut w)?;
    let mut replaced = false;
    let mut deleted: HashSet<String> = HashSet::new();
    if !policy.is_empty() {
        let plan = retention::plan(&w, &objects, &policy, now)?;
        deleted = plan.deleted().map(|d| d.name.clone()).collect();
        replaced = plan.rules.iter().any(|r| !r.replaced.is_empty());
        if !options.dry_run && !plan.is_empty() {
            retention::apply(&mut w, &plan)?;
        }
        out.retention = plan.into_rules();
        if replaced && !options.dry_run {
            // Tombstones took the place of blob records, and their chunks went: read again,
            // the old reading let go of first (at a million commits it is most of the memory).
            drop(objects);
            objects = Objects::scan(&mut w)?;
        }
    }

    // Read now, after the rules: with no grace period, the entries they logged expire too.
    let cutoff = w.clock().now_us().saturating_sub(grace);
    let mut roots: Vec<CommitId> = Vec::new();
    if options.dry_run {
        let expiry = w.reflog_expiry(cutoff)?;
        // With no grace period, the deletions' own entries would expire too.
        let logged = if grace == 0 { deleted.len() } else { 0 };
        out.reflog_entries = (expiry.expired.len() + logged) as u64;
        roots.extend(expiry.kept);
        for (name, tip) in w.branches()? {
            // A branch deleted now is named by the deletion's reflog entry, which the grace
            // period keeps.
            if !deleted.contains(&name) || grace > 0 {
                roots.push(tip);
            }
        }
    } else {
        let (expired, kept) = w.expire_reflog(cutoff)?;
        out.reflog_entries = expired;
        roots.extend(kept);
        roots.extend(w.branches()?.into_iter().map(|(_, tip)| tip));
    }
    if let HeadRef::Detached(id) = w.head_ref()? {
        roots.push(id);
    }
    let reached = objects.reach(roots)?;
    let blobs_reached = objects.blobs_of(&reached);
    let chunks_reached = objects.chunks_of(&blobs_reached);
    let dead_commits: Vec<([u8; 32], usize)> = objects
        .commits
        .iter()
        .filter(|(id, _)| !reached.contains(*id))
        .map(|(id, (_, n))| (*id, *n))
        .collect();
    let dead_blobs: Vec<([u8; 32], usize)> = objects
        .blobs
        .iter()
        .filter(|(id, _)| !blobs_reached.contains(*id))
        .map(|(id, r)| (*id, r.len))
        .collect();
    let dead_chunks: Vec<([u8; 32], usize)> = objects
        .chunks
        .iter()
        .filter(|(id, _)| !chunks_reached.contains(*id))
        .map(|(id, n)| (*id, *n))
        .collect();
    for (table, dead, count) in [
        (ObjectTable::Commits, &dead_commits, &mut out.commits),
        (ObjectTable::Blobs, &dead_blobs, &mut out.blobs),
        (ObjectTable::Chunks, &dead_chunks, &mut out.chunks),
    ] {
        let ids: Vec<[u8; 32]> = dead.iter().map(|(id, _)| *id).collect();
        if !options.dry_run {
            w.remove_objects(table, &ids)?;
        }
        *count = ids.len() as u64;
        out.bytes += dead.iter().map(|(_, n)| *n as u64).sum::<u64>();
    }
    if options.dry_run {
        // Dropped uncommitted: nothing changed.
        return Ok(out);
    }
    // The usage ledger's rows go with their commits.
    for (id, _) in &dead_commits {
        w.set_meta(&crate::view::ledger::key(&CommitId::from_bytes(*id)), None)?;
    }
    let branches: HashSet<String> = w.branches()?.into_iter().map(|(n, _)| n).collect();
    let collected = checkpoint::collect(&mut w, &branches, |c| reached.contains(c.as_bytes()))?;
    out.checkpoints = collected.checkpoints;
    out.checkpoint_chunks = collected.chunks;
    // Counts kept for branches that no longer exist go too.
    for name in w.counted_branches()? {
        if !branches.contains(&name) {
            w.set_branch_stats(&name, None)?;
        }
    }
    if !dead_commits.is_empty() {
        w.count_collection()?;
    }
    let removed: Vec<CommitId> = dead_commits
        .iter()
        .map(|(id, _)| CommitId::from_bytes(*id))
        .collect();
    w.commit()?;
    // Removed text leaves the search index before gc returns (a replaced result's too).
    if !removed.is_empty() || replaced {
        crate::storage::search::keeper::after_removal(store, Some(&removed))?;
    }
    Ok(out)
}
