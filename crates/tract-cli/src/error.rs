//! [`CommandError`]: what a failed command prints, one `error:` line and maybe a `hint:` line.

use tract_core::Error;

/// A command's failure: the error, and a next step for the user where one is obvious.
#[derive(Debug)]
pub struct CommandError {
    error: Box<dyn std::error::Error + Send + Sync>,
    hint: Option<String>,
    /// A check that ran and found problems: its report (standard output) is still printed.
    report: bool,
}

/// A check that ran to the end and found problems (the report says which).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CheckFailed(pub String);

/// Input the command line itself refuses (a missing argument, a malformed option value), in
/// the words of the core's input errors.
#[derive(Debug, thiserror::Error)]
#[error("invalid input: {0}")]
pub struct InvalidArguments(pub String);

/// No store was named and none was found upward from the working directory.
#[derive(Debug, thiserror::Error)]
#[error("a tract store in {} or any parent directory (run `tract init`) not found", .0.display())]
pub struct NoStore(pub std::path::PathBuf);

impl CommandError {
    /// Whether the error says the store named is not a tract store.
    pub fn is_not_a_store(&self) -> bool {
        self.error
            .downcast_ref::<tract_core::Error>()
            .is_some_and(|e| matches!(e, tract_core::Error::NotAStore { .. }))
    }

    /// No store here or above `dir`.
    pub fn no_store(dir: &std::path::Path) -> Self {
        CommandError {
            error: Box::new(NoStore(dir.to_path_buf())),
            hint: Some("run `tract init` to create one here, or pass --store PATH".into()),
            report: false,
        }
    }

    /// A check that found problems: exit 1, with its report on standard output.
    pub fn check_failed(message: impl Into<String>) -> Self {
        CommandError {
            error: Box::new(CheckFailed(message.into())),
            hint: None,
            report: true,
        }
    }

    /// Whether standard output (a report) is printed although the command failed.
    pub fn keeps_report(&self) -> bool {
        self.report
    }

    /// Input the command line refuses.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        CommandError {
            error: Box::new(InvalidArguments(message.into())),
            hint: None,
            report: false,
        }
    }

    /// A command's own failure (not the core's, not the command line's), kept with its source.
    pub fn other(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        CommandError {
            error: Box::new(error),
            hint: None,
            report: false,
        }
    }

    /// The same error with `hint` as its next step.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The error line (without `error: `).
    pub fn message(&self) -> String {
        self.error.to_string()
    }

    /// The hint line (without `hint: `), if any.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }
}

impl From<Error> for CommandError {
    fn from(e: Error) -> Self {
        let hint = hint(&e).map(str::to_string);
        CommandError {
            error: Box::new(e),
            hint,
            report: false,
        }
    }
}

/// A next step for the user, by the kind of error.
fn hint(e: &Error) -> Option<&'static str> {
    use std::io::ErrorKind;
    Some(match e {
        Error::Io { source, .. } if source.kind() == ErrorKind::StorageFull => {
            "the disk is full: nothing was committed; free some space and run it again"
        }
        Error::Io { source, .. } if source.kind() == ErrorKind::FileTooLarge => {
            "the file reached the size the system allows it: nothing was committed"
        }
        Error::Io { source, .. } if source.kind() == ErrorKind::ReadOnlyFilesystem => {
            "tract opens a store for writing (it takes a lock), even to read it"
        }
        Error::BranchDeleted { .. } => {
            "`tract reflog BRANCH` shows its last tip; `tract branch BRANCH REV` brings it back"
        }
        Error::UnbornBranch { .. } => {
            "add a message first (`tract add`), or `tract switch` to a branch with commits"
        }
        Error::UnknownBranch { .. } => "`tract branch` lists branches",
        Error::UnknownRevision { .. }
        | Error::HistoryTooShort { .. }
        | Error::MissingCommit { .. } => "`tract log` lists commits; `tract branch` lists branches",
        Error::AmbiguousPrefix { .. } => "give more hex digits of the id",
        Error::StoreLocked { .. } => {
            "another process is writing; try again, or raise TRACT_LOCK_TIMEOUT_MS"
        }
        Error::NotAStore { .. } => {
            "pass --store with a tract store (a file or a postgresql:// URL), or run `tract init`"
        }
        Error::Diverged { .. } => {
            "nothing was moved: merge the two first, or pass --force (the receiver's old tip stays in its reflog)"
        }
        Error::Database { .. } => {
            "nothing was committed; check that the server is up and the URL's host, port, user, \
             password and database, then run it again"
        }
        Error::HeadMoved { .. } => "another writer moved the branch; read it again and retry",
        Error::Corrupt { .. } => "the file is damaged; keep a copy before trying anything else",
        Error::CorruptObject { .. } => {
            "`tract fsck` lists every damaged object; keep a copy of the file before anything else"
        }
        _ => return None,
    })
}
