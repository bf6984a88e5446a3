//! tract-core: version control for LLM context.
//!
//! Every message an agent sees or produces is a content-addressed commit (BLAKE3) in an
//! append-only DAG. A store is a redb file with a directory beside it (`<file>-journal/`: the
//! journal's segments, the pack files its objects are folded into, the search index), a store
//! in memory, or, with the `postgres` feature, a schema in a PostgreSQL database (the search
//! index in tables of the same schema). Messages can be edited while the original stays in
//! history; the *view* of a commit is what the model sees, and [`Tract::compile`] renders it
//! for OpenAI chat, Anthropic Messages or OpenAI Responses, valid by construction.
//!
//! ```
//! use tract_core::{Tract, ToolCall};
//! let t = Tract::in_memory()?;
//! t.system("You are a careful coding agent.")?;
//! t.user("Where is the database configured?")?;
//! t.assistant("", vec![ToolCall {
//!     id: "call_1".into(), name: "grep".into(),
//!     arguments: r#"{"pattern":"DATABASE_URL"}"#.into(),
//! }])?;
//! t.tool_result("call_1", "grep", "config.py:42: DATABASE_URL=postgres://db", false)?;
//! let compiled = t.compile()?;
//! assert_eq!(compiled.len(), 4);
//! println!("{}", compiled.to_anthropic()?);
//! # Ok::<(), tract_core::Error>(())
//! ```

#![warn(missing_docs)]

pub mod agents;
pub mod capture;
pub mod clock;
pub mod environment;
pub mod error;
pub mod formats;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod id;
pub mod json;
pub mod object;
pub mod ops;
mod parallel;
pub mod price_table;
pub mod refs;
mod repo;
pub mod retention_policy;
mod scrubbing;
pub mod secrets;
pub mod stats;
pub mod storage;
pub mod summarize;
pub mod tokens;
pub mod tools;
mod tract;
pub mod usage;
pub mod view;
pub mod write;

pub use agents::AgentSession;
pub use clock::Clock;
pub use environment::Environment;
pub use error::{BatchPosition, Error, ErrorCategory, LockReason, Result};
pub use formats::compile::{AnthropicLayout, Compiled, CompiledMessage, ReusedCallId, Sent};
pub use formats::imports::ImportReport;
pub use formats::render::{Pieces, Provider, Rendering};
pub use id::{BlobId, ChunkId, CommitId, HexPrefix};
pub use object::{Commit, Content, ContentPart, MergeStrategy, Message, Op, Role, ToolCall};
pub use ops::branch::BranchInfo;
pub use ops::diff::{DiffSide, HistoryDiff, ViewDiff};
pub use ops::fsck::{FsckReport, Problem, fsck};
pub use ops::gc::{GcOptions, GcOutcome, gc, gc_with};
pub use ops::history::LogQuery;
pub use ops::index::{IndexReport, update_index, update_index_with};
pub use ops::merge::MergeRequest;
pub use ops::page::{Mark, PageAt, PageCall, PageEntry, ViewPage};
pub use ops::prompt_cache::{
    CacheBreak, CacheOptions, CacheReport, CachedRequest, Cause, DEFAULT_CACHE_TTL_SECONDS,
};
pub use ops::redact::{RedactOptions, Redaction};
pub use ops::replay::{
    Divergence, REPLAY_RECORD_KIND, Recording, ReplayOutcome, ToolDef, canonical_arguments,
};
pub use ops::retention::{DeletedBranch, Kept, ReplacedResult, RuleOutcome};
pub use ops::search::{SearchHit, SearchQuery, SearchScope};
pub use ops::secrets::{ScanOptions, SecretFinding, SecretsRedaction};
pub use ops::sync::{
    BranchSpec, BranchSync, Refusal, RefusedBranch, SyncOptions, SyncProgress, SyncReport,
    clone_store, clone_store_with, pull, push,
};
pub use ops::usage::{BranchUsage, Priced, StoreUsage, UsageOptions};
pub use price_table::{PriceTable, Prices};
pub use refs::{Head, HeadRef, ReflogEntry};
pub use repo::Bind;
pub use retention_policy::{
    DeleteIdleBranches, ReplaceToolResults, Replacement, RetentionPolicy, RetentionRule,
};
pub use secrets::{Detector, Finding, SCRUBBED_METADATA_KEY, Scrub, SecretsPolicy};
pub use stats::{BranchStats, Tally};
pub use storage::store::{
    FORMAT_VERSION, JournalSalvage, OpenMode, Store, StoreOptions, Tombstone, UpgradeReport,
};
pub use summarize::compress::{
    CompressOutcome, CompressPlan, CompressRequest, PlannedRun, ToolTurns,
};
pub use summarize::llm::{Api, DEFAULT_MAX_TOKENS, OpenAiCompatible};
pub use summarize::{
    BRANCH_SUMMARIZE_SYSTEM, Extractive, FnSummarizer, Manual, Summarizer, SummaryRequest,
    TOOL_SUMMARIZE_SYSTEM,
};
pub use tools::clear::{ClearCandidate, ClearOptions, ClearOutcome, ClearPlan};
pub use tools::decision::{Decision, DecisionSlot};
pub use tools::hooks::{
    HookEvent, PendingToolResult, RecordOptions, ToolResultHandler, ToolResultOutcome,
};
pub use tools::policy::ToolPolicy;
pub use tools::{CallState, ResultQuery, ToolCallInfo, ToolTurn};
pub use tract::{DivergenceHook, OpenOptions, Progress, ProgressFn, ReplayOptions, Status, Tract};
pub use usage::{Ledger, Totals, Usage};
pub use view::cache::{DEFAULT_VIEW_CACHE_BUDGET, set_view_cache_budget, view_cache_bytes};
pub use view::info::{CommitInfo, Current};
pub use view::revision::{BranchName, Rev};
pub use view::{CallShape, Shape, View, ViewEntry};
pub use write::record::RecordQuery;
pub use write::txn::AppendOptions;
