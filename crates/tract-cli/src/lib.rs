//! The `tract` command line. [`run`] parses arguments, carries out one command against the
//! store and returns the exit code; all logic lives in `tract-core`.
//!
//! Layout (as in jj's CLI): `commands/<name>.rs` holds one subcommand's clap arguments and its
//! handler; [`commands::Command`] dispatches, one line per command. Handlers write through a
//! [`Ui`] and fail with a [`CommandError`] (an error and a hint); what several of them share
//! is a module of the crate, named after it (`arguments`, `notes`, `versions`, `render`, ...),
//! which they import by its path.

#![warn(missing_docs)]

mod arguments;
mod cli;
pub mod commands;
mod context;
mod error;
mod notes;
mod output;
mod progress;
mod render;
mod ui;
mod versions;
use tract_vocabulary as vocabulary;

use clap::{CommandFactory, FromArgMatches};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

pub use cli::Cli;
pub use context::Context;
pub use error::CommandError;
pub use ui::Ui;

/// Runs `tract` with `args` (the program name first) on the process's standard output and
/// error, and returns its exit code: 0 on success, 1 when a check found problems, 2 for a usage
/// error, and one code per category of error otherwise (`error::exit_code`).
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let parsed = match parse(args) {
        Ok(parsed) => parsed,
        Err(e) => {
            // clap colours its message when the stream is a terminal.
            let _ = e.print();
            return ExitCode::from(usage_code(&e));
        }
    };
    // Not locked for the whole command: `tract mcp` writes its protocol to standard output
    // from another thread.
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    // Colour only for a person at a terminal, and not when NO_COLOR asks for none.
    let terminal = stdout.is_terminal();
    let colour = terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    ExitCode::from(execute(parsed, terminal, colour, &mut stdout, &mut stderr))
}

/// Runs `tract` with `args`, writing to `stdout` and `stderr` (usage errors without colour);
/// returns the exit code.
pub fn run_with<I, T>(args: I, stdout: &mut dyn Write, stderr: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match parse(args) {
        Ok(parsed) => execute(parsed, false, false, stdout, stderr),
        Err(e) => {
            let out: &mut dyn Write = if e.use_stderr() { stderr } else { stdout };
            let _ = write!(out, "{}", e.render());
            usage_code(&e)
        }
    }
}

/// 2 for a usage error, 0 for `--help` and `--version`.
fn usage_code(e: &clap::Error) -> u8 {
    if e.use_stderr() {
        error::EXIT_USAGE
    } else {
        error::EXIT_OK
    }
}

/// The command line parsed, and whether `--branch` was given on it (not by `TRACT_BRANCH`).
fn parse<I, T>(args: I) -> Result<(Cli, bool), clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(args)?;
    let named = branch_on_command_line(&matches);
    let mut cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
    if let Some(why) = cli.command.branch_refused() {
        if named {
            let name = matches.subcommand_name().unwrap_or_default();
            return Err(command.error(
                clap::error::ErrorKind::ArgumentConflict,
                format!("--branch cannot be used with `tract {name}`: {why}"),
            ));
        }
        // TRACT_BRANCH, a session's, means nothing here either.
        cli.branch = None;
    }
    Ok((cli, named))
}

/// Whether `--branch` (a global option: any subcommand's matches may hold it) came from the
/// command line.
fn branch_on_command_line(m: &clap::ArgMatches) -> bool {
    let here = m.value_source("branch") == Some(clap::parser::ValueSource::CommandLine);
    here || m
        .subcommand()
        .is_some_and(|(_, sub)| branch_on_command_line(sub))
}

fn execute(
    (cli, branch_named): (Cli, bool),
    terminal: bool,
    colour: bool,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8 {
    let ctx = Context::new(cli.store.clone(), cli.branch.clone()).branch_named(branch_named);
    let mut ui = Ui::new(stderr).with_terminal(terminal).with_colour(colour);
    match cli.command.run(&ctx, &mut ui) {
        Ok(()) => {
            // A closed pipe (`tract log | head`) is not an error worth reporting.
            let _ = stdout.write_all(ui.stdout().as_bytes());
            let _ = stdout.flush();
            error::EXIT_OK
        }
        Err(e) => {
            if e.keeps_report() {
                let _ = stdout.write_all(ui.stdout().as_bytes());
                let _ = stdout.flush();
            }
            ui.error(&e);
            e.exit_code()
        }
    }
}
