//! [`Branch`]: one branch with its counts, Python's `BranchInfo` as JSON.

use serde::Serialize;
use tract_core::BranchInfo;

/// A branch: its name and tip, what its view holds, and when it last moved.
#[derive(Debug, Clone, Serialize)]
pub struct Branch {
    /// Its name.
    name: String,
    /// Its tip: a full commit id.
    head: String,
    /// Whether it is the current branch (the one the store's `HEAD` names, or the handle's).
    current: bool,
    /// Messages in its view (kept as the branch moves: listing compiles nothing).
    messages: u64,
    /// Tokens compile would send for its view.
    token_count: u64,
    /// When its tip was committed: RFC 3339 UTC with microseconds.
    last_activity: String,
    /// The same time in microseconds since the Unix epoch.
    last_activity_us: u64,
    /// The agent whose session it holds (`claude-code`, `codex`, `gemini`), when an agent's
    /// session was imported or captured onto it; else `null`.
    agent: Option<String>,
    /// That agent's version, as the session names it (`null` when it names none: Gemini CLI
    /// writes no version).
    agent_version: Option<String>,
}

impl From<&BranchInfo> for Branch {
    fn from(b: &BranchInfo) -> Self {
        Branch {
            name: b.name.clone(),
            head: b.head.to_hex(),
            current: b.current,
            messages: b.messages,
            token_count: b.token_count,
            last_activity: tract_core::clock::rfc3339_micros(b.last_activity_us),
            last_activity_us: b.last_activity_us,
            agent: b.agent.as_ref().map(|a| a.agent.clone()),
            agent_version: b.agent.as_ref().and_then(|a| a.version.clone()),
        }
    }
}
