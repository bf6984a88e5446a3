//! The write path: every commit tract makes goes through [`write`] (or [`write_edits`]).
//!
//! Slow work (validating, encoding, counting tokens) happens before the write transaction
//! starts ([`Prepared`]). Inside it, the tip of the handle's branch is read, the commits are
//! written as one chain on top of it, the branch moves once (one reflog entry per write), the
//! transaction commits durably (shared with other threads' writes: group commit), and the
//! handle's cached view is extended.

use crate::clock::Clock;
use crate::error::{BatchPosition, Error, Result};
use crate::id::CommitId;
use crate::object::{Commit, MergeStrategy, Message, Op};
use crate::refs::{Head, HeadRef};
use crate::repo::{Repo, Target};
use crate::scrubbing::Scrubber;
use crate::stats::{BranchStats, Tally};
use crate::storage::group::JobError;
use crate::storage::store::snapshot::Snapshot;
use crate::storage::store::writer::{Objects, Writer};
use crate::tokens;
use crate::view::cache::ViewCache;
use crate::view::info::CommitInfo;
use crate::view::{View, checkpoint, ledger};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Options for one write.
#[derive(Debug, Clone, Default)]
pub struct AppendOptions {
    /// Compare-and-swap: fail with [`Error::HeadMoved`] unless `HEAD` is at this commit
    /// (`Some(None)`: unless the branch has no commits yet).
    pub expected_head: Option<Option<CommitId>>,
    /// A note stored on each commit that has none of its own.
    pub note: Option<String>,
}

/// What one commit of a chain does: an operation, or an edit of the commit written `k`-th in
/// the same chain (its id is known only once it is written).
pub(crate) enum ChainStep {
    Op(Op),
    EditOf(usize),
    /// A compression of these positions (commits already on the branch, or written earlier
    /// in the chain) into this step's message.
    CompressOf {
        sources: Vec<Source>,
        summarizer: String,
        params: BTreeMap<String, String>,
    },
    /// A sub-agent's branch, merged back as a tool result.
    MergeOf(Box<SubBranch>),
    /// A commit written again (a [`rewrite`]): its operation, with each commit it names that
    /// is written again earlier in the chain (the old id, and its place in the chain) named
    /// by its new id.
    Again {
        op: Op,
        moved: Vec<(CommitId, usize)>,
    },
}

/// A branch of its own for a sub-agent: `steps` written on `branch` forked at the chain's tip,
/// then merged back as the result of `call_id` (this step's message).
pub(crate) struct SubBranch {
    pub(crate) branch: String,
    pub(crate) call_id: String,
    pub(crate) steps: Vec<(ChainStep, Prepared)>,
}

/// A position a chain step refers to: on the branch already, or the `k`-th commit of the
/// chain.
pub(crate) enum Source {
    Existing(CommitId),
    Chain(usize),
}

/// A message scrubbed, encoded and counted, ready to write.
pub(crate) struct Prepared {
    pub(crate) message: Message,
    bytes: Vec<u8>,
    /// Payload tokens (without framing).
    pub(crate) payload: u32,
    /// A note for this commit alone.
    pub(crate) note: Option<String>,
    /// When it was written, where a transcript says (microseconds since the epoch); kept
    /// unless it would not be newer than its parent.
    pub(crate) timestamp_us: Option<u64>,
    /// How it was scrubbed, for the write transaction to scrub it again if the store's policy
    /// is no longer the one it was scrubbed by.
    scrubbed: Scrubbed,
}

/// How a prepared message was scrubbed.
enum Scrubbed {
    /// Never: content the store holds already, or a framework's record kept as written.
    Never,
    /// As a message, or as a transcript record's data, by `by`; `original` is the message as
    /// given when scrubbing changed it.
    By {
        by: Scrubber,
        record: bool,
        original: Option<Box<Message>>,
    },
}

impl Prepared {
    /// The blob bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A new message: validated, then scrubbed by `scrubber` before it is encoded and hashed,
    /// so a secret never reaches anything written (DESIGN §16).
    pub(crate) fn new(message: Message, scrubber: &Scrubber) -> Result<Self> {
        message.validate()?;
        crate::usage::check(&message)?;
        Prepared::scrubbed_with(message, scrubber, false)
    }

    /// `message` scrubbed by `scrubber` as a message or, with `record`, as a transcript
    /// record's data, then encoded (and counted, unless a record); the message as given is
    /// kept when scrubbing changed it, for [`Prepared::scrubbed_by`].
    fn scrubbed_with(message: Message, scrubber: &Scrubber, record: bool) -> Result<Self> {
        let (found, ready): (_, fn(Message) -> Result<Self>) = if record {
            (scrubber.scrubbed_record(&message), Prepared::uncounted)
        } else {
            (scrubber.scrubbed(&message), Prepared::counted)
        };
        let (mut p, original) = match found {
            Some(scrubbed) => (ready(scrubbed)?, Some(Box::new(message))),
            None => (ready(message)?, None),
        };
        p.scrubbed = Scrubbed::By {
            by: scrubber.clone(),
            record,
            original,
        };
        Ok(p)
    }

    /// Content the store already holds, written again as it is (a rewritten commit's blob).
    pub(crate) fn stored(message: Message) -> Result<Self> {
        message.validate()?;
        crate::usage::check(&message)?;
        Prepared::counted(message)
    }

    fn counted(message: Message) -> Result<Self> {
        let bytes = message.encode()?;
        let payload = tokens::count_message(&message);
        Ok(Prepared {
            message,
            bytes,
            payload,
            note: None,
            timestamp_us: None,
            scrubbed: Scrubbed::Never,
        })
    }

    /// This message as `current` (the store's policy in the write transaction) scrubs it:
    /// itself when it was scrubbed by the same policy or is never scrubbed, else scrubbed
    /// again from the message as given.
    fn scrubbed_by(self, current: &Scrubber) -> Result<Self> {
        let Scrubbed::By {
            by,
            record,
            original,
        } = &self.scrubbed
        else {
            return Ok(self);
        };
        if by.same(current) {
            return Ok(self);
        }
        let record = *record;
        let original = match original {
            Some(m) => (**m).clone(),
            None => self.message.clone(),
        };
        let mut p = Prepared::scrubbed_with(original, current, record)?;
        p.note = self.note;
        p.timestamp_us = self.timestamp_us;
        Ok(p)
    }
}

impl Prepared {
    /// The blob of a record of `kind` holding `data`: kept as its owner wrote it (a
    /// framework's encoded state breaks when changed), see [`Prepared::uncounted`].
    pub(crate) fn record(kind: &str, data: String) -> Result<Self> {
        crate::object::check_record_kind(kind)?;
        Prepared::uncounted(crate::object::record_carrier(kind, data))
    }

    /// The blob of a record an import writes of `kind` holding `data`, a transcript's lines
    /// as JSON (the lines a view leaves out), with what the response it holds cost: scrubbed
    /// inside its JSON strings as a message is, unlike a framework's record, which is kept as
    /// written.
    pub(crate) fn transcript_record(
        kind: &str,
        data: String,
        usage: Option<&crate::usage::Usage>,
        scrubber: &Scrubber,
    ) -> Result<Self> {
        crate::object::check_record_kind(kind)?;
        let mut carrier = crate::object::record_carrier(kind, data);
        if let Some(u) = usage {
            u.put_on(&mut carrier)?;
        }
        Prepared::scrubbed_with(carrier, scrubber, true)
    }

    /// A record's blob: validated and encoded, its tokens not counted (the model never sees
    /// it, and a framework's state can be megabytes).
    pub(crate) fn uncounted(message: Message) -> Result<Self> {
        message.validate()?;
        crate::usage::check(&message)?;
        let bytes = message.encode()?;
        Ok(Prepared {
            message,
            bytes,
            payload: 0,
            note: None,
            timestamp_us: None,
            scrubbed: Scrubbed::Never,
        })
    }
}

/// Prepares each message of a batch; an invalid one is an error naming its place. (Tokenizing
/// on several threads was measured slower for imports of large outputs on 2 cores, so this
/// stays sequential.)
pub(crate) fn prepare_all(
    steps: Vec<(ChainStep, Message)>,
    scrubber: &Scrubber,
) -> Result<Vec<(ChainStep, Prepared)>> {
    steps
        .into_iter()
        .enumerate()
        .map(|(i, (step, m))| {
            Prepared::new(m, scrubber)
                .map(|p| (step, p))
                .map_err(|e| e.in_batch(BatchPosition::Message(i + 1)))
        })
        .collect()
}

/// Writes prepared steps on top of the handle's position, after the optional
/// compare-and-swap check, in a transaction shared with the writes other threads make at the
/// same moment (group commit). Returns one info per step, in order, once they are durable.
pub(crate) fn write(
    repo: &Repo,
    opts: &AppendOptions,
    steps: Vec<(ChainStep, Prepared)>,
) -> Result<Vec<CommitInfo>> {
    let note = opts.note.clone();
    write_grouped(
        repo,
        opts.expected_head,
        move |w, target, chaining, start| write_chain(w, target, chaining, start, steps, note),
    )
}

/// Writes a merge commit on top of the handle's position, if it is still at `expected`: its
/// second parent is `other`, its blob (a tool result merge's) `content`. Durable when this
/// returns.
pub(crate) fn write_merge(
    repo: &Repo,
    expected: Option<CommitId>,
    op: Op,
    other: CommitId,
    content: Option<Prepared>,
    note: Option<String>,
) -> Result<CommitInfo> {
    let infos = write_grouped(repo, Some(expected), move |w, target, chaining, start| {
        let other_time = w.commit_object(&other)?.timestamp_us;
        let mut chain = Chain::new(start, w, chaining)?;
        let info = {
            let mut objects = w.objects()?;
            chain.put_commit(&mut objects, op, content, Some((other, other_time)), note)?
        };
        Ok((vec![info], chain.finish(target, w)?))
    })?;
    infos
        .into_iter()
        .next()
        .ok_or_else(|| Error::invalid_op("the merge produced no commit"))
}

/// Runs `put` (which writes commits on top of the position it is given and moves it) in a
/// transaction shared with the writes other threads make at the same moment (group commit),
/// after the optional compare-and-swap check; keeps the branch's counts and settles the
/// handle. Returns once the commits are durable.
fn write_grouped(
    repo: &Repo,
    expected: Option<Option<CommitId>>,
    put: impl FnOnce(
        &mut Writer,
        &Target,
        Chaining,
        &Head,
    ) -> Result<(Vec<CommitInfo>, Option<HeadRef>)>
    + Send
    + 'static,
) -> Result<Vec<CommitInfo>> {
    let target = repo.target();
    let clock = repo.store.options().clock;
    let store = repo.store.clone();
    let interval = repo.store.options().checkpoint_interval;
    let views = Arc::clone(&repo.views);
    let refs = target.refs();
    let written = repo.store.write_grouped(refs, move |w| {
        let start = target.head_in(w).map_err(JobError::Refused)?;
        if let Some(expected) = expected {
            check_expected(&start, expected).map_err(JobError::Refused)?;
        }
        let scrubber = Scrubber::in_write(&store, w).map_err(JobError::Refused)?;
        // Past this point the job has written: a failure abandons the whole group.
        let chaining = Chaining { clock, scrubber };
        let (infos, detached) = put(w, &target, chaining, &start).map_err(JobError::Fatal)?;
        ledger::keep(w, start.commit, &infos).map_err(JobError::Fatal)?;
        keep_branch(w, &views, &start, &infos, interval).map_err(JobError::Fatal)?;
        Ok((start, infos, detached))
    });
    settle(repo, written)
}

/// Edits planned from the view at the handle's position and committed in one transaction:
/// `plan` sees the view under the write lock (nothing can change between planning and
/// committing), with a snapshot to read its messages from, and returns each target with its
/// new message.
pub(crate) fn write_edits(
    repo: &Repo,
    plan: impl FnOnce(&Snapshot, &View) -> Result<Vec<(CommitId, Message)>>,
) -> Result<Vec<CommitInfo>> {
    write_planned(repo, |snap, view| {
        let edits = plan(snap, view)?;
        let steps = edits
            .into_iter()
            .map(|(target, message)| (ChainStep::Op(Op::Edit { target }), message))
            .collect();
        prepare_all(steps, &Scrubber::of(snap)?)
    })
}

/// Steps planned (or checked) against the view at the handle's position under the write lock,
/// and committed in the same transaction: nothing can change between the plan and the commit.
/// An empty plan commits nothing.
pub(crate) fn write_planned(
    repo: &Repo,
    plan: impl FnOnce(&Snapshot, &View) -> Result<Vec<(ChainStep, Prepared)>>,
) -> Result<Vec<CommitInfo>> {
    let mut w = repo.write()?;
    let target = repo.target();
    let start = target.head_in(&w)?;
    // Read after taking the write lock: this snapshot sees exactly what the writer sees.
    let snap = repo.read()?;
    let steps = repo.with_view(&snap, start.commit, |v| plan(&snap, v))??;
    if steps.is_empty() {
        return Ok(Vec::new()); // dropping the writer commits nothing
    }
    let options = repo.store.options();
    let chaining = Chaining {
        clock: options.clock,
        scrubber: Scrubber::in_write(&repo.store, &w)?,
    };
    let (infos, detached) = write_chain(&mut w, &target, chaining, &start, steps, None)?;
    ledger::keep(&mut w, start.commit, &infos)?;
    let committed = keep_branch(
        &mut w,
        &repo.views,
        &start,
        &infos,
        options.checkpoint_interval,
    )
    .and_then(|()| w.commit());
    settle(repo, committed.map(|()| (start, infos, detached)))
}

/// After a write: the handle takes its new position and its cached view the new commits; a
/// write that did not commit drops the cached view (it may have been extended inside the
/// transaction, see [`keep_branch`]).
fn settle(
    repo: &Repo,
    written: Result<(Head, Vec<CommitInfo>, Option<HeadRef>)>,
) -> Result<Vec<CommitInfo>> {
    let (start, infos, detached) = written.inspect_err(|_| repo.views.invalidate())?;
    repo.written(&start.target, detached);
    repo.views.extend(start.commit, &infos);
    crate::storage::search::keeper::written(&repo.store, infos.len() as u64);
    Ok(infos)
}

/// Writes `steps` as a chain on top of `start` and moves the position once (not committed
/// yet). `note` goes on every commit that has none. Returns the infos, and the detached
/// position the handle takes once committed.
fn write_chain(
    w: &mut Writer,
    target: &Target,
    chaining: Chaining,
    start: &Head,
    steps: Vec<(ChainStep, Prepared)>,
    note: Option<String>,
) -> Result<(Vec<CommitInfo>, Option<HeadRef>)> {
    let mut chain = Chain::new(start, w, chaining)?;
    let mut infos: Vec<CommitInfo> = Vec::with_capacity(steps.len());
    for (step, mut p) in steps {
        let note = p.note.take().or_else(|| note.clone());
        let info = match step {
            ChainStep::MergeOf(sub) => {
                let base = chain
                    .tip
                    .ok_or_else(|| Error::invalid_op("a sub-agent before anything it answers"))?;
                let mut side = Chain {
                    clock: chain.clock,
                    scrubber: chain.scrubber.clone(),
                    start: Head {
                        target: HeadRef::Branch(sub.branch.clone()),
                        commit: Some(base),
                    },
                    tip: Some(base),
                    last_timestamp: chain.last_timestamp,
                    reasons: Vec::new(),
                };
                let mut side_infos: Vec<CommitInfo> = Vec::with_capacity(sub.steps.len());
                for (step, mut q) in sub.steps {
                    let op = resolve(step, &side_infos)?;
                    let note = q.note.take();
                    side_infos.push(side.put(&mut w.objects()?, op, q, note)?);
                }
                let (Some(side_tip), Some(side_time)) = (side.tip, side.last_timestamp) else {
                    return Err(Error::invalid_op("a sub-agent branch with no commit"));
                };
                ledger::keep(w, Some(base), &side_infos)?;
                w.set_branch(&sub.branch, Some(side_tip), "import")?;
                w.set_branch_stats(&sub.branch, None)?;
                let op = Op::Merge {
                    base,
                    branch: sub.branch,
                    strategy: MergeStrategy::ToolResult {
                        call_id: sub.call_id,
                    },
                    summarizer: None,
                };
                chain.put_commit(
                    &mut w.objects()?,
                    op,
                    Some(p),
                    Some((side_tip, side_time)),
                    note,
                )?
            }
            step => {
                let op = resolve(step, &infos)?;
                chain.put(&mut w.objects()?, op, p, note)?
            }
        };
        infos.push(info);
    }
    let detached = chain.finish(target, w)?;
    Ok((infos, detached))
}

/// The operation of a chain step, its references to earlier commits of the chain (`infos`)
/// resolved.
fn resolve(step: ChainStep, infos: &[CommitInfo]) -> Result<Op> {
    Ok(match step {
        ChainStep::Op(op) => op,
        ChainStep::EditOf(k) => Op::Edit {
            target: infos
                .get(k)
                .map(|i| i.id)
                .ok_or_else(|| Error::invalid_op("an edit of a later commit"))?,
        },
        ChainStep::CompressOf {
            sources,
            summarizer,
            params,
        } => Op::Compress {
            sources: sources
                .iter()
                .map(|s| match s {
                    Source::Existing(id) => Ok(*id),
                    Source::Chain(k) => infos
                        .get(*k)
                        .map(|i| i.id)
                        .ok_or_else(|| Error::invalid_op("a compression of a later commit")),
                })
                .collect::<Result<Vec<_>>>()?,
            preserved: Vec::new(),
            summarizer,
            params,
        },
        ChainStep::MergeOf(_) => return Err(Error::invalid_op("a sub-agent inside a sub-agent")),
        ChainStep::Again { mut op, moved } => {
            let new_id = |old: &mut CommitId| -> Result<()> {
                if let Some(&(_, k)) = moved.iter().find(|(o, _)| o == old) {
                    *old = infos.get(k).map(|i| i.id).ok_or_else(|| {
                        Error::invalid_op("a commit written again before what it names")
                    })?;
                }
                Ok(())
            };
            match &mut op {
                Op::Edit { target } => new_id(target)?,
                Op::Compress {
                    sources, preserved, ..
                } => {
                    for id in sources.iter_mut().chain(preserved.iter_mut()) {
                        new_id(id)?;
                    }
                }
                Op::Append | Op::Record { .. } => {}
                Op::Merge { .. } => {
                    return Err(Error::invalid_op("a merge cannot be written again"));
                }
            }
            op
        }
    })
}

/// Moves the handle's position from `tip` (where it must still be) back to `base`, one of its
/// first-parent ancestors (`None`: before the first commit), and writes `steps` there (commits
/// written again: [`ChainStep::Again`]), in one transaction: what taking one commit out of the
/// middle of a branch does. The old tip stays in the reflog. The branch's counts are counted
/// again when next listed, and the handle's cached views are dropped (the new chain does not
/// extend them).
pub(crate) fn rewrite(
    repo: &Repo,
    tip: CommitId,
    base: Option<CommitId>,
    steps: Vec<(ChainStep, Prepared)>,
    reason: &str,
) -> Result<Vec<CommitInfo>> {
    let mut w = repo.write()?;
    let target = repo.target();
    let start = target.head_in(&w)?;
    check_expected(&start, Some(tip))?;
    let from = Head {
        target: start.target.clone(),
        commit: base,
    };
    let chaining = Chaining {
        clock: repo.store.options().clock,
        scrubber: Scrubber::in_write(&repo.store, &w)?,
    };
    let mut chain = Chain::new(&from, &w, chaining)?;
    let mut infos: Vec<CommitInfo> = Vec::with_capacity(steps.len());
    for (step, mut p) in steps {
        let op = resolve(step, &infos)?;
        let note = p.note.take();
        infos.push(chain.put(&mut w.objects()?, op, p, note)?);
    }
    ledger::keep(&mut w, base, &infos)?;
    let detached = match (chain.tip, &start.target) {
        (Some(new_tip), _) => target.advance(&mut w, &start, new_tip, reason)?,
        (None, HeadRef::Branch(name)) => {
            w.set_branch(name, None, reason)?;
            None
        }
        (None, HeadRef::Detached(_)) => {
            return Err(Error::invalid_op(
                "the handle is detached at the first commit: there is nothing before it",
            ));
        }
    };
    if let HeadRef::Branch(name) = &start.target {
        w.set_branch_stats(name, None)?;
    }
    let committed = w.commit();
    repo.views.invalidate();
    committed?;
    repo.written(&start.target, detached);
    crate::storage::search::keeper::written(&repo.store, infos.len() as u64);
    Ok(infos)
}

/// Keeps what the store holds about the branch the chain `infos` was written on (from
/// `start`): its counts, and a checkpoint of its view once the branch is far enough past its
/// last one ([`checkpoint::due`]: at most `interval` commits; none at all with 0), or after a
/// compress or a clear, which change much of the view at once.
///
/// The counts follow from the stored ones when the chain only appends (and edits what it
/// appended). Otherwise, and when a checkpoint is due, the view is the handle's cached one
/// extended with the chain, else one built here from the branch's checkpoint and the commits
/// since (at most `interval` of them, or a fresh branch's chain alone): a writer that never
/// compiled leaves checkpoints as one that did, without reading the history back. The view
/// built stays cached, so the handle's next checkpoint extends it.
fn keep_branch(
    w: &mut Writer,
    views: &ViewCache,
    start: &Head,
    infos: &[CommitInfo],
    interval: u64,
) -> Result<()> {
    let (HeadRef::Branch(branch), Some(last)) = (&start.target, infos.last()) else {
        return Ok(());
    };
    let (tally, since) = match start.commit {
        None => (Some(Tally::default()), Some(0)),
        Some(tip) => match w.branch_stats(branch)?.filter(|s| s.tip == tip) {
            Some(s) => (Some(s.tally), s.since_checkpoint),
            None => (None, None),
        },
    };
    let counted = tally.and_then(|t| counted(t, infos));
    let mut since = since.map(|n| n.saturating_add(infos.len() as u64));
    // A compress, or a chain of several edits (a clear of old results), changes much of the
    // view at once.
    let reshaped = infos
        .iter()
        .any(|i| matches!(i.commit.op, Op::Compress { .. }))
        || (infos.len() > 1 && infos.iter().all(|i| matches!(i.commit.op, Op::Edit { .. })));
    // A cached view that no checkpoint of its branch stands for (it was replayed) is saved
    // at its first write.
    let replayed = start
        .commit
        .and_then(|parent| views.cached(parent, |v| !v.checkpointed))
        .or_else(|| views.cached(last.id, |v| !v.checkpointed))
        .unwrap_or(false);
    let in_view = counted.as_ref().map_or(0, |t| t.messages);
    let due = interval > 0
        && (reshaped || replayed || since.is_none_or(|n| checkpoint::due(n, in_view, interval)));
    if let (Some(tally), false) = (&counted, due) {
        return set_stats(w, branch, last, tally.clone(), since);
    }
    let redactions = w.redactions()?;
    // A write that counted from the view (a compress) has extended it with the chain already.
    let cached = views.cached(last.id, |_| ()).is_some()
        || views
            .extend_and_tally(&*w, redactions, start.commit, infos)
            .is_some();
    let from = checkpoint::of_branch(&*w, branch)?;
    let pointer = if due { from } else { None };
    let counts_and_checkpoint = |v: &mut View| {
        let tally = counted.clone().unwrap_or_else(|| v.tally());
        let encoded = due.then(|| checkpoint::encode(v, redactions, pointer));
        // A view that cannot be checkpointed is not tried again on every write: its next
        // chance is `interval` commits on.
        v.checkpointed |= due;
        (tally, encoded.map(|e| e.map(|e| (e, v.stored.clone()))))
    };
    // The handle's cached view, unless it was built before a redaction this transaction sees
    // (it may show what it removed) or was dropped since (another handle made room, a write of
    // this one that failed dropped what it had extended): else one built here, kept after.
    let fresh = cached && views.redactions() == redactions;
    let (tally, encoded) = match fresh
        .then(|| views.cached(last.id, counts_and_checkpoint))
        .flatten()
    {
        Some(done) => done,
        None => match built_here(&*w, last, from, since, counted.as_ref())? {
            Built::View(mut view) => {
                let done = counts_and_checkpoint(&mut view);
                views.keep(*view, redactions);
                done
            }
            Built::Without(tally, since) => return set_stats(w, branch, last, tally, since),
        },
    };
    match encoded {
        None => {}
        Some(encoded) => match encoded? {
            (Some(encoded), stored) => {
                let stored = checkpoint::write(w, branch, pointer, encoded, stored.as_ref())?;
                // Dropped with the view if this transaction does not commit.
                views.cached(last.id, |v| {
                    v.stored = Some(stored);
                    v.unchanged = v.len();
                });
                since = Some(0);
            }
            // Counted from the checkpoint the branch keeps; without one, not counted, so no
            // later write replays the whole history to try again.
            (None, _) => since = from.map(|_| 0),
        },
    }
    set_stats(w, branch, last, tally, since)
}

/// What [`built_here`] gives: the view, or the counts (and commits since the branch's
/// checkpoint) to store without one.
enum Built {
    View(Box<View>),
    Without(Tally, Option<u64>),
}

/// The view at `last`, built in the write's transaction `w` from the branch's checkpoint
/// `from` and the commits since; when only the checkpoint needs it (the write `counted` the
/// branch) and it cannot be had, the write goes on without one: `since` and `counted` are what
/// the branch's counts then hold.
fn built_here(
    w: &Writer,
    last: &CommitInfo,
    from: Option<CommitId>,
    since: Option<u64>,
    counted: Option<&Tally>,
) -> Result<Built> {
    // A branch with no checkpoint and no count of its commits (a store an older tract wrote)
    // may have any length of history, replayed whole here while every other writer waits:
    // when only the checkpoint needs the view, `tract upgrade` (or a handle that compiles it)
    // makes one instead.
    if let (None, None, Some(tally)) = (from, since, counted) {
        return Ok(Built::Without(tally.clone(), None));
    }
    match checkpoint::build(w, Some(last.id), from) {
        Ok(view) => Ok(Built::View(Box::new(view))),
        // Only the checkpoint needed the view: the write goes on without one, and the next is
        // tried `interval` commits on (a read replays past what failed here).
        Err(e) => match counted {
            Some(tally) => Ok(Built::Without(tally.clone(), from.map(|_| 0))),
            None => Err(e),
        },
    }
}

/// Stores `branch`'s counts at `last`, the tip a write just made.
fn set_stats(
    w: &mut Writer,
    branch: &str,
    last: &CommitInfo,
    tally: Tally,
    since_checkpoint: Option<u64>,
) -> Result<()> {
    let stats = BranchStats {
        tip: last.id,
        last_activity_us: last.commit.timestamp_us,
        tally,
        since_checkpoint,
    };
    w.set_branch_stats(branch, Some(&stats))
}

/// The branch's counts after `infos` from its counts before them (`tally`), when every commit
/// appends or edits a message appended earlier in the chain; `None` otherwise.
fn counted(mut tally: Tally, infos: &[CommitInfo]) -> Option<Tally> {
    // Per commit of the chain: its tokens in view now, and whether it answers no call.
    let mut entries: Vec<(u32, bool)> = Vec::with_capacity(infos.len());
    for (k, info) in infos.iter().enumerate() {
        let m = info.message.as_ref()?;
        match &info.commit.op {
            Op::Append
            | Op::Merge {
                strategy: MergeStrategy::ToolResult { .. },
                ..
            } => entries.push((info.token_count, tally.push(m, info.token_count))),
            Op::Edit { target } => {
                let j = infos[..k].iter().position(|i| i.id == *target)?;
                let (old, orphan) = entries[j];
                tally.edit(old, info.token_count, orphan);
                entries[j].0 = info.token_count;
                entries.push((info.token_count, orphan));
            }
            // A record changes nothing in view; it keeps the chain's positions aligned.
            Op::Record { .. } => entries.push((0, false)),
            Op::Compress { .. } | Op::Merge { .. } => return None,
        }
    }
    Some(tally)
}

fn check_expected(head: &Head, expected: Option<CommitId>) -> Result<()> {
    if head.commit == expected {
        return Ok(());
    }
    Err(Error::HeadMoved {
        branch: head.branch().unwrap_or("HEAD").to_string(),
        expected,
        actual: head.commit,
    })
}

/// What a chain is written with: its clock, and the store's scrubbing as the transaction sees
/// it.
struct Chaining {
    clock: Clock,
    scrubber: Scrubber,
}

/// Commits written one after another on the branch in one transaction. The branch moves
/// once, at the end: one transaction is one ref move (one reflog entry), which also keeps bulk
/// writes (imports, compressions of many runs) from writing a ref and a reflog row per commit.
struct Chain {
    clock: Clock,
    /// The store's scrubbing in this transaction: what was prepared by another policy is
    /// scrubbed again by it.
    scrubber: Scrubber,
    start: Head,
    tip: Option<CommitId>,
    last_timestamp: Option<u64>,
    reasons: Vec<&'static str>,
}

impl Chain {
    fn new(start: &Head, w: &Writer, chaining: Chaining) -> Result<Self> {
        let last_timestamp = match start.commit {
            Some(parent) => Some(w.commit_object(&parent)?.timestamp_us),
            None => None,
        };
        Ok(Chain {
            clock: chaining.clock,
            scrubber: chaining.scrubber,
            start: start.clone(),
            tip: start.commit,
            last_timestamp,
            reasons: Vec::new(),
        })
    }

    /// Writes one commit on top of the previous one.
    fn put(
        &mut self,
        w: &mut Objects<'_>,
        op: Op,
        p: Prepared,
        note: Option<String>,
    ) -> Result<CommitInfo> {
        self.put_commit(w, op, Some(p), None, note)
    }

    /// Writes one commit on top of the previous one, carrying `content` if given, with
    /// `merged` (a commit and its timestamp) as its second parent if given.
    fn put_commit(
        &mut self,
        w: &mut Objects<'_>,
        op: Op,
        content: Option<Prepared>,
        merged: Option<(CommitId, u64)>,
        note: Option<String>,
    ) -> Result<CommitInfo> {
        let content = content.map(|p| p.scrubbed_by(&self.scrubber)).transpose()?;
        let blob = match &content {
            Some(p) => Some(w.put_blob(&p.bytes, p.payload)?),
            None => None,
        };
        // A commit is newer than each of its parents even if the clock steps back (or a
        // transcript's times do): history walks rely on it (see `ancestry`).
        let now = content
            .as_ref()
            .and_then(|p| p.timestamp_us)
            .unwrap_or_else(|| self.clock.now_us());
        let newest_parent = self.last_timestamp.max(merged.map(|(_, t)| t));
        let timestamp_us = newest_parent.map_or(now, |t| now.max(t + 1));
        if !self.reasons.contains(&op.name()) {
            self.reasons.push(op.name());
        }
        let commit = Commit {
            parents: self
                .tip
                .into_iter()
                .chain(merged.map(|(id, _)| id))
                .collect(),
            op,
            blob,
            timestamp_us,
            message: note,
        };
        let id = w.put_commit(&commit)?;
        self.tip = Some(id);
        self.last_timestamp = Some(timestamp_us);
        Ok(CommitInfo::new(
            id,
            commit,
            content.map(|p| (p.message, p.payload)),
        ))
    }

    /// Moves the handle's branch (or its detached position) to the last commit written;
    /// returns the detached position to take once committed.
    fn finish(self, target: &Target, w: &mut Writer) -> Result<Option<HeadRef>> {
        match self.tip {
            Some(tip) if Some(tip) != self.start.commit => {
                target.advance(w, &self.start, tip, &self.reasons.join("+"))
            }
            _ => Ok(None),
        }
    }
}
