//! The one error type of tract-core.
//!
//! Each frequent failure is its own variant carrying the facts a caller acts on (the
//! revision, the candidates, the path, the commit), and errors from below (the OS, the storage
//! engine, a hook) are kept as their `source`. Every variant falls in one [`ErrorCategory`],
//! what its caller can do about it; surfaces map the category once (exit codes, HTTP statuses,
//! exception classes) and the variant where they say more (a hint, the facts), never the text.

use crate::id::CommitId;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Everything that can go wrong in tract-core. Errors are `Clone` (sources are kept behind
/// `Arc`), so every caller of a group commit that failed gets the failure.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A revision that names no commit and no branch.
    #[error("commit or branch '{rev}' not found")]
    UnknownRevision {
        /// The revision as given.
        rev: String,
    },
    /// A branch that does not exist, with the existing branches whose names are close to it.
    #[error("branch '{name}' not found{}", did_you_mean(similar))]
    UnknownBranch {
        /// Its name.
        name: String,
        /// Existing branches with a close name (a typo away, or starting with or holding the
        /// name given), closest first, at most 3; empty when none is close.
        similar: Vec<String>,
    },
    /// A handle's branch was deleted (by another handle or `tract branch -d`); its last tip is
    /// in the branch's reflog.
    #[error("branch '{name}' was deleted (`tract reflog {name}` keeps its last tip)")]
    BranchDeleted {
        /// The branch.
        name: String,
    },
    /// `HEAD` names a branch that has no commits yet, and a commit was asked for.
    #[error("HEAD has no commit yet: branch '{branch}' is empty")]
    UnbornBranch {
        /// The branch `HEAD` names.
        branch: String,
    },
    /// `REV~N` goes back further than the history does.
    #[error("'{rev}' not found: the history is shorter")]
    HistoryTooShort {
        /// The revision as given.
        rev: String,
    },
    /// `NAME@{N}` names a move of a ref further back than its reflog goes.
    #[error("'{rev}' not found: the reflog of {name} has {entries} entries (NAME@{{0}} to NAME@{{{last}}})", last = .entries.saturating_sub(1))]
    ReflogTooShort {
        /// The revision as given.
        rev: String,
        /// The ref.
        name: String,
        /// How many entries its reflog holds.
        entries: usize,
    },
    /// A commit looked up by id that the store does not hold.
    #[error("commit {} not found", .commit.short())]
    MissingCommit {
        /// The id.
        commit: CommitId,
    },
    /// A short id that matches several commits.
    #[error("ambiguous id prefix '{prefix}': matches {}", short_list(candidates))]
    AmbiguousPrefix {
        /// The prefix given.
        prefix: String,
        /// Some of the commits it matches.
        candidates: Vec<CommitId>,
    },
    /// A commit that exists but is not a message in the view the operation works on.
    #[error("{}", not_in_view(commit, argument.as_deref()))]
    NotInView {
        /// The commit.
        commit: CommitId,
        /// The argument that named it (e.g. `after`), when there was one.
        argument: Option<String>,
    },
    /// A revision that cannot be parsed (empty, a bad `~N`).
    #[error("invalid input: '{rev}': {reason}")]
    InvalidRevision {
        /// The text given.
        rev: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A branch name that breaks the naming rules.
    #[error(
        "invalid input: '{name}' is not a valid branch name (letters, digits, - _ . /; not HEAD, not 64 hex digits)"
    )]
    InvalidBranchName {
        /// The name given.
        name: String,
    },
    /// A message that cannot be stored as given (malformed JSON, an unknown role, a tool result
    /// without its call id, ...), with its place in a batch.
    #[error("invalid input: {}{reason}", at.map(|a| a.to_string()).unwrap_or_default())]
    InvalidMessage {
        /// Where it is in the batch it came in, if it came in one.
        at: Option<BatchPosition>,
        /// What is wrong with it.
        reason: String,
    },
    /// A transcript that cannot be imported: its file (where it came from one), the line
    /// (from 1) and what is wrong there. Nothing of the file is committed.
    #[error(
        "invalid transcript {}line {line}: {reason}",
        path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default()
    )]
    InvalidTranscript {
        /// The file.
        path: Option<PathBuf>,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Other input that cannot be understood.
    #[error("invalid input: {message}")]
    InvalidInput {
        /// What is wrong with it.
        message: String,
    },
    /// A branch that already exists.
    #[error("invalid operation: branch '{name}' already exists")]
    BranchExists {
        /// Its name.
        name: String,
    },
    /// A well-formed request that cannot be carried out in the current state.
    #[error("invalid operation: {message}")]
    InvalidOperation {
        /// Why it cannot be done.
        message: String,
    },
    /// A merge of two commits whose histories share no commit.
    #[error(
        "invalid operation: branch '{branch}' ({}) shares no history with this branch ({}): nothing to merge from",
        .other.short(),
        .head.short()
    )]
    NoMergeBase {
        /// The branch asked to merge.
        branch: String,
        /// The handle's head.
        head: CommitId,
        /// The branch's tip.
        other: CommitId,
    },
    /// A tool call named as pending (by a tool result merge) that has no result waiting in
    /// the view.
    #[error(
        "invalid operation: tool call '{call_id}' is not pending on this branch ({})",
        pending_list(pending)
    )]
    CallNotPending {
        /// The call id given.
        call_id: String,
        /// The calls that are pending, in view order.
        pending: Vec<String>,
    },
    /// A compare-and-swap found the branch somewhere else than expected.
    #[error(
        "branch '{branch}' moved: expected head {}, found {}",
        short_or_none(*expected),
        short_or_none(*actual)
    )]
    HeadMoved {
        /// The branch (or `HEAD` when detached).
        branch: String,
        /// The head the caller expected (`None`: no commits yet).
        expected: Option<CommitId>,
        /// The head found in the store.
        actual: Option<CommitId>,
    },
    /// Another process holds the store in a way that excludes this write or this open.
    #[error("store {} is locked: {reason}", path.display())]
    StoreLocked {
        /// The store file.
        path: PathBuf,
        /// What holds it.
        reason: LockReason,
    },
    /// A write to a store open for reading only: opened to read, or one this process cannot
    /// write (the file's permissions, a read-only file system, a database role that may only
    /// read). Nothing was written.
    #[error("store {store} is read-only: {reason}; nothing was written")]
    ReadOnly {
        /// The store file, or its URL without its password.
        store: String,
        /// Why it opened for reading only.
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
    /// An object whose stored bytes do not decode or do not hash to its id: it changed after it
    /// was written (a damaged disk, an edited file). Never served as valid.
    #[error("corrupt store: {kind} {} is damaged: {reason}", short_hex(id))]
    CorruptObject {
        /// `commit`, `blob` or `chunk`.
        kind: &'static str,
        /// The object's full id (hex).
        id: String,
        /// What was found.
        reason: String,
    },
    /// A journal segment that cannot be read: damaged in the middle, of another store, or no
    /// segment at all. Nothing is dropped silently: its commits would be missing.
    #[error("corrupt journal {}: {reason}", path.display())]
    CorruptJournal {
        /// The segment file.
        path: PathBuf,
        /// What was found.
        reason: String,
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
        source: Arc<std::io::Error>,
    },
    /// A summarizer failed or returned nothing usable; nothing was committed.
    #[error("summarizer error: {summarizer}: {reason}")]
    Summarizer {
        /// Who was summarizing (as recorded on compress commits).
        summarizer: String,
        /// What went wrong.
        reason: String,
    },
    /// A model's API failed, or answered with what is not an answer (a replay); what was
    /// committed before it stays.
    #[error("model error: {endpoint}: {reason}")]
    Model {
        /// The API's base URL, without a user or password.
        endpoint: String,
        /// What went wrong.
        reason: String,
    },
    /// A `tool_result` handler failed; nothing was committed. The source is the handler's own
    /// error (a surface gets its exception back from here).
    #[error("the tool_result handler failed: {source}")]
    Handler {
        /// The handler's error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A `tool_result` hook rejected the result; nothing was committed.
    #[error("the tool result was rejected: {reason}")]
    Rejected {
        /// The reason the hook gave.
        reason: String,
    },
    /// A branch of a clone's new store, filled by another writer meanwhile, is not contained
    /// in the sender's history; the branches were not moved. (A push or pull moves the other
    /// branches and lists such ones in [`crate::SyncReport::refused`] instead.)
    #[error(
        "branch '{branch}' has diverged: the receiver is at {} and the sender at {}; neither contains the other (force to move it, the old tip stays in the reflog)",
        receiver.short(),
        sender.short()
    )]
    Diverged {
        /// The branch.
        branch: String,
        /// Its tip in the receiver.
        receiver: CommitId,
        /// Its tip in the sender.
        sender: CommitId,
    },
    /// A database store could not be reached or refused a statement (the server is down or
    /// went away, wrong credentials, a timeout); nothing of the call was committed.
    #[error("database {store}: {reason}")]
    Database {
        /// The store's URL, without its password.
        store: String,
        /// What went wrong, as the client or the server said it (no password in it).
        reason: String,
    },
    /// The search index failed (it is derived data: `tract index --rebuild` makes it anew).
    #[error("the search index: {doing}: {source}")]
    SearchIndex {
        /// What was being done.
        doing: String,
        /// The index engine's error.
        #[source]
        source: Arc<tantivy::TantivyError>,
    },
    /// An error from the storage engine that none of the variants above describes.
    #[error("storage error: {source}")]
    Storage {
        /// The engine's error.
        #[source]
        source: Arc<redb::Error>,
    },
}

/// What kind of failure an [`Error`] is, and so what its caller can do about it: the one
/// vocabulary every surface maps from (the CLI's exit codes, the web API's HTTP statuses, MCP
/// tool errors, Python's exception classes), each in one place. [`Error::category`] places
/// every variant.
///
/// Not `#[non_exhaustive]` on purpose: a new category must be placed by every surface's
/// mapping, and a wildcard arm there would hide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCategory {
    /// What the request names does not exist where it was looked for: a commit, a branch, a
    /// revision past the start of history, a commit outside the view, a file. Name something
    /// that exists (list what does: `log`, `branch`); retrying as it is cannot succeed.
    NotFound,
    /// The request cannot be used as given: malformed text or JSON, a bad revision or branch
    /// name, an ambiguous id prefix, a message a hook rejected, a file that is not a store (or
    /// is one in a newer format than this build reads). Fix the input (or, for a newer format,
    /// upgrade tract); retrying it unchanged cannot succeed.
    InvalidInput,
    /// A well-formed request that the store's current state refuses: the branch moved since
    /// it was read, a branch already exists, histories diverged or share nothing, a call is
    /// not pending. Read the state again and decide anew (retry after re-reading, merge,
    /// force); nothing was changed.
    Conflict,
    /// Stored bytes are damaged: they do not decode or do not hash to their id. Retrying will
    /// not help and writing may make it worse: keep a copy of the store, run `tract fsck` to
    /// list the damage, restore from a backup or another store (`tract pull`).
    Corrupt,
    /// Something the request needs is busy or out of reach for now: the store's lock is held by
    /// another writer, the database server or the summarizer's server cannot be reached or
    /// failed, the disk is full or a file reached the size the system allows. Nothing was
    /// committed; retry later (after freeing space or raising the limit, or once the server is
    /// back or its settings are fixed).
    Unavailable,
    /// None of the above: an operating-system error of another kind (permissions, a failing
    /// disk), an unexpected error of the storage engine, a handler of the caller's that
    /// failed. Nothing was committed; the error's message and source say what happened, and
    /// retrying it unchanged rarely helps.
    Internal,
}

impl ErrorCategory {
    /// Every category, in declaration order.
    pub const ALL: [ErrorCategory; 6] = [
        ErrorCategory::NotFound,
        ErrorCategory::InvalidInput,
        ErrorCategory::Conflict,
        ErrorCategory::Corrupt,
        ErrorCategory::Unavailable,
        ErrorCategory::Internal,
    ];

    /// Its name as surfaces print it: `not_found`, `invalid_input`, `conflict`, `corrupt`,
    /// `unavailable`, `internal`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::NotFound => "not_found",
            ErrorCategory::InvalidInput => "invalid_input",
            ErrorCategory::Conflict => "conflict",
            ErrorCategory::Corrupt => "corrupt",
            ErrorCategory::Unavailable => "unavailable",
            ErrorCategory::Internal => "internal",
        }
    }

    /// The category of an operating-system error, by its kind: the kinds whose meaning is
    /// plain (a missing file, a full disk, a busy port, ...); the others (a permission, a
    /// failing disk) are [`ErrorCategory::Internal`]. What [`Error::Io`] falls in, and what a
    /// surface uses for an OS error of its own.
    pub fn of_io(kind: std::io::ErrorKind) -> ErrorCategory {
        use std::io::ErrorKind as K;
        match kind {
            K::NotFound => ErrorCategory::NotFound,
            K::AlreadyExists => ErrorCategory::Conflict,
            K::NotADirectory | K::IsADirectory | K::InvalidFilename | K::AddrNotAvailable => {
                ErrorCategory::InvalidInput
            }
            K::StorageFull
            | K::QuotaExceeded
            | K::FileTooLarge
            | K::ResourceBusy
            | K::AddrInUse
            | K::WouldBlock
            | K::TimedOut
            | K::Interrupted => ErrorCategory::Unavailable,
            _ => ErrorCategory::Internal,
        }
    }
}

impl std::fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message's place in a batch: the n-th message of a list, or the message on line n of
/// JSONL, counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchPosition {
    /// The n-th message of a list.
    Message(usize),
    /// The message on line n.
    Line(usize),
}

impl std::fmt::Display for BatchPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BatchPosition::Message(n) => write!(f, "message {n}: "),
            BatchPosition::Line(n) => write!(f, "line {n}: "),
        }
    }
}

/// What holds a store that could not be locked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockReason {
    /// Another writer kept the write transaction longer than the wait allowed.
    Busy {
        /// How long this handle waited.
        waited: Duration,
    },
    /// Another process has the file open exclusively.
    OpenElsewhere,
    /// Another process has the file open with an incompatible locking protocol (another
    /// version of the storage engine).
    ProtocolMismatch,
}

impl std::fmt::Display for LockReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockReason::Busy { waited } => write!(
                f,
                "another writer held it for more than {} ms (TRACT_LOCK_TIMEOUT_MS)",
                waited.as_millis()
            ),
            LockReason::OpenElsewhere => f.write_str("another process has it open exclusively"),
            LockReason::ProtocolMismatch => f.write_str(
                "another process has it open with an incompatible version of the storage engine",
            ),
        }
    }
}

/// At most this many close names are suggested for a branch that does not exist.
const SIMILAR_BRANCHES: usize = 3;

/// `; did you mean 'a', 'b' or 'c'?`, or nothing when no name is close: what an error naming
/// a branch that does not exist ends with ([`Error::UnknownBranch`]), for a surface saying
/// the same of a name it was given.
pub fn did_you_mean(similar: &[String]) -> String {
    let quoted: Vec<String> = similar.iter().map(|n| format!("'{n}'")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        [rest @ .., last] => format!("; did you mean {} or {last}?", rest.join(", ")),
    }
}

/// `; did you mean 'x'?` naming the names of `existing` closest to `name`, or nothing.
pub(crate) fn suggest<'a>(name: &str, existing: impl IntoIterator<Item = &'a str>) -> String {
    did_you_mean(&similar_names(name, existing))
}

/// The names in `existing` close to `name`, closest first (by edit distance, ignoring case,
/// then by name), at most [`SIMILAR_BRANCHES`]: a typo away (an edit distance of a third of
/// its length, at least 1), or, for a name of 3 characters or more, holding it (a name cut
/// short, a session id without its `import/` prefix). Names differing only in case, when
/// there are any, are the only ones given.
fn similar_names<'a>(name: &str, existing: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let lower_name = name.to_lowercase();
    let wanted: Vec<char> = lower_name.chars().collect();
    let limit = (wanted.len() / 3).max(1);
    let mut close: Vec<(usize, &str)> = existing
        .into_iter()
        .filter_map(|other| {
            let lower = other.to_lowercase();
            let candidate: Vec<char> = lower.chars().collect();
            match edit_distance(&wanted, &candidate, limit) {
                Some(d) => Some((d, other)),
                None if wanted.len() >= 3 && lower.contains(&lower_name) => {
                    Some((candidate.len().saturating_sub(wanted.len()), other))
                }
                None => None,
            }
        })
        .collect();
    close.sort_unstable();
    // A name that differs only in case is the one meant.
    if close.first().is_some_and(|(d, _)| *d == 0) {
        close.retain(|(d, _)| *d == 0);
    }
    close
        .into_iter()
        .take(SIMILAR_BRANCHES)
        .map(|(_, n)| n.to_string())
        .collect()
}

/// The edit distance of `a` and `b` (insertions, deletions, substitutions and swaps of two
/// neighbours, each 1) if it is at most `limit`; `None` beyond it, found without finishing
/// the table (a store may hold many long branch names).
fn edit_distance(a: &[char], b: &[char], limit: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let mut before: Vec<usize> = Vec::new();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut next = Vec::with_capacity(row.len());
        next.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let mut d = (row[j] + usize::from(ca != cb))
                .min(row[j + 1] + 1)
                .min(next[j] + 1);
            if i > 0 && j > 0 && *ca == b[j - 1] && a[i - 1] == *cb {
                d = d.min(before[j - 1] + 1);
            }
            next.push(d);
        }
        // A later entry comes from this row, or from the one before it plus a swap.
        let least = |r: &[usize]| r.iter().min().copied().unwrap_or(usize::MAX);
        if least(&next) > limit && least(&row).saturating_add(1) > limit {
            return None;
        }
        before = std::mem::replace(&mut row, next);
    }
    row.last().copied().filter(|&d| d <= limit)
}

fn short_list(ids: &[CommitId]) -> String {
    ids.iter()
        .map(CommitId::short)
        .collect::<Vec<_>>()
        .join(", ")
}

fn short_hex(id: &str) -> &str {
    id.get(..10).unwrap_or(id)
}

fn pending_list(pending: &[String]) -> String {
    if pending.is_empty() {
        return "no call is pending".to_string();
    }
    format!("pending: {}", pending.join(", "))
}

fn short_or_none(id: Option<CommitId>) -> String {
    id.map_or_else(|| "(none)".to_string(), |c| c.short())
}

fn not_in_view(commit: &CommitId, argument: Option<&str>) -> String {
    match argument {
        None => format!(
            "invalid operation: commit {} is not a message in the current view",
            commit.short()
        ),
        Some(a) => format!(
            "invalid operation: {a} names commit {}, which is not in the current view",
            commit.short()
        ),
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn invalid_input(message: impl Into<String>) -> Self {
        Error::InvalidInput {
            message: message.into(),
        }
    }

    pub(crate) fn invalid_message(reason: impl Into<String>) -> Self {
        Error::InvalidMessage {
            at: None,
            reason: reason.into(),
        }
    }

    pub(crate) fn invalid_op(message: impl Into<String>) -> Self {
        Error::InvalidOperation {
            message: message.into(),
        }
    }

    /// Branch `name` does not exist; `existing` are the names of those that do, of which the
    /// closest are kept as suggestions.
    pub(crate) fn unknown_branch<'a>(
        name: &str,
        existing: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        Error::UnknownBranch {
            name: name.to_string(),
            similar: similar_names(name, existing),
        }
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Self {
        Error::Corrupt {
            message: message.into(),
        }
    }

    /// An operating-system error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// A `tool_result` handler's failure, keeping the handler's own error as the source.
    pub fn handler(source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        Error::Handler {
            source: Arc::from(source.into()),
        }
    }

    /// What kind of failure this is (see [`ErrorCategory`]): what surfaces map to exit
    /// codes, HTTP statuses and exception classes.
    pub fn category(&self) -> ErrorCategory {
        use ErrorCategory::*;
        // No wildcard: a new variant does not compile until it is placed.
        match self {
            Error::UnknownRevision { .. }
            | Error::UnknownBranch { .. }
            | Error::BranchDeleted { .. }
            | Error::UnbornBranch { .. }
            | Error::HistoryTooShort { .. }
            | Error::ReflogTooShort { .. }
            | Error::MissingCommit { .. }
            | Error::NotInView { .. } => NotFound,
            Error::AmbiguousPrefix { .. }
            | Error::InvalidRevision { .. }
            | Error::InvalidBranchName { .. }
            | Error::InvalidMessage { .. }
            | Error::InvalidTranscript { .. }
            | Error::InvalidInput { .. }
            | Error::Rejected { .. }
            | Error::NotAStore { .. }
            | Error::NewerFormat { .. } => InvalidInput,
            Error::BranchExists { .. }
            | Error::InvalidOperation { .. }
            | Error::NoMergeBase { .. }
            | Error::CallNotPending { .. }
            | Error::HeadMoved { .. }
            | Error::ReadOnly { .. }
            | Error::Diverged { .. } => Conflict,
            Error::Corrupt { .. } | Error::CorruptObject { .. } | Error::CorruptJournal { .. } => {
                Corrupt
            }
            Error::StoreLocked { .. }
            | Error::Database { .. }
            | Error::Summarizer { .. }
            | Error::Model { .. } => Unavailable,
            Error::Io { source, .. } => ErrorCategory::of_io(source.kind()),
            Error::Handler { .. } | Error::Storage { .. } | Error::SearchIndex { .. } => Internal,
        }
    }

    /// This error with its place in a batch, when it is about one message of it.
    pub fn in_batch(self, at: BatchPosition) -> Self {
        match self {
            Error::InvalidMessage { at: None, reason } => Error::InvalidMessage {
                at: Some(at),
                reason,
            },
            other => other,
        }
    }

    /// This error with the file it is about, when it is about a transcript's line.
    pub fn in_file(self, file: &std::path::Path) -> Self {
        match self {
            Error::InvalidTranscript {
                path: None,
                line,
                reason,
            } => Error::InvalidTranscript {
                path: Some(file.to_path_buf()),
                line,
                reason,
            },
            other => other,
        }
    }

    /// One error of every variant, with plausible facts: what a surface's error mapping is
    /// tested against, so a new variant cannot be left unmapped.
    pub fn examples() -> Vec<Error> {
        let a = CommitId::of(b"a");
        let b = CommitId::of(b"b");
        let path = PathBuf::from("/tmp/store.redb");
        let all = vec![
            Error::UnknownRevision { rev: "nope".into() },
            Error::UnknownBranch {
                name: "feature".into(),
                similar: vec!["features".into(), "feature-2".into()],
            },
            Error::BranchDeleted {
                name: "session-1".into(),
            },
            Error::UnbornBranch {
                branch: "main".into(),
            },
            Error::HistoryTooShort {
                rev: "HEAD~9".into(),
            },
            Error::ReflogTooShort {
                rev: "main@{9}".into(),
                name: "main".into(),
                entries: 3,
            },
            Error::MissingCommit { commit: a },
            Error::AmbiguousPrefix {
                prefix: "abcd".into(),
                candidates: vec![a, b],
            },
            Error::NotInView {
                commit: a,
                argument: Some("after".into()),
            },
            Error::InvalidRevision {
                rev: "HEAD~x".into(),
                reason: "~ takes a number".into(),
            },
            Error::InvalidBranchName { name: "-x".into() },
            Error::InvalidMessage {
                at: Some(BatchPosition::Message(2)),
                reason: "unknown role 'robot'".into(),
            },
            Error::InvalidTranscript {
                path: Some(PathBuf::from("session.jsonl")),
                line: 7,
                reason: "malformed JSON: expected value at line 1 column 1".into(),
            },
            Error::invalid_input("an empty search query"),
            Error::BranchExists {
                name: "main".into(),
            },
            Error::invalid_op("nothing to do"),
            Error::NoMergeBase {
                branch: "imported".into(),
                head: a,
                other: b,
            },
            Error::CallNotPending {
                call_id: "call_9".into(),
                pending: vec!["call_1".into()],
            },
            Error::HeadMoved {
                branch: "main".into(),
                expected: Some(a),
                actual: Some(b),
            },
            Error::StoreLocked {
                path: path.clone(),
                reason: LockReason::Busy {
                    waited: Duration::from_millis(10),
                },
            },
            Error::ReadOnly {
                store: path.display().to_string(),
                reason: "its file cannot be written (Permission denied)".into(),
            },
            Error::NotAStore {
                path: path.clone(),
                reason: "the file is empty".into(),
            },
            Error::corrupt("blob 0123456789 is missing"),
            Error::CorruptObject {
                kind: "blob",
                id: a.to_hex(),
                reason: "its bytes do not hash to its id".into(),
            },
            Error::NewerFormat {
                found: 9,
                supported: 1,
            },
            Error::io(path, std::io::Error::from(std::io::ErrorKind::NotFound)),
            Error::Summarizer {
                summarizer: "openai:m@http://127.0.0.1:9/v1".into(),
                reason: "HTTP 500".into(),
            },
            Error::Model {
                endpoint: "http://127.0.0.1:9/v1".into(),
                reason: "no answer within 30000 ms".into(),
            },
            Error::handler("handler bug"),
            Error::Rejected {
                reason: "holds a password".into(),
            },
            Error::Diverged {
                branch: "main".into(),
                receiver: a,
                sender: b,
            },
            Error::Database {
                store: "postgresql://ann:***@db:5432/agents?schema=tract".into(),
                reason: "the connection to the server was lost".into(),
            },
            Error::Storage {
                source: Arc::new(redb::Error::TransactionInProgress),
            },
            Error::SearchIndex {
                doing: "committing a batch".into(),
                source: Arc::new(tantivy::TantivyError::IndexAlreadyExists),
            },
            Error::CorruptJournal {
                path: "/srv/agents/.tract/store.redb-journal/0000000000000007".into(),
                reason: "the frame at offset 4096 is damaged (its check does not match) and frames follow it".into(),
            },
        ];
        // A match with no wildcard: adding a variant without an example fails to compile here.
        for e in &all {
            match e {
                Error::UnknownRevision { .. }
                | Error::UnknownBranch { .. }
                | Error::BranchDeleted { .. }
                | Error::UnbornBranch { .. }
                | Error::HistoryTooShort { .. }
                | Error::ReflogTooShort { .. }
                | Error::MissingCommit { .. }
                | Error::AmbiguousPrefix { .. }
                | Error::NotInView { .. }
                | Error::InvalidRevision { .. }
                | Error::InvalidBranchName { .. }
                | Error::InvalidMessage { .. }
                | Error::InvalidTranscript { .. }
                | Error::InvalidInput { .. }
                | Error::BranchExists { .. }
                | Error::InvalidOperation { .. }
                | Error::NoMergeBase { .. }
                | Error::CallNotPending { .. }
                | Error::HeadMoved { .. }
                | Error::StoreLocked { .. }
                | Error::ReadOnly { .. }
                | Error::NotAStore { .. }
                | Error::Corrupt { .. }
                | Error::CorruptObject { .. }
                | Error::CorruptJournal { .. }
                | Error::NewerFormat { .. }
                | Error::Io { .. }
                | Error::Summarizer { .. }
                | Error::Model { .. }
                | Error::Handler { .. }
                | Error::Rejected { .. }
                | Error::Diverged { .. }
                | Error::Database { .. }
                | Error::SearchIndex { .. }
                | Error::Storage { .. } => {}
            }
        }
        all
    }
}

macro_rules! storage_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                let e: redb::Error = e.into();
                match e {
                    redb::Error::Corrupted(message) => Error::Corrupt { message },
                    source => Error::Storage {
                        source: Arc::new(source),
                    },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_positions_prefix_the_reason_once() {
        let e = Error::invalid_message("unknown role 'robot'").in_batch(BatchPosition::Message(2));
        assert_eq!(
            e.to_string(),
            "invalid input: message 2: unknown role 'robot'"
        );
        // Only message errors get a position.
        let other = Error::invalid_input("x").in_batch(BatchPosition::Line(3));
        assert_eq!(other.to_string(), "invalid input: x");
    }

    fn similar(name: &str, existing: &[&str]) -> Vec<String> {
        similar_names(name, existing.iter().copied())
    }

    #[test]
    fn close_branch_names_are_suggested_closest_first() {
        let sessions = [
            "main",
            "session-1",
            "session-2",
            "session-10",
            "import/7f3c1a2e-5b1d",
        ];
        // A typo: within a third of the length (at least 1), ignoring case.
        assert_eq!(similar("maim", &sessions), ["main"]);
        assert_eq!(similar("MAIN", &sessions), ["main"]);
        assert_eq!(similar("Session-2", &sessions), ["session-2"]);
        assert_eq!(similar("mian", &sessions), ["main"]);
        assert_eq!(
            similar("sesion-1", &sessions),
            ["session-1", "session-10", "session-2"]
        );
        assert_eq!(similar("sesion-2", &sessions), ["session-2", "session-1"]);
        // A name cut short, or without its prefix.
        assert_eq!(
            similar("sess", &sessions),
            ["session-1", "session-2", "session-10"]
        );
        assert_eq!(similar("7f3c1a2e", &sessions), ["import/7f3c1a2e-5b1d"]);
        // Nothing close, and short names only match typos.
        assert!(similar("nope", &sessions).is_empty());
        assert!(similar("io", &sessions).is_empty());
        assert!(similar("x", &[]).is_empty());
        // At most three.
        let many: Vec<String> = (0..20).map(|i| format!("agent-{i}")).collect();
        let names: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(similar("agent-", &names).len(), 3);
    }

    #[test]
    fn edit_distance_stops_past_its_limit() {
        let chars = |s: &str| s.chars().collect::<Vec<_>>();
        assert_eq!(
            edit_distance(&chars("kitten"), &chars("sitting"), 3),
            Some(3)
        );
        assert_eq!(edit_distance(&chars("kitten"), &chars("sitting"), 2), None);
        assert_eq!(edit_distance(&chars(""), &chars("ab"), 2), Some(2));
        assert_eq!(edit_distance(&chars("abc"), &chars("abc"), 0), Some(0));
        assert_eq!(edit_distance(&chars("a"), &chars("abcdef"), 2), None);
        // Two neighbours swapped are one edit.
        assert_eq!(edit_distance(&chars("sied"), &chars("side"), 1), Some(1));
        assert_eq!(edit_distance(&chars("ab"), &chars("ba"), 1), Some(1));
    }

    #[test]
    fn an_unknown_branch_names_the_close_ones() {
        let e = |similar: &[&str]| Error::UnknownBranch {
            name: "x".into(),
            similar: similar.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(e(&[]).to_string(), "branch 'x' not found");
        assert_eq!(
            e(&["y"]).to_string(),
            "branch 'x' not found; did you mean 'y'?"
        );
        assert_eq!(
            e(&["y", "z"]).to_string(),
            "branch 'x' not found; did you mean 'y' or 'z'?"
        );
        assert_eq!(
            e(&["a", "b", "c"]).to_string(),
            "branch 'x' not found; did you mean 'a', 'b' or 'c'?"
        );
    }

    #[test]
    fn the_examples_reach_every_category_and_no_other() {
        use std::collections::BTreeSet;
        let reached: BTreeSet<ErrorCategory> =
            Error::examples().iter().map(Error::category).collect();
        let all: BTreeSet<ErrorCategory> = ErrorCategory::ALL.into_iter().collect();
        assert_eq!(reached, all);
        assert_eq!(all.len(), ErrorCategory::ALL.len(), "ALL lists each once");
        let names: BTreeSet<&str> = ErrorCategory::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), ErrorCategory::ALL.len());
        assert!(
            names
                .iter()
                .all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        );
    }

    #[test]
    fn variants_fall_in_the_category_their_caller_acts_on() {
        let by_variant: std::collections::BTreeMap<String, ErrorCategory> = Error::examples()
            .iter()
            .map(|e| {
                let name = format!("{e:?}");
                let variant = name.split([' ', '{', '(']).next().unwrap_or_default();
                (variant.to_string(), e.category())
            })
            .collect();
        let of = |v: &str| by_variant[v];
        // What the surfaces' tests and docs rely on.
        assert_eq!(of("NotInView"), ErrorCategory::NotFound);
        assert_eq!(of("AmbiguousPrefix"), ErrorCategory::InvalidInput);
        assert_eq!(of("NewerFormat"), ErrorCategory::InvalidInput);
        assert_eq!(of("HeadMoved"), ErrorCategory::Conflict);
        assert_eq!(of("Diverged"), ErrorCategory::Conflict);
        assert_eq!(of("CorruptObject"), ErrorCategory::Corrupt);
        assert_eq!(of("StoreLocked"), ErrorCategory::Unavailable);
        assert_eq!(of("Database"), ErrorCategory::Unavailable);
        assert_eq!(of("Handler"), ErrorCategory::Internal);
        assert_eq!(of("Storage"), ErrorCategory::Internal);
    }

    #[test]
    fn an_os_error_is_placed_by_its_kind() {
        use std::io::ErrorKind as K;
        let category = |kind: K| Error::io("/tmp/x", std::io::Error::from(kind)).category();
        assert_eq!(category(K::NotFound), ErrorCategory::NotFound);
        assert_eq!(category(K::AlreadyExists), ErrorCategory::Conflict);
        assert_eq!(category(K::NotADirectory), ErrorCategory::InvalidInput);
        assert_eq!(category(K::StorageFull), ErrorCategory::Unavailable);
        assert_eq!(category(K::FileTooLarge), ErrorCategory::Unavailable);
        assert_eq!(category(K::TimedOut), ErrorCategory::Unavailable);
        assert_eq!(
            ErrorCategory::of_io(K::AddrInUse),
            ErrorCategory::Unavailable
        );
        assert_eq!(category(K::PermissionDenied), ErrorCategory::Internal);
        assert_eq!(category(K::Other), ErrorCategory::Internal);
    }

    #[test]
    fn every_variant_has_an_example_that_displays() {
        let all = Error::examples();
        assert_eq!(all.len(), 35);
        for e in all {
            assert!(!e.to_string().is_empty());
        }
    }
}
