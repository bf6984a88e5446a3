//! tract errors as Python exceptions: the typed hierarchy under `tract.TractError` (defined in
//! `tract/errors.py`, looked up once), each carrying the error's facts as attributes; OS
//! errors as the matching `OSError` subclass; a handler's own exception re-raised as itself.
//!
//! A variant with a class of its own (`HeadMovedError`, ...) raises it; that class derives
//! from its category's class in `errors.py`. Any other variant raises its category's class,
//! taken from the core's `Error::category` ([`category_class`]).

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use tract_core::{BatchPosition, CommitId, Error, ErrorCategory};

/// The exception classes of `tract.errors`, imported on first use.
struct Classes {
    not_found: Py<PyType>,
    invalid_input: Py<PyType>,
    conflict: Py<PyType>,
    corrupt: Py<PyType>,
    unavailable: Py<PyType>,
    internal: Py<PyType>,
    ambiguous_prefix: Py<PyType>,
    invalid_operation: Py<PyType>,
    not_in_view: Py<PyType>,
    head_moved: Py<PyType>,
    store_locked: Py<PyType>,
    read_only: Py<PyType>,
    not_a_store: Py<PyType>,
    corrupt_store: Py<PyType>,
    newer_format: Py<PyType>,
    summarizer: Py<PyType>,
    rejected: Py<PyType>,
    database: Py<PyType>,
    diverged: Py<PyType>,
    warning: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let m = py.import("tract.errors")?;
        let get =
            |name: &str| -> PyResult<Py<PyType>> { Ok(m.getattr(name)?.cast_into()?.unbind()) };
        Ok(Classes {
            not_found: get("NotFoundError")?,
            invalid_input: get("InvalidInputError")?,
            conflict: get("ConflictError")?,
            corrupt: get("CorruptError")?,
            unavailable: get("UnavailableError")?,
            internal: get("InternalError")?,
            ambiguous_prefix: get("AmbiguousPrefixError")?,
            invalid_operation: get("InvalidOperationError")?,
            not_in_view: get("NotInViewError")?,
            head_moved: get("HeadMovedError")?,
            store_locked: get("StoreLockedError")?,
            read_only: get("ReadOnlyStoreError")?,
            not_a_store: get("NotAStoreError")?,
            corrupt_store: get("CorruptStoreError")?,
            newer_format: get("NewerFormatError")?,
            summarizer: get("SummarizerError")?,
            rejected: get("RejectedError")?,
            database: get("DatabaseError")?,
            diverged: get("DivergedError")?,
            warning: get("TractWarning")?,
        })
    })
}

/// The class of a category: what an error without a class of its own raises, and the base of
/// those with one.
fn category_class(c: &Classes, category: ErrorCategory) -> &Py<PyType> {
    match category {
        ErrorCategory::NotFound => &c.not_found,
        ErrorCategory::InvalidInput => &c.invalid_input,
        ErrorCategory::Conflict => &c.conflict,
        ErrorCategory::Corrupt => &c.corrupt,
        ErrorCategory::Unavailable => &c.unavailable,
        ErrorCategory::Internal => &c.internal,
    }
}

fn hex(id: &CommitId) -> String {
    id.to_hex()
}

/// Converts a core error into the Python exception a user catches.
pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| match build(py, e) {
        Ok(err) => err,
        Err(failed) => failed,
    })
}

fn build(py: Python<'_>, e: Error) -> PyResult<PyErr> {
    let c = classes(py)?;
    let facts = PyDict::new(py);
    // A class of the variant's own, or None: its category's.
    let own = match &e {
        Error::UnknownRevision { rev } | Error::HistoryTooShort { rev } => {
            facts.set_item("rev", rev)?;
            None
        }
        Error::ReflogTooShort { rev, name, entries } => {
            facts.set_item("rev", rev)?;
            facts.set_item("ref", name)?;
            facts.set_item("entries", entries)?;
            None
        }
        Error::UnknownBranch { name, similar } => {
            facts.set_item("branch", name)?;
            facts.set_item("similar", similar)?;
            None
        }
        Error::BranchDeleted { name: branch } | Error::UnbornBranch { branch } => {
            facts.set_item("branch", branch)?;
            None
        }
        Error::MissingCommit { commit } => {
            facts.set_item("commit", hex(commit))?;
            None
        }
        Error::AmbiguousPrefix { prefix, candidates } => {
            facts.set_item("prefix", prefix)?;
            facts.set_item("candidates", candidates.iter().map(hex).collect::<Vec<_>>())?;
            Some(&c.ambiguous_prefix)
        }
        Error::NotInView { commit, argument } => {
            facts.set_item("commit", hex(commit))?;
            facts.set_item("argument", argument)?;
            Some(&c.not_in_view)
        }
        Error::InvalidRevision { rev, .. } => {
            facts.set_item("rev", rev)?;
            None
        }
        Error::InvalidBranchName { name } => {
            facts.set_item("branch", name)?;
            None
        }
        Error::InvalidMessage { at, .. } => {
            match at {
                Some(BatchPosition::Message(n)) => facts.set_item("index", n)?,
                Some(BatchPosition::Line(n)) => facts.set_item("line", n)?,
                None => {}
            }
            None
        }
        Error::InvalidTranscript { path, line, .. } => {
            if let Some(p) = path {
                facts.set_item("path", p.display().to_string())?;
            }
            facts.set_item("line", line)?;
            None
        }
        Error::InvalidInput { .. } => None,
        Error::BranchExists { name } => {
            facts.set_item("branch", name)?;
            Some(&c.invalid_operation)
        }
        Error::InvalidOperation { .. } => Some(&c.invalid_operation),
        Error::NoMergeBase {
            branch,
            head,
            other,
        } => {
            facts.set_item("branch", branch)?;
            facts.set_item("head", hex(head))?;
            facts.set_item("other", hex(other))?;
            Some(&c.invalid_operation)
        }
        Error::CallNotPending { call_id, pending } => {
            facts.set_item("call_id", call_id)?;
            facts.set_item("pending", pending)?;
            Some(&c.invalid_operation)
        }
        Error::HeadMoved {
            branch,
            expected,
            actual,
        } => {
            facts.set_item("branch", branch)?;
            facts.set_item("expected", expected.as_ref().map(hex))?;
            facts.set_item("actual", actual.as_ref().map(hex))?;
            Some(&c.head_moved)
        }
        Error::StoreLocked { path, .. } => {
            facts.set_item("path", path.display().to_string())?;
            Some(&c.store_locked)
        }
        Error::NotAStore { path, reason } => {
            facts.set_item("path", path.display().to_string())?;
            facts.set_item("reason", reason)?;
            Some(&c.not_a_store)
        }
        Error::Corrupt { .. } => Some(&c.corrupt_store),
        Error::CorruptJournal { path, reason } => {
            facts.set_item("path", path.display().to_string())?;
            facts.set_item("reason", reason)?;
            Some(&c.corrupt_store)
        }
        Error::CorruptObject { kind, id, reason } => {
            facts.set_item("kind", kind)?;
            facts.set_item("id", id)?;
            facts.set_item("reason", reason)?;
            Some(&c.corrupt_store)
        }
        Error::NewerFormat { found, supported } => {
            facts.set_item("found", found)?;
            facts.set_item("supported", supported)?;
            Some(&c.newer_format)
        }
        Error::Summarizer { summarizer, reason } => {
            facts.set_item("summarizer", summarizer)?;
            facts.set_item("reason", reason)?;
            Some(&c.summarizer)
        }
        Error::Rejected { reason } => {
            facts.set_item("reason", reason)?;
            Some(&c.rejected)
        }
        Error::Diverged {
            branch,
            receiver,
            sender,
        } => {
            facts.set_item("branch", branch)?;
            facts.set_item("receiver", receiver.to_hex())?;
            facts.set_item("sender", sender.to_hex())?;
            Some(&c.diverged)
        }
        Error::ReadOnly { store, reason } => {
            facts.set_item("store", store)?;
            facts.set_item("reason", reason)?;
            Some(&c.read_only)
        }
        Error::Database { store, reason } => {
            facts.set_item("store", store)?;
            facts.set_item("reason", reason)?;
            Some(&c.database)
        }
        Error::Model { endpoint, reason } => {
            facts.set_item("endpoint", endpoint)?;
            facts.set_item("reason", reason)?;
            None
        }
        Error::Io { path, source } => return Ok(os_error(path, source)),
        Error::Handler { source } => {
            // The handler's own exception goes back to the caller unchanged.
            if let Some(original) = source.downcast_ref::<PyErr>() {
                return Ok(original.clone_ref(py));
            }
            None
        }
        Error::Storage { .. } => None,
        Error::SearchIndex { doing, .. } => {
            facts.set_item("doing", doing)?;
            None
        }
        // Variants added later: their category's class.
        _ => None,
    };
    let class = own.unwrap_or_else(|| category_class(c, e.category()));
    let exc = class.bind(py).call((e.to_string(),), Some(&facts))?;
    Ok(PyErr::from_value(exc))
}

/// `DivergedError` for a transfer that refused branches (the others moved): the message
/// names each, `branch`, `receiver` and `sender` are the first one's, `report` is the dict
/// the call returns when nothing is refused (`report["refused"]` lists each).
pub fn refused(py: Python<'_>, r: &tract_core::SyncReport, report: Bound<'_, PyDict>) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let facts = PyDict::new(py);
        if let Some(first) = r.refused.first() {
            facts.set_item("branch", &first.name)?;
            facts.set_item("receiver", first.receiver.to_hex())?;
            facts.set_item("sender", first.sender.to_hex())?;
        }
        facts.set_item("report", report)?;
        let message = r.refusal_message().unwrap_or_default();
        let exc = classes(py)?
            .diverged
            .bind(py)
            .call((message,), Some(&facts))?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|failed| failed)
}

/// `OSError(errno, message, path)`: Python picks the subclass (FileNotFoundError, …) from errno.
fn os_error(path: &std::path::Path, source: &std::io::Error) -> PyErr {
    use std::io::ErrorKind;
    let errno = source.raw_os_error().unwrap_or(match source.kind() {
        ErrorKind::NotFound => 2,
        ErrorKind::PermissionDenied => 13,
        ErrorKind::AlreadyExists => 17,
        ErrorKind::NotADirectory => 20,
        ErrorKind::IsADirectory => 21,
        ErrorKind::ReadOnlyFilesystem => 30,
        _ => 5,
    });
    PyOSError::new_err((errno, source.to_string(), path.display().to_string()))
}

/// `?` for core results inside Python methods.
pub trait IntoPyResult<T> {
    /// Maps the error to its Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// A Python exception raised inside core work (a handler, a summarizer), carried through the
/// core as the source of its error.
pub fn from_py(e: PyErr) -> Error {
    Error::handler(e)
}

/// Emits `message` as a `tract.TractWarning`.
pub fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let category = classes(py)?.warning.bind(py);
    py.import("warnings")?
        .getattr("warn")?
        .call1((message, category, 2))?;
    Ok(())
}

/// One exception per variant of the core's error, as `(variant, category, exception)`: what
/// the test of the mapping raises.
#[pyfunction]
pub fn _error_examples(py: Python<'_>) -> Vec<(String, &'static str, Py<PyAny>)> {
    Error::examples()
        .into_iter()
        .map(|e| {
            let name = format!("{e:?}");
            let variant = name
                .split([' ', '{', '('])
                .next()
                .unwrap_or_default()
                .to_string();
            let category = e.category().as_str();
            (variant, category, to_py(e).into_value(py).into_any())
        })
        .collect()
}
