//! The one error type of tract-core.

use std::path::PathBuf;

/// Everything that can go wrong in tract-core. Every variant names what it is about, so a
/// surface (CLI, Python) can print one clear line and map it to a typed exception.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A commit, branch or object that does not exist.
    #[error("{what} not found")]
    NotFound {
        /// What was looked for, e.g. `commit 3fa9c1` or `branch feature`.
        what: String,
    },
    /// A short id that matches several commits.
    #[error("ambiguous id prefix '{prefix}': matches {}", candidates.join(", "))]
    AmbiguousPrefix {
        /// The prefix given.
        prefix: String,
        /// Some of the commits it matches, as short ids.
        candidates: Vec<String>,
    },
    /// Input that cannot be understood (malformed JSON, an unknown role, a bad id).
    #[error("invalid input: {message}")]
    InvalidInput {
        /// What is wrong with it.
        message: String,
    },
    /// A well-formed request that cannot be carried out in the current state.
    #[error("invalid operation: {message}")]
    InvalidOperation {
        /// Why it cannot be done.
        message: String,
    },
    /// A compare-and-swap append found the branch somewhere else than expected.
    #[error("branch '{branch}' moved: expected head {expected}, found {actual}")]
    HeadMoved {
        /// The branch (or `HEAD` when detached).
        branch: String,
        /// The head the caller expected.
        expected: String,
        /// The head found in the store.
        actual: String,
    },
    /// Another process holds the write lock for longer than the wait allows, or holds the file
    /// in a mode that excludes this one.
    #[error("store {} is locked: {reason}", path.display())]
    StoreLocked {
        /// The store file.
        path: PathBuf,
        /// What holds it.
        reason: String,
    },
    /// A file that is not a tract store (not redb, or redb without tract's tables).
    #[error("{} is not a tract store: {reason}", path.display())]
    NotAStore {
        /// The file.
        path: PathBuf,
        /// Why it is not one.
        reason: String,
    },
    /// Stored bytes that do not decode or do not match their id.
    #[error("corrupt store: {message}")]
    Corrupt {
        /// What was found.
        message: String,
    },
    /// A store written by a newer version of tract.
    #[error(
        "store format version {found} is newer than this tract supports ({supported}); upgrade tract"
    )]
    NewerFormat {
        /// The version in the store.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// An operating-system error on a path.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A summarizer failed or returned nothing usable; nothing was committed.
    #[error("summarizer error: {message}")]
    Summarizer {
        /// What went wrong.
        message: String,
    },
    /// A `tool_result` hook rejected the result; nothing was committed.
    #[error("the tool result was rejected: {reason}")]
    Rejected {
        /// The reason the hook gave.
        reason: String,
    },
    /// An error from the storage engine that none of the variants above describes.
    #[error("storage error: {message}")]
    Storage {
        /// The engine's message.
        message: String,
    },
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn invalid_input(message: impl Into<String>) -> Self {
        Error::InvalidInput {
            message: message.into(),
        }
    }

    pub(crate) fn invalid_op(message: impl Into<String>) -> Self {
        Error::InvalidOperation {
            message: message.into(),
        }
    }

    pub(crate) fn not_found(what: impl Into<String>) -> Self {
        Error::NotFound { what: what.into() }
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Self {
        Error::Corrupt {
            message: message.into(),
        }
    }
}

macro_rules! storage_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                let e: redb::Error = e.into();
                match e {
                    redb::Error::Corrupted(message) => Error::Corrupt { message },
                    other => Error::Storage { message: other.to_string() },
                }
            }
        }
    )*};
}
storage_from!(
    redb::StorageError,
    redb::TableError,
    redb::TransactionError,
    redb::CommitError
);
