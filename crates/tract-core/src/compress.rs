//! Compression: selected view positions replaced by one summary per contiguous run. The
//! summaries are made before the write lock is taken (a summarizer may be slow); the runs are
//! then committed in one transaction, provided the branch has not moved meanwhile.

use crate::error::{Error, Result};
use crate::id::ObjectId;
use crate::info::CommitInfo;
use crate::object::{Message, Op, Role};
use crate::summarize::{
    CONVERSATION_SUMMARIZE_SYSTEM, Summarizer, SummaryRequest, TOOL_SUMMARIZE_SYSTEM, with_default,
};
use crate::tract::{Tract, resolve_in};
use crate::view::View;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The metadata key marking a summary message.
pub const SUMMARY_KEY: &str = "tract_summary";

/// What to compress and how.
#[derive(Default)]
pub struct CompressRequest<'a> {
    /// The positions to compress (ids, prefixes, branch names); `None`: the whole view except
    /// system messages.
    pub commits: Option<Vec<String>>,
    /// Positions to keep; they must be in the selection, and they split it into runs.
    pub preserve: Vec<String>,
    /// The summarizer's system prompt (default: the conversation prompt).
    pub system_prompt: Option<String>,
    /// Extra instructions for the summarizer.
    pub instructions: Option<String>,
    /// The length to aim for per summary, in tokens (must be positive).
    pub target_tokens: Option<u32>,
    /// Called after each run is summarized with (done, total), e.g. for a progress bar.
    pub on_progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// Who summarizes (default: the handle's summarizer, see [`Tract::set_summarizer`], else
    /// the built-in extractive one).
    pub summarizer: Option<&'a dyn Summarizer>,
}

/// One summary to be committed.
#[derive(Debug, Clone)]
pub struct PlannedRun {
    /// The positions it replaces, in view order.
    pub sources: Vec<ObjectId>,
    /// Their tokens in view now.
    pub tokens: u64,
}

/// What a compress did.
#[derive(Debug, Clone)]
pub struct CompressOutcome {
    /// The compress commits, one per run.
    pub commits: Vec<CommitInfo>,
    /// The request's tokens before.
    pub tokens_before: u64,
    /// The request's tokens after.
    pub tokens_after: u64,
}

/// The runs a request selects, with the messages (current content) of each.
pub(crate) fn plan(
    v: &View,
    snap: &crate::store::Snapshot,
    commits: Option<&[String]>,
    preserve: &[String],
) -> Result<Vec<(PlannedRun, Vec<Arc<Message>>)>> {
    let position_of = |rev: &str| v.position_in_view(snap, rev);
    let selected: BTreeSet<usize> = match commits {
        Some(list) => list.iter().map(|c| position_of(c)).collect::<Result<_>>()?,
        None => v
            .entries()
            .iter()
            .enumerate()
            .filter(|(_, e)| e.message.role != Role::System)
            .map(|(i, _)| i)
            .collect(),
    };
    if selected.is_empty() {
        return Err(Error::invalid_input("nothing selected to compress"));
    }
    let mut preserved = BTreeSet::new();
    for p in preserve {
        let i = position_of(p)?;
        if !selected.contains(&i) {
            return Err(Error::invalid_input(format!(
                "'{p}' is preserved but not in the selection"
            )));
        }
        preserved.insert(i);
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
    Ok(runs
        .into_iter()
        .map(|run| {
            let entries: Vec<_> = run.iter().map(|&i| &v.entries()[i]).collect();
            let planned = PlannedRun {
                sources: entries.iter().map(|e| e.position).collect(),
                tokens: entries.iter().map(|e| u64::from(e.tokens)).sum(),
            };
            let messages = entries.iter().map(|e| Arc::clone(&e.message)).collect();
            (planned, messages)
        })
        .collect())
}

impl Tract {
    /// The runs [`Tract::compress`] would replace, without summarizing or committing.
    pub fn plan_compress(&self, req: &CompressRequest<'_>) -> Result<Vec<PlannedRun>> {
        let runs =
            self.at_head(|snap, v| plan(v, snap, req.commits.as_deref(), &req.preserve))??;
        Ok(runs.into_iter().map(|(r, _)| r).collect())
    }

    /// Replaces the selected positions with one summary per contiguous run (preserved
    /// positions split runs and stay). Everything outside the selection stays as it was; the
    /// sources stay in history, linked from each compress commit. All or nothing: a summarizer
    /// failure, or another writer moving the branch meanwhile, commits nothing.
    pub fn compress(&self, req: &CompressRequest<'_>) -> Result<CompressOutcome> {
        if req.target_tokens == Some(0) {
            return Err(Error::invalid_input("target_tokens must be positive"));
        }
        let (head, tokens_before, runs) = self.at_head(|snap, v| {
            plan(v, snap, req.commits.as_deref(), &req.preserve)
                .map(|runs| (v.head(), v.token_count(), runs))
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
        let preserved = self.resolve_all(&req.preserve)?;
        // Summarize everything first: a failure here has committed nothing.
        let (summaries, identity) = with_default(
            req.summarizer,
            self.summarizer(),
            |summarizer| -> Result<_> {
                let mut summaries = Vec::with_capacity(runs.len());
                let total = runs.len();
                for (run, messages) in runs {
                    let request = SummaryRequest {
                        system_prompt: system_prompt.clone(),
                        instructions: req.instructions.clone(),
                        target_tokens: req.target_tokens,
                        messages,
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
            },
        )?;
        let commits = summaries
            .into_iter()
            .map(|(run, message)| {
                let op = Op::Compress {
                    sources: run.sources,
                    preserved: preserved.clone(),
                    summarizer: identity.clone(),
                    params: params.clone(),
                };
                (op, message)
            })
            .collect();
        let infos = self.commit_ops(head, commits)?;
        let tokens_after = self.at_head(|_, v| v.token_count())?;
        Ok(CompressOutcome {
            commits: infos,
            tokens_before,
            tokens_after,
        })
    }

    /// Compresses whole tool turns with [`TOOL_SUMMARIZE_SYSTEM`] by default. A selection that
    /// holds part of a turn takes the whole turn; with `commits` empty, every turn (of tool
    /// `name` if given). With `preserve_answer`, the last assistant message without tool calls
    /// in the selection (the final answer) is kept.
    pub fn compress_tool_calls(
        &self,
        commits: Option<Vec<String>>,
        name: Option<&str>,
        preserve_answer: bool,
        req: CompressRequest<'_>,
    ) -> Result<CompressOutcome> {
        let req = self.tool_turn_request(commits, name, preserve_answer, req)?;
        self.compress(&req)
    }

    /// The request [`Tract::compress_tool_calls`] makes of [`Tract::compress`]: the selection
    /// widened to whole turns, the final answer preserved, the tool prompt by default. Feed it
    /// to [`Tract::plan_compress`] for a dry run.
    pub fn tool_turn_request<'a>(
        &self,
        commits: Option<Vec<String>>,
        name: Option<&str>,
        preserve_answer: bool,
        mut req: CompressRequest<'a>,
    ) -> Result<CompressRequest<'a>> {
        let (selection, answer) = self.at_head(|snap, v| -> Result<_> {
            let mut chosen = BTreeSet::new();
            match &commits {
                Some(list) => {
                    for c in list {
                        chosen.insert(v.position_in_view(snap, c)?);
                    }
                }
                None => {
                    for &i in v.call_entries(name) {
                        chosen.insert(i);
                    }
                }
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
                let m = &v.entries()[i].message;
                m.role == Role::Assistant && m.tool_calls.is_empty()
            });
            let ids = |set: &BTreeSet<usize>| -> Vec<String> {
                set.iter()
                    .map(|&i| v.entries()[i].position.to_hex())
                    .collect()
            };
            Ok((
                ids(&whole),
                answer.map(|i| v.entries()[i].position.to_hex()),
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

    /// The compress commit on this branch whose summary replaced `rev`, if any: the link from
    /// a source to its summary (the summary links back with [`CommitInfo::sources`]).
    pub fn compressed_into(&self, rev: &str) -> Result<Option<CommitInfo>> {
        let snap = self.store().read()?;
        let id = resolve_in(&snap, rev)?;
        let mut cursor = snap.head()?.commit;
        while let Some(c) = cursor {
            let commit = snap.commit(&c)?;
            if let Op::Compress { sources, .. } = &commit.op
                && sources.contains(&id)
            {
                return crate::tract::info_of(&snap, c).map(Some);
            }
            cursor = commit.parent();
        }
        Ok(None)
    }

    /// The view positions from `from` to `to`, both included, in view order.
    pub fn positions_between(&self, from: &str, to: &str) -> Result<Vec<ObjectId>> {
        self.at_head(|snap, v| -> Result<Vec<ObjectId>> {
            let at = |rev: &str| v.position_in_view(snap, rev);
            let (a, b) = (at(from)?, at(to)?);
            if a > b {
                return Err(Error::invalid_input(format!(
                    "the range {from}..{to} runs backwards"
                )));
            }
            Ok(v.entries()[a..=b].iter().map(|e| e.position).collect())
        })?
    }

    fn resolve_all(&self, revs: &[String]) -> Result<Vec<ObjectId>> {
        revs.iter().map(|r| self.resolve(r)).collect()
    }

    /// Commits `ops` (each with its message) in one transaction, if `HEAD` is still `expected`.
    fn commit_ops(
        &self,
        expected: Option<ObjectId>,
        ops: Vec<(Op, Message)>,
    ) -> Result<Vec<CommitInfo>> {
        let opts = crate::tract::AppendOptions {
            expected_head: Some(expected),
            note: None,
        };
        self.write_ops(&opts, ops)
    }
}
