//! JSON values to Python objects and back (via the `json` module for Python input, so any
//! JSON-serializable argument is accepted exactly as `json.dumps` sees it).

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;
use std::collections::HashMap;

/// A JSON value as plain Python objects (dict, list, str, int, float, bool, None).
pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    to_py_with(py, v, &mut Keys::default())
}

/// The keys a conversion has made, each one string shared by every dict that has it, as
/// `json.loads` shares them: the few keys of thousands of messages (`role`, `content`, …) are
/// then a handful of strings, not one per dict (a fifth of what a rendering of 50,000 messages
/// made). At most [`Keys::MAX`] are kept, so a conversion of many distinct keys costs no more
/// than without.
#[derive(Default)]
pub struct Keys<'py>(HashMap<String, Bound<'py, PyString>>);

impl<'py> Keys<'py> {
    const MAX: usize = 64;

    fn get(&mut self, py: Python<'py>, k: &str) -> Bound<'py, PyString> {
        if let Some(s) = self.0.get(k) {
            return s.clone();
        }
        let s = PyString::new(py, k);
        if self.0.len() < Self::MAX {
            self.0.insert(k.to_string(), s.clone());
        }
        s
    }
}

/// [`to_py`], sharing the keys of `keys` (and keeping the new ones there).
pub fn to_py_with<'py>(
    py: Python<'py>,
    v: &Value,
    keys: &mut Keys<'py>,
) -> PyResult<Bound<'py, PyAny>> {
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
                list.append(to_py_with(py, item, keys)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(keys.get(py, k), to_py_with(py, item, keys)?)?;
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

/// A point in time a caller gives (`since=`, `until=`) as microseconds since the Unix epoch: a
/// `datetime.datetime` (naive: UTC) or a number of seconds (an `int` or a `float`). Any other
/// type is a `TypeError`; a time before the epoch, or not finite, an `InvalidInputError`.
pub fn epoch_micros(value: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    use pyo3::types::{PyBool, PyFloat, PyInt};
    let py = value.py();
    let invalid = |what: String| {
        crate::errors::to_py(tract_core::Error::InvalidInput {
            message: format!("{name} must be a time at or after 1970-01-01 UTC, not {what}"),
        })
    };
    let dt = py.import("datetime")?;
    if value.is_instance(&dt.getattr("datetime")?)? {
        let utc = dt.getattr("timezone")?.getattr("utc")?;
        // Naive (no tzinfo, or one that gives no offset): UTC.
        let aware = if value.call_method0("utcoffset")?.is_none() {
            let kwargs = PyDict::new(py);
            kwargs.set_item("tzinfo", &utc)?;
            value.call_method("replace", (), Some(&kwargs))?
        } else {
            value.clone()
        };
        let epoch = dt
            .getattr("datetime")?
            .call1((1970, 1, 1, 0, 0, 0, 0, utc))?;
        let delta = aware.call_method1("__sub__", (epoch,))?;
        let days: i64 = delta.getattr("days")?.extract()?;
        let seconds: i64 = delta.getattr("seconds")?.extract()?;
        let micros: i64 = delta.getattr("microseconds")?.extract()?;
        // `datetime` spans years 1 to 9999: this fits in an i64 with room to spare.
        let total = days * 86_400_000_000 + seconds * 1_000_000 + micros;
        return match u64::try_from(total) {
            Ok(us) => Ok(us),
            Err(_) => Err(invalid(value.repr()?.to_string())),
        };
    }
    if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
        let seconds: i128 = match value.extract() {
            Ok(s) => s,
            Err(_) => return Err(invalid(format!("{} seconds", value.repr()?))),
        };
        return seconds
            .checked_mul(1_000_000)
            .and_then(|us| u64::try_from(us).ok())
            .ok_or_else(|| invalid(format!("{seconds} seconds")));
    }
    if value.is_instance_of::<PyFloat>() {
        let seconds: f64 = value.extract()?;
        let us = (seconds * 1e6).round();
        // 2^64 as a float: anything from there on does not fit.
        if !(seconds.is_finite() && (0.0..18_446_744_073_709_551_616.0).contains(&us)) {
            return Err(invalid(format!("{seconds} seconds")));
        }
        return Ok(us as u64);
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "{name} must be a datetime.datetime (naive: UTC) or a number of seconds since the \
         epoch, not {}",
        value.get_type().name()?
    )))
}
