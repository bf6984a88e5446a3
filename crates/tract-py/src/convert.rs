//! JSON values to Python objects and back (via the `json` module for Python input, so any
//! JSON-serializable argument is accepted exactly as `json.dumps` sees it).

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

/// A JSON value as plain Python objects (dict, list, str, int, float, bool, None).
pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_bound_py_any(py)?,
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.into_bound_py_any(py)?,
            (None, Some(u), _) => u.into_bound_py_any(py)?,
            (None, None, Some(f)) => f.into_bound_py_any(py)?,
            _ => n.to_string().into_bound_py_any(py)?,
        },
        Value::String(s) => s.into_bound_py_any(py)?,
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// A Python object as JSON, through `json.dumps` (keys in the order the dict has them).
pub fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let py = obj.py();
    let text: String = py
        .import("json")?
        .call_method1("dumps", (obj,))
        .map_err(|e| {
            crate::errors::to_py(tract_core::Error::InvalidInput {
                message: format!("not JSON-serializable: {e}"),
            })
        })?
        .extract()?;
    serde_json::from_str(&text).map_err(|e| {
        crate::errors::to_py(tract_core::Error::InvalidInput {
            message: format!("not valid JSON: {e}"),
        })
    })
}

/// Microseconds since the Unix epoch as a timezone-aware `datetime` in UTC.
pub fn utc_datetime(py: Python<'_>, us: u64) -> PyResult<Bound<'_, PyAny>> {
    let dt = py.import("datetime")?;
    let utc = dt.getattr("timezone")?.getattr("utc")?;
    let epoch = dt
        .getattr("datetime")?
        .call1((1970, 1, 1, 0, 0, 0, 0, utc))?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("microseconds", us)?;
    let delta = dt.getattr("timedelta")?.call((), Some(&kwargs))?;
    epoch.call_method1("__add__", (delta,))
}
