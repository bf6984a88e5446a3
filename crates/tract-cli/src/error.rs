//! [`CommandError`]: what a failed command prints, one `error:` line and maybe a `hint:` line,
//! and the exit code it ends with: one per [`ErrorCategory`], defined here once
//! ([`exit_code`]; docs/cli.md, "Exit codes").

use tract_core::{Error, ErrorCategory};

/// The command did what it was asked.
pub const EXIT_OK: u8 = 0;
/// A check ran to the end and found problems (`tract fsck`); its report is printed.
pub const EXIT_CHECK_FAILED: u8 = 1;
/// The command line itself did not parse (clap's own code).
pub const EXIT_USAGE: u8 = 2;

/// The exit code of a command that failed with an error of `category`: after the three
/// above, one code per category, so a script can tell what to do from the code alone.
pub fn exit_code(category: ErrorCategory) -> u8 {
    match category {
        ErrorCategory::NotFound => 3,
        ErrorCategory::InvalidInput => 4,
        ErrorCategory::Conflict => 5,
        ErrorCategory::Corrupt => 6,
        ErrorCategory::Unavailable => 7,
        ErrorCategory::Internal => 8,
    }
}

/// A command's failure: the error, what kind of failure it is, and a next step for the user
/// where one is obvious.
#[derive(Debug)]
pub struct CommandError {
    error: Box<dyn std::error::Error + Send + Sync>,
    hint: Option<String>,
    outcome: Outcome,
    /// Whether standard output (a report of what was done) is printed although it failed.
    report: bool,
}

/// How a command failed, which decides its exit code.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// A check that ran and found problems: its report (standard output) is still printed.
    CheckFailed,
    /// An error of this category.
    Failed(ErrorCategory),
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

/// No store was named, none was found upward from the working directory, and the per-user
/// store does not exist: what was looked for, where.
#[derive(Debug, thiserror::Error)]
#[error(
    "no tract store found: none named (--store, TRACT_STORE), no .tract/store.redb in {} or any parent directory, and {}",
    .searched_from.display(),
    match .user_store {
        Some(p) => format!("no per-user store at {}", p.display()),
        None => "no per-user store (neither XDG_DATA_HOME nor HOME is set)".to_string(),
    }
)]
pub struct NoStore {
    /// The directory the search upward started from.
    pub searched_from: std::path::PathBuf,
    /// Where the per-user store would be, if there is a home to keep it in.
    pub user_store: Option<std::path::PathBuf>,
}

impl CommandError {
    /// Whether the error says the store named is not a tract store.
    pub fn is_not_a_store(&self) -> bool {
        self.error
            .downcast_ref::<tract_core::Error>()
            .is_some_and(|e| matches!(e, tract_core::Error::NotAStore { .. }))
    }

    /// Whether the error says no store was named or found ([`CommandError::no_store`]).
    pub fn is_no_store(&self) -> bool {
        self.error.downcast_ref::<NoStore>().is_some()
    }

    /// No store here or above `dir`, and none at `user_store` (the per-user store's place).
    pub fn no_store(dir: &std::path::Path, user_store: Option<&std::path::Path>) -> Self {
        CommandError {
            error: Box::new(NoStore {
                searched_from: dir.to_path_buf(),
                user_store: user_store.map(std::path::Path::to_path_buf),
            }),
            hint: Some("run `tract init` to create one here, or pass --store PATH|URL".into()),
            outcome: Outcome::Failed(ErrorCategory::NotFound),
            report: false,
        }
    }

    /// A check that found problems: exit 1, with its report on standard output.
    pub fn check_failed(message: impl Into<String>) -> Self {
        CommandError {
            error: Box::new(CheckFailed(message.into())),
            hint: None,
            outcome: Outcome::CheckFailed,
            report: true,
        }
    }

    /// Whether standard output (a report) is printed although the command failed.
    pub fn keeps_report(&self) -> bool {
        self.report
    }

    /// The same error, printed after the command's report (standard output): a command that
    /// did part of its work and says which part failed (a push with a branch refused).
    pub fn after_report(mut self) -> Self {
        self.report = true;
        self
    }

    /// Input the command line refuses.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        CommandError {
            error: Box::new(InvalidArguments(message.into())),
            hint: None,
            outcome: Outcome::Failed(ErrorCategory::InvalidInput),
            report: false,
        }
    }

    /// A command's own failure (not the core's, not the command line's), of `category`, kept
    /// with its source.
    pub fn other(
        category: ErrorCategory,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        CommandError {
            error: Box::new(error),
            hint: None,
            outcome: Outcome::Failed(category),
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

    /// The category of the failure; `None` for a check that found problems.
    pub fn category(&self) -> Option<ErrorCategory> {
        match self.outcome {
            Outcome::CheckFailed => None,
            Outcome::Failed(c) => Some(c),
        }
    }

    /// The code the process exits with.
    pub fn exit_code(&self) -> u8 {
        self.category().map_or(EXIT_CHECK_FAILED, exit_code)
    }
}

impl From<Error> for CommandError {
    fn from(e: Error) -> Self {
        let hint = hint(&e).map(str::to_string);
        CommandError {
            outcome: Outcome::Failed(e.category()),
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
        Error::ReadOnly { reason, .. } if reason.contains("needs the recovery") => {
            "a copy of the store (the file with its -journal directory) made somewhere you may \
             write reads; the store itself is recovered by the next command its owner runs"
        }
        Error::ReadOnly { .. } => {
            "the commands that only read (log, show, status, compile, export, search, fsck, \
             serve, mcp) work; to write, copy the store (the file with its -journal directory) \
             somewhere you may write"
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
        Error::ReflogTooShort { .. } => "`tract reflog NAME` lists a ref's moves, newest first",
        Error::AmbiguousPrefix { .. } => "give more hex digits of the id",
        Error::StoreLocked { .. } => {
            "another process is writing; try again, or raise TRACT_LOCK_TIMEOUT_MS"
        }
        Error::NotAStore { .. } => {
            "pass --store with a tract store (a file or a postgresql:// URL), or run `tract init`"
        }
        Error::Database { .. } => {
            "nothing was committed; check that the server is up and the URL's host, port, user, \
             password and database, then run it again"
        }
        Error::Model { .. } => {
            "every answer received before is kept on the replay's branch (`tract branch` lists \
             it); check the endpoint and the model, then `tract replay BRANCH --resume` goes on"
        }
        Error::HeadMoved { .. } => "another writer moved the branch; read it again and retry",
        Error::Corrupt { .. } => "the file is damaged; keep a copy before trying anything else",
        Error::CorruptObject { .. } => {
            "`tract fsck` lists every damaged object; keep a copy of the file before anything else"
        }
        // Damage with frames after it (the segment reader's words): what is before it can be
        // kept.
        Error::CorruptJournal { reason, .. } if reason.contains("frames follow it") => {
            "a store is its file and its journal together; keep a copy of both, then `tract \
             fold --salvage` keeps every frame before the damage"
        }
        Error::SearchIndex { .. } => {
            "the search index is derived data: `tract index --rebuild` makes it anew from the \
             store"
        }
        Error::CorruptJournal { .. } => {
            "a store is its file and its journal together; keep a copy of both before anything else"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_category_has_its_own_exit_code_after_the_fixed_ones() {
        let mut codes: Vec<u8> = ErrorCategory::ALL.into_iter().map(exit_code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), ErrorCategory::ALL.len());
        for fixed in [EXIT_OK, EXIT_CHECK_FAILED, EXIT_USAGE] {
            assert!(!codes.contains(&fixed), "{fixed} is taken");
        }
    }

    #[test]
    fn a_failed_search_index_points_at_its_rebuild() {
        let e = Error::examples()
            .into_iter()
            .find(|e| matches!(e, Error::SearchIndex { .. }));
        let failed = e.map(CommandError::from);
        let hint = failed.as_ref().and_then(|f| f.hint());
        assert!(
            hint.is_some_and(|h| h.contains("tract index --rebuild")),
            "{hint:?}"
        );
    }

    #[test]
    fn a_core_error_exits_with_its_categorys_code() {
        for e in Error::examples() {
            let category = e.category();
            let failed = CommandError::from(e);
            assert_eq!(failed.category(), Some(category));
            assert_eq!(failed.exit_code(), exit_code(category));
            assert!(!failed.keeps_report());
        }
        let check = CommandError::check_failed("2 problems");
        assert_eq!((check.exit_code(), check.keeps_report()), (1, true));
        assert_eq!(
            CommandError::no_store(std::path::Path::new("/x"), None).exit_code(),
            exit_code(ErrorCategory::NotFound)
        );
        assert_eq!(
            CommandError::invalid_input("x").exit_code(),
            exit_code(ErrorCategory::InvalidInput)
        );
    }
}
