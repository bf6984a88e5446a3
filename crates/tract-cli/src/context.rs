//! [`Context`]: what every command needs besides its arguments: where the store is, and how
//! to open it with what the environment sets.

use crate::error::CommandError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tract_core::{Bind, BranchName, Environment, OpenMode, OpenOptions, Summarizer, Tract};

/// The global options and the process environment, read once.
pub struct Context {
    store: Option<PathBuf>,
    branch: Option<String>,
    /// Whether the branch was named on the command line (not by `TRACT_BRANCH`).
    branch_named: bool,
    env: Environment,
}

impl Context {
    /// A context for `--store` and `--branch` (or `TRACT_STORE` and `TRACT_BRANCH`, as clap
    /// read them).
    pub fn new(store: Option<PathBuf>, branch: Option<String>) -> Self {
        Context {
            branch_named: branch.is_some(),
            store,
            branch,
            env: Environment::from_process(),
        }
    }

    /// The same context, saying whether the branch was named on the command line (`true`)
    /// or only by `TRACT_BRANCH`: a session's variable does not keep `tract search --all`
    /// from searching every branch, a `--branch` typed beside it does.
    pub fn branch_named(mut self, on_command_line: bool) -> Self {
        self.branch_named = on_command_line && self.branch.is_some();
        self
    }

    /// Whether `--branch` was given on the command line.
    pub fn branch_on_command_line(&self) -> bool {
        self.branch_named
    }

    /// The environment tract reads.
    pub fn env(&self) -> &Environment {
        &self.env
    }

    /// The store `--store` names, if it does.
    pub fn store_flag(&self) -> Option<&Path> {
        self.store.as_deref()
    }

    /// The store this command works on, by the one rule every command follows: `--store`
    /// (or `TRACT_STORE`), else `.tract/store.redb` here or in the nearest parent directory
    /// that has one, else the per-user store ([`user_store`]) when it exists.
    pub fn store_path(&self) -> Result<PathBuf, CommandError> {
        if let Some(p) = &self.store {
            return Ok(p.clone());
        }
        let cwd = std::env::current_dir().map_err(|e| tract_core::Error::io(".", e))?;
        let user = user_store();
        Tract::discover(&cwd)
            .or_else(|| user.clone().filter(|p| p.is_file()))
            .ok_or_else(|| CommandError::no_store(&cwd, user.as_deref()))
    }

    /// The existing store this command works on.
    pub fn open(&self) -> Result<Tract, CommandError> {
        self.open_at(&self.store_path()?, OpenMode::Existing)
    }

    /// The existing store, opened to read only (nothing of it changes, not a byte of its
    /// file), for a command that never writes.
    pub fn open_read_only(&self) -> Result<Tract, CommandError> {
        self.open_at(&self.store_path()?, OpenMode::ReadOnly)
    }

    /// The existing store opened to read only, bound to its `HEAD` whatever `--branch` says.
    pub fn open_head_read_only(&self) -> Result<Tract, CommandError> {
        self.open_bound(&self.store_path()?, OpenMode::ReadOnly, Bind::StoreHead)
    }

    /// The existing store opened to read only, for a command that reads the branch: one
    /// `--branch` names must exist (or be the current branch, before its first commit). Only
    /// a write creates a branch, so reading one that is not there is a mistyped name, not an
    /// empty session.
    pub fn open_to_read(&self) -> Result<Tract, CommandError> {
        self.require_branch(self.open_read_only()?)
    }

    /// The existing store opened as a write opens it (to read only where this process may not
    /// write it), for a command on the branch `--branch` names, which must exist: a read that
    /// keeps what it derives where it may (the search index's catch-up), or a command that
    /// writes only when asked (`secrets scan --redact`).
    pub fn open_existing_branch(&self) -> Result<Tract, CommandError> {
        self.require_branch(self.open()?)
    }

    fn require_branch(&self, t: Tract) -> Result<Tract, CommandError> {
        if let Some(name) = &self.branch {
            t.require_branch(&BranchName::new(name)?)?;
        }
        Ok(t)
    }

    /// The branch `--branch` names, if it does.
    pub fn branch_flag(&self) -> Option<&str> {
        self.branch.as_deref()
    }

    /// The existing store, bound to `branch` (created by its first message).
    pub fn open_on(&self, branch: &BranchName) -> Result<Tract, CommandError> {
        self.open_bound(
            &self.store_path()?,
            OpenMode::Existing,
            Bind::Branch(branch.clone()),
        )
    }

    /// The existing store, bound to its `HEAD` whatever `--branch` says: for the commands
    /// that move `HEAD` (`switch`, `checkout`).
    pub fn open_head(&self) -> Result<Tract, CommandError> {
        self.open_bound(&self.store_path()?, OpenMode::Existing, Bind::StoreHead)
    }

    /// Opens a store with what the environment sets (the lock wait, the clock and the
    /// summarizer for summaries nobody names, the policy's in `tract add`), at `--branch` if
    /// given, else at the store's `HEAD`, which the command then reads and moves.
    pub fn open_at(&self, path: &Path, mode: OpenMode) -> Result<Tract, CommandError> {
        let bind = match &self.branch {
            Some(name) => Bind::Branch(BranchName::new(name)?),
            None => Bind::StoreHead,
        };
        self.open_bound(path, mode, bind)
    }

    /// Opens the store at `path` with what the environment sets, bound as `bind` says.
    pub fn open_bound(
        &self,
        path: &Path,
        mode: OpenMode,
        bind: Bind,
    ) -> Result<Tract, CommandError> {
        let options = OpenOptions {
            mode,
            store: self.env.store_options()?,
            bind,
        };
        let t = Tract::open_with(path, &options)?;
        t.set_summarizer(
            self.env
                .summarizer()
                .map(|s| Arc::new(s) as Arc<dyn Summarizer>),
        );
        Ok(t)
    }
}

/// The per-user store: `$XDG_DATA_HOME/tract/store.redb`, else
/// `~/.local/share/tract/store.redb`; `None` when neither variable is set.
pub fn user_store() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local").join("share"))
        })?;
    Some(data.join("tract").join("store.redb"))
}
