//! The vocabulary of tract's JSON: one serde type per concept, built from the core's type, so
//! a commit, a tool call or a report is spelled the same way by every surface that prints it:
//! `--json` output, the MCP server's tool results (`tract mcp`), the web view's API
//! (`tract serve`) and the Python API's dicts (through `pythonize`). The names are the Python API's (`commit_hash`, `token_count`, `created_at`,
//! ...); a field Python has no name for takes the one `--json` used, with ids ending in `_hash`
//! and counts in `_count`. Times are given twice, as Python gives them: `created_at` (RFC 3339
//! UTC, microseconds) and `timestamp_us` (microseconds since the Unix epoch); durations in
//! milliseconds (`duration_ms`). A surface that shows less of a type says why where it does
//! ([`Detail`]); the doc comments of the fields are the reference (docs/cli.md, docs/serve.md
//! and docs/integrations.md point here).

#![warn(missing_docs)]

mod branch;
mod cache;
mod clear;
mod commit;
mod compress;
mod config;
mod diff;
mod fsck;
mod gc;
mod import;
mod index;
mod merge;
mod redaction;
mod replay;
mod search;
mod secrets;
mod status;
mod sync;
mod tool_call;
mod tool_turn;
mod upgrade;
mod usage;
mod version;
mod view_message;

pub use branch::Branch;
pub use cache::{CacheBreak, CacheReport, CacheRequest, notes as cache_notes};
pub use clear::{ClearPlan, ClearReport};
pub use commit::{Commit, Detail};
pub use compress::{CompressPlan, CompressReport};
pub use config::Config;
pub use diff::{HistoryDiffReport, ViewDiffReport};
pub use fsck::FsckReport;
pub use gc::GcReport;
pub use import::ImportReport;
pub use index::IndexReport;
pub use merge::Merge;
pub use redaction::{RedactReport, Redaction};
pub use replay::{Divergence, ReplayReport};
pub use search::{Agent, SearchHit};
pub use secrets::{SecretFinding, SecretsRedaction, TextFinding};
pub use status::Status;
pub use sync::SyncReport;
pub use tool_call::{ToolCall, ToolCallRequest};
pub use tool_turn::ToolTurn;
pub use upgrade::UpgradeReport;
pub use usage::{UsageReport, UsageReports};
pub use version::Version;
pub use view_message::ViewMessage;

/// Ids as hex, in order.
fn hex<I: std::fmt::Display>(ids: impl IntoIterator<Item = I>) -> Vec<String> {
    ids.into_iter().map(|id| id.to_string()).collect()
}
