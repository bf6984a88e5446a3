//! [`Ui`]: the one place a command's output goes. Standard output is collected and written
//! only when the command succeeds (a failed command prints its error and nothing else);
//! warnings and notes go to standard error at once.

use crate::error::CommandError;
use std::fmt;
use std::io::Write;

/// Where a command writes. Standard output is written with `write!`/`writeln!` (it is a
/// [`fmt::Write`]: writing to memory cannot fail).
pub struct Ui<'a> {
    stdout: String,
    stderr: &'a mut dyn Write,
    colour: bool,
    terminal: bool,
}

impl<'a> Ui<'a> {
    /// A UI writing notes and errors to `stderr`.
    pub fn new(stderr: &'a mut dyn Write) -> Self {
        Ui {
            stdout: String::new(),
            stderr,
            colour: false,
            terminal: false,
        }
    }

    /// The same UI, laid out for a person reading standard output at a terminal when `on`
    /// (a table's header row); pipes and files get the lines alone, as scripts read them.
    pub fn with_terminal(mut self, on: bool) -> Self {
        self.terminal = on;
        self
    }

    /// Whether standard output is a terminal (whatever `NO_COLOR` says).
    pub fn terminal(&self) -> bool {
        self.terminal
    }

    /// The same UI, colouring standard output when `on` (a person reads it at a terminal).
    pub fn with_colour(mut self, on: bool) -> Self {
        self.colour = on;
        self
    }

    /// Whether standard output may hold colours (ANSI escapes): only at a terminal, so
    /// pipes, files and tests get plain text.
    pub fn colour(&self) -> bool {
        self.colour
    }

    /// Standard output so far.
    pub fn stdout(&self) -> &str {
        &self.stdout
    }

    /// Appends a whole string to standard output.
    pub fn print(&mut self, text: &str) {
        self.stdout.push_str(text);
    }

    /// A `warning:` line on standard error.
    pub fn warning(&mut self, message: &str) {
        let _ = writeln!(self.stderr, "warning: {message}");
    }

    /// A `note:` line on standard error.
    pub fn note(&mut self, message: &str) {
        let _ = writeln!(self.stderr, "note: {message}");
    }

    /// The `error:` line and the `hint:` line of a failed command.
    pub fn error(&mut self, e: &CommandError) {
        let _ = writeln!(self.stderr, "error: {}", e.message());
        if let Some(h) = e.hint() {
            let _ = writeln!(self.stderr, "hint: {h}");
        }
    }
}

impl fmt::Write for Ui<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.stdout.push_str(s);
        Ok(())
    }
}

/// A `warning:` line written to the process's standard error at once, from a thread that has
/// no [`Ui`] (one that runs beside a server).
pub fn warning_now(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "warning: {message}");
}
