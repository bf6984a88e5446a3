//! Work a caller does not wait for (an append an event loop awaits), on a pool of threads:
//! tokio's blocking pool, which starts a thread when none is idle and lets one go after 10 s
//! without work. Starting a thread per call costs about as much as a small append does.

use std::sync::OnceLock;
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

/// Runs `job` on a thread of the pool.
pub(crate) fn run(job: impl FnOnce() + Send + 'static) {
    match pool() {
        Some(rt) => drop(rt.spawn_blocking(job)),
        None => drop(std::thread::spawn(job)),
    }
}
