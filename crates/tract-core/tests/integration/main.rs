//! The Rust API end to end, against real store files: one test binary, one module per concept.
//! Every test runs once per backend: on store files, and again with every store on PostgreSQL
//! when `TRACT_TEST_POSTGRES` names a server (`support::temp_store`).

mod support;

mod agents;
mod append;
mod branch;
mod checkpoint;
mod claude_code;
mod codex;
mod compress;
mod diff;
mod edit;
mod exports;
mod faults;
mod fsck;
mod fuzz;
mod gemini;
mod history;
mod imports;
mod journal;
mod layers;
mod merge;
mod policy;
mod postgres;
mod prompt_cache;
mod readonly;
mod records;
mod redact;
mod render;
mod replay;
mod retention;
mod search;
mod secrets;
mod sessions;
mod store;
mod sync;
mod tools;
mod upgrade;
mod usage;
mod view;
