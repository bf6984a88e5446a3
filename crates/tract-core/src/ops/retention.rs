//! Applying the retention policy ([`crate::retention_policy`]) in `gc`'s write transaction: what
//! each rule removes is planned from every object of the store, then applied there (or only
//! reported, in a dry run). Deletions come first (their branches then cover nothing), then
//! replacements; a branch or a result is taken by the first rule that takes it.
//!
//! A replaced tool result's blob becomes a tombstone, as a redaction leaves (every id stays
//! valid; the view shows the summary or the placeholder), whose reason names the rule; a
//! deleted branch's move is logged with the rule's name. Nothing a rule does not name goes:
//! content a branch the rule does not cover reaches (or a pinned one, or a detached `HEAD`)
//! is kept, and counted as kept.

use crate::agents;
use crate::clock::rfc3339_micros;
use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId};
use crate::object::{HOOK_SUMMARY_NOTE, Op, Role};
use crate::ops::reach::{IdMap, IdSet, Objects};
use crate::refs::HeadRef;
use crate::retention_policy::{
    RETENTION_REASON, Replacement, RetentionPolicy, RetentionRule, RuleAction,
};
use crate::storage::codec;
use crate::storage::store::meta::encode_small;
use crate::storage::store::verify::Tombstone;
use crate::storage::store::writer::Writer;
use crate::tokens;
use crate::view::checkpoint;

/// A day in microseconds.
const DAY_US: u64 = 24 * 3600 * 1_000_000;

/// What one rule removed (or, in a dry run, would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleOutcome {
    /// The rule's name.
    pub rule: String,
    /// Branches deleted.
    pub deleted: Vec<DeletedBranch>,
    /// Tool results replaced (one per blob: every commit carrying it shows the replacement).
    pub replaced: Vec<ReplacedResult>,
    /// Bytes freed: a replaced result's record and chunks, less its tombstone, at once; the
    /// objects only a deleted branch reached when `gc` collects them (this run with no grace
    /// period, else once the deletion's reflog entry expires).
    pub bytes: u64,
    /// What the rule covers but kept, and why.
    pub kept: Kept,
}

/// A branch a rule deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedBranch {
    /// Its name.
    pub name: String,
    /// Its tip when deleted (its reflog entry names it).
    pub tip: CommitId,
    /// When it last moved: its tip commit's time or its newest reflog entry's, the later.
    pub idle_since_us: u64,
}

/// A tool result a rule replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplacedResult {
    /// The blob whose content was removed.
    pub blob: BlobId,
    /// The commits carrying it (a branch reaches), oldest first.
    pub commits: Vec<CommitId>,
    /// The summary whose text replaced it (`None`: a placeholder did).
    pub summary: Option<CommitId>,
}

/// What a rule covers but kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    /// Branches it covers that are pinned.
    pub pinned: u64,
    /// An idle branch kept because the store's `HEAD` is on it.
    pub current: u64,
    /// Old tool results kept because a branch it does not cover (or a pinned one, or a
    /// detached `HEAD`) reaches them.
    pub shared: u64,
    /// Old tool results kept among the newest messages of a view (`keep_newest`).
    pub newest: u64,
    /// Old tool results kept for want of a summary (`with: summary`).
    pub unsummarized: u64,
}

/// The plan: each rule's outcome, and the tombstones to write.
pub(crate) struct Plan {
    /// One per rule, in the policy's order.
    pub rules: Vec<RuleOutcome>,
    tombstones: Vec<(BlobId, Tombstone, u32)>,
}

impl Plan {
    /// Whether the plan removes nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.rules
            .iter()
            .all(|r| r.deleted.is_empty() && r.replaced.is_empty())
    }

    /// Each rule's outcome, the tombstones let go of.
    pub(crate) fn into_rules(self) -> Vec<RuleOutcome> {
        self.rules
    }

    /// The branches it deletes, with their tips.
    pub(crate) fn deleted(&self) -> impl Iterator<Item = &DeletedBranch> {
        self.rules.iter().flat_map(|r| &r.deleted)
    }
}

/// What each rule of `policy` removes now (`now_us`), read from `objects` and `w`.
pub(crate) fn plan(
    w: &Writer,
    objects: &Objects,
    policy: &RetentionPolicy,
    now_us: u64,
) -> Result<Plan> {
    let mut rules: Vec<RuleOutcome> = policy
        .rules
        .iter()
        .map(|r| RuleOutcome {
            rule: r.name.clone(),
            ..Default::default()
        })
        .collect();
    let head = w.head_ref()?;
    let detached = match &head {
        HeadRef::Detached(id) => Some(*id),
        HeadRef::Branch(_) => None,
    };
    let mut branches = w.branches()?;
    for (rule, out) in policy.rules.iter().zip(&mut rules) {
        if let RuleAction::DeleteIdleBranches(d) = rule.action()? {
            let cutoff = now_us.saturating_sub(u64::from(d.idle_days).saturating_mul(DAY_US));
            let mut kept = Vec::new();
            for (name, tip) in branches {
                let due = rule.covers(&name) && {
                    if policy.pinned(&name) {
                        out.kept.pinned += 1;
                        false
                    } else {
                        let idle_since = idle_since(w, objects, &name, &tip)?;
                        if idle_since > cutoff {
                            false
                        } else if matches!(&head, HeadRef::Branch(b) if *b == name) {
                            out.kept.current += 1;
                            false
                        } else {
                            out.deleted.push(DeletedBranch {
                                name: name.clone(),
                                tip,
                                idle_since_us: idle_since,
                            });
                            true
                        }
                    }
                };
                if !due {
                    kept.push((name, tip));
                }
            }
            branches = kept;
        }
    }
    deletion_bytes(objects, &branches, detached, &mut rules)?;

    let summaries = summaries(objects);
    let mut tombstones = Vec::new();
    let mut taken = IdSet::default();
    for (rule, out) in policy.rules.iter().zip(&mut rules) {
        if let RuleAction::ReplaceToolResults(r) = rule.action()? {
            let scope = Scope::of(objects, policy, rule, &branches, detached, out)?;
            let newest = match r.keep_newest {
                Some(n) => scope.newest(w, objects, n as usize)?,
                None => IdSet::default(),
            };
            let cutoff = r
                .older_than_days
                .map(|d| now_us.saturating_sub(u64::from(d).saturating_mul(DAY_US)));
            for (blob, (time, commits)) in scope.carried(objects) {
                let record = objects.blobs.get(blob.as_bytes());
                if taken.contains(blob.as_bytes()) || record.is_none_or(|r| r.tombstone) {
                    continue;
                }
                if cutoff.is_some_and(|c| time > c) {
                    continue;
                }
                let (message, _) = w.blob(&blob)?;
                if message.role != Role::Tool {
                    continue;
                }
                let is_summary = commits.iter().any(|c| summary_op(objects, c));
                if r.with == Replacement::Summary && is_summary {
                    // A summary is what stands in for results in this mode, not one of them.
                    continue;
                }
                if scope.protected_blobs.contains(blob.as_bytes()) {
                    out.kept.shared += 1;
                    continue;
                }
                if newest.contains(blob.as_bytes()) {
                    out.kept.newest += 1;
                    continue;
                }
                let (summary, text) = match r.with {
                    Replacement::Placeholder => (
                        None,
                        format!(
                            "[tract] This tool result was removed by retention rule '{}'.",
                            rule.name
                        ),
                    ),
                    Replacement::Summary => {
                        match summary_of(w, objects, &summaries, &commits, &taken)? {
                            Some(found) => (Some(found.0), found.1),
                            None => {
                                out.kept.unsummarized += 1;
                                continue;
                            }
                        }
                    }
                };
                let placeholder = message.stand_in(text);
                let payload = tokens::count_message(&placeholder);
                let reason = match (&summary, r.older_than_days) {
                    (Some(s), _) => format!(
                        "{RETENTION_REASON}'{}': replaced by its summary {}",
                        rule.name,
                        s.short()
                    ),
                    (None, Some(d)) => format!(
                        "{RETENTION_REASON}'{}': a tool result older than {d} days",
                        rule.name
                    ),
                    (None, None) => format!(
                        "{RETENTION_REASON}'{}': a tool result outside the newest messages",
                        rule.name
                    ),
                };
                let tombstone = Tombstone {
                    redacted_at_us: now_us,
                    reason,
                    placeholder,
                };
                let stone = codec::tombstone(payload, &encode_small(&tombstone)?).len() as u64;
                out.bytes += objects.blob_bytes(&blob).saturating_sub(stone);
                taken.insert(*blob.as_bytes());
                out.replaced.push(ReplacedResult {
                    blob,
                    commits,
                    summary,
                });
                tombstones.push((blob, tombstone, payload));
            }
        }
    }
    // A chunk goes with the last blob made of it.
    let still_used = objects.chunks_of(objects.blobs.keys().filter(|b| !taken.contains(*b)));
    let mut counted = IdSet::default();
    for out in &mut rules {
        let chunks: Vec<[u8; 32]> = objects
            .chunks_of(out.replaced.iter().map(|r| r.blob.as_bytes()))
            .into_iter()
            .filter(|c| !still_used.contains(c) && counted.insert(*c))
            .collect();
        out.bytes += objects.chunk_bytes(&chunks);
    }
    Ok(Plan { rules, tombstones })
}

/// Applies `plan` in `w`: the branches deleted (each move logged with its rule), the results'
/// blobs replaced by their tombstones.
pub(crate) fn apply(w: &mut Writer, plan: &Plan) -> Result<()> {
    for out in &plan.rules {
        for d in &out.deleted {
            let reason = format!(
                "{RETENTION_REASON}'{}': deleted, idle since {}",
                out.rule,
                rfc3339_micros(d.idle_since_us)
            );
            w.set_branch(&d.name, None, &reason)?;
            w.set_branch_stats(&d.name, None)?;
            w.set_meta(&checkpoint::branch_key(&d.name), None)?;
            agents::set(w, &d.name, None)?;
        }
    }
    for (blob, tombstone, payload) in &plan.tombstones {
        w.redact_blob(blob, tombstone, *payload)?;
    }
    Ok(())
}

/// When branch `name` (at `tip`) last moved: its tip's time or its newest reflog entry's.
fn idle_since(w: &Writer, objects: &Objects, name: &str, tip: &CommitId) -> Result<u64> {
    let Some((c, _)) = objects.commits.get(tip.as_bytes()) else {
        return Err(Error::MissingCommit { commit: *tip });
    };
    let moved = w.last_move(name)?.map_or(0, |e| e.timestamp_us);
    Ok(c.timestamp_us.max(moved))
}

/// Counts into each deletion rule the bytes of what only its deleted branches reach: no branch
/// kept, no detached `HEAD` (an object two rules' branches share is counted in the first).
fn deletion_bytes(
    objects: &Objects,
    kept: &[(String, CommitId)],
    detached: Option<CommitId>,
    rules: &mut [RuleOutcome],
) -> Result<()> {
    let kept_commits = objects.reach(kept.iter().map(|(_, t)| *t).chain(detached))?;
    let kept_blobs = objects.blobs_of(&kept_commits);
    let kept_chunks = objects.chunks_of(&kept_blobs);
    let mut seen = IdSet::default();
    let mut blobs_seen = IdSet::default();
    let mut chunks_seen = IdSet::default();
    for out in rules.iter_mut().filter(|r| !r.deleted.is_empty()) {
        let tips: Vec<CommitId> = out.deleted.iter().map(|d| d.tip).collect();
        let added = objects.reach_into(&mut seen, tips, |c| !kept_commits.contains(c))?;
        let mut bytes: u64 = added
            .iter()
            .filter_map(|c| objects.commits.get(c))
            .map(|(_, n)| *n as u64)
            .sum();
        let blobs: Vec<[u8; 32]> = objects
            .blobs_of(&added)
            .into_iter()
            .filter(|b| !kept_blobs.contains(b) && blobs_seen.insert(*b))
            .collect();
        bytes += blobs
            .iter()
            .map(|b| objects.blob_bytes(&BlobId::from_bytes(*b)))
            .sum::<u64>();
        let chunks: Vec<[u8; 32]> = objects
            .chunks_of(&blobs)
            .into_iter()
            .filter(|c| !kept_chunks.contains(c) && chunks_seen.insert(*c))
            .collect();
        out.bytes += bytes + objects.chunk_bytes(&chunks);
    }
    Ok(())
}

/// A replacement rule's reach: the branches it covers, and the blobs what it does not cover
/// reaches.
struct Scope {
    /// The branches covered, with their tips.
    covered: Vec<(String, CommitId)>,
    /// The commits the covered branches reach.
    reached: IdSet,
    /// The blobs a branch not covered, a pinned one or a detached `HEAD` reaches.
    protected_blobs: IdSet,
}

impl Scope {
    fn of(
        objects: &Objects,
        policy: &RetentionPolicy,
        rule: &RetentionRule,
        branches: &[(String, CommitId)],
        detached: Option<CommitId>,
        out: &mut RuleOutcome,
    ) -> Result<Scope> {
        let mut covered = Vec::new();
        let mut others = Vec::new();
        for (name, tip) in branches {
            let covers = rule.covers(name);
            let pinned = covers && policy.pinned(name);
            out.kept.pinned += u64::from(pinned);
            if covers && !pinned {
                covered.push((name.clone(), *tip));
            } else {
                others.push(*tip);
            }
        }
        let protected = objects.reach(others.into_iter().chain(detached))?;
        Ok(Scope {
            reached: objects.reach(covered.iter().map(|(_, t)| *t))?,
            protected_blobs: objects.blobs_of(&protected),
            covered,
        })
    }

    /// Each blob the covered branches' commits carry: the newest of those commits' times,
    /// and the commits, oldest first. In the order of their oldest commit.
    fn carried(&self, objects: &Objects) -> Vec<(BlobId, (u64, Vec<CommitId>))> {
        let mut by_blob: IdMap<(u64, Vec<(u64, CommitId)>)> = IdMap::default();
        for id in &self.reached {
            if let Some((c, _)) = objects.commits.get(id)
                && let Some(b) = c.blob
            {
                let e = by_blob.entry(*b.as_bytes()).or_default();
                e.0 = e.0.max(c.timestamp_us);
                e.1.push((c.timestamp_us, CommitId::from_bytes(*id)));
            }
        }
        let mut out: Vec<(BlobId, (u64, Vec<CommitId>))> = by_blob
            .into_iter()
            .map(|(b, (time, mut commits))| {
                commits.sort();
                let ids = commits.into_iter().map(|(_, id)| id).collect();
                (BlobId::from_bytes(b), (time, ids))
            })
            .collect();
        out.sort_by_key(|(b, (_, commits))| (commits.first().copied(), *b));
        out
    }

    /// The blobs of the newest `n` messages of each covered branch's view, with the versions
    /// those positions replaced.
    fn newest(&self, w: &Writer, objects: &Objects, n: usize) -> Result<IdSet> {
        let mut out = IdSet::default();
        for (name, tip) in &self.covered {
            let view = checkpoint::build(w, Some(*tip), checkpoint::of_branch(w, name)?)?;
            let entries = view.entries();
            for e in &entries[entries.len().saturating_sub(n)..] {
                out.insert(*e.blob.as_bytes());
                out.extend(objects.blobs_of(e.versions().iter().map(|v| v.as_bytes())));
            }
        }
        Ok(out)
    }
}

/// Each commit summarized to the commits holding its summary: a hook's summary edit of it, a
/// compression with it among its sources.
fn summaries(objects: &Objects) -> IdMap<Vec<CommitId>> {
    let mut out: IdMap<Vec<CommitId>> = IdMap::default();
    for (id, (c, _)) in &objects.commits {
        let targets: &[CommitId] = match &c.op {
            Op::Edit { target } if is_hook_summary(c) => std::slice::from_ref(target),
            Op::Compress { sources, .. } => sources,
            _ => &[],
        };
        for t in targets {
            out.entry(*t.as_bytes())
                .or_default()
                .push(CommitId::from_bytes(*id));
        }
    }
    out
}

fn is_hook_summary(c: &crate::object::Commit) -> bool {
    c.message
        .as_deref()
        .is_some_and(|n| n.starts_with(HOOK_SUMMARY_NOTE))
}

/// Whether commit `id` is a summary (a hook's summary edit, a compression).
fn summary_op(objects: &Objects, id: &CommitId) -> bool {
    objects.commits.get(id.as_bytes()).is_some_and(|(c, _)| {
        matches!(c.op, Op::Compress { .. }) || matches!(c.op, Op::Edit { .. }) && is_hook_summary(c)
    })
}

/// The newest summary of any of `commits` whose content is still there, with its text.
fn summary_of(
    w: &Writer,
    objects: &Objects,
    summaries: &IdMap<Vec<CommitId>>,
    commits: &[CommitId],
    taken: &IdSet,
) -> Result<Option<(CommitId, String)>> {
    let mut found: Vec<(u64, CommitId, BlobId)> = commits
        .iter()
        .filter_map(|c| summaries.get(c.as_bytes()))
        .flatten()
        .filter_map(|s| {
            let (c, _) = objects.commits.get(s.as_bytes())?;
            let b = c.blob?;
            let record = objects.blobs.get(b.as_bytes())?;
            (!record.tombstone && !taken.contains(b.as_bytes())).then_some((c.timestamp_us, *s, b))
        })
        .collect();
    found.sort();
    match found.pop() {
        None => Ok(None),
        Some((_, s, b)) => Ok(Some((s, w.blob(&b)?.0.content.text().into_owned()))),
    }
}
