//! [`ReplayReport`]: what a replay of a session on another model did (`tract replay`,
//! Python's `replay()`).

use serde::Serialize;
use tract_core::{Divergence as CoreDivergence, ReplayOutcome};

/// The first tool call the recording had no result for.
#[derive(Debug, Clone, Serialize)]
pub struct Divergence {
    /// The model's answer that made the call, counted from the fork point (1 for the first).
    step: u64,
    /// The tool called.
    tool: String,
    /// Its arguments as the model wrote them.
    arguments: String,
    /// The call's id.
    call_id: String,
}

impl From<&CoreDivergence> for Divergence {
    fn from(d: &CoreDivergence) -> Self {
        Divergence {
            step: d.step,
            tool: d.tool.clone(),
            arguments: d.arguments.clone(),
            call_id: d.call_id.clone(),
        }
    }
}

/// What a replay did: its branch, the requests it made, the tool calls the recording
/// answered, the user messages sent, where it diverged, what it cost.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    /// The branch replayed.
    original: String,
    /// The replay's branch.
    branch: String,
    /// The commit the replay's branch was forked at.
    from_commit_hash: Option<String>,
    /// Model requests made in this run.
    request_count: u64,
    /// Tool calls answered from the recording in this run.
    matched_call_count: u64,
    /// Tool calls the divergence hook answered in this run.
    hook_answered_call_count: u64,
    /// Recorded user messages sent so far.
    user_messages_sent: u64,
    /// Recorded user messages after the fork point.
    user_message_count: u64,
    /// The first call the recording had no result for (`null`: none).
    divergence: Option<Divergence>,
    /// Whether every recorded user message was sent and the last answer called no tool.
    finished: bool,
    /// Whether the run stopped at its request limit.
    stopped_at_limit: bool,
    /// Input tokens the answers' usage reports (cache reads and writes apart).
    input_tokens: u64,
    /// Output tokens.
    output_tokens: u64,
    /// Input tokens read from the provider's cache.
    cache_read_input_tokens: u64,
    /// Input tokens written to it.
    cache_creation_input_tokens: u64,
    /// The command comparing the replay with the original.
    diff_command: String,
}

impl From<&ReplayOutcome> for ReplayReport {
    fn from(o: &ReplayOutcome) -> Self {
        ReplayReport {
            original: o.original.clone(),
            branch: o.branch.clone(),
            from_commit_hash: o.from.map(|c| c.to_hex()),
            request_count: o.requests,
            matched_call_count: o.matched,
            hook_answered_call_count: o.answered_by_hook,
            user_messages_sent: o.users_sent,
            user_message_count: o.users_total,
            divergence: o.divergence.as_ref().map(Divergence::from),
            finished: o.finished,
            stopped_at_limit: o.stopped_at_limit,
            input_tokens: o.usage.input_tokens,
            output_tokens: o.usage.output_tokens,
            cache_read_input_tokens: o.usage.cache_read_input_tokens,
            cache_creation_input_tokens: o.usage.cache_creation_input_tokens,
            diff_command: format!("tract diff {} {}", o.original, o.branch),
        }
    }
}
