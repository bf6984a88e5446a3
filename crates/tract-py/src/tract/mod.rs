//! `tract.Tract`: a store and the operations on it, one file per concern as the core's `Tract`
//! is split (crates/tract-core/src/tract/): this one opens, closes and clones a store, and
//! holds what the others share (the handle, running a call with the GIL released, reading
//! revisions); the methods of each concern are a `#[pymethods]` block of their file.

mod branches;
mod compress;
mod history;
mod replay;
mod search;
mod secrets;
mod store;
mod tools;
mod transcripts;
mod view;
mod write;

use crate::commit::PyCommitInfo;
use crate::compress::summarizer_of;
use crate::errors::IntoPyResult;
use crate::renders::Renders;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use tract_core::{Bind, BranchName, Error, OpenOptions, Rev, Summarizer, Tract};

/// A tract store. Open one with `Tract.open(path)` (in memory without a path) and use it as a
/// context manager; every append is durable when the call returns.
#[pyclass(name = "Tract", module = "tract", frozen, weakref)]
pub struct PyTract {
    inner: RwLock<Option<Arc<Tract>>>,
    /// What its compiles rendered, kept for the next step.
    renders: Arc<Renders>,
}

impl PyTract {
    /// A handle on `t`, nothing rendered yet.
    fn of(t: Tract) -> Self {
        PyTract {
            inner: RwLock::new(Some(Arc::new(t))),
            renders: Arc::default(),
        }
    }

    /// The core handle (InvalidOperationError once this one is closed).
    fn get(&self) -> PyResult<Arc<Tract>> {
        let guard = self.inner.read().unwrap_or_else(|e| e.into_inner());
        guard.clone().ok_or_else(|| {
            crate::errors::to_py(Error::InvalidOperation {
                message: "this Tract is closed".into(),
            })
        })
    }

    /// Runs `f` on the core tract with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Tract) -> Result<T, Error> + Send,
    ) -> PyResult<T> {
        let t = self.get()?;
        py.detach(|| f(&t)).py()
    }
}

/// An `InvalidInputError` for arguments the core never sees.
fn invalid_input(message: impl Into<String>) -> PyErr {
    crate::errors::to_py(Error::InvalidInput {
        message: message.into(),
    })
}

/// Commit references from Python, each as [`rev_of`] reads it.
fn revs_of(list: &[Bound<'_, PyAny>]) -> PyResult<Vec<Rev>> {
    list.iter().map(rev_of).collect()
}

/// A commit reference from Python: a hash (prefix), a branch, `HEAD~N`, or a CommitInfo.
fn rev_of(obj: &Bound<'_, PyAny>) -> PyResult<Rev> {
    if let Ok(ci) = obj.cast::<PyCommitInfo>() {
        return Ok(Rev::from(ci.get().inner.id));
    }
    let text: String = obj.extract().map_err(|_| {
        crate::errors::to_py(Error::InvalidInput {
            message: "expected a commit hash, a branch name or a CommitInfo".into(),
        })
    })?;
    Rev::parse(&text).py()
}

#[pymethods]
impl PyTract {
    /// Opens the store file at `path` (created if missing; its directory must exist), or a new
    /// in-memory store when `path` is None. The handle works on `branch` (created by its first
    /// message), else on the branch `HEAD` names now; other handles and `tract switch` never
    /// move it. `summarizer` is used when a call names none (else the LLM the `TRACT_LLM_*`
    /// environment names, else the built-in extractive one). With `read_only`, the store must
    /// exist and nothing of it changes (not a byte of its file, not its format); a store this
    /// process cannot write opens that way by itself. A write then raises
    /// `ReadOnlyStoreError`.
    #[staticmethod]
    #[pyo3(signature = (path=None, summarizer=None, *, branch=None, read_only=false))]
    fn open(
        py: Python<'_>,
        path: Option<PathBuf>,
        summarizer: Option<Py<PyAny>>,
        branch: Option<String>,
        read_only: bool,
    ) -> PyResult<Self> {
        let env = tract_core::Environment::from_process();
        if let Some(bytes) = env.view_cache_budget() {
            tract_core::set_view_cache_budget(bytes);
        }
        if read_only && path.is_none() {
            return Err(crate::errors::to_py(tract_core::Error::InvalidInput {
                message: "read_only needs a store to read: give its path or URL".into(),
            }));
        }
        let options = OpenOptions {
            mode: match read_only {
                true => tract_core::OpenMode::ReadOnly,
                false => tract_core::OpenMode::CreateIfMissing,
            },
            store: env.store_options().py()?,
            bind: match branch {
                Some(name) => Bind::Branch(BranchName::new(&name).py()?),
                None => Bind::HeadAtOpen,
            },
        };
        let default = match summarizer {
            Some(f) => Some(summarizer_of(py, f)),
            None => env.summarizer().map(|s| Arc::new(s) as Arc<dyn Summarizer>),
        };
        let t = py
            .detach(|| match path {
                Some(p) => Tract::open_with(p, &options),
                None => Tract::in_memory_with(&options),
            })
            .py()?;
        t.set_summarizer(default);
        Ok(PyTract::of(t))
    }

    /// Where the store is: its file, or its URL without the password (None in memory).
    #[getter]
    fn path(&self) -> PyResult<Option<String>> {
        Ok(self.get()?.store().location())
    }

    /// Why this handle may only read (None: it may write): it was opened with `read_only`, or
    /// this process cannot write the store.
    #[getter]
    fn read_only(&self) -> PyResult<Option<String>> {
        Ok(self.get()?.store().read_only().map(str::to_string))
    }

    /// Closes the store; later calls raise InvalidOperationError.
    fn close(&self) {
        let mut guard = self.inner.write().unwrap_or_else(|e| e.into_inner());
        *guard = None;
        self.renders.clear();
    }

    /// Copies the store at `src` into a new store at `dest` (a file that does not exist yet, or
    /// a postgresql:// URL whose schema holds no store): every branch with its history, the
    /// settings and HEAD, every id the same. Returns a handle on the copy.
    #[staticmethod]
    fn clone_store(py: Python<'_>, src: PathBuf, dest: PathBuf) -> PyResult<Self> {
        if dest.exists() {
            return Err(invalid_input(format!(
                "{} exists; clone into a new file",
                dest.display()
            )));
        }
        let env = tract_core::Environment::from_process();
        let options = env.store_options().py()?;
        let (t, _) = py
            .detach(|| Tract::clone_store(&src, &dest, options))
            .py()?;
        Ok(PyTract::of(t))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        match self.get() {
            Ok(t) => match t.store().location() {
                Some(p) => format!("Tract({p})"),
                None => "Tract(<memory>)".into(),
            },
            Err(_) => "Tract(<closed>)".into(),
        }
    }
}
