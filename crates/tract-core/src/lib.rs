//! tract-core: version control for LLM context.
//!
//! Every message an agent sees or produces is a content-addressed commit (BLAKE3) in an
//! append-only DAG stored in one redb file. Messages can be edited while the original stays in
//! history; the *view* of a commit is what the model sees, and [`Tract::compile`] renders it
//! for OpenAI or Anthropic, valid by construction.
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

pub mod clear;
pub mod clock;
mod codec;
pub mod compile;
pub mod compress;
pub mod environment;
pub mod error;
pub mod hooks;
pub mod id;
mod info;
pub mod json;
pub mod llm;
pub mod object;
pub mod policy;
pub mod search;
pub mod store;
pub mod summarize;
pub mod tokens;
pub mod tools;
mod tract;
pub mod view;

pub use clear::{ClearCandidate, ClearOptions, ClearOutcome};
pub use clock::Clock;
pub use compile::{Compiled, CompiledMessage};
pub use compress::{CompressOutcome, CompressRequest, PlannedRun};
pub use environment::Environment;
pub use error::{Error, Result};
pub use hooks::{Decision, HookEvent, PendingToolResult, ToolResultOutcome};
pub use id::ObjectId;
pub use info::{CommitInfo, Current};
pub use llm::OpenAiCompatible;
pub use object::{Commit, Content, ContentPart, Message, Op, Role, ToolCall};
pub use policy::ToolPolicy;
pub use search::{SearchHit, SearchQuery};
pub use store::{Head, HeadRef, OpenMode, ReflogEntry, Store, StoreOptions};
pub use summarize::{
    Extractive, FnSummarizer, Manual, Summarizer, SummaryRequest, TOOL_SUMMARIZE_SYSTEM,
};
pub use tools::{CallState, ToolCallInfo, ToolTurn};
pub use tract::{AppendOptions, BranchInfo, Status, Tract};
pub use view::{View, ViewEntry};
