//! [`Context`]: what every command needs besides its arguments: where the store is, and how
//! to open it with what the environment sets.

use crate::error::CommandError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tract_core::{Environment, Error, OpenMode, Summarizer, Tract};

/// The global options and the process environment, read once.
pub struct Context {
    store: Option<PathBuf>,
    env: Environment,
}

impl Context {
    /// A context for `--store` (or `TRACT_STORE`, as clap read it).
    pub fn new(store: Option<PathBuf>) -> Self {
        Context {
            store,
            env: Environment::from_process(),
        }
    }

    /// The environment tract reads.
    pub fn env(&self) -> &Environment {
        &self.env
    }

    /// The store `--store` names, if it does.
    pub fn store_flag(&self) -> Option<&Path> {
        self.store.as_deref()
    }

    /// The store named by --store / TRACT_STORE, or the one found upward from here.
    pub fn store_path(&self) -> Result<PathBuf, CommandError> {
        if let Some(p) = &self.store {
            return Ok(p.clone());
        }
        let cwd = std::env::current_dir().map_err(|source| Error::Io {
            path: ".".into(),
            source,
        })?;
        Tract::discover(&cwd).ok_or_else(|| CommandError::no_store(&cwd))
    }

    /// The existing store this command works on.
    pub fn open(&self) -> Result<Tract, CommandError> {
        Ok(self.open_at(&self.store_path()?, OpenMode::Existing)?)
    }

    /// Opens a store with what the environment sets: the lock wait, the clock and the
    /// summarizer for summaries nobody names (the policy's, in `tract add`).
    pub fn open_at(&self, path: &Path, mode: OpenMode) -> Result<Tract, Error> {
        let t = Tract::open_with(path, mode, self.env.store_options()?)?;
        t.set_summarizer(
            self.env
                .summarizer()
                .map(|s| Arc::new(s) as Arc<dyn Summarizer>),
        );
        Ok(t)
    }
}
