//! Compression: selected view positions replaced by one summary per contiguous run. The
//! summaries are made before the write lock is taken (a summarizer may be slow); the runs are
//! then committed in one transaction, provided the branch has not moved meanwhile.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::object::{Message, Op, Role};
use crate::refs::HeadRef;
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::summarize::{
    CONVERSATION_SUMMARIZE_SYSTEM, MANUAL, Summarizer, SummaryRequest, TOOL_SUMMARIZE_SYSTEM,
    with_default,
};
use crate::tokens;
use crate::view::View;
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;
use crate::write::txn::{self, ChainStep, prepare_all};
use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;
use std::sync::Arc;

/// Which tool turns [`crate::Tract::compress_tool_calls`] compresses.
#[derive(Debug, Clone)]
pub struct ToolTurns {
    /// Commits of the view whose turns are taken whole (`None`: every turn).
    pub commits: Option<Vec<Rev>>,
    /// Only turns that call this tool.
    pub name: Option<String>,
    /// Keep the final answer (the last assistant message without tool calls in the
    /// selection). On by default.
    pub preserve_answer: bool,
}

impl Default for ToolTurns {
    fn default() -> Self {
        ToolTurns {
            commits: None,
            name: None,
            preserve_answer: true,
        }
    }
}
/// The metadata key marking a summary message.
pub const SUMMARY_KEY: &str = "tract_summary";

/// What to compress and how.
#[derive(Default)]
pub struct CompressRequest<'a> {
    /// The positions to compress; `None`: the whole view except system messages.
    pub commits: Option<Vec<Rev>>,
    /// Positions to keep; they must be in the selection, and they split it into runs.
    pub preserve: Vec<Rev>,
    /// The summarizer's system prompt (default: the conversation prompt).
    pub system_prompt: Option<String>,
    /// Extra instructions for the summarizer.
    pub instructions: Option<String>,
    /// The length to aim for per summary, in tokens.
    pub target_tokens: Option<NonZeroU32>,
    /// Called after each run is summarized with (done, total), e.g. for a progress bar.
    pub on_progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// Who summarizes (default: the handle's summarizer, see
    /// [`crate::Tract::set_summarizer`], else the built-in extractive one).
    pub summarizer: Option<&'a dyn Summarizer>,
    /// Keep the stable prefix: the positions up to the newest summary in view (the last
    /// compress boundary) are left out of the selection, so the summary goes after the prefix
    /// a provider has cached instead of rewriting it.
    pub keep_prefix: bool,
}

/// What a compress would do, without summarizing or committing anything.
#[derive(Debug, Clone)]
pub struct CompressPlan {
    /// One summary per run, in view order.
    pub runs: Vec<PlannedRun>,
    /// The cached tokens it invalidates: those of the view from its first run on, which a
    /// provider's cache takes in again at the next request.
    pub cached_tokens_invalidated: u64,
}

impl CompressPlan {
    /// Tokens the runs hold in view now.
    pub fn tokens(&self) -> u64 {
        self.runs.iter().map(|r| r.tokens).sum()
    }
}

/// One summary to be committed.
#[derive(Debug, Clone)]
pub struct PlannedRun {
    /// The positions it replaces, in view order.
    pub sources: Vec<CommitId>,
    /// The version of each in view when planned: the position itself, or its newest edit.
    pub versions: Vec<CommitId>,
    /// Their tokens in view now.
    pub tokens: u64,
}

/// What a compress did.
#[derive(Debug, Clone)]
pub struct CompressOutcome {
    /// The compress commits, one per run summarized.
    pub commits: Vec<CommitInfo>,
    /// Runs left as they were because their summary was not shorter than they are.
    pub skipped: Vec<PlannedRun>,
    /// What the caller should be told (each run skipped, and why).
    pub warnings: Vec<String>,
    /// The request's tokens before.
    pub tokens_before: u64,
    /// The request's tokens after.
    pub tokens_after: u64,
}

/// The runs a request selects, with the messages (current content) of each, and the commits
/// `preserve` names.
#[allow(clippy::type_complexity)]
fn plan(
    repo: &Repo,
    v: &View,
    snap: &Snapshot,
    req: &CompressRequest<'_>,
) -> Result<(Vec<(PlannedRun, Vec<Arc<Message>>)>, Vec<CommitId>)> {
    let (commits, preserve) = (req.commits.as_deref(), &req.preserve);
    let mut selected: BTreeSet<usize> = match commits {
        Some(list) => list
            .iter()
            .map(|c| repo.position_in_view(v, snap, c, None))
            .collect::<Result<_>>()?,
        None => v
            .entries()
            .iter()
            .enumerate()
            .filter(|(_, e)| e.shape.role != Role::System)
            .map(|(i, _)| i)
            .collect(),
    };
    if selected.is_empty() {
        return Err(Error::invalid_input("nothing selected to compress"));
    }
    if req.keep_prefix
        && let Some(b) = v.compress_boundary()
    {
        selected.retain(|&i| i > b);
        if selected.is_empty() {
            return Err(Error::invalid_input(format!(
                "nothing selected after the stable prefix: every position selected is at or \
                 before the newest summary in view ({})",
                v.entries()[b].position.short()
            )));
        }
    }
    let mut preserved = BTreeSet::new();
    let mut preserved_ids = Vec::with_capacity(preserve.len());
    for p in preserve {
        let (id, index) = repo.locate(v, snap, p)?;
        let i = index.ok_or(Error::NotInView {
            commit: id,
            argument: None,
        })?;
        if !selected.contains(&i) {
            return Err(Error::invalid_input(format!(
                "'{p}' is preserved but not in the selection"
            )));
        }
        preserved.insert(i);
        preserved_ids.push(id);
    }
    let mut runs: Vec<Vec<usize>> = Vec::new();
    for &i in selected.difference(&preserved) {
        match runs.last_mut() {
            Some(run) if run.last() == Some(&(i - 1)) => run.push(i),
            _ => runs.push(vec![i]),
        }
    }
    if runs.is_empty() {
        return Err(Error::invalid_input("every selected message is preserved"));
    }
    let runs = runs
        .into_iter()
        .map(|run| {
            let entries: Vec<_> = run.iter().map(|&i| &v.entries()[i]).collect();
            let planned = PlannedRun {
                sources: entries.iter().map(|e| e.position).collect(),
                versions: entries.iter().map(|e| e.commit).collect(),
                tokens: entries.iter().map(|e| u64::from(e.tokens)).sum(),
            };
            let messages = repo.texts(snap, entries.iter().copied())?;
            Ok((planned, messages))
        })
        .collect::<Result<_>>()?;
    Ok((runs, preserved_ids))
}

/// The runs [`compress`] would replace, without summarizing or committing.
pub(crate) fn plan_compress(repo: &Repo, req: &CompressRequest<'_>) -> Result<CompressPlan> {
    repo.at_head(|snap, v| {
        let (runs, _) = plan(repo, v, snap, req)?;
        let first = runs
            .first()
            .and_then(|(r, _)| r.sources.first())
            .and_then(|p| v.index_of(p));
        Ok(CompressPlan {
            runs: runs.into_iter().map(|(r, _)| r).collect(),
            cached_tokens_invalidated: first.map(|i| v.tokens_from(i)).unwrap_or_default(),
        })
    })?
}

/// Replaces the selected positions with one summary per contiguous run. All or nothing: a
/// summarizer failure, or another writer changing a selected message meanwhile, commits
/// nothing; messages appended meanwhile stay after the summaries.
pub(crate) fn compress(
    repo: &Repo,
    req: &CompressRequest<'_>,
    default: Option<Arc<dyn Summarizer>>,
) -> Result<CompressOutcome> {
    let (head, tokens_before, (runs, preserved)) = repo.at_head(|snap, v| {
        plan(repo, v, snap, req).map(|runs| (v.head(), v.token_count(), runs))
    })??;
    let system_prompt = req
        .system_prompt
        .clone()
        .unwrap_or_else(|| CONVERSATION_SUMMARIZE_SYSTEM.to_string());
    let mut params = BTreeMap::new();
    params.insert("system_prompt".to_string(), system_prompt.clone());
    if let Some(i) = &req.instructions {
        params.insert("instructions".to_string(), i.clone());
    }
    if let Some(t) = req.target_tokens {
        params.insert("target_tokens".to_string(), t.to_string());
    }
    // Summarize everything first: a failure here has committed nothing.
    let (summaries, identity) = with_default(req.summarizer, default, |summarizer| -> Result<_> {
        let mut summaries = Vec::with_capacity(runs.len());
        let total = runs.len();
        for (run, messages) in runs {
            let request = SummaryRequest {
                system_prompt: system_prompt.clone(),
                instructions: req.instructions.clone(),
                target_tokens: req.target_tokens.map(NonZeroU32::get),
                messages,
                context: Vec::new(),
            };
            let text = summarizer.summarize(&request)?;
            let mut m = Message::text(Role::User, text);
            m.metadata.insert(SUMMARY_KEY.into(), "true".into());
            summaries.push((run, m));
            if let Some(progress) = req.on_progress {
                progress(summaries.len(), total);
            }
        }
        Ok((summaries, summarizer.identity()))
    })?;
    // A summary that is no shorter than its run would grow the context: the run stays as it
    // is (a summary the caller wrote is taken as given).
    let mut skipped = Vec::new();
    let mut warnings = Vec::new();
    let summaries: Vec<(PlannedRun, Message)> = summaries
        .into_iter()
        .filter_map(|(run, m)| {
            let tokens = u64::from(tokens::framed(tokens::count_message(&m), false));
            if identity != MANUAL && tokens >= run.tokens {
                let (what, they) = match run.sources.len() {
                    1 => ("1 message".to_string(), ["it is", "it was"]),
                    n => (format!("{n} messages"), ["they are", "they were"]),
                };
                warnings.push(format!(
                    "the summary of {what} ({tokens} tokens) is not shorter than {} ({} tokens); {} kept as {}",
                    they[0], run.tokens, they[1], they[0]
                ));
                skipped.push(run);
                return None;
            }
            Some((run, m))
        })
        .collect();
    if summaries.is_empty() {
        return Ok(CompressOutcome {
            commits: Vec::new(),
            skipped,
            warnings,
            tokens_before,
            tokens_after: tokens_before,
        });
    }
    let runs: Vec<(Vec<CommitId>, Vec<CommitId>)> = summaries
        .iter()
        .map(|(run, _)| (run.sources.clone(), run.versions.clone()))
        .collect();
    let steps = summaries
        .into_iter()
        .map(|(run, message)| {
            let op = Op::Compress {
                sources: run.sources,
                preserved: preserved.clone(),
                summarizer: identity.clone(),
                params: params.clone(),
            };
            (ChainStep::Op(op), message)
        })
        .collect();
    let steps = prepare_all(steps, &repo.scrubber()?)?;
    let branch = match repo.position(&repo.read()?)? {
        HeadRef::Branch(b) => b,
        HeadRef::Detached(_) => "HEAD".to_string(),
    };
    // Other writers may have appended meanwhile (an agent going on while its history is
    // compressed): the summaries go on top of the branch as it is now, as long as every run is
    // still in view as it was summarized. Otherwise nothing is committed.
    let commits = txn::write_planned(repo, |_, v| {
        let intact = runs
            .iter()
            .all(|(sources, versions)| run_intact(v, sources, versions));
        if intact {
            Ok(steps)
        } else {
            Err(Error::HeadMoved {
                branch,
                expected: head,
                actual: v.head(),
            })
        }
    })?;
    let tokens_after = repo.at_head(|_, v| v.token_count())?;
    Ok(CompressOutcome {
        commits,
        skipped,
        warnings,
        tokens_before,
        tokens_after,
    })
}

/// Whether `sources` are still consecutive positions of `v`, each at the version `versions`
/// names (not edited, compressed or removed since they were summarized).
fn run_intact(v: &View, sources: &[CommitId], versions: &[CommitId]) -> bool {
    let mut previous: Option<usize> = None;
    sources.iter().zip(versions).all(|(s, version)| {
        let Some(i) = v.index_of(s) else {
            return false;
        };
        let next = previous.is_none_or(|p| i == p + 1);
        previous = Some(i);
        next && v.entries()[i].commit == *version
    })
}

/// The request [`compress`] gets for whole tool turns: the selection (`commits`, else every
/// turn of tool `name`) widened to whole turns, the final answer preserved, the tool prompt by
/// default.
pub(crate) fn tool_turn_request<'a>(
    repo: &Repo,
    turns: &ToolTurns,
    mut req: CompressRequest<'a>,
) -> Result<CompressRequest<'a>> {
    let (commits, name, preserve_answer) = (
        turns.commits.as_deref(),
        turns.name.as_deref(),
        turns.preserve_answer,
    );
    let (selection, answer) = repo.at_head(|snap, v| -> Result<_> {
        let mut chosen = BTreeSet::new();
        match commits {
            Some(list) => {
                for c in list {
                    chosen.insert(repo.position_in_view(v, snap, c, None)?);
                }
            }
            None => chosen.extend(v.call_entries(name).iter().copied()),
        }
        // Whole turns: a call brings its results, a result brings its call and siblings.
        let mut whole = chosen.clone();
        for &i in v.call_entries(None) {
            let e = &v.entries()[i];
            let members: Vec<usize> = std::iter::once(i)
                .chain(e.results.iter().flatten().copied())
                .collect();
            if members.iter().any(|m| chosen.contains(m)) {
                whole.extend(members);
            }
        }
        let answer = whole.iter().rev().copied().find(|&i| {
            let m = &v.entries()[i].shape;
            m.role == Role::Assistant && m.tool_calls.is_empty()
        });
        let position = |i: usize| Rev::from(v.entries()[i].position);
        Ok((
            whole.iter().map(|&i| position(i)).collect::<Vec<_>>(),
            answer.map(position),
        ))
    })??;
    if selection.is_empty() {
        return Err(Error::invalid_input("no tool turns to compress"));
    }
    if preserve_answer
        && let Some(a) = answer
        && !req.preserve.contains(&a)
    {
        req.preserve.push(a);
    }
    if req.system_prompt.is_none() {
        req.system_prompt = Some(TOOL_SUMMARIZE_SYSTEM.to_string());
    }
    req.commits = Some(selection);
    Ok(req)
}

/// The view positions from `from` to `to`, both included, in view order.
pub(crate) fn positions_between(repo: &Repo, from: &Rev, to: &Rev) -> Result<Vec<CommitId>> {
    repo.at_head(|snap, v| -> Result<Vec<CommitId>> {
        let at = |rev: &Rev| repo.position_in_view(v, snap, rev, None);
        let (a, b) = (at(from)?, at(to)?);
        if a > b {
            return Err(Error::invalid_input(format!(
                "the range {from}..{to} runs backwards"
            )));
        }
        Ok(v.entries()[a..=b].iter().map(|e| e.position).collect())
    })?
}
