//! OpenAI Responses items: the conversion the framework adapters use.

use crate::convert::{from_py, to_py};
use crate::errors::IntoPyResult;
use pyo3::prelude::*;

/// The Responses input items of one message dict (the neutral form, as `Tract.pop` returns
/// it): the item it was added as, or its plain input form.
#[pyfunction]
pub fn responses_items<'py>(
    py: Python<'py>,
    message: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let message = tract_core::json::message_from_json(&from_py(message)?).py()?;
    tract_core::formats::responses::items_from_message(&message)
        .iter()
        .map(|item| to_py(py, item))
        .collect()
}
