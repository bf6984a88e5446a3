//! Importing a transcript onto the handle's branch, idempotently.
//!
//! A transcript's messages are appended in one transaction (all or nothing), with the times
//! the transcript gives; a compact boundary becomes a compression of everything in view at
//! that point. Importing is a no-op for what the branch holds already: the branch's
//! first-parent line of appends and compressions is compared with the transcript's steps, so
//! importing the same file twice adds nothing, and importing a transcript that has grown
//! since adds only its new part. A branch holding something else there is refused.
//!
//! tract's own commit export is written object for object, so every id is the exported one;
//! the branch then moves to its last commit by fast-forward.

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId};
use crate::object::{Message, Op};
use crate::refs::HeadRef;
use crate::repo::Repo;
use crate::transcript::{Format, Step, Transcript};
use crate::txn::{self, AppendOptions, Prepared, Source, Step as TxnStep, SubBranch};

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// The format read (`None` for tract's commit export).
    pub format: Option<Format>,
    /// Commits written.
    pub added: usize,
    /// Steps of the transcript the branch held already.
    pub already: usize,
    /// Lines without a message (snapshots, progress, metadata), skipped.
    pub skipped: usize,
    /// Lines on the file's other conversation paths (abandoned retries), not imported.
    pub off_path: usize,
    /// The branch's tip afterwards.
    pub tip: Option<CommitId>,
}

/// What a step puts on the first-parent line: an appended message or a compression, by blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Append(BlobId),
    Compress(BlobId),
}

pub(crate) fn import(repo: &Repo, transcript: Transcript) -> Result<ImportReport> {
    match transcript {
        Transcript::Steps {
            format,
            steps,
            skipped,
            off_path,
            ..
        } => import_steps(repo, format, steps, skipped, off_path),
        Transcript::Commits(commits) => import_commits(repo, commits),
    }
}

fn import_steps(
    repo: &Repo,
    format: Format,
    steps: Vec<Step>,
    skipped: usize,
    off_path: usize,
) -> Result<ImportReport> {
    let snap = repo.read()?;
    let head = repo.head(&snap)?;
    // What the branch's line holds, oldest first.
    let mut held = Vec::new();
    let mut cursor = head.commit;
    while let Some(id) = cursor {
        let c = snap.commit(&id)?;
        match (&c.op, c.blob) {
            // A tool result that came back from a sub-agent's branch holds its place.
            (Op::Append | Op::Merge { .. }, Some(b)) => held.push(Key::Append(b)),
            (Op::Compress { .. }, Some(b)) => held.push(Key::Compress(b)),
            _ => {}
        }
        cursor = c.parent();
    }
    held.reverse();
    let wanted = steps
        .iter()
        .map(|s| match s {
            Step::Message { message, .. } => message.id().map(Key::Append),
            Step::SubAgent { result, .. } => result.id().map(Key::Append),
            Step::Compact { summary, .. } => summary.id().map(Key::Compress),
        })
        .collect::<Result<Vec<_>>>()?;
    let common = held.len().min(wanted.len());
    if let Some(k) = (0..common).find(|&k| held[k] != wanted[k]) {
        let line = match &steps[k] {
            Step::Message { line, .. }
            | Step::Compact { line, .. }
            | Step::SubAgent { line, .. } => *line,
        };
        let branch = match &head.target {
            HeadRef::Branch(b) => b.clone(),
            HeadRef::Detached(_) => "HEAD".into(),
        };
        return Err(Error::invalid_op(format!(
            "branch '{branch}' already holds other messages: its message {} differs from the \
             transcript's line {line}; import into another branch",
            k + 1
        )));
    }
    let already = common;
    let mut report = ImportReport {
        format: Some(format),
        added: 0,
        already,
        skipped,
        off_path,
        tip: head.commit,
    };
    if wanted.len() <= held.len() {
        return Ok(report);
    }
    // Positions in view as the chain goes, for the compressions of compact boundaries.
    let in_view: Vec<Source> = repo
        .with_view(&snap, head.commit, |v| {
            v.entries().iter().map(|e| e.position).collect::<Vec<_>>()
        })?
        .into_iter()
        .map(Source::Existing)
        .collect();
    drop(snap);
    let new_steps: Vec<Step> = steps.into_iter().skip(already).collect();
    let chain = chain_of(
        new_steps,
        in_view,
        format,
        already,
        |agent, side, result| {
            Ok(TxnStep::MergeOf(Box::new(SubBranch {
                branch: agent_branch(&head.target, agent)?,
                call_id: result.tool_call_id.clone().unwrap_or_default(),
                steps: chain_of(side, Vec::new(), format, 0, |_, _, _| {
                    Err(Error::invalid_input(
                        "a sub-agent inside a sub-agent is not imported",
                    ))
                })?,
            })))
        },
    )?;
    // Only on the branch as it was compared: a writer in between makes this HeadMoved.
    let opts = AppendOptions {
        expected_head: Some(head.commit),
        note: None,
    };
    let infos = txn::write(repo, &opts, chain)?;
    report.added = infos.len();
    report.tip = infos.last().map(|i| i.id).or(head.commit);
    Ok(report)
}

/// The branch of a sub-agent: `<branch>/agents/<agent>` (`agents/<agent>` for a detached
/// handle), with what a branch name cannot hold replaced by `-`.
fn agent_branch(target: &HeadRef, agent: &str) -> Result<String> {
    let clean: String = agent
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = match target {
        HeadRef::Branch(b) => format!("{b}/agents/{clean}"),
        HeadRef::Detached(_) => format!("agents/{clean}"),
    };
    Ok(crate::revision::BranchName::new(&name)?.to_string())
}

/// Transcript steps as the steps of a write chain: a message is an append, a compact
/// boundary a compression of what is in view then (`in_view`: positions already there), a
/// sub-agent what `sub_agent` makes of it (a merged branch). `offset` is the place of the
/// first step in the transcript, for errors.
fn chain_of(
    steps: Vec<Step>,
    mut in_view: Vec<Source>,
    format: Format,
    offset: usize,
    mut sub_agent: impl FnMut(&str, Vec<Step>, &Message) -> Result<TxnStep>,
) -> Result<Vec<(TxnStep, Prepared)>> {
    let mut out = Vec::with_capacity(steps.len());
    for (k, step) in steps.into_iter().enumerate() {
        let (op, message, timestamp_us) = match step {
            Step::Message {
                message,
                timestamp_us,
                ..
            } => {
                in_view.push(Source::Chain(k));
                (TxnStep::Op(Op::Append), message, timestamp_us)
            }
            Step::SubAgent {
                agent,
                steps,
                result,
                timestamp_us,
                ..
            } => {
                in_view.push(Source::Chain(k));
                (sub_agent(&agent, steps, &result)?, result, timestamp_us)
            }
            Step::Compact {
                summary,
                timestamp_us,
                params,
                ..
            } => {
                let sources = std::mem::replace(&mut in_view, vec![Source::Chain(k)]);
                let op = if sources.is_empty() {
                    // Nothing in view to compact: the summary is a message like any other.
                    TxnStep::Op(Op::Append)
                } else {
                    TxnStep::CompressOf {
                        sources,
                        summarizer: format!("imported:{}", format.name()),
                        params,
                    }
                };
                (op, summary, timestamp_us)
            }
        };
        let mut p = Prepared::new(message)
            .map_err(|e| e.in_batch(crate::error::BatchPosition::Message(offset + k + 1)))?;
        p.timestamp_us = timestamp_us;
        out.push((op, p));
    }
    Ok(out)
}

fn import_commits(
    repo: &Repo,
    commits: Vec<(CommitId, crate::object::Commit, Option<Message>)>,
) -> Result<ImportReport> {
    let Some(tip) = commits.last().map(|(id, ..)| *id) else {
        return Err(Error::invalid_input("the export holds no commit"));
    };
    let mut report = ImportReport {
        format: None,
        added: 0,
        already: 0,
        skipped: 0,
        off_path: 0,
        tip: Some(tip),
    };
    let snap = repo.read()?;
    let head = repo.head(&snap)?;
    // Every link must be in the file before it, or in the store.
    let mut in_file = std::collections::HashSet::new();
    for (k, (id, c, _)) in commits.iter().enumerate() {
        for link in c.links() {
            if !in_file.contains(&link) && !snap.has_commit(&link)? {
                return Err(Error::InvalidTranscript {
                    path: None,
                    line: k + 1,
                    reason: format!(
                        "commit {} links to {}, which is neither earlier in the file nor in the store",
                        id.short(),
                        link.short()
                    ),
                });
            }
        }
        in_file.insert(*id);
    }
    let present = snap.has_commits(&commits.iter().map(|(id, ..)| *id).collect::<Vec<_>>())?;
    report.already = present.iter().filter(|p| **p).count();
    if let Some(current) = head.commit
        && !reaches(&snap, &commits, tip, current)?
    {
        let branch = head.branch().unwrap_or("HEAD").to_string();
        return Err(Error::Diverged {
            branch,
            receiver: current,
            sender: tip,
        });
    }
    drop(snap);
    let mut w = repo.store.write()?;
    {
        let mut objects = w.objects()?;
        for ((id, commit, message), present) in commits.iter().zip(&present) {
            if *present {
                continue;
            }
            if let Some(m) = message {
                // A record's data is not tokenized, wherever it is written.
                let p = match commit.op {
                    Op::Record { .. } => Prepared::uncounted(m.clone())?,
                    _ => Prepared::new(m.clone())?,
                };
                objects.put_blob(p.bytes(), p.payload)?;
            }
            if objects.put_commit(commit)? != *id {
                return Err(Error::invalid_input(format!(
                    "commit {} does not hash to its id",
                    id.short()
                )));
            }
            report.added += 1;
        }
    }
    let now = repo.head_in(&w)?;
    if now.commit != head.commit {
        return Err(Error::HeadMoved {
            branch: now.branch().unwrap_or("HEAD").to_string(),
            expected: head.commit,
            actual: now.commit,
        });
    }
    let detached = if now.commit == Some(tip) {
        None
    } else {
        let moved = repo.advance(&mut w, &now, tip, "import")?;
        if let HeadRef::Branch(b) = &now.target {
            w.set_branch_stats(b, None)?;
        }
        moved
    };
    w.commit()?;
    repo.written(&now.target, detached);
    Ok(report)
}

/// Whether `target` is `tip` or one of its ancestors, through the file's commits and then the
/// store's.
fn reaches(
    snap: &crate::store::Snapshot,
    commits: &[(CommitId, crate::object::Commit, Option<Message>)],
    tip: CommitId,
    target: CommitId,
) -> Result<bool> {
    let in_file: std::collections::HashMap<CommitId, &crate::object::Commit> =
        commits.iter().map(|(id, c, _)| (*id, c)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![tip];
    while let Some(id) = stack.pop() {
        if id == target {
            return Ok(true);
        }
        if !seen.insert(id) {
            continue;
        }
        match in_file.get(&id) {
            Some(c) => stack.extend(c.links()),
            None => stack.extend(snap.commit(&id)?.links()),
        }
    }
    Ok(false)
}
