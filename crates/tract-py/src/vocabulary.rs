//! The reports Python is given, from the vocabulary's serde types: the same words, fields and
//! values as `--json`, the MCP server and the web API, turned into Python objects in one place.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Serialize;

/// `report` (a vocabulary type, which serializes as an object) as a Python dict.
pub fn dict<'py, T: Serialize>(py: Python<'py>, report: &T) -> PyResult<Bound<'py, PyDict>> {
    Ok(pythonize::pythonize(py, report)?.cast_into::<PyDict>()?)
}
