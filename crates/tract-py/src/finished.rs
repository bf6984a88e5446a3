//! Appends finished on worker threads, waiting for an event loop to take them: a queue and a
//! pipe the loop watches (`loop.add_reader`). A worker thread never takes the GIL to hand an
//! append back: it queues the outcome and wakes the loop with one byte; the loop's thread,
//! which holds the GIL anyway, builds the Python objects. Taking the GIL on the worker (to call
//! `loop.call_soon_threadsafe`) cost a thread state made and freed per call and a GIL passed
//! back and forth with the loop's thread: an awaited empty append took 150–230 µs, more than
//! `asyncio.to_thread` of nothing.
//!
//! The pipe is this object's own, closed only when the last of it and of the appends still
//! running are gone: a byte is never written to a descriptor number the process has since
//! reused for something else.

use crate::commit::PyCommitInfo;
use pyo3::prelude::*;
use std::io::{ErrorKind, PipeReader, PipeWriter, Read, Write};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::{Arc, Mutex};
use tract_core::{CommitInfo, Error};

/// What an append came to: its commits, or why it made none.
pub(crate) type Outcome = Result<Vec<CommitInfo>, Error>;

/// An outcome as the loop takes it: `(token, commits, None)` or `(token, None, error)`.
type Taken = (u64, Option<Vec<PyCommitInfo>>, Py<PyAny>);

/// The queue and its pipe, shared by the Python object and the appends running.
pub(crate) struct Finished {
    /// Outcomes not taken yet, each with the caller's token.
    done: Mutex<Vec<(u64, Outcome)>>,
    reader: PipeReader,
    writer: PipeWriter,
}

impl Finished {
    /// Queues `outcome` under `token` and wakes the loop. Only the append that finds the queue
    /// empty writes a byte: the loop drains the pipe before it takes the queue, so a queue that
    /// is not empty has a byte waiting or a take coming, and the pipe never fills.
    pub(crate) fn put(&self, token: u64, outcome: Outcome) {
        let first = {
            let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
            done.push((token, outcome));
            done.len() == 1
        };
        if first {
            // Full (never, by the rule above) means a byte is waiting anyway; an interruption
            // is tried again. Nothing else can fail on a pipe whose ends are both held here.
            while let Err(e) = (&self.writer).write(&[1]) {
                if e.kind() != ErrorKind::Interrupted {
                    break;
                }
            }
        }
    }
}

/// Makes `fd` non-blocking: the loop never waits on a read, nor a worker on a write.
fn non_blocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor this process holds open, with flags it read from it.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Appends finished on tract's worker threads, for one event loop to take: the loop watches
/// `fileno()` and calls `take()` when it can be read.
#[pyclass(name = "_Finished", module = "tract._tract", frozen)]
pub(crate) struct PyFinished {
    pub(crate) inner: Arc<Finished>,
}

#[pymethods]
impl PyFinished {
    /// An empty queue with a pipe of its own.
    #[new]
    fn new() -> PyResult<Self> {
        let made = std::io::pipe().and_then(|(reader, writer)| {
            non_blocking(reader.as_fd().as_raw_fd())?;
            non_blocking(writer.as_fd().as_raw_fd())?;
            Ok((reader, writer))
        });
        let (reader, writer) = made.map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!("no pipe to hand appends back on: {e}"))
        })?;
        Ok(Self {
            inner: Arc::new(Finished {
                done: Mutex::new(Vec::new()),
                reader,
                writer,
            }),
        })
    }

    /// The descriptor to watch for reading; it stays open as long as this object does.
    fn fileno(&self) -> RawFd {
        self.inner.reader.as_fd().as_raw_fd()
    }

    /// Every outcome queued, oldest first, as `(token, commits, None)` or `(token, None,
    /// error)`; the pipe is drained first, so an outcome queued meanwhile wakes the loop again.
    fn take(&self, py: Python<'_>) -> Vec<Taken> {
        let mut buf = [0u8; 64];
        loop {
            match (&self.inner.reader).read(&mut buf) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let done = std::mem::take(&mut *self.inner.done.lock().unwrap_or_else(|e| e.into_inner()));
        done.into_iter()
            .map(|(token, outcome)| match outcome {
                Ok(infos) => (
                    token,
                    Some(infos.into_iter().map(Into::into).collect()),
                    py.None(),
                ),
                Err(e) => (
                    token,
                    None,
                    crate::errors::to_py(e).into_value(py).into_any(),
                ),
            })
            .collect()
    }
}
