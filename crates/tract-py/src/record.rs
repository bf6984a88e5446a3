//! `tract.Record`: data of the caller's own kept on a branch, as `Tract.records()` reads it.

use pyo3::prelude::*;
use tract_core::write::record::Record;

/// A record: its commit, its kind and its data, exactly as written.
#[pyclass(name = "Record", module = "tract", frozen, eq)]
pub struct PyRecord {
    inner: Record,
}

/// Equal when every field is (the same commit holds the same data).
impl PartialEq for PyRecord {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}

impl From<Record> for PyRecord {
    fn from(inner: Record) -> Self {
        PyRecord { inner }
    }
}

#[pymethods]
impl PyRecord {
    /// The record's commit: a full hash.
    #[getter]
    fn commit_hash(&self) -> String {
        self.inner.commit.to_hex()
    }

    /// What the data is (`langgraph.checkpoint`).
    #[getter]
    fn kind(&self) -> &str {
        &self.inner.kind
    }

    /// The data, exactly as written.
    #[getter]
    fn data(&self) -> &str {
        &self.inner.data
    }

    /// When it was written (UTC).
    #[getter]
    fn created_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::utc_datetime(py, self.inner.timestamp_us)
    }

    fn __repr__(&self) -> String {
        format!(
            "Record(kind={:?}, commit={}, {} bytes)",
            self.inner.kind,
            self.inner.commit.short(),
            self.inner.data.len()
        )
    }
}
