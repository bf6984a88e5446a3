//! Merging a branch back: the sub-agent pattern. A merge commit has two parents, the
//! handle's head and the other branch's tip, so the other branch's whole history stays
//! reachable; what the view gains depends on the strategy (see [`MergeStrategy`]).

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::object::{MergeStrategy, Message, Op, Role};
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::summarize::{BRANCH_SUMMARIZE_SYSTEM, Summarizer, SummaryRequest, with_default};
use crate::view::View;
use crate::view::ancestry;
use crate::view::info::CommitInfo;
use crate::view::revision::BranchName;
use crate::write::txn::{self, Prepared};
use std::num::NonZeroU32;
use std::sync::Arc;

/// A merge, as [`crate::Tract::merge`] takes it.
pub struct MergeRequest<'a> {
    /// How the branch comes back.
    pub strategy: MergeStrategy,
    /// For [`MergeStrategy::ToolResult`]: the result is a summary of the branch's messages
    /// since the fork point instead of its final assistant answer.
    pub summarize: bool,
    /// Who summarizes (default: the handle's summarizer, else the extractive one).
    pub summarizer: Option<&'a dyn Summarizer>,
    /// The summary's length to aim for, in tokens.
    pub target_tokens: Option<NonZeroU32>,
    /// A note stored on the merge commit.
    pub note: Option<String>,
}

impl Default for MergeRequest<'_> {
    fn default() -> Self {
        MergeRequest {
            strategy: MergeStrategy::Append,
            summarize: false,
            summarizer: None,
            target_tokens: None,
            note: None,
        }
    }
}

/// What a merge found before anything is written.
struct Plan {
    /// The handle's head the merge goes on top of.
    ours: CommitId,
    /// The other branch's tip.
    theirs: CommitId,
    /// Their fork point.
    base: CommitId,
    /// The other branch's messages since the fork point.
    merged: View,
}

/// Merges branch `name` into the handle's position. Checked before anything is written (a
/// failure commits nothing); committed only if the handle's branch has not moved meanwhile.
pub(crate) fn merge(
    repo: &Repo,
    name: &BranchName,
    req: &MergeRequest<'_>,
    default: Option<Arc<dyn Summarizer>>,
) -> Result<CommitInfo> {
    if req.summarize && req.strategy == MergeStrategy::Append {
        return Err(Error::invalid_input(
            "summarize applies to the tool_result strategy (an append merge brings the messages themselves)",
        ));
    }
    let snap = repo.read()?;
    let plan = plan(repo, &snap, name)?;
    let op = |summarizer: Option<String>| Op::Merge {
        base: plan.base,
        branch: name.to_string(),
        strategy: req.strategy.clone(),
        summarizer,
    };
    let note = req.note.clone();
    let MergeStrategy::ToolResult { call_id } = &req.strategy else {
        return txn::write_merge(repo, Some(plan.ours), op(None), plan.theirs, None, note);
    };
    let pending = repo.with_view(&snap, Some(plan.ours), |v| {
        v.open_call(call_id).map(|e| {
            let call = e.shape.tool_calls.iter().find(|c| &c.id == call_id);
            call.map(|c| c.name.clone()).unwrap_or_default()
        })
    })?;
    let Some(tool) = pending else {
        let pending = repo.with_view(&snap, Some(plan.ours), |v| v.tally().open_calls)?;
        return Err(Error::CallNotPending {
            call_id: call_id.clone(),
            pending: pending.into_iter().collect(),
        });
    };
    let messages: Vec<Arc<Message>> = repo.texts(&snap, plan.merged.entries())?;
    drop(snap);
    let (text, summarizer) = if req.summarize {
        // Summarized outside any transaction: a slow summarizer blocks no writer.
        let (text, identity) = with_default(req.summarizer, default, |s| -> Result<_> {
            let request = SummaryRequest {
                system_prompt: BRANCH_SUMMARIZE_SYSTEM.to_string(),
                instructions: None,
                target_tokens: req.target_tokens.map(NonZeroU32::get),
                messages,
                context: Vec::new(),
            };
            Ok((s.summarize(&request)?, s.identity()))
        })?;
        (text, Some(identity))
    } else {
        (final_answer(name, &messages)?, None)
    };
    let result = Prepared::new(
        Message::tool_result(call_id.clone(), tool, text, false),
        &repo.scrubber()?,
    )?;
    txn::write_merge(
        repo,
        Some(plan.ours),
        op(summarizer),
        plan.theirs,
        Some(result),
        note,
    )
}

/// Finds the fork point and the other branch's messages since, refusing a merge that would
/// do nothing or make no sense.
fn plan(repo: &Repo, snap: &Snapshot, name: &BranchName) -> Result<Plan> {
    let head = repo.head(snap)?;
    if head.branch() == Some(name.as_str()) {
        return Err(Error::invalid_op(format!(
            "cannot merge branch '{name}' into itself"
        )));
    }
    let theirs = snap.require_branch(name.as_str())?;
    let Some(ours) = head.commit else {
        return Err(Error::UnbornBranch {
            branch: head.branch().unwrap_or("HEAD").to_string(),
        });
    };
    let base = ancestry::merge_base(snap, ours, theirs)?.ok_or_else(|| Error::NoMergeBase {
        branch: name.to_string(),
        head: ours,
        other: theirs,
    })?;
    if base == theirs {
        return Err(Error::invalid_op(format!(
            "branch '{name}' ({}) is already in this branch's history: nothing to merge",
            theirs.short()
        )));
    }
    let merged = View::since(snap, theirs, base)?.ok_or_else(|| {
        Error::invalid_op(format!(
            "branch '{name}' reaches its fork point {} only through a merge of its own; merge the branch it was merged from instead",
            base.short()
        ))
    })?;
    if merged.is_empty() {
        return Err(Error::invalid_op(format!(
            "branch '{name}' has no messages since it forked at {}: nothing to merge",
            base.short()
        )));
    }
    Ok(Plan {
        ours,
        theirs,
        base,
        merged,
    })
}

/// The text of the last assistant message with text: a sub-agent's final answer.
fn final_answer(name: &BranchName, messages: &[Arc<Message>]) -> Result<String> {
    messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.content.text().into_owned())
        .find(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            Error::invalid_op(format!(
                "branch '{name}' has no assistant answer since it forked; merge with summarize to send a summary of its work instead"
            ))
        })
}
