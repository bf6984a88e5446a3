//! The `tract` command line. [`run`] parses arguments, carries out one command against the
//! store and returns the exit code; all logic lives in `tract-core`.

#![warn(missing_docs)]

mod args;
mod commands;
mod compress;
mod config;
mod demo;
mod input;
mod render;
mod tools;

use clap::Parser;
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use tract_core::Error;

pub use args::{Cli, Command};

/// Runs `tract` with `args` (the program name first) and returns its exit code: 0 on success,
/// 1 when the command failed, 2 for a usage error.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match commands::execute(&cli) {
        Ok(output) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`tract log | head`) is not an error worth reporting.
            let _ = stdout.write_all(output.as_bytes());
            let _ = stdout.flush();
            ExitCode::SUCCESS
        }
        Err(e) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "error: {e}");
            if let Some(h) = hint(&e) {
                let _ = writeln!(stderr, "hint: {h}");
            }
            ExitCode::FAILURE
        }
    }
}

/// A next step for the user, where one is obvious.
fn hint(e: &Error) -> Option<&'static str> {
    Some(match e {
        Error::NotFound { .. } => "`tract log` lists commits; `tract branch` lists branches",
        Error::AmbiguousPrefix { .. } => "give more hex digits of the id",
        Error::StoreLocked { .. } => {
            "another process is writing; try again, or raise TRACT_LOCK_TIMEOUT_MS"
        }
        Error::NewerFormat { .. } => "this store was written by a newer tract; upgrade tract",
        Error::NotAStore { .. } => "pass --store with a tract store file, or run `tract init`",
        Error::HeadMoved { .. } => "another writer moved the branch; read it again and retry",
        Error::Corrupt { .. } => "the file is damaged; keep a copy before trying anything else",
        _ => return None,
    })
}
