//! Work a caller does not wait for (an append an event loop awaits), on a pool of threads:
//! tokio's blocking pool, which starts a thread when none is idle and lets one go after 10 s
//! without work. Starting a thread per call costs about as much as a small append does.
//!
//! A job ends by calling back into Python, so the interpreter must not finalize under it:
//! Python joins its own threads at exit, not these. [`register_exit_wait`] has `atexit` wait
//! until every job started has finished (atexit runs before the interpreter starts to
//! finalize).
//!
//! A child made by `fork` has none of its parent's threads: it makes a pool of its own, and
//! its parent's jobs are not its to wait for. So the state is atomics, never a lock a thread
//! of the parent could have held at the fork.

use pyo3::prelude::*;
use pyo3::types::PyCFunction;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;
use tokio::runtime::{Builder, Runtime};

/// The process whose jobs are counted (high 32 bits) and how many of them have started and
/// not finished (low 32 bits), in one word so a child's first job resets its parent's count
/// in the same step that counts it.
static JOBS: AtomicU64 = AtomicU64::new(0);
/// The process the pool below belongs to (0: none yet).
static POOL_OWNER: AtomicU32 = AtomicU32::new(0);
/// A pool and the process it was made in (null: none made yet, or none could be: then each
/// job gets a thread of its own). Never freed: a forked child still reads its parent's.
static POOL: AtomicPtr<(u32, Runtime)> = AtomicPtr::new(std::ptr::null_mut());

fn owner(jobs: u64) -> u32 {
    (jobs >> 32) as u32
}

/// This process's pool, made on its first job. The pool a forked child inherits has no
/// threads behind it: it is left as it is, never used or dropped.
fn pool(pid: u32) -> Option<&'static Runtime> {
    let owner = POOL_OWNER.load(Ordering::Acquire);
    if owner != pid
        && POOL_OWNER
            .compare_exchange(owner, pid, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    {
        let made = Builder::new_current_thread()
            .thread_name("tract-worker")
            .build()
            .map_or(std::ptr::null_mut(), |rt| {
                Box::into_raw(Box::new((pid, rt)))
            });
        POOL.store(made, Ordering::Release);
    }
    // SAFETY: a non-null POOL was made by Box::into_raw and is never freed. Until the thread
    // that makes this process's pool has stored it, POOL is null or the parent's, whose pid
    // is not this one.
    match unsafe { POOL.load(Ordering::Acquire).as_ref() } {
        Some((made_in, rt)) if *made_in == pid => Some(rt),
        _ => None,
    }
}

/// Counts a job of process `.0` as finished when dropped, however the job ends.
struct Finished(u32);

impl Drop for Finished {
    fn drop(&mut self) {
        let _ = JOBS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |j| {
            (owner(j) == self.0 && j & 0xffff_ffff > 0).then(|| j - 1)
        });
    }
}

/// Runs `job` on a thread of the pool; an error, with `job` dropped unrun, when no thread can
/// be started (the system's limit on threads).
pub(crate) fn run(job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let pid = std::process::id();
    let _ = JOBS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |j| {
        Some(match owner(j) == pid {
            true => j + 1,
            false => (u64::from(pid) << 32) | 1,
        })
    });
    // Counted before it starts (it may finish before this returns), and uncounted when the
    // job is dropped, run or not: a job that never starts must not keep the exit waiting.
    let finished = Finished(pid);
    let job = move || {
        let _finished = finished;
        job();
    };
    match pool(pid) {
        // tokio panics when its pool can start no thread at all.
        Some(rt) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drop(rt.spawn_blocking(job));
        }))
        .map_err(|_| std::io::Error::other("no worker thread could be started")),
        None => std::thread::Builder::new()
            .name("tract-worker".into())
            .spawn(job)
            .map(drop),
    }
}

/// Has `atexit` wait, without the GIL, until every job this process started has finished.
pub(crate) fn register_exit_wait(py: Python<'_>) -> PyResult<()> {
    let wait = PyCFunction::new_closure(
        py,
        Some(c"_tract_wait_for_workers"),
        Some(c"Waits until tract's worker threads have finished their jobs."),
        |args, _kwargs| -> PyResult<()> {
            args.py().detach(|| {
                let pid = std::process::id();
                loop {
                    let j = JOBS.load(Ordering::Acquire);
                    if owner(j) != pid || j & 0xffff_ffff == 0 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            Ok(())
        },
    )?;
    py.import("atexit")?.call_method1("register", (wait,))?;
    Ok(())
}
