//! tract errors as Python exceptions: the typed hierarchy under `tract.TractError` (defined in
//! `tract/errors.py`), and OS errors as the matching `OSError` subclass.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use tract_core::Error;

/// Converts a core error into the Python exception a user catches.
pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| {
        let class = match &e {
            Error::NotFound { .. } => "NotFoundError",
            Error::AmbiguousPrefix { .. } => "AmbiguousPrefixError",
            Error::InvalidInput { .. } => "InvalidInputError",
            Error::InvalidOperation { .. } => "InvalidOperationError",
            Error::HeadMoved { .. } => "HeadMovedError",
            Error::StoreLocked { .. } => "StoreLockedError",
            Error::NotAStore { .. } => "NotAStoreError",
            Error::Corrupt { .. } => "CorruptStoreError",
            Error::NewerFormat { .. } => "NewerFormatError",
            Error::Summarizer { .. } => "SummarizerError",
            Error::Rejected { .. } => "RejectedError",
            Error::Storage { .. } => "TractError",
            Error::Io { path, source } => return os_error(path, source),
        };
        let message = e.to_string();
        match py
            .import("tract.errors")
            .and_then(|m| m.getattr(class))
            .and_then(|cls| cls.call1((message,)))
        {
            Ok(exc) => PyErr::from_value(exc),
            Err(import_failed) => import_failed,
        }
    })
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

/// Emits `message` as a `tract.TractWarning`.
pub fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let category = py.import("tract.errors")?.getattr("TractWarning")?;
    py.import("warnings")?
        .getattr("warn")?
        .call1((message, category, 2))?;
    Ok(())
}
