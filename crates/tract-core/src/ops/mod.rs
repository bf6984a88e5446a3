//! Operations over a repository: branches, history and search (and the search index), merges, integrity (fsck),
//! redaction, retention and garbage collection, sync between stores, and a view's page as a person reads
//! it.

pub mod branch;
pub mod diff;
pub mod fsck;
pub mod gc;
pub mod history;
pub mod index;
pub mod merge;
pub mod page;
pub mod prompt_cache;
pub(crate) mod reach;
pub mod redact;
pub mod replay;
pub mod retention;
pub mod search;
pub mod secrets;
pub mod sync;
pub mod usage;
