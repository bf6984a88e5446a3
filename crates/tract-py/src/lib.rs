//! Python bindings of tract: the native module `tract._tract`, wrapped by the `tract` package.
//!
//! Everything here is a thin shell over `tract-core`: argument conversion, error mapping and
//! releasing the GIL while the store works.

mod branch;
mod commit;
mod compiled;
mod compress;
mod convert;
mod errors;
mod finished;
mod hooks;
mod record;
mod renders;
mod responses;
mod tools;
mod tract;
mod vocabulary;
mod worker;

use pyo3::prelude::*;

/// The native module.
#[pymodule]
fn _tract(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tract::PyTract>()?;
    m.add_class::<commit::PyCommitInfo>()?;
    m.add_class::<branch::PyBranchInfo>()?;
    m.add_class::<record::PyRecord>()?;
    m.add_class::<compiled::PyCompiled>()?;
    m.add_class::<tools::PyToolTurn>()?;
    m.add_class::<tools::PyToolCall>()?;
    m.add_class::<tools::PySearchHit>()?;
    m.add_class::<compress::PyOpenAiCompatible>()?;
    m.add_class::<hooks::PyPendingToolResult>()?;
    m.add_class::<hooks::PyToolSummarization>()?;
    m.add_class::<finished::PyFinished>()?;
    m.add_function(wrap_pyfunction!(errors::_error_examples, m)?)?;
    m.add_function(wrap_pyfunction!(responses::responses_items, m)?)?;
    m.add("SYNTHETIC_RESULT", tract_core::view::SYNTHETIC_RESULT)?;
    m.add("TOOL_SUMMARIZE_SYSTEM", tract_core::TOOL_SUMMARIZE_SYSTEM)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    worker::register_exit_wait(m.py())?;
    Ok(())
}
