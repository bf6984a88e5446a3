//! tract errors as Python exceptions: the typed hierarchy under `tract.TractError` (defined in
//! `tract/errors.py`, looked up once), each carrying the error's facts as attributes; OS
//! errors as the matching `OSError` subclass; a handler's own exception re-raised as itself.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use tract_core::{BatchPosition, CommitId, Error};

/// The exception classes of `tract.errors`, imported on first use.
struct Classes {
    tract_error: Py<PyType>,
    not_found: Py<PyType>,
    ambiguous_prefix: Py<PyType>,
    invalid_input: Py<PyType>,
    invalid_operation: Py<PyType>,
    not_in_view: Py<PyType>,
    head_moved: Py<PyType>,
    store_locked: Py<PyType>,
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
            tract_error: get("TractError")?,
            not_found: get("NotFoundError")?,
            ambiguous_prefix: get("AmbiguousPrefixError")?,
            invalid_input: get("InvalidInputError")?,
            invalid_operation: get("InvalidOperationError")?,
            not_in_view: get("NotInViewError")?,
            head_moved: get("HeadMovedError")?,
            store_locked: get("StoreLockedError")?,
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
    let class = match &e {
        Error::UnknownRevision { rev } | Error::HistoryTooShort { rev } => {
            facts.set_item("rev", rev)?;
            &c.not_found
        }
        Error::UnknownBranch { name, similar } => {
            facts.set_item("branch", name)?;
            facts.set_item("similar", similar)?;
            &c.not_found
        }
        Error::BranchDeleted { name: branch } | Error::UnbornBranch { branch } => {
            facts.set_item("branch", branch)?;
            &c.not_found
        }
        Error::MissingCommit { commit } => {
            facts.set_item("commit", hex(commit))?;
            &c.not_found
        }
        Error::AmbiguousPrefix { prefix, candidates } => {
            facts.set_item("prefix", prefix)?;
            facts.set_item("candidates", candidates.iter().map(hex).collect::<Vec<_>>())?;
            &c.ambiguous_prefix
        }
        Error::NotInView { commit, argument } => {
            facts.set_item("commit", hex(commit))?;
            facts.set_item("argument", argument)?;
            &c.not_in_view
        }
        Error::InvalidRevision { rev, .. } => {
            facts.set_item("rev", rev)?;
            &c.invalid_input
        }
        Error::InvalidBranchName { name } => {
            facts.set_item("branch", name)?;
            &c.invalid_input
        }
        Error::InvalidMessage { at, .. } => {
            match at {
                Some(BatchPosition::Message(n)) => facts.set_item("index", n)?,
                Some(BatchPosition::Line(n)) => facts.set_item("line", n)?,
                None => {}
            }
            &c.invalid_input
        }
        Error::InvalidTranscript { path, line, .. } => {
            if let Some(p) = path {
                facts.set_item("path", p.display().to_string())?;
            }
            facts.set_item("line", line)?;
            &c.invalid_input
        }
        Error::InvalidInput { .. } => &c.invalid_input,
        Error::BranchExists { name } => {
            facts.set_item("branch", name)?;
            &c.invalid_operation
        }
        Error::InvalidOperation { .. } => &c.invalid_operation,
        Error::NoMergeBase {
            branch,
            head,
            other,
        } => {
            facts.set_item("branch", branch)?;
            facts.set_item("head", hex(head))?;
            facts.set_item("other", hex(other))?;
            &c.invalid_operation
        }
        Error::CallNotPending { call_id, pending } => {
            facts.set_item("call_id", call_id)?;
            facts.set_item("pending", pending)?;
            &c.invalid_operation
        }
        Error::HeadMoved {
            branch,
            expected,
            actual,
        } => {
            facts.set_item("branch", branch)?;
            facts.set_item("expected", expected.as_ref().map(hex))?;
            facts.set_item("actual", actual.as_ref().map(hex))?;
            &c.head_moved
        }
        Error::StoreLocked { path, .. } => {
            facts.set_item("path", path.display().to_string())?;
            &c.store_locked
        }
        Error::NotAStore { path, reason } => {
            facts.set_item("path", path.display().to_string())?;
            facts.set_item("reason", reason)?;
            &c.not_a_store
        }
        Error::Corrupt { .. } => &c.corrupt_store,
        Error::CorruptObject { kind, id, reason } => {
            facts.set_item("kind", kind)?;
            facts.set_item("id", id)?;
            facts.set_item("reason", reason)?;
            &c.corrupt_store
        }
        Error::NewerFormat { found, supported } => {
            facts.set_item("found", found)?;
            facts.set_item("supported", supported)?;
            &c.newer_format
        }
        Error::Summarizer { summarizer, reason } => {
            facts.set_item("summarizer", summarizer)?;
            facts.set_item("reason", reason)?;
            &c.summarizer
        }
        Error::Rejected { reason } => {
            facts.set_item("reason", reason)?;
            &c.rejected
        }
        Error::Diverged {
            branch,
            receiver,
            sender,
        } => {
            facts.set_item("branch", branch)?;
            facts.set_item("receiver", receiver.to_hex())?;
            facts.set_item("sender", sender.to_hex())?;
            &c.diverged
        }
        Error::Database { store, reason } => {
            facts.set_item("store", store)?;
            facts.set_item("reason", reason)?;
            &c.database
        }
        Error::Io { path, source } => return Ok(os_error(path, source)),
        Error::Handler { source } => {
            // The handler's own exception goes back to the caller unchanged.
            if let Some(original) = source.downcast_ref::<PyErr>() {
                return Ok(original.clone_ref(py));
            }
            let message = format!("the tool_result handler failed: {source}");
            return Ok(PyErr::from_value(c.tract_error.bind(py).call1((message,))?));
        }
        Error::Storage { .. } => &c.tract_error,
        _ => &c.tract_error,
    };
    let exc = class.bind(py).call((e.to_string(),), Some(&facts))?;
    Ok(PyErr::from_value(exc))
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

/// One exception per variant of the core's error, as `(variant, exception)`: what the test of
/// the mapping raises.
#[pyfunction]
pub fn _error_examples(py: Python<'_>) -> Vec<(String, Py<PyAny>)> {
    Error::examples()
        .into_iter()
        .map(|e| {
            let name = format!("{e:?}");
            let variant = name
                .split([' ', '{', '('])
                .next()
                .unwrap_or_default()
                .to_string();
            (variant, to_py(e).into_value(py).into_any())
        })
        .collect()
}
