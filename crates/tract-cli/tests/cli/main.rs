//! End-to-end tests of the real `tract` binary, one module per command or family of commands.
//! Each command's exit code, standard output and standard error are compared exactly with
//! snapshots (inline beside the command, or under `snapshots/` when long). Every command runs
//! with `TRACT_TIMESTAMP` fixed, so commit ids are the same on every run; only the temporary
//! directory (`[DIR]`) and the ports of local servers (`[PORT]`) are redacted.
//!
//! When output changes on purpose, `INSTA_UPDATE=always cargo test -p tract-cli --test cli`
//! rewrites the file snapshots; inline ones are rewritten by `cargo insta test --accept` (or
//! by hand). Read every changed snapshot before committing it.

mod common;

mod add;
mod cache;
mod clear;
mod compile;
mod compress;
mod config;
mod demo;
mod diff;
mod docs;
mod edit;
mod errors;
mod fsck;
mod hostile;
mod index;
mod init;
mod interop;
mod log;
mod mcp;
mod merge;
mod processes;
mod progress;
mod readonly;
mod redact;
mod refs;
mod repair;
mod replay;
mod retention;
mod search;
mod secrets;
mod serve;
mod show;
mod status;
mod sync;
mod tools;
mod upgrade;
mod vocabulary;
