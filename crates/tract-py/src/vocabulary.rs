//! The reports Python is given, from the vocabulary's serde types: the same words, fields and
//! values as `--json`, the MCP server and the web API, turned into Python objects in one place.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Serialize;

/// `report` (a vocabulary type, which serializes as an object) as a Python dict.
pub fn dict<'py, T: Serialize>(py: Python<'py>, report: &T) -> PyResult<Bound<'py, PyDict>> {
    Ok(value(py, report)?.cast_into::<PyDict>()?)
}

/// `report` (a vocabulary type, a list of them, or a stored setting as `--json` prints it) as
/// plain Python objects.
pub fn value<'py, T: Serialize + ?Sized>(
    py: Python<'py>,
    report: &T,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, report)?)
}

/// `report` as a dict, its commits at `key` the `CommitInfo` objects Python gives for commits
/// (the vocabulary's commit is their JSON form: the same fields, by the same names).
pub fn with_commits<'py, T: Serialize>(
    py: Python<'py>,
    report: &T,
    key: &str,
    commits: Vec<tract_core::CommitInfo>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = dict(py, report)?;
    let commits: Vec<crate::commit::PyCommitInfo> = commits.into_iter().map(Into::into).collect();
    // Replacing a key keeps its place among the report's fields.
    d.set_item(key, commits)?;
    Ok(d)
}
