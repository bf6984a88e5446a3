//! [`ToolTurn`]: a tool-call commit with its results, Python's `ToolTurn` as JSON.

use super::{Commit, Detail, ToolCall, hex};
use serde::Serialize;

/// An assistant message that called tools, with its results matched by call id.
#[derive(Debug, Clone, Serialize)]
pub struct ToolTurn {
    /// The assistant commit with the calls.
    call: Commit,
    /// Its results in call order (a call without a result has none).
    results: Vec<Commit>,
    /// The names of the tools called, in call order.
    tool_names: Vec<String>,
    /// The call commit's id and its results' ids.
    all_hashes: Vec<String>,
    /// The results' ids.
    result_hashes: Vec<String>,
    /// Each call's lifecycle, in call order.
    calls: Vec<ToolCall>,
}

impl From<&tract_core::ToolTurn> for ToolTurn {
    fn from(turn: &tract_core::ToolTurn) -> Self {
        ToolTurn::new(turn, Detail::Full)
    }
}

impl ToolTurn {
    /// `turn`, its commits shown with `detail`.
    pub fn new(turn: &tract_core::ToolTurn, detail: Detail) -> Self {
        ToolTurn {
            call: Commit::new(&turn.call, detail),
            results: turn
                .results
                .iter()
                .map(|r| Commit::new(r, detail))
                .collect(),
            tool_names: turn.tool_names(),
            all_hashes: hex(turn.all_hashes()),
            result_hashes: hex(turn.result_hashes()),
            calls: turn.calls.iter().map(ToolCall::from).collect(),
        }
    }
}
