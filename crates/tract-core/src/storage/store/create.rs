//! Making a store file, so that a process stopped at any moment leaves no store or a whole one,
//! never a file every later open refuses.
//!
//! The file is built under a temporary name in the store's directory: tract's tables and the
//! first metadata (format, store id, `HEAD`) committed, the journal made beside the store's own
//! name (its segment naming that id), the file closed and synced. Then one rename that replaces
//! nothing gives it the store's name, and the directory is synced: that rename is the moment
//! the store exists. Makers in one directory take turns, holding the directory (an `flock`, which
//! the OS lets go of with a process that dies), so the one that waited finds the store made and
//! opens it, and whatever is left from a maker that died (its temporary file, a journal without
//! a frame beside no store) is no one's: the next maker removes the one and makes the other
//! again.

use crate::error::{Error, LockReason, Result};
use crate::storage::backend::WriteTx;
use crate::storage::journal::segment::StoreId;
use crate::storage::journaled::JournaledRedb;
use crate::storage::redb_backend::RedbBackend;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The steps of making a store file, in order: where a test stops the process (`faults`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreationStep {
    /// The directory is held and what makers that died left is removed; nothing made yet.
    Held,
    /// The temporary file holds tract's tables, and no metadata.
    TablesMade,
    /// The journal is made beside the store's name, its segment naming the new store's id; the
    /// temporary file's metadata is not committed.
    JournalMade,
    /// The temporary file's metadata is committed.
    MetaCommitted,
    /// The temporary file is closed and synced.
    Synced,
    /// The file has the store's name; the directory is not synced.
    Placed,
    /// The directory is synced (and still held).
    DirSynced,
}

impl CreationStep {
    /// Every step, in order.
    #[cfg(feature = "testing")]
    pub const ALL: [CreationStep; 7] = [
        CreationStep::Held,
        CreationStep::TablesMade,
        CreationStep::JournalMade,
        CreationStep::MetaCommitted,
        CreationStep::Synced,
        CreationStep::Placed,
        CreationStep::DirSynced,
    ];
}

/// The metadata of a new store, written in the transaction given: its id.
pub(crate) type Initialize<'a> = &'a dyn Fn(&mut dyn WriteTx) -> Result<StoreId>;

/// Makes the store file at `path` unless a file is there, its metadata written by
/// `initialize`, waiting up to `timeout` for another process making a store in the same
/// directory. Whether this call made it or found a file there, the caller opens `path` as a
/// file that exists (which refuses one that is not a store).
pub(crate) fn make_file(path: &Path, timeout: Duration, initialize: Initialize<'_>) -> Result<()> {
    let name = path.file_name().ok_or_else(|| Error::NotAStore {
        path: path.to_path_buf(),
        reason: "the path names no file".into(),
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let _held = hold(&dir, path, timeout)?;
    // Made by the maker this one waited for (or put there by anything else): opened as it is.
    if there(path)? {
        return Ok(());
    }
    let prefix = temporary_prefix(name);
    remove_leftovers(&dir, &prefix);
    reached(CreationStep::Held);
    let mut temporary = prefix;
    temporary.push(format!("{}-{:016x}", std::process::id(), random()));
    let temporary = dir.join(temporary);
    let placed =
        build(path, &temporary, timeout, initialize).and_then(|()| place(&temporary, path));
    // Gone once placed by a rename; a second name of the store after a link; this maker's
    // own leftover when it failed.
    let _ = std::fs::remove_file(&temporary);
    if placed? {
        reached(CreationStep::Placed);
        crate::storage::journal::sync_dir(&dir)?;
        reached(CreationStep::DirSynced);
    }
    Ok(())
}

/// Builds the whole store at `temporary`, its journal beside `path`, durable.
fn build(
    path: &Path,
    temporary: &Path,
    timeout: Duration,
    initialize: Initialize<'_>,
) -> Result<()> {
    let redb = RedbBackend::create(temporary)?;
    reached(CreationStep::TablesMade);
    let mut w = redb.write_txn(timeout)?;
    let id = initialize(&mut w)?;
    // Beside the store's name, not the temporary one: a directory needs no second move, and
    // one without a frame beside no store is made again by the next maker (`Journal::create`).
    JournaledRedb::create_journal(path, &id, 0)?;
    reached(CreationStep::JournalMade);
    Box::new(w).commit()?;
    reached(CreationStep::MetaCommitted);
    // Closed before the move: the storage engine writes its allocator state as it closes.
    drop(redb);
    File::open(temporary)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(temporary, e))?;
    reached(CreationStep::Synced);
    Ok(())
}

/// Gives `temporary` the name `path` unless something has that name: `false` then.
fn place(temporary: &Path, path: &Path) -> Result<bool> {
    match rename_no_replace(temporary, path) {
        Ok(()) => return Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        // A kernel or file system without it: a hard link, which replaces nothing either.
        Err(e)
            if e.kind() == std::io::ErrorKind::Unsupported
                || e.raw_os_error() == Some(libc::EINVAL) => {}
        Err(e) => return Err(Error::io(path, e)),
    }
    match std::fs::hard_link(temporary, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// `renameat2` with `RENAME_NOREPLACE`: the rename fails if `to` exists, in one step.
#[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the path holds a NUL byte",
            )
        })
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both are NUL-terminated strings that outlive the call, which keeps no pointer.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    match r {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Elsewhere the hard link does it.
#[cfg(not(all(target_os = "linux", any(target_env = "gnu", target_env = "musl"))))]
fn rename_no_replace(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// The directory `dir` held exclusively (the store at `path` is made there), waiting up to
/// `timeout` for another maker.
fn hold(dir: &Path, path: &Path, timeout: Duration) -> Result<File> {
    let file = File::open(dir).map_err(|e| Error::io(dir, e))?;
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_micros(200);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {
                if Instant::now() >= deadline {
                    return Err(Error::StoreLocked {
                        path: path.to_path_buf(),
                        reason: LockReason::Busy { waited: timeout },
                    });
                }
                std::thread::sleep(pause);
                // A maker holds it for a few fsyncs.
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(dir, e)),
        }
    }
}

/// Whether anything has the name `path` (a dangling link too: it is not replaced).
fn there(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// How the temporary files of the store named `name` begin: hidden, and naming the store.
fn temporary_prefix(name: &OsStr) -> OsString {
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".creating-");
    prefix
}

/// Removes the temporary files that makers of this store left when they died: no other maker
/// runs while the directory is held. Tidying only: every maker's file has a name of its own,
/// so one that cannot be removed is in no one's way.
fn remove_leftovers(dir: &Path, prefix: &OsStr) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().as_bytes().starts_with(prefix.as_bytes()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A random number for a temporary file's name: the standard library's random hash keys.
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish()
}

/// Where this process stops while it makes a store file, and for how long (`None`: for good).
#[cfg(feature = "testing")]
static STOP: std::sync::Mutex<Option<(CreationStep, Option<Duration>)>> =
    std::sync::Mutex::new(None);

/// Makes this process stop at `step` of making a store file, once: for `pause`, or for good
/// (SIGKILL) without one (`faults`).
#[cfg(feature = "testing")]
pub(crate) fn stop_at(step: CreationStep, pause: Option<Duration>) {
    *STOP.lock().unwrap_or_else(|e| e.into_inner()) = Some((step, pause));
}

/// Stops this process at `step` if a test asked for it there (the `testing` feature).
fn reached(step: CreationStep) {
    #[cfg(feature = "testing")]
    {
        let stop = {
            let mut armed = STOP.lock().unwrap_or_else(|e| e.into_inner());
            match *armed {
                Some((at, pause)) if at == step => armed.take().map(|_| pause),
                _ => None,
            }
        };
        match stop {
            Some(Some(pause)) => std::thread::sleep(pause),
            Some(None) => {
                // SAFETY: kill reads no memory of ours.
                unsafe {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
                // A signal a process sends itself arrives before kill returns.
                std::process::abort();
            }
            None => {}
        }
    }
    #[cfg(not(feature = "testing"))]
    let _ = step;
}
