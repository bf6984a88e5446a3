//! tract-core: version control for LLM context.
//!
//! Every message an agent sees or produces is a content-addressed commit (BLAKE3) in an
//! append-only DAG stored in one redb file (or, with the `postgres` feature, in PostgreSQL).
//! Messages can be edited while the original stays in history; the *view* of a commit is what
//! the model sees, and [`Tract::compile`] renders it for OpenAI or Anthropic, valid by
//! construction.
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
//! assert_eq!(compiled.messages().len(), 4);
//! println!("{}", compiled.to_anthropic());
//! # Ok::<(), tract_core::Error>(())
//! ```

#![warn(missing_docs)]

mod ancestry;
mod append;
mod backend;
pub mod branch;
mod cache;
pub mod capture;
pub mod claude_code;
pub mod clear;
pub mod clock;
mod codec;
pub mod compile;
pub mod compress;
pub mod decision;
mod edit;
pub mod environment;
pub mod error;
pub mod exports;
pub mod fsck;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gc;
mod group;
mod history;
pub mod hooks;
pub mod id;
pub mod imports;
mod info;
pub mod json;
pub mod llm;
pub mod merge;
pub mod object;
pub mod page;
pub mod policy;
#[cfg(feature = "postgres")]
mod postgres_backend;
#[cfg(feature = "postgres")]
mod postgres_connect;
#[cfg(feature = "postgres")]
mod postgres_writes;
pub mod record;
pub mod redact;
mod redb_backend;
pub mod refs;
mod repo;
pub mod responses;
pub mod revision;
pub mod search;
pub mod stats;
pub mod store;
pub mod summarize;
pub mod sync;
pub mod tokens;
pub mod tools;
mod tract;
pub mod transcript;
mod txn;
pub mod view;

pub use branch::BranchInfo;
pub use cache::{DEFAULT_VIEW_CACHE_BUDGET, set_view_cache_budget, view_cache_bytes};
pub use clear::{ClearCandidate, ClearOptions, ClearOutcome, ClearPlan};
pub use clock::Clock;
pub use compile::{Compiled, CompiledMessage};
pub use compress::{CompressOutcome, CompressPlan, CompressRequest, PlannedRun};
pub use decision::{Decision, DecisionSlot};
pub use environment::Environment;
pub use error::{BatchPosition, Error, ErrorCategory, LockReason, Result};
pub use fsck::{FsckReport, Problem};
pub use gc::GcOutcome;
pub use hooks::{HookEvent, PendingToolResult, ToolResultHandler, ToolResultOutcome};
pub use id::{BlobId, ChunkId, CommitId, HexPrefix};
pub use imports::ImportReport;
pub use info::{CommitInfo, Current};
pub use llm::OpenAiCompatible;
pub use merge::MergeRequest;
pub use object::{Commit, Content, ContentPart, MergeStrategy, Message, Op, Role, ToolCall};
pub use page::{Mark, PageCall, PageEntry, ViewPage};
pub use policy::ToolPolicy;
pub use redact::Redaction;
pub use refs::{Head, HeadRef, ReflogEntry};
pub use repo::Bind;
pub use revision::{BranchName, Rev};
pub use search::{SearchHit, SearchQuery};
pub use stats::{BranchStats, Tally};
pub use store::{OpenMode, Store, StoreOptions, Tombstone};
pub use summarize::{
    BRANCH_SUMMARIZE_SYSTEM, Extractive, FnSummarizer, Manual, Summarizer, SummaryRequest,
    TOOL_SUMMARIZE_SYSTEM,
};
pub use sync::{BranchSync, SyncOptions, SyncReport};
pub use tools::{CallState, ToolCallInfo, ToolTurn};
pub use tract::{OpenOptions, Status, Tract};
pub use txn::AppendOptions;
pub use view::{View, ViewEntry};
