//! Work a caller does not wait for (an append an event loop awaits), on a pool of threads:
//! tokio's blocking pool, which starts a thread when none is idle and lets one go after 10 s
//! without work. Starting a thread per call costs about as much as a small append does.
//!
//! A job ends by calling back into Python, so the interpreter must not finalize under it:
//! Python joins its own threads at exit, not these. [`register_exit_wait`] has `atexit` wait
//! until every job started has finished (atexit runs before the interpreter starts to
//! finalize).

use pyo3::prelude::*;
use pyo3::types::PyCFunction;
use std::sync::{Condvar, Mutex, OnceLock};
use tokio::runtime::{Builder, Runtime};

/// The pool's runtime; `None` if it could not be made (then each job gets a thread).
fn pool() -> Option<&'static Runtime> {
    static POOL: OnceLock<Option<Runtime>> = OnceLock::new();
    POOL.get_or_init(|| {
        Builder::new_current_thread()
            .thread_name("tract-worker")
            .build()
            .ok()
    })
    .as_ref()
}

/// How many jobs have started and not finished, and a signal when that changes.
static RUNNING: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

fn running() -> std::sync::MutexGuard<'static, usize> {
    RUNNING.0.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts a job as finished when dropped, however the job ends (a panic included).
struct Finished;

impl Drop for Finished {
    fn drop(&mut self) {
        let mut n = running();
        *n = n.saturating_sub(1);
        RUNNING.1.notify_all();
    }
}

/// Runs `job` on a thread of the pool.
pub(crate) fn run(job: impl FnOnce() + Send + 'static) {
    *running() += 1;
    let job = move || {
        let _finished = Finished;
        job();
    };
    match pool() {
        Some(rt) => drop(rt.spawn_blocking(job)),
        None => drop(std::thread::spawn(job)),
    }
}

/// Has `atexit` wait, without the GIL, until every job started has finished.
pub(crate) fn register_exit_wait(py: Python<'_>) -> PyResult<()> {
    let wait = PyCFunction::new_closure(
        py,
        Some(c"_tract_wait_for_workers"),
        Some(c"Waits until tract's worker threads have finished their jobs."),
        |args, _kwargs| -> PyResult<()> {
            args.py().detach(|| {
                let mut n = running();
                while *n > 0 {
                    n = RUNNING.1.wait(n).unwrap_or_else(|e| e.into_inner());
                }
            });
            Ok(())
        },
    )?;
    py.import("atexit")?.call_method1("register", (wait,))?;
    Ok(())
}
