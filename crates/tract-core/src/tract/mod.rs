//! [`Tract`]: the handle every surface (Rust, CLI, Python) works through. It owns a store with
//! its view cache, the hooks registered on it, its default summarizer and its progress
//! callback, and hands each call to the module that carries it out; it holds no logic of its
//! own beyond a few lines (the retention policy read or replaced as a setting, `scan_text`).

mod branches;
mod compress;
mod history;
mod replay;
mod secrets;
mod tools;
mod transcripts;
pub use replay::{DivergenceHook, ReplayOptions};
mod view;
mod write;

use crate::error::{Error, Result};
use crate::refs::Head;
use crate::repo::{Bind, Repo};
use crate::storage::store::{DEFAULT_DIR, DEFAULT_FILE, OpenMode, Store, StoreOptions};
use crate::summarize::Summarizer;
use crate::tools::hooks::{HookRegistry, Recorder};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Where a handle is and what its view holds.
#[derive(Debug, Clone)]
pub struct Status {
    /// The handle's position.
    pub head: Head,
    /// Messages in view.
    pub messages: usize,
    /// Tokens compile would send.
    pub token_count: u64,
    /// Tool calls in view without a result.
    pub unanswered_calls: u64,
    /// Tool calls in view whose id an earlier call in view used: compile sends them under
    /// new ids ([`crate::ReusedCallId`]).
    pub reused_call_ids: u64,
    /// Where the store is: its file, or its URL without the password; `None` in memory.
    pub store: Option<String>,
}

/// How to open a tract.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// Whether the file must exist already.
    pub mode: OpenMode,
    /// The lock wait and the clock.
    pub store: StoreOptions,
    /// What the handle is bound to.
    pub bind: Bind,
}

/// A tract: a store, the position this handle works at (its own branch, see [`Bind`]), the
/// cached view there, hooks and a default summarizer.
pub struct Tract {
    repo: Repo,
    /// Handlers registered on this handle (not stored: a handler is code).
    hooks: RwLock<HookRegistry>,
    /// The summarizer used when a call names none (`None`: the extractive one).
    summarizer: RwLock<Option<Arc<dyn Summarizer>>>,
    /// Where long operations report how far they got.
    progress: RwLock<Option<ProgressFn>>,
}

/// How far a long operation of a handle got (see [`Tract::set_progress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress {
    /// A search is bringing the search index up to the store first (the first search of a
    /// store, or one past many new commits): the commits indexed so far.
    Indexing {
        /// Commits added to the index so far.
        commits: u64,
    },
}

/// What a handle tells how far its long operations got.
pub type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

impl std::fmt::Debug for Tract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tract")
            .field("store", &self.repo.store)
            .finish()
    }
}

impl Tract {
    /// Opens the store file at `path`, creating it if it does not exist (its directory must),
    /// bound to the branch `HEAD` names now.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, &OpenOptions::default())
    }

    /// Opens an existing store file, bound to the branch `HEAD` names now.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Self> {
        let options = OpenOptions {
            mode: OpenMode::Existing,
            ..OpenOptions::default()
        };
        Self::open_with(path, &options)
    }

    /// Opens the store file at `path` with options: whether it must exist, the lock wait and
    /// clock, and what the handle is bound to.
    pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Self> {
        let store = Store::open_with(path, options.mode, options.store)?;
        Self::from_store(store, &options.bind)
    }

    /// A tract in memory.
    pub fn in_memory() -> Result<Self> {
        Self::in_memory_with(&OpenOptions::default())
    }

    /// A tract in memory, with options (the clock, the binding).
    pub fn in_memory_with(options: &OpenOptions) -> Result<Self> {
        Self::from_store(Store::in_memory_with(options.store)?, &options.bind)
    }

    /// Wraps an opened store, bound as `bind` says.
    pub fn from_store(store: Store, bind: &Bind) -> Result<Self> {
        Ok(Tract {
            repo: Repo::new(store, bind)?,
            hooks: RwLock::default(),
            summarizer: RwLock::new(None),
            progress: RwLock::new(None),
        })
    }

    /// Copies the store at `src` into a new store at `dest` (see [`crate::ops::sync::clone_store`])
    /// and opens a handle on the copy, bound to the branch its `HEAD` names.
    pub fn clone_store(
        src: impl AsRef<Path>,
        dest: impl AsRef<Path>,
        options: StoreOptions,
    ) -> Result<(Self, crate::ops::sync::SyncReport)> {
        let (store, report) = crate::ops::sync::clone_store(src, dest, options)?;
        Ok((Self::from_store(store, &Bind::HeadAtOpen)?, report))
    }

    /// Creates `dir/.tract/store.redb`; returns the tract (bound to `HEAD`'s branch) and
    /// whether it was new.
    pub fn init(dir: impl AsRef<Path>) -> Result<(Self, bool)> {
        let path = Self::init_dir(dir)?;
        let existed = path.exists();
        Ok((Self::open(&path)?, !existed))
    }

    /// Creates the directory `dir/.tract` if needed and returns where its store file goes.
    pub fn init_dir(dir: impl AsRef<Path>) -> Result<PathBuf> {
        let dir = dir.as_ref().join(DEFAULT_DIR);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(Error::io(dir, source)),
        }
        Ok(dir.join(DEFAULT_FILE))
    }

    /// The store file in `start` or the nearest ancestor that has `.tract/store.redb`.
    pub fn discover(start: impl AsRef<Path>) -> Option<PathBuf> {
        start.as_ref().ancestors().find_map(|d| {
            let p = d.join(DEFAULT_DIR).join(DEFAULT_FILE);
            p.is_file().then_some(p)
        })
    }

    /// The underlying store: what store-wide operations take ([`crate::ops::fsck::fsck`],
    /// [`crate::ops::gc::gc`], [`crate::ops::sync::push`] and [`crate::ops::sync::pull`]).
    pub fn store(&self) -> &Store {
        &self.repo.store
    }

    /// Closes this handle (its view cache goes with it) and returns its store, for example to
    /// compact the file ([`Store::compact`]) after `gc` or a redaction.
    pub fn into_store(self) -> Store {
        let Tract { repo, .. } = self;
        repo.into_store()
    }

    /// Sets the summarizer that compressions and hook summaries use when a call names none
    /// (`None`: the built-in extractive one). Surfaces set the one the environment names
    /// ([`crate::Environment::summarizer`]).
    pub fn set_summarizer(&self, summarizer: Option<Arc<dyn Summarizer>>) {
        *self.summarizer.write().unwrap_or_else(|e| e.into_inner()) = summarizer;
    }

    /// Sets what this handle tells how far its long operations got (`None`: nothing). The
    /// library never prints: a surface draws it (the CLI, a progress bar on a terminal).
    pub fn set_progress(&self, progress: Option<ProgressFn>) {
        *self.progress.write().unwrap_or_else(|e| e.into_inner()) = progress;
    }

    /// What [`Tract::set_progress`] set.
    pub fn progress(&self) -> Option<ProgressFn> {
        self.progress
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The summarizer set with [`Tract::set_summarizer`].
    pub fn summarizer(&self) -> Option<Arc<dyn Summarizer>> {
        self.summarizer
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn recorder<'a>(&'a self, summarizer: Option<&'a dyn Summarizer>) -> Recorder<'a> {
        Recorder {
            repo: &self.repo,
            handler: self
                .hooks
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .tool_result
                .clone(),
            summarizer,
            default_summarizer: self.summarizer(),
        }
    }

    fn hooks_mut(&self) -> std::sync::RwLockWriteGuard<'_, HookRegistry> {
        self.hooks.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The estimated bytes of the view this handle keeps cached (0 when it has none: never
    /// read yet, or dropped to keep the process within its budget, see
    /// [`crate::set_view_cache_budget`]).
    pub fn cached_view_bytes(&self) -> usize {
        self.repo.views.bytes()
    }
}
