//! Tool calls: as an assistant message asks for them ([`ToolCallRequest`]) and with their
//! lifecycle in a view ([`ToolCall`], Python's `ToolCall`).

use serde::Serialize;
use tract_core::ToolCallInfo;

/// One call as an assistant message makes it (an entry of Python's
/// `CommitInfo.metadata["tool_calls"]`, and of a message's `tool_calls`).
#[derive(Debug, Clone, Serialize)]
pub struct ToolCallRequest {
    /// The provider's call id; the result carries it as `tool_call_id`.
    id: String,
    /// The tool.
    name: String,
    /// The arguments as the model wrote them (verbatim JSON text).
    arguments: String,
}

impl From<&tract_core::ToolCall> for ToolCallRequest {
    fn from(c: &tract_core::ToolCall) -> Self {
        ToolCallRequest {
            id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        }
    }
}

/// One tool call with its lifecycle: input, state, result and duration (Python's `ToolCall`).
#[derive(Debug, Clone, Serialize)]
pub struct ToolCall {
    /// The provider's call id.
    call_id: String,
    /// The tool.
    name: String,
    /// The arguments as the model wrote them (verbatim JSON text).
    arguments: String,
    /// `pending` (no result yet), `ok` or `error` (the result has `is_error`).
    state: &'static str,
    /// The assistant commit that made the call (its view position).
    call_hash: String,
    /// The result's view position, once there is one.
    result_hash: Option<String>,
    /// From the call's commit to its result's, in milliseconds (`null` while pending).
    duration_ms: Option<f64>,
    /// Tokens of the result as it is in view (framing included).
    result_tokens: Option<u32>,
    /// Bytes of the result's text as it is in view.
    result_bytes: Option<usize>,
}

impl From<&ToolCallInfo> for ToolCall {
    fn from(c: &ToolCallInfo) -> Self {
        ToolCall {
            call_id: c.call_id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
            state: c.state.as_str(),
            call_hash: c.call_commit.to_hex(),
            result_hash: c.result_commit.map(|r| r.to_hex()),
            duration_ms: c.duration_us.map(|d| d as f64 / 1000.0),
            result_tokens: c.result_tokens,
            result_bytes: c.result_bytes,
        }
    }
}
