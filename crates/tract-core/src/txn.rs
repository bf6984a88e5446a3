//! The write path: every commit tract makes goes through [`write`] (or [`write_edits`]).
//!
//! Slow work (validating, encoding, counting tokens) happens before the write transaction
//! starts ([`Prepared`]). Inside it, the branch head is read, the commits are written as one
//! chain on top of it, the branch moves once (one reflog entry per transaction), the
//! transaction commits durably, and the handle's cached view is extended.

use crate::error::{BatchPosition, Error, Result};
use crate::id::CommitId;
use crate::info::CommitInfo;
use crate::object::{Commit, Message, Op};
use crate::refs::Head;
use crate::repo::Repo;
use crate::store::{Objects, Writer};
use crate::tokens;
use crate::view::View;

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
pub(crate) enum Step {
    Op(Op),
    EditOf(usize),
}

/// A message encoded and counted, ready to write.
pub(crate) struct Prepared {
    pub(crate) message: Message,
    bytes: Vec<u8>,
    /// Payload tokens (without framing).
    pub(crate) payload: u32,
    /// A note for this commit alone.
    pub(crate) note: Option<String>,
}

impl Prepared {
    pub(crate) fn new(message: Message) -> Result<Self> {
        message.validate()?;
        let bytes = message.encode()?;
        let payload = tokens::count_message(&message);
        Ok(Prepared {
            message,
            bytes,
            payload,
            note: None,
        })
    }
}

/// Prepares each message of a batch; an invalid one is an error naming its place. (Tokenizing
/// on several threads was measured slower for imports of large outputs on 2 cores, so this
/// stays sequential.)
pub(crate) fn prepare_all(steps: Vec<(Step, Message)>) -> Result<Vec<(Step, Prepared)>> {
    steps
        .into_iter()
        .enumerate()
        .map(|(i, (step, m))| {
            Prepared::new(m)
                .map(|p| (step, p))
                .map_err(|e| e.in_batch(BatchPosition::Message(i + 1)))
        })
        .collect()
}

/// Writes prepared steps in one transaction on top of `HEAD`, after the optional
/// compare-and-swap check. Returns one info per step, in order.
pub(crate) fn write(
    repo: &Repo,
    opts: &AppendOptions,
    steps: Vec<(Step, Prepared)>,
) -> Result<Vec<CommitInfo>> {
    let w = repo.store.write()?;
    let start = repo.head_in(&w)?;
    if let Some(expected) = opts.expected_head {
        check_expected(&start, expected)?;
    }
    write_chain(repo, w, &start, steps, opts.note.clone())
}

/// Edits planned from the view at `HEAD` and committed in one transaction: `plan` sees the
/// view under the write lock (nothing can change between planning and committing) and returns
/// each target with its new message.
pub(crate) fn write_edits(
    repo: &Repo,
    plan: impl FnOnce(&View) -> Result<Vec<(CommitId, Message)>>,
) -> Result<Vec<CommitInfo>> {
    let w = repo.store.write()?;
    let start = repo.head_in(&w)?;
    // Read after taking the write lock: this snapshot sees exactly what the writer sees.
    let snap = repo.read()?;
    let edits = repo.with_view(&snap, start.commit, plan)??;
    if edits.is_empty() {
        return Ok(Vec::new()); // dropping the writer commits nothing
    }
    let steps = edits
        .into_iter()
        .map(|(target, message)| (Step::Op(Op::Edit { target }), message))
        .collect();
    write_chain(repo, w, &start, prepare_all(steps)?, None)
}

/// Writes `steps` as a chain on top of `start`, moves the branch once, commits (durably) and
/// extends the cached view. `note` goes on every commit that has none.
fn write_chain(
    repo: &Repo,
    mut w: Writer,
    start: &Head,
    steps: Vec<(Step, Prepared)>,
    note: Option<String>,
) -> Result<Vec<CommitInfo>> {
    let mut chain = Chain::new(start, &w)?;
    let mut infos: Vec<CommitInfo> = Vec::with_capacity(steps.len());
    {
        let mut objects = w.objects()?;
        for (step, mut p) in steps {
            let op = match step {
                Step::Op(op) => op,
                Step::EditOf(k) => Op::Edit {
                    target: infos
                        .get(k)
                        .map(|i| i.id)
                        .ok_or_else(|| Error::invalid_op("an edit of a later commit"))?,
                },
            };
            let note = p.note.take().or_else(|| note.clone());
            infos.push(chain.put(&mut objects, op, p, note)?);
        }
    }
    let detached = chain.finish(repo, &mut w)?;
    w.commit()?;
    if let Some(to) = detached {
        repo.moved(&start.target, to);
    }
    repo.views.extend(start.commit, &infos);
    Ok(infos)
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

/// Commits written one after another on the branch in one transaction. The branch moves
/// once, at the end: one transaction is one ref move (one reflog entry), which also keeps bulk
/// writes (imports, compressions of many runs) from writing a ref and a reflog row per commit.
struct Chain {
    clock: crate::clock::Clock,
    start: Head,
    tip: Option<CommitId>,
    last_timestamp: Option<u64>,
    reasons: Vec<&'static str>,
}

impl Chain {
    fn new(start: &Head, w: &Writer) -> Result<Self> {
        let last_timestamp = match start.commit {
            Some(parent) => Some(w.commit_object(&parent)?.timestamp_us),
            None => None,
        };
        Ok(Chain {
            clock: w.clock(),
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
        let blob = w.put_blob(&p.bytes, p.payload)?;
        // Timestamps increase along a branch even if the clock steps back.
        let now = self.clock.now_us();
        let timestamp_us = self.last_timestamp.map_or(now, |t| now.max(t + 1));
        if !self.reasons.contains(&op.name()) {
            self.reasons.push(op.name());
        }
        let commit = Commit {
            parents: self.tip.into_iter().collect(),
            op,
            blob: Some(blob),
            timestamp_us,
            message: note,
        };
        let id = w.put_commit(&commit)?;
        self.tip = Some(id);
        self.last_timestamp = Some(timestamp_us);
        Ok(CommitInfo::new(id, commit, Some((p.message, p.payload))))
    }

    /// Moves the handle's branch (or its detached position) to the last commit written;
    /// returns the detached position to take once committed.
    fn finish(self, repo: &Repo, w: &mut Writer) -> Result<Option<crate::refs::HeadRef>> {
        match self.tip {
            Some(tip) if Some(tip) != self.start.commit => {
                repo.advance(w, &self.start, tip, &self.reasons.join("+"))
            }
            _ => Ok(None),
        }
    }
}
