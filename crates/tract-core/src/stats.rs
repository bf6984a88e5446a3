//! Per-branch counts kept as a branch moves, so listing many sessions (their messages, tokens
//! in view and last activity) compiles none of them.
//!
//! A [`Tally`] holds what a view's token count and pairing depend on, without its entries:
//! an append updates it exactly as the view's own bookkeeping does. A [`BranchStats`] row
//! names the tip it describes; a row whose tip is not the branch's (a store written by an older
//! tract, a `reset`) is stale and computed again from the view.

use crate::id::CommitId;
use crate::object::{Message, Role};
use crate::tokens;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// What a view holds, counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Messages in view.
    pub messages: u64,
    /// Tokens of every message in view, framed.
    pub total_tokens: u64,
    /// Tokens of results that answer no call (not sent).
    pub orphan_tokens: u64,
    /// Tool calls without a result.
    pub unanswered: u64,
    /// The ids of calls still waiting for a result.
    pub open_calls: BTreeSet<String>,
}

impl Tally {
    /// Counts a message appended to the view with `framed` tokens, pairing a tool result with
    /// the open call it answers as the view does. Returns whether it is a result answering no
    /// call.
    pub fn push(&mut self, m: &Message, framed: u32) -> bool {
        self.push_parts(
            m.role,
            m.tool_calls.iter().map(|c| c.id.as_str()),
            m.tool_call_id.as_deref(),
            framed,
        )
    }

    /// [`Tally::push`] of a message known by its role, its calls' ids and the call it
    /// answers (a view entry's shape).
    pub(crate) fn push_parts<'a>(
        &mut self,
        role: Role,
        calls: impl IntoIterator<Item = &'a str>,
        tool_call_id: Option<&str>,
        framed: u32,
    ) -> bool {
        // Saturating throughout: the counts may come from a damaged row of the store.
        self.messages = self.messages.saturating_add(1);
        self.total_tokens = self.total_tokens.saturating_add(u64::from(framed));
        match role {
            Role::Assistant => {
                for call in calls {
                    // A reused call id leaves the earlier call unanswered for good.
                    self.open_calls.insert(call.to_string());
                    self.unanswered = self.unanswered.saturating_add(1);
                }
                false
            }
            Role::Tool => {
                let id = tool_call_id.unwrap_or_default();
                if self.open_calls.remove(id) {
                    self.unanswered = self.unanswered.saturating_sub(1);
                    false
                } else {
                    self.orphan_tokens = self.orphan_tokens.saturating_add(u64::from(framed));
                    true
                }
            }
            Role::System | Role::User => false,
        }
    }

    /// Counts an edit of a message in view from `old` to `new` framed tokens (`orphan`: the
    /// message is a result answering no call).
    pub fn edit(&mut self, old: u32, new: u32, orphan: bool) {
        let swap = |n: u64| {
            n.saturating_sub(u64::from(old))
                .saturating_add(u64::from(new))
        };
        self.total_tokens = swap(self.total_tokens);
        if orphan {
            self.orphan_tokens = swap(self.orphan_tokens);
        }
    }

    /// Tokens compile would send.
    pub fn token_count(&self) -> u64 {
        tokens::request_tokens(self.total_tokens, self.orphan_tokens, self.unanswered)
    }
}

/// A branch's counts at one tip.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchStats {
    /// The tip these counts are of.
    pub tip: CommitId,
    /// When the tip was committed, in microseconds since the Unix epoch.
    pub last_activity_us: u64,
    /// What the view at the tip holds.
    pub tally: Tally,
    /// How many commits along first parents the tip is past the view checkpoint the branch
    /// names, or past the last write that found its view could not be checkpointed (`None`
    /// when not known: a row an older tract wrote). A write that takes it to the store's
    /// checkpoint interval checkpoints the view.
    pub since_checkpoint: Option<u64>,
}
