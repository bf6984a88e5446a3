//! Tool calls and results through a handle: the `tool_result` hook and the stored policy,
//! tool queries, result edits and repair.

use crate::error::Result;
use crate::object::{Content, Message, Op};
use crate::tools::hooks::{PendingToolResult, RecordOptions, ToolResultOutcome};
use crate::tools::policy::{self, ToolPolicy};
use crate::tools::{self, ResultQuery, ToolCallInfo, ToolTurn};
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How many commits back from the head [`Tract::call_names`] looks before it asks the view.
const RECENT_CALLS: usize = 64;

use super::Tract;

impl Tract {
    /// Registers the `tool_result` handler of this handle, replacing the default one (the
    /// store's policy) and any handler registered before.
    pub fn on_tool_result(
        &self,
        handler: impl Fn(&mut PendingToolResult) -> Result<()> + Send + Sync + 'static,
    ) {
        self.hooks_mut().tool_result = Some(Arc::new(handler));
    }

    /// Removes the `tool_result` handler: the store's policy applies again.
    pub fn off_tool_result(&self) {
        self.hooks_mut().tool_result = None;
    }

    /// Records the result of tool call `call_id` from tool `name`, through the `tool_result`
    /// handler (or the store's policy). Returns the recorded position (its original content);
    /// see [`Tract::record_tool_result`] for the summary and warnings.
    pub fn tool_result(
        &self,
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Result<CommitInfo> {
        let message = Message::tool_result(call_id, name, content, is_error);
        Ok(self
            .record_tool_result(message, &RecordOptions::default())?
            .original)
    }

    /// Records a tool result: decided and summarized as `opts` says (see [`RecordOptions`]). If
    /// summarizing fails, the original is recorded unchanged and the failure is in the
    /// warnings: a result is never lost because summarizing it failed. A rejection or a
    /// handler's error commits nothing.
    pub fn record_tool_result(
        &self,
        message: Message,
        opts: &RecordOptions<'_>,
    ) -> Result<ToolResultOutcome> {
        self.recorder(opts.summarizer)
            .record(message, opts.decision.clone())
    }

    /// Appends messages in one transaction, each tool result decided and summarized as `opts`
    /// says, as [`Tract::record_tool_result`] does. All or nothing: an invalid message, a
    /// rejection or a handler's error commits none of them. Returns one outcome per message,
    /// in order (other messages are simply approved).
    pub fn append_batch_with_policy(
        &self,
        messages: Vec<Message>,
        opts: &RecordOptions<'_>,
    ) -> Result<Vec<ToolResultOutcome>> {
        super::write::check_all_say_something(&messages)?;
        self.recorder(opts.summarizer)
            .record_batch(messages, opts.decision.as_ref())
    }

    /// The store's tool-summarization policy (empty when none was configured).
    pub fn tool_policy(&self) -> Result<ToolPolicy> {
        policy::load(&self.repo)
    }

    /// Replaces the store's tool-summarization policy (durably; every process sees it on its
    /// next tool result). An invalid policy is refused and the stored one kept.
    pub fn set_tool_policy(&self, policy: &ToolPolicy) -> Result<()> {
        policy::store(&self.repo, policy)
    }

    /// Edits a tool result: `target` must be a tool result in view answering `call_id` from
    /// tool `name`. The edit keeps role, `tool_call_id` and name; the original stays in history.
    pub fn edit_tool_result(
        &self,
        target: impl Into<Rev>,
        call_id: &str,
        name: &str,
        content: Content,
    ) -> Result<CommitInfo> {
        tools::edit_result(&self.repo, &target.into(), call_id, name, content)
    }

    /// Tool results in the current view, in view order, each position once: those `q` names
    /// (of one tool, after or before a commit of the view).
    pub fn find_tool_results(&self, q: &ResultQuery) -> Result<Vec<CommitInfo>> {
        tools::find_results(
            &self.repo,
            q.name.as_deref(),
            q.after.as_ref(),
            q.before.as_ref(),
        )
    }

    /// Assistant commits in the current view that call tools (`name`: that tool), in view order.
    pub fn find_tool_calls(&self, name: Option<&str>) -> Result<Vec<CommitInfo>> {
        tools::find_calls(&self.repo, name)
    }

    /// Tool-call commits paired with their results (`name`: turns that call that tool).
    pub fn find_tool_turns(&self, name: Option<&str>) -> Result<Vec<ToolTurn>> {
        tools::find_turns(&self.repo, name)
    }

    /// Every tool call in view without a result, in view order.
    pub fn pending_tool_calls(&self) -> Result<Vec<ToolCallInfo>> {
        tools::pending_calls(&self.repo)
    }

    /// Commits a marked synthetic error result for every tool call in view that has none, in
    /// one transaction, so a session a crash left mid-tool resumes valid. Returns them.
    pub fn repair(&self) -> Result<Vec<CommitInfo>> {
        tools::repair(&self.repo)
    }
    /// The tool names of the calls `wanted` (by call id) in the view at `HEAD`, newest first:
    /// what an output appended after its call is named by. A call among the last commits, with
    /// only appends and records after it, is found without building the view (a handle just
    /// opened on a long history does not read all of it); otherwise the view is searched.
    pub fn call_names(&self, wanted: &HashSet<String>) -> Result<HashMap<String, String>> {
        if wanted.is_empty() {
            return Ok(HashMap::new());
        }
        let snap = self.repo.read()?;
        let mut found = HashMap::new();
        let mut cursor = self.repo.head(&snap)?.commit;
        for _ in 0..RECENT_CALLS {
            let Some(id) = cursor else { break };
            let commit = snap.commit(&id)?;
            match &commit.op {
                // An append is in the view as it was written, and nothing after it (appends,
                // records) has taken it out.
                Op::Append => {
                    let info = CommitInfo::with_commit(&snap, id, commit)?;
                    for c in info.message.iter().flat_map(|m| &m.tool_calls) {
                        if wanted.contains(&c.id) {
                            found.entry(c.id.clone()).or_insert_with(|| c.name.clone());
                        }
                    }
                    if found.len() == wanted.len() {
                        return Ok(found);
                    }
                    cursor = info.commit.parent();
                }
                Op::Record { .. } => cursor = commit.parent(),
                // An edit, a compression, a merge, a clear: the view says what is in it.
                _ => break,
            }
        }
        self.repo.at_head(|_, v| {
            crate::formats::responses::call_names(
                v.entries().iter().rev().map(|e| e.shape.as_ref()),
                wanted,
            )
        })
    }
}
