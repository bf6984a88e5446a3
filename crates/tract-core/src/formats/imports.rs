//! Importing a transcript onto the handle's branch, idempotently.
//!
//! A transcript's messages are appended in one transaction (all or nothing), with the times
//! the transcript gives; a compact boundary becomes a compression of everything in view at
//! that point. Importing is a no-op for what the branch holds already: the branch's
//! first-parent line of appends and compressions is compared with the transcript's steps, so
//! importing the same file twice adds nothing, and importing a transcript that has grown
//! since adds only its new part. A branch holding something else there is refused.
//!
//! A Claude Code session (and a Codex rollout, whose lines are named by the BLAKE3 of their
//! JSON, and a Gemini CLI session, whose records are named by their id and hash) is keyed by
//! its lines instead: every commit it writes carries the ids of the lines it holds in its note
//! (`claude-code <uuid>…`, `codex <id>…`, `gemini <id>…`), so a line is imported
//! once however its content changes later (an edit, a redaction). The branch follows the
//! conversation as Claude Code reads it: a response that grew gets its message edited, new
//! lines are appended, and when the conversation moves to another path (a rewind) the branch
//! moves back to where the paths part before taking the new one (the reflog keeps the old);
//! a file that holds less than the branch moves nothing. Lines the view leaves out are
//! records.
//!
//! tract's own commit export is written object for object, so every id is the exported one;
//! the branch then moves to its last commit by fast-forward.

use crate::agents::{self, AgentSession};
use crate::error::{Error, Result};
use crate::formats::transcript::{Format, Step, Transcript};
use crate::id::{BlobId, CommitId};
use crate::object::{Message, Op};
use crate::refs::HeadRef;
use crate::repo::Repo;
use crate::scrubbing::Scrubber;
use crate::view::info::CommitInfo;
use crate::write::txn::{self, AppendOptions, ChainStep, Prepared, Source, SubBranch};
use std::collections::{BTreeSet, HashMap, HashSet};

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    /// Lines read with something to say (not JSON, or kept as a record): line and what; at
    /// line 0, what is said of the file as a whole (a message too large for any model).
    pub warnings: Vec<(usize, String)>,
    /// Messages of the view edited because their API response grew (Claude Code).
    pub edited: usize,
    /// Whether the branch moved back to follow the conversation onto another path.
    pub rewound: bool,
    /// Lines kept as records (left out of the view), written by this import.
    pub recorded: usize,
    /// The branch is kept by the Claude Agent SDK session store (it holds the session's lines
    /// as that store's records): nothing was imported, so the session is not there twice.
    pub session_store: bool,
    /// Sub-agents still running (no Task result names them yet), imported with their result.
    pub waiting_agents: Vec<String>,
}

impl ImportReport {
    /// The name of the format read, as `--format` and `format=` take it: tract's commit
    /// export is `jsonl`, as its messages are.
    pub fn format_name(&self) -> &'static str {
        self.format.map_or(Format::Jsonl.name(), Format::name)
    }
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
            format: format @ (Format::ClaudeCode | Format::Codex | Format::Gemini),
            steps,
            skipped,
            off_path,
            warnings,
            waiting_agents,
            parent,
            agent,
            session,
            ..
        } => {
            let agent = match agent {
                Some(a) => Some(checked_agent(repo, *a, session.as_deref())?),
                None => None,
            };
            if let Some(parent) = parent {
                start_at_fork(repo, &parent, &steps)?;
            }
            let mut report = import_lines(repo, format, steps)?;
            report.skipped = skipped;
            report.off_path = off_path;
            report.warnings = warnings;
            report.waiting_agents = waiting_agents;
            if let Some(agent) = &agent {
                name_agent(repo, agent)?;
            }
            Ok(report)
        }
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
            Step::Record { .. } => Err(Error::invalid_input(
                "a record step in a transcript without line ids",
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    let scrubber = Scrubber::of(&snap)?;
    let common = held.len().min(wanted.len());
    // A message holds its place as it was stored: scrubbed, or as the transcript has it (a
    // store that scrubbed nothing then): only a message that differs is scrubbed to compare.
    let differs = |k: usize| -> Result<bool> {
        if held[k] == wanted[k] {
            return Ok(false);
        }
        let scrubbed = match &steps[k] {
            Step::Message { message, .. }
            | Step::SubAgent {
                result: message, ..
            } => Key::Append(scrubber.apply(message.clone()).id()?),
            Step::Compact { summary, .. } => Key::Compress(scrubber.apply(summary.clone()).id()?),
            Step::Record { .. } => return Ok(true),
        };
        Ok(held[k] != scrubbed)
    };
    let mut first_different = None;
    for k in 0..common {
        if differs(k)? {
            first_different = Some(k);
            break;
        }
    }
    if let Some(k) = first_different {
        let line = steps[k].line();
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
        already,
        skipped,
        off_path,
        tip: head.commit,
        ..ImportReport::default()
    };
    if wanted.len() <= held.len() {
        return Ok(report);
    }
    let in_view = view_sources(repo, &snap, head.commit)?;
    drop(snap);
    let new_steps: Vec<Step> = steps.into_iter().skip(already).collect();
    let chain = chain_of(
        new_steps,
        in_view,
        format,
        (already, 0),
        &scrubber,
        merged_sub_agent(&head.target, format, &scrubber),
    )?;
    // Only on the branch as it was compared: a writer in between makes this HeadMoved.
    let opts = AppendOptions {
        expected_head: Some(head.commit),
        note: None,
    };
    let infos = txn::write(repo, &opts, chain)?;
    checkpoint_sub_agents(repo, &infos);
    say_large(&mut report, &infos);
    report.added = infos.len();
    report.tip = infos.last().map(|i| i.id).or(head.commit);
    Ok(report)
}

/// A warning (at line 0: the file as a whole) for each message written over
/// [`crate::tokens::LARGE_MESSAGE`] tokens.
fn say_large(report: &mut ImportReport, infos: &[CommitInfo]) {
    for info in infos {
        if let Some(w) = crate::tokens::too_large(info.token_count) {
            report
                .warnings
                .push((0, format!("the message of commit {}: {w}", info.id.short())));
        }
    }
}

/// The positions in the view at `at`, as the sources a compact boundary's compression may
/// take before the chain adds its own.
fn view_sources(
    repo: &Repo,
    snap: &crate::storage::store::snapshot::Snapshot,
    at: Option<CommitId>,
) -> Result<Vec<Source>> {
    Ok(repo
        .with_view(snap, at, |v| {
            v.entries().iter().map(|e| e.position).collect::<Vec<_>>()
        })?
        .into_iter()
        .map(Source::Existing)
        .collect())
}

/// A sub-agent's conversation as a branch of its own (`<branch>/agents/<agent>`), merged back
/// as the result of the call it answered.
fn merged_sub_agent<'a>(
    target: &'a HeadRef,
    format: Format,
    scrubber: &'a Scrubber,
) -> impl FnMut(&str, Vec<Step>, &Message) -> Result<ChainStep> + 'a {
    move |agent, side, result| {
        Ok(ChainStep::MergeOf(Box::new(SubBranch {
            branch: agent_branch(target, agent)?,
            call_id: result.tool_call_id.clone().unwrap_or_default(),
            steps: chain_of(side, Vec::new(), format, (0, 0), scrubber, no_sub_agent)?,
        })))
    }
}

/// For a chain with no place for a sub-agent (a sub-agent's own: its sub-agents are not
/// linked further).
fn no_sub_agent(_: &str, _: Vec<Step>, _: &Message) -> Result<ChainStep> {
    Err(Error::invalid_input(
        "a sub-agent inside a sub-agent is not imported",
    ))
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
    Ok(crate::view::revision::BranchName::new(&name)?.to_string())
}

/// Transcript steps as the steps of a write chain: a message is an append, a compact
/// boundary a compression of what is in view then (`in_view`: positions already there), a
/// sub-agent what `sub_agent` makes of it (a merged branch), a kept line a record. Each commit
/// notes the transcript lines it holds. `offset` is the place of the first step in the
/// transcript, for errors; `first` the place of its first commit in the chain written.
fn chain_of(
    steps: Vec<Step>,
    mut in_view: Vec<Source>,
    format: Format,
    (offset, first): (usize, usize),
    scrubber: &Scrubber,
    mut sub_agent: impl FnMut(&str, Vec<Step>, &Message) -> Result<ChainStep>,
) -> Result<Vec<(ChainStep, Prepared)>> {
    let mut out = Vec::with_capacity(steps.len());
    for (k, step) in steps.into_iter().enumerate() {
        let note = lines_note(format, step.lines());
        let (op, message, timestamp_us) = match step {
            Step::Message {
                message,
                timestamp_us,
                ..
            } => {
                in_view.push(Source::Chain(first + k));
                (ChainStep::Op(Op::Append), message, timestamp_us)
            }
            Step::SubAgent {
                agent,
                steps,
                result,
                timestamp_us,
                ..
            } => {
                in_view.push(Source::Chain(first + k));
                (sub_agent(&agent, steps, &result)?, result, timestamp_us)
            }
            Step::Compact {
                summary,
                timestamp_us,
                params,
                ..
            } => {
                let sources = std::mem::replace(&mut in_view, vec![Source::Chain(first + k)]);
                let op = if sources.is_empty() {
                    // Nothing in view to compact: the summary is a message like any other.
                    ChainStep::Op(Op::Append)
                } else {
                    ChainStep::CompressOf {
                        sources,
                        summarizer: format!("imported:{}", format.name()),
                        params,
                    }
                };
                (op, summary, timestamp_us)
            }
            Step::Record {
                kind,
                data,
                timestamp_us,
                usage,
                ..
            } => {
                let mut p = Prepared::transcript_record(&kind, data, usage.as_ref(), scrubber)?;
                p.timestamp_us = timestamp_us;
                p.note = note;
                out.push((ChainStep::Op(Op::Record { kind }), p));
                continue;
            }
        };
        let mut p = Prepared::new(message, scrubber)
            .map_err(|e| e.in_batch(crate::error::BatchPosition::Message(offset + k + 1)))?;
        p.timestamp_us = timestamp_us;
        p.note = note;
        out.push((op, p));
    }
    Ok(out)
}

// ----- Agents' sessions: keyed by line -----

/// The note's word before the line ids of a commit imported from a session keyed by line,
/// by format (its agent).
fn lines_word(format: Format) -> &'static str {
    match format {
        Format::Codex => "codex",
        Format::Gemini => "gemini",
        _ => "claude-code",
    }
}

/// Every note word [`lines_word`] writes.
const LINES_WORDS: &[&str] = &["claude-code", "codex", "gemini"];

/// The record kind that marks where the conversation left a path (the lines it abandoned).
fn rewind_record(format: Format) -> &'static str {
    match format {
        Format::Codex => "codex.rewind",
        Format::Gemini => "gemini.rewind",
        _ => "claude_code.rewind",
    }
}

/// The note naming `lines` (none for no lines).
fn lines_note(format: Format, lines: &[String]) -> Option<String> {
    (!lines.is_empty()).then(|| format!("{} {}", lines_word(format), lines.join(" ")))
}

/// The line ids a commit's note names.
fn lines_of_note(note: Option<&str>) -> Option<BTreeSet<String>> {
    let note = note?;
    let rest = LINES_WORDS
        .iter()
        .find_map(|w| note.strip_prefix(w)?.strip_prefix(' '))?;
    Some(
        rest.split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

/// A message of the branch's line, with the transcript lines it holds (`None`: not imported
/// from Claude Code).
struct Held {
    commit: CommitId,
    lines: Option<BTreeSet<String>>,
}

/// What the branch holds of a Claude Code session: its line of messages, oldest first, and
/// every line id kept as a record.
struct Holding {
    held: Vec<Held>,
    recorded: HashSet<String>,
    /// The lines of each record on the line, with how many of its messages come before it.
    records: Vec<(usize, BTreeSet<String>)>,
    /// The Claude Agent SDK session store writes this branch.
    session_store: bool,
}

/// The record kind the Claude Agent SDK session store keeps a session's lines in
/// (`tract.integrations.claude_agent_sdk`).
const SESSION_STORE_RECORD: &str = "claude.entries";

fn holding(
    snap: &crate::storage::store::snapshot::Snapshot,
    tip: Option<CommitId>,
) -> Result<Holding> {
    let mut held = Vec::new();
    let mut recorded = HashSet::new();
    // Records seen (newest first), with how many messages are newer.
    let mut records: Vec<(usize, BTreeSet<String>)> = Vec::new();
    let mut session_store = false;
    // Edits seen (newest first), to add their lines to what they edit.
    let mut edits: Vec<(CommitId, CommitId, BTreeSet<String>)> = Vec::new();
    let mut cursor = tip;
    while let Some(id) = cursor {
        let c = snap.commit(&id)?;
        let lines = lines_of_note(c.message.as_deref());
        match (&c.op, c.blob) {
            (Op::Append | Op::Merge { .. } | Op::Compress { .. }, Some(_)) => {
                held.push(Held { commit: id, lines });
            }
            (Op::Edit { target }, _) => {
                edits.push((id, *target, lines.unwrap_or_default()));
            }
            (Op::Record { kind }, _) => {
                session_store |= kind == SESSION_STORE_RECORD;
                let lines = lines.unwrap_or_default();
                recorded.extend(lines.iter().cloned());
                records.push((held.len(), lines));
            }
            _ => {}
        }
        cursor = c.parent();
    }
    held.reverse();
    let records = records
        .into_iter()
        .map(|(newer, lines)| (held.len() - newer, lines))
        .collect();
    // An edit may edit an earlier edit: its lines go to the message at the root.
    let target_of: HashMap<CommitId, CommitId> = edits.iter().map(|(e, t, _)| (*e, *t)).collect();
    let at: HashMap<CommitId, usize> = held
        .iter()
        .enumerate()
        .map(|(k, h)| (h.commit, k))
        .collect();
    for (_, target, lines) in edits {
        let mut root = target;
        let mut hops = 0;
        while let Some(next) = target_of.get(&root) {
            root = *next;
            hops += 1;
            if hops > target_of.len() {
                break;
            }
        }
        if let Some(&k) = at.get(&root)
            && let Some(set) = held[k].lines.as_mut()
        {
            set.extend(lines);
        }
    }
    Ok(Holding {
        held,
        recorded,
        records,
        session_store,
    })
}

/// Imports a Claude Code session's steps, keyed by line (see the module's doc).
fn import_lines(repo: &Repo, format: Format, steps: Vec<Step>) -> Result<ImportReport> {
    let snap = repo.read()?;
    let head = repo.head(&snap)?;
    let scrubber = Scrubber::of(&snap)?;
    let Holding {
        held,
        recorded,
        records: records_held,
        session_store,
    } = holding(&snap, head.commit)?;
    let (view, records): (Vec<Step>, Vec<Step>) = steps
        .into_iter()
        .partition(|s| !matches!(s, Step::Record { .. }));
    let wanted: Vec<BTreeSet<String>> = view
        .iter()
        .map(|s| s.lines().iter().cloned().collect())
        .collect();
    let branch = match &head.target {
        HeadRef::Branch(b) => b.clone(),
        HeadRef::Detached(_) => "HEAD".into(),
    };
    if session_store {
        return Ok(ImportReport {
            format: Some(format),
            tip: head.commit,
            session_store: true,
            ..ImportReport::default()
        });
    }
    // The messages the branch and the transcript agree on (a message may have grown).
    let mut common = 0;
    let mut grown = Vec::new();
    while common < held.len().min(wanted.len()) {
        // A message not imported from the session is refused below.
        let Some(lines) = &held[common].lines else {
            break;
        };
        if lines.is_empty() || !lines.is_subset(&wanted[common]) {
            break;
        }
        if *lines != wanted[common] {
            grown.push(common);
        }
        common += 1;
    }
    if let Some(k) = held.iter().position(|h| h.lines.is_none()) {
        return Err(Error::invalid_op(format!(
            "branch '{branch}' already holds other messages: its message {} was not imported \
             from this session; import into another branch",
            k + 1
        )));
    }
    let mut report = ImportReport {
        format: Some(format),
        already: common,
        tip: head.commit,
        ..ImportReport::default()
    };
    // A transcript that holds less than the branch moves nothing back, unless it says the
    // messages it no longer has in view left it: a Codex rollback makes records of their lines.
    // (A Claude Code line the reader leaves off the conversation while a session is being
    // written is no such word: it comes back.)
    let moved_off: HashSet<&String> = records.iter().flat_map(|r| r.lines()).collect();
    let left_view = format == Format::Codex
        && held[common..]
            .iter()
            .any(|h| h.lines.iter().flatten().any(|l| moved_off.contains(l)));
    let rewind = common < held.len() && (common < wanted.len() || left_view);
    let abandoned: BTreeSet<String> = if rewind {
        let keep: HashSet<&String> = wanted.iter().flatten().collect();
        // The lines of the messages left, and of the records after the first of them (a meta
        // line on that path, an earlier rewind's record): the branch no longer reaches those
        // records, and they are known here, so they are not written again as records.
        let records_left = records_held
            .iter()
            .filter(|(before, _)| *before > common)
            .flat_map(|(_, lines)| lines);
        held[common..]
            .iter()
            .flat_map(|h| h.lines.iter().flatten())
            .chain(records_left)
            .filter(|l| !keep.contains(l))
            .cloned()
            .collect()
    } else {
        BTreeSet::new()
    };
    let known: HashSet<&String> = held
        .iter()
        .flat_map(|h| h.lines.iter().flatten())
        .chain(&recorded)
        .chain(wanted.iter().flatten())
        .collect();
    // An answer the conversation now leaves was paid for: kept as a record with what it cost
    // (as an import of the whole file keeps it), since the branch no longer reaches the
    // message it was.
    let paid_and_left = |r: &Step| {
        matches!(r, Step::Record { usage: Some(_), .. })
            && r.lines().iter().any(|l| abandoned.contains(l))
    };
    let new_records: Vec<Step> = records
        .into_iter()
        .filter(|r| r.lines().iter().any(|l| !known.contains(l)) || paid_and_left(r))
        .collect();
    // Their lines are named by their records, not again by the rewind's.
    let kept_again: HashSet<&String> = new_records
        .iter()
        .filter(|r| paid_and_left(r))
        .flat_map(|r| r.lines())
        .collect();
    let abandoned: BTreeSet<String> = abandoned
        .iter()
        .filter(|l| !kept_again.contains(l))
        .cloned()
        .collect();
    let mut view = view;
    let new_view: Vec<Step> = if common < wanted.len() && (rewind || common == held.len()) {
        view.split_off(common)
    } else {
        Vec::new()
    };
    // The messages that grew, edited to hold the lines they gained.
    let mut edits = Vec::new();
    for k in grown {
        let (Step::Message { message, lines, .. }
        | Step::SubAgent {
            result: message,
            lines,
            ..
        }) = &view[k]
        else {
            continue;
        };
        let mut p = Prepared::new(message.clone(), &scrubber)?;
        p.note = lines_note(format, lines);
        edits.push((
            ChainStep::Op(Op::Edit {
                target: held[k].commit,
            }),
            p,
        ));
    }
    if new_view.is_empty() && new_records.is_empty() && edits.is_empty() && abandoned.is_empty() {
        return Ok(report);
    }
    // Where the new messages go: after the last message both agree on.
    let base = if rewind {
        let c = snap.commit(&held[common].commit)?;
        c.parent()
    } else {
        head.commit
    };
    let in_view = view_sources(repo, &snap, base)?;
    drop(snap);
    let n_new = new_view.len();
    report.recorded = new_records.len();
    // Edits first: the calls a grown response gained are open when their results come.
    report.edited = edits.len();
    let mut chain = edits;
    let first = chain.len();
    chain.extend(chain_of(
        new_view,
        in_view,
        format,
        (common, first),
        &scrubber,
        merged_sub_agent(&head.target, format, &scrubber),
    )?);
    // Records hold lines, never a sub-agent.
    chain.extend(chain_of(
        new_records,
        Vec::new(),
        format,
        (0, 0),
        &scrubber,
        no_sub_agent,
    )?);
    if rewind {
        // The lines of the path left: named, so that they are never kept again as lines off
        // the path (they are in history, behind the reflog's entry for the move).
        let data = serde_json::json!({
            "left": head.commit.map(|c| c.to_hex()),
            "lines": abandoned.len(),
        })
        .to_string();
        let mut p = Prepared::record(rewind_record(format), data)?;
        p.note = lines_note(format, &abandoned.into_iter().collect::<Vec<_>>());
        chain.push((
            ChainStep::Op(Op::Record {
                kind: rewind_record(format).into(),
            }),
            p,
        ));
        move_back(repo, &head, base)?;
        report.rewound = true;
    }
    let opts = AppendOptions {
        expected_head: Some(base),
        note: None,
    };
    let infos = txn::write(repo, &opts, chain)?;
    checkpoint_sub_agents(repo, &infos);
    say_large(&mut report, &infos);
    report.added = n_new;
    report.tip = infos.last().map(|i| i.id).or(base);
    Ok(report)
}

/// Checkpoints the branch of each sub-agent `infos` merged back: written beside the handle's
/// branch, whose checkpoint is not on its line, its first cold read would replay the history
/// it forked from. (See [`crate::view::checkpoint::after_write`].)
fn checkpoint_sub_agents(repo: &Repo, infos: &[CommitInfo]) {
    let branches: Vec<String> = infos
        .iter()
        .filter_map(|i| match &i.commit.op {
            Op::Merge {
                branch,
                strategy: crate::object::MergeStrategy::ToolResult { .. },
                ..
            } => Some(branch.clone()),
            _ => None,
        })
        .collect();
    crate::view::checkpoint::after_write(&repo.store, &branches);
}

/// A session forked from another (`parent`, a Codex thread's id) repeats the lines its parent
/// had at the fork: a branch not made yet starts where the parent's branch holds the last of
/// them, so the two share those commits (a fork in tract). The parent's branch is the one whose
/// name ends with `/<parent>`; without one, the session is imported whole.
fn start_at_fork(repo: &Repo, parent: &str, steps: &[Step]) -> Result<()> {
    let snap = repo.read()?;
    let head = repo.head(&snap)?;
    let (HeadRef::Branch(name), None) = (&head.target, head.commit) else {
        return Ok(());
    };
    let suffix = format!("/{parent}");
    let Some(tip) = snap
        .branches()?
        .into_iter()
        .find(|(b, _)| b.ends_with(&suffix) && b != name)
        .map(|(_, tip)| tip)
    else {
        return Ok(());
    };
    let ids: HashSet<&str> = steps
        .iter()
        .flat_map(|s| s.lines().iter().map(String::as_str))
        .collect();
    // The parent's line, oldest first, up to its first commit holding a line this session
    // does not repeat.
    let mut line = Vec::new();
    let mut cursor = Some(tip);
    while let Some(id) = cursor {
        let c = snap.commit(&id)?;
        cursor = c.parent();
        line.push((id, lines_of_note(c.message.as_deref())));
    }
    line.reverse();
    let mut at = None;
    for (id, lines) in line {
        match lines {
            Some(lines) if lines.iter().all(|l| ids.contains(l.as_str())) => at = Some(id),
            Some(_) => break,
            // A commit the import did not write (an edit made in tract) is the parent's own.
            None => break,
        }
    }
    let Some(at) = at else {
        return Ok(());
    };
    drop(snap);
    let mut w = repo.write()?;
    if repo.head_in(&w)?.commit.is_some() {
        return Ok(()); // another writer started the branch meanwhile: imported onto it
    }
    w.set_branch(name, Some(at), &format!("import: forked from {parent}"))?;
    w.set_branch_stats(name, None)?;
    w.commit()?;
    repo.written(&head.target, None);
    Ok(())
}

/// `agent` with its version and start only where `scrubber` finds nothing in them to scrub:
/// they are kept in the store's metadata, which holds no scrubbed text.
fn clean_agent(scrubber: &Scrubber, agent: AgentSession) -> AgentSession {
    let clean = |v: Option<String>| {
        v.filter(|v| {
            scrubber
                .scrubbed(&Message::text(crate::object::Role::User, v.clone()))
                .is_none()
        })
    };
    AgentSession {
        version: clean(agent.version),
        started: clean(agent.started),
        agent: agent.agent,
    }
}

/// What the file says of its `agent`, as the branch keeps it ([`clean_agent`]); refused when
/// the branch (the handle's) holds another session of the same agent: one that started at
/// another time (two files giving one session id). Nothing is written.
fn checked_agent(repo: &Repo, agent: AgentSession, id: Option<&str>) -> Result<AgentSession> {
    let snap = repo.read()?;
    // Kept beside the refs, where no scrubbing reaches: only what the scrubber leaves alone.
    let agent = clean_agent(&Scrubber::of(&snap)?, agent);
    let HeadRef::Branch(branch) = repo.head(&snap)?.target else {
        return Ok(agent);
    };
    let Some(held) = agents::of(&snap, &branch)? else {
        return Ok(agent);
    };
    if let (Some(was), Some(now)) = (&held.started, &agent.started)
        && held.agent == agent.agent
        && was != now
    {
        return Err(Error::invalid_op(format!(
            "branch '{branch}' holds the {} session {} that started at {was}; this file's \
             session has its id but started at {now}: another session, refused; import it \
             into another branch with --branch",
            agent.agent,
            id.unwrap_or("?"),
        )));
    }
    Ok(agent)
}

/// Keeps which agent wrote the session on the handle's branch (and its version, which moves
/// as the agent is updated between turns): written only when it changed.
fn name_agent(repo: &Repo, agent: &AgentSession) -> Result<()> {
    let snap = repo.read()?;
    let head = repo.head(&snap)?;
    let (HeadRef::Branch(branch), Some(_)) = (&head.target, head.commit) else {
        return Ok(());
    };
    if agents::of(&snap, branch)?.as_ref() == Some(agent) {
        return Ok(());
    }
    drop(snap);
    let mut w = repo.store.write_refs(&[branch.as_str()])?;
    // Deleted meanwhile: no session to name.
    if w.branch(branch)?.is_none() {
        return Ok(());
    }
    agents::set(&mut w, branch, Some(agent))?;
    w.commit()
}

/// Moves the handle's branch back to `base` (the reflog keeps where it was), if it is still at
/// `head`.
fn move_back(repo: &Repo, head: &crate::refs::Head, base: Option<CommitId>) -> Result<()> {
    let mut w = repo.write()?;
    let now = repo.head_in(&w)?;
    if now.commit != head.commit {
        return Err(Error::HeadMoved {
            branch: now.branch().unwrap_or("HEAD").to_string(),
            expected: head.commit,
            actual: now.commit,
        });
    }
    let HeadRef::Branch(name) = &now.target else {
        return Err(Error::invalid_op(
            "the conversation moved to another path: import it onto a branch, not a detached \
             handle",
        ));
    };
    w.set_branch(name, base, "import: the conversation moved to another path")?;
    w.set_branch_stats(name, None)?;
    w.commit()?;
    repo.written(&now.target, None);
    Ok(())
}

/// Refuses a commit export holding what looks like a credential in a message the store does
/// not have yet, when the store scrubs: the export keeps its ids, so nothing in it can be
/// replaced as it is written.
fn refuse_credentials(
    scrubber: &Scrubber,
    commits: &[(CommitId, crate::object::Commit, Option<Message>)],
    present: &[bool],
) -> Result<()> {
    let Some(detector) = scrubber.detector() else {
        return Ok(());
    };
    for (k, ((id, commit, message), present)) in commits.iter().zip(present).enumerate() {
        let (Some(m), false) = (message, *present) else {
            continue;
        };
        if matches!(commit.op, Op::Record { .. }) {
            continue;
        }
        if let Some((field, finding)) = crate::secrets::scrub::findings(detector, m).first() {
            return Err(Error::InvalidTranscript {
                path: None,
                line: k + 1,
                reason: format!(
                    "commit {} holds what looks like a credential ({}, in its {field}); an \
                     export of commits keeps their ids, so nothing in it can be scrubbed as it \
                     is imported: export the branch's messages (`tract export --format jsonl` \
                     without --history), which are scrubbed as they are imported",
                    id.short(),
                    finding.rule
                ),
            });
        }
    }
    Ok(())
}

fn import_commits(
    repo: &Repo,
    commits: Vec<(CommitId, crate::object::Commit, Option<Message>)>,
) -> Result<ImportReport> {
    let Some(tip) = commits.last().map(|(id, ..)| *id) else {
        return Err(Error::invalid_input("the export holds no commit"));
    };
    let mut report = ImportReport {
        tip: Some(tip),
        ..ImportReport::default()
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
    refuse_credentials(&Scrubber::of(&snap)?, &commits, &present)?;
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
    let mut w = repo.write()?;
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
                    // Checked by `refuse_credentials`: written as exported.
                    _ => Prepared::stored(m.clone())?,
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
    // The commits were stored as they came, not folded: the branch is checkpointed at its new
    // tip so a cold read starts there.
    if let (HeadRef::Branch(b), true) = (&now.target, now.commit != Some(tip)) {
        crate::view::checkpoint::after_write(&repo.store, std::slice::from_ref(b));
    }
    Ok(report)
}

/// Whether `target` is `tip` or one of its ancestors, through the file's commits and then the
/// store's.
fn reaches(
    snap: &crate::storage::store::snapshot::Snapshot,
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
