//! [`Merge`]: what a merge commit brought back.

use serde::Serialize;
use tract_core::{MergeStrategy, Op};

/// What a merge commit merged (Python's `CommitInfo.merged_branch` and `merge_strategy`,
/// with the rest of what the commit records).
#[derive(Debug, Clone, Serialize)]
pub struct Merge {
    /// The branch merged, by its name when it was merged.
    branch: String,
    /// Its tip then: the merge's second parent.
    tip_hash: String,
    /// Where it forked from the branch it was merged into.
    base_hash: String,
    /// `append` (its messages continue the view) or `tool_result` (its answer is the result
    /// of a pending call).
    strategy: &'static str,
    /// For a `tool_result` merge: the call it answers.
    call_id: Option<String>,
}

impl Merge {
    /// What `commit` merged, if it is a merge.
    pub fn of(commit: &tract_core::Commit) -> Option<Merge> {
        match (&commit.op, commit.parents.get(1)) {
            (
                Op::Merge {
                    branch,
                    base,
                    strategy,
                    ..
                },
                Some(tip),
            ) => Some(Merge {
                branch: branch.to_string(),
                tip_hash: tip.to_hex(),
                base_hash: base.to_hex(),
                strategy: strategy.name(),
                call_id: match strategy {
                    MergeStrategy::ToolResult { call_id } => Some(call_id.clone()),
                    MergeStrategy::Append => None,
                },
            }),
            _ => None,
        }
    }
}
