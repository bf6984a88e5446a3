//! [`Tract`]: the operations every surface (Rust, CLI, Python) offers, over one store.

use crate::compile::Compiled;
use crate::error::{Error, Result};
use crate::hooks::Hooks;
use crate::id::ObjectId;
use crate::info::CommitInfo;
use crate::object::{Commit, Content, Message, Op, Role, ToolCall};
use crate::store::{
    DEFAULT_DIR, DEFAULT_FILE, Head, HeadRef, Objects, OpenMode, ReflogEntry, Snapshot, Store,
    StoreOptions, Writer,
};
use crate::summarize::Summarizer;
use crate::tokens;
use crate::view::View;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Options for one append.
#[derive(Debug, Clone, Default)]
pub struct AppendOptions {
    /// Compare-and-swap: fail with [`Error::HeadMoved`] unless `HEAD` is at this commit
    /// (`Some(None)`: unless the branch has no commits yet).
    pub expected_head: Option<Option<ObjectId>>,
    /// A note stored on the commit.
    pub note: Option<String>,
}

/// A branch and whether `HEAD` is on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchInfo {
    /// Its name.
    pub name: String,
    /// Its tip.
    pub head: ObjectId,
    /// Whether `HEAD` names it.
    pub current: bool,
}

/// Where `HEAD` is and what its view holds.
#[derive(Debug, Clone)]
pub struct Status {
    /// `HEAD`.
    pub head: Head,
    /// Messages in view.
    pub messages: usize,
    /// Tokens compile would send.
    pub token_count: u64,
    /// Tool calls in view without a result.
    pub unanswered_calls: u64,
    /// The store file (`None` in memory).
    pub path: Option<PathBuf>,
}

/// A tract: a store plus the cached view of its `HEAD`.
pub struct Tract {
    store: Store,
    cache: Mutex<Option<View>>,
    /// Handlers registered on this handle (not stored: a handler is code).
    hooks: RwLock<Hooks>,
    /// The summarizer used when a call names none (`None`: the extractive one).
    summarizer: RwLock<Option<Arc<dyn Summarizer>>>,
}

impl std::fmt::Debug for Tract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tract").field("store", &self.store).finish()
    }
}

impl Tract {
    /// Opens the store file at `path`, creating it if it does not exist (its directory must).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self::from_store(Store::open(
            path,
            OpenMode::CreateIfMissing,
        )?))
    }

    /// Opens an existing store file.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self::from_store(Store::open(path, OpenMode::Existing)?))
    }

    /// Opens the store file at `path` in `mode`, with options (lock wait, clock).
    pub fn open_with(
        path: impl AsRef<Path>,
        mode: OpenMode,
        options: StoreOptions,
    ) -> Result<Self> {
        Ok(Self::from_store(Store::open_with(path, mode, options)?))
    }

    /// A tract in memory.
    pub fn in_memory() -> Result<Self> {
        Ok(Self::from_store(Store::in_memory()?))
    }

    /// A tract in memory, with options (the clock).
    pub fn in_memory_with(options: StoreOptions) -> Result<Self> {
        Ok(Self::from_store(Store::in_memory_with(options)?))
    }

    /// Wraps an opened store.
    pub fn from_store(store: Store) -> Self {
        Tract {
            store,
            cache: Mutex::new(None),
            hooks: RwLock::default(),
            summarizer: RwLock::new(None),
        }
    }

    /// Creates `dir/.tract/store.redb`; returns the tract and whether it was new.
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
            Err(source) => return Err(Error::Io { path: dir, source }),
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

    /// The underlying store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Sets the summarizer that compressions and hook summaries use when a call names none
    /// (`None`: the built-in extractive one). Surfaces set the one the environment names
    /// ([`crate::Environment::summarizer`]).
    pub fn set_summarizer(&self, summarizer: Option<Arc<dyn Summarizer>>) {
        *self.summarizer.write().unwrap_or_else(|e| e.into_inner()) = summarizer;
    }

    /// The summarizer set with [`Tract::set_summarizer`].
    pub fn summarizer(&self) -> Option<Arc<dyn Summarizer>> {
        self.summarizer
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn hooks(&self) -> RwLockReadGuard<'_, Hooks> {
        self.hooks.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn hooks_mut(&self) -> RwLockWriteGuard<'_, Hooks> {
        self.hooks.write().unwrap_or_else(|e| e.into_inner())
    }

    fn cache(&self) -> MutexGuard<'_, Option<View>> {
        // A panic while holding the lock leaves at worst a stale view, which is rebuilt.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ----- writing -----

    /// Appends a message at `HEAD`; durable when this returns.
    pub fn append(&self, message: Message) -> Result<CommitInfo> {
        self.append_with(message, &AppendOptions::default())
    }

    /// Appends with options (compare-and-swap, note).
    pub fn append_with(&self, message: Message, opts: &AppendOptions) -> Result<CommitInfo> {
        let prepared = Prepared::new(message)?;
        self.write_steps(opts, vec![(Step::Op(Op::Append), prepared)])?
            .pop()
            .ok_or_else(|| Error::invalid_op("the append produced no commit"))
    }

    /// Appends several messages in one transaction: all of them, or none if any is invalid.
    pub fn append_batch(&self, messages: Vec<Message>) -> Result<Vec<CommitInfo>> {
        self.append_batch_with(messages, &AppendOptions::default())
    }

    /// Appends several messages in one transaction with options: compare-and-swap on the
    /// head before the first, and a note on each commit.
    pub fn append_batch_with(
        &self,
        messages: Vec<Message>,
        opts: &AppendOptions,
    ) -> Result<Vec<CommitInfo>> {
        let ops = messages.into_iter().map(|m| (Op::Append, m)).collect();
        self.write_ops(opts, ops)
    }

    /// Commits operations that carry messages (appends, compressions) in one transaction.
    pub(crate) fn write_ops(
        &self,
        opts: &AppendOptions,
        ops: Vec<(Op, Message)>,
    ) -> Result<Vec<CommitInfo>> {
        let steps = prepare_all(ops.into_iter().map(|(op, m)| (Step::Op(op), m)).collect())?;
        self.write_steps(opts, steps)
    }

    /// Writes prepared steps in one transaction, after the optional compare-and-swap check.
    pub(crate) fn write_steps(
        &self,
        opts: &AppendOptions,
        steps: Vec<(Step, Prepared)>,
    ) -> Result<Vec<CommitInfo>> {
        let w = self.store.write()?;
        let start = w.head()?;
        if let Some(expected) = opts.expected_head {
            check_expected(&start, expected)?;
        }
        self.write_chain(w, &start, steps, opts.note.clone())
    }

    /// Writes `steps` as a chain on top of `start`, moves the branch once, commits
    /// (durably) and extends the cached view. `note` goes on every commit that has none.
    fn write_chain(
        &self,
        mut w: Writer,
        start: &Head,
        steps: Vec<(Step, Prepared)>,
        note: Option<String>,
    ) -> Result<Vec<CommitInfo>> {
        let mut chain = Chain::new(start, &w)?;
        let mut infos: Vec<CommitInfo> = Vec::with_capacity(steps.len());
        {
            let mut objects = w.objects()?;
            for (step, mut p) in steps {
                let op = match step {
                    Step::Op(op) => op,
                    Step::EditOf(k) => Op::Edit {
                        target: infos
                            .get(k)
                            .map(|i| i.id)
                            .ok_or_else(|| Error::invalid_op("an edit of a later commit"))?,
                    },
                };
                let note = p.note.take().or_else(|| note.clone());
                infos.push(chain.put(&mut objects, op, p, note)?);
            }
        }
        chain.finish(&mut w)?;
        w.commit()?;
        self.extend_cache(start.commit, &infos);
        Ok(infos)
    }

    /// Appends a system message.
    pub fn system(&self, text: impl Into<String>) -> Result<CommitInfo> {
        self.append(Message::text(Role::System, text))
    }

    /// Appends a user message.
    pub fn user(&self, text: impl Into<String>) -> Result<CommitInfo> {
        self.append(Message::text(Role::User, text))
    }

    /// Appends an assistant message, with tool calls if any.
    pub fn assistant(
        &self,
        text: impl Into<String>,
        tool_calls: Vec<ToolCall>,
    ) -> Result<CommitInfo> {
        let mut m = Message::text(Role::Assistant, text);
        m.tool_calls = tool_calls;
        self.append(m)
    }

    /// Replaces the content of a message in the current view. Role, name, tool calls and
    /// `tool_call_id` are kept; the original stays in history.
    pub fn edit(&self, target: &str, content: Content) -> Result<CommitInfo> {
        self.edit_checked(target, content, |_| Ok(()))
    }

    /// An edit that `check` may refuse after seeing the message in view, inside the same write
    /// transaction (so nothing can change between the check and the commit).
    pub(crate) fn edit_checked(
        &self,
        target: &str,
        content: Content,
        check: impl FnOnce(&Message) -> Result<()>,
    ) -> Result<CommitInfo> {
        let target = self.resolve(target)?;
        let infos = self.commit_edits(|v| {
            let Some(entry) = v.entry_of(&target) else {
                return Err(Error::invalid_op(format!(
                    "commit {} is not a message in the current view",
                    target.short()
                )));
            };
            check(&entry.message)?;
            let mut message = (*entry.message).clone();
            message.content = content;
            Ok(vec![(target, message)])
        })?;
        infos
            .into_iter()
            .next()
            .ok_or_else(|| Error::invalid_op("the edit produced no commit"))
    }

    /// Edits planned from the view at `HEAD` and committed in one transaction: `plan` sees the
    /// view under the write lock (nothing can change between planning and committing) and
    /// returns each target with its new message.
    pub(crate) fn commit_edits(
        &self,
        plan: impl FnOnce(&View) -> Result<Vec<(ObjectId, Message)>>,
    ) -> Result<Vec<CommitInfo>> {
        let w = self.store.write()?;
        let start = w.head()?;
        // Read after taking the write lock: this snapshot sees exactly what the writer sees.
        let snap = self.store.read()?;
        let edits = self.with_view(&snap, start.commit, plan)??;
        if edits.is_empty() {
            return Ok(Vec::new()); // dropping the writer commits nothing
        }
        let ops = edits
            .into_iter()
            .map(|(target, message)| (Step::Op(Op::Edit { target }), message))
            .collect();
        self.write_chain(w, &start, prepare_all(ops)?, None)
    }

    /// Applies freshly committed commits to the cached view when it is at their parent.
    fn extend_cache(&self, parent: Option<ObjectId>, infos: &[CommitInfo]) {
        let mut guard = self.cache();
        let Some(view) = guard.as_mut() else { return };
        if view.head() != parent {
            // The cache is of some other head: rebuilt on the next read.
            *guard = None;
            return;
        }
        for info in infos {
            let content = match (&info.commit.blob, &info.message) {
                (Some(b), Some(m)) => {
                    let payload = payload_of(info);
                    Some((*b, ((**m).clone(), payload)))
                }
                _ => None,
            };
            if view.apply(info.id, info.commit.clone(), content).is_err() {
                *guard = None;
                return;
            }
        }
        view.flush();
    }

    // ----- refs -----

    /// `HEAD` now.
    pub fn head(&self) -> Result<Head> {
        self.store.read()?.head()
    }

    /// Every branch, by name.
    pub fn branches(&self) -> Result<Vec<BranchInfo>> {
        let snap = self.store.read()?;
        let head = snap.head()?;
        Ok(snap
            .branches()?
            .into_iter()
            .map(|(name, id)| BranchInfo {
                current: head.branch() == Some(name.as_str()),
                name,
                head: id,
            })
            .collect())
    }

    /// Creates a branch at `at` (default `HEAD`): a fork at any commit.
    pub fn create_branch(&self, name: &str, at: Option<&str>) -> Result<ObjectId> {
        validate_branch_name(name)?;
        let target = self.resolve(at.unwrap_or("HEAD"))?;
        let mut w = self.store.write()?;
        if w.branch(name)?.is_some() {
            return Err(Error::invalid_op(format!("branch '{name}' already exists")));
        }
        w.set_branch(
            name,
            Some(target),
            &format!("branch: created at {}", target.short()),
        )?;
        w.commit()?;
        Ok(target)
    }

    /// Points `HEAD` at branch `name`.
    pub fn switch(&self, name: &str) -> Result<Head> {
        let mut w = self.store.write()?;
        let snap = self.store.read()?;
        let exists = w.branch(name)?.is_some();
        let unborn_current = snap.head()?.branch() == Some(name);
        if !exists && !unborn_current {
            return Err(Error::not_found(format!("branch '{name}'")));
        }
        w.set_head(
            &HeadRef::Branch(name.to_string()),
            &format!("switch: to {name}"),
        )?;
        let head = w.head()?;
        w.commit()?;
        Ok(head)
    }

    /// Checks out `rev`: a branch name switches to it, anything else detaches `HEAD` there
    /// (time travel: appends then grow from that commit without moving any branch).
    pub fn checkout(&self, rev: &str) -> Result<Head> {
        let snap = self.store.read()?;
        if snap.branch(rev)?.is_some() {
            return self.switch(rev);
        }
        let id = resolve_in(&snap, rev)?;
        let mut w = self.store.write()?;
        w.set_head(
            &HeadRef::Detached(id),
            &format!("checkout: detached at {}", id.short()),
        )?;
        let head = w.head()?;
        w.commit()?;
        Ok(head)
    }

    /// Moves the current branch (or detached `HEAD`) to `rev`. Nothing is lost: the old head
    /// stays in the reflog.
    pub fn reset(&self, rev: &str) -> Result<Head> {
        let target = self.resolve(rev)?;
        let mut w = self.store.write()?;
        let head = w.head()?;
        w.advance_head(
            &head,
            target,
            &format!("reset: moving to {}", target.short()),
        )?;
        let new = w.head()?;
        w.commit()?;
        Ok(new)
    }

    /// The moves of a branch or `HEAD`, newest first.
    pub fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<ReflogEntry>> {
        self.store.read()?.reflog(name, limit)
    }

    // ----- reading -----

    /// Resolves `HEAD`, a branch name or an id prefix, each optionally followed by `~N`
    /// (N first parents back).
    pub fn resolve(&self, rev: &str) -> Result<ObjectId> {
        resolve_in(&self.store.read()?, rev)
    }

    /// One commit with its message.
    pub fn get_commit(&self, rev: &str) -> Result<CommitInfo> {
        let snap = self.store.read()?;
        let id = resolve_in(&snap, rev)?;
        info_of(&snap, id)
    }

    /// Commits from `start` (default `HEAD`) back along first parents, newest first.
    pub fn log(&self, start: Option<&str>, limit: Option<usize>) -> Result<Vec<CommitInfo>> {
        self.log_where(start, limit, |_| true)
    }

    /// Like [`Tract::log`], keeping only the commits `keep` accepts (`limit` counts those).
    pub fn log_where(
        &self,
        start: Option<&str>,
        limit: Option<usize>,
        keep: impl Fn(&CommitInfo) -> bool,
    ) -> Result<Vec<CommitInfo>> {
        let snap = self.store.read()?;
        let mut cursor = match start {
            Some(rev) => Some(resolve_in(&snap, rev)?),
            None => snap.head()?.commit,
        };
        let mut out = Vec::new();
        while let Some(id) = cursor {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            let info = info_of(&snap, id)?;
            cursor = info.commit.parent();
            if keep(&info) {
                out.push(info);
            }
        }
        Ok(out)
    }

    /// Compiles the view at `HEAD`.
    pub fn compile(&self) -> Result<Compiled> {
        self.at_head(|_, v| Compiled::new(v))
    }

    /// Runs `f` on a fresh snapshot and the view at its `HEAD`.
    pub(crate) fn at_head<R>(&self, f: impl FnOnce(&Snapshot, &View) -> R) -> Result<R> {
        let snap = self.store.read()?;
        let head = snap.head()?.commit;
        self.with_view(&snap, head, |v| f(&snap, v))
    }

    /// Compiles the view at any commit.
    pub fn compile_at(&self, rev: &str) -> Result<Compiled> {
        let snap = self.store.read()?;
        let id = resolve_in(&snap, rev)?;
        if snap.head()?.commit == Some(id) {
            return self.with_view(&snap, Some(id), Compiled::new);
        }
        Ok(Compiled::new(&View::build(&snap, Some(id), None)?))
    }

    /// Where `HEAD` is and what its view holds.
    pub fn status(&self) -> Result<Status> {
        let snap = self.store.read()?;
        let head = snap.head()?;
        let (messages, token_count, unanswered_calls) =
            self.with_view(&snap, head.commit, |v| {
                (v.len(), v.token_count(), v.unanswered_calls())
            })?;
        Ok(Status {
            head,
            messages,
            token_count,
            unanswered_calls,
            path: self.store.path().map(Path::to_path_buf),
        })
    }

    /// Runs `f` on the view at `head`, from the cache, extending or rebuilding it as needed.
    pub(crate) fn with_view<R>(
        &self,
        snap: &Snapshot,
        head: Option<ObjectId>,
        f: impl FnOnce(&View) -> R,
    ) -> Result<R> {
        let mut guard = self.cache();
        let view = match guard.take() {
            Some(v) if v.head() == head => v,
            base => View::build(snap, head, base)?,
        };
        let out = f(&view);
        *guard = Some(view);
        Ok(out)
    }
}

/// What one commit of a chain does: an operation, or an edit of the commit written `k`-th in
/// the same chain (its id is known only once it is written).
pub(crate) enum Step {
    Op(Op),
    EditOf(usize),
}

/// A message encoded and counted, ready to write: the slow work done before taking the lock.
pub(crate) struct Prepared {
    pub(crate) message: Message,
    bytes: Vec<u8>,
    /// Payload tokens (without framing).
    pub(crate) payload: u32,
    /// A note for this commit alone.
    pub(crate) note: Option<String>,
}

impl Prepared {
    pub(crate) fn new(message: Message) -> Result<Self> {
        message.validate()?;
        let bytes = message.encode()?;
        let payload = tokens::count_message(&message);
        Ok(Prepared {
            message,
            bytes,
            payload,
            note: None,
        })
    }
}

/// Commits written one after another on the branch in one transaction. The branch moves
/// once, at the end: one transaction is one ref move (one reflog entry), which also keeps bulk
/// writes (imports, compressions of many runs) from writing a ref and a reflog row per commit.
struct Chain {
    clock: crate::clock::Clock,
    start: Head,
    tip: Option<ObjectId>,
    last_timestamp: Option<u64>,
    reasons: Vec<&'static str>,
}

impl Chain {
    fn new(start: &Head, w: &Writer) -> Result<Self> {
        let last_timestamp = match start.commit {
            Some(parent) => Some(w.commit_object(&parent)?.timestamp_us),
            None => None,
        };
        Ok(Chain {
            clock: w.clock(),
            start: start.clone(),
            tip: start.commit,
            last_timestamp,
            reasons: Vec::new(),
        })
    }

    /// Writes one commit on top of the previous one.
    fn put(
        &mut self,
        w: &mut Objects<'_>,
        op: Op,
        p: Prepared,
        note: Option<String>,
    ) -> Result<CommitInfo> {
        let blob = w.put_blob(&p.bytes, p.payload)?;
        // Timestamps increase along a branch even if the clock steps back.
        let now = self.clock.now_us();
        let timestamp_us = self.last_timestamp.map_or(now, |t| now.max(t + 1));
        if !self.reasons.contains(&op.name()) {
            self.reasons.push(op.name());
        }
        let commit = Commit {
            parents: self.tip.into_iter().collect(),
            op,
            blob: Some(blob),
            timestamp_us,
            message: note,
        };
        let id = w.put_commit(&commit)?;
        self.tip = Some(id);
        self.last_timestamp = Some(timestamp_us);
        Ok(CommitInfo::new(id, commit, Some((p.message, p.payload))))
    }

    /// Moves the branch (or detached `HEAD`) to the last commit written.
    fn finish(self, w: &mut Writer) -> Result<()> {
        match self.tip {
            Some(tip) if Some(tip) != self.start.commit => {
                w.advance_head(&self.start, tip, &self.reasons.join("+"))
            }
            _ => Ok(()),
        }
    }
}

/// Payload tokens back from a framed count.
fn payload_of(info: &CommitInfo) -> u32 {
    let named = info
        .message
        .as_ref()
        .is_some_and(|m| m.name.is_some() && m.role != Role::Tool);
    info.token_count - tokens::framed(0, named)
}

/// Validates, encodes and tokenizes messages before the write lock is taken. An invalid
/// message is an error naming its place in the batch. (Tokenizing on several threads was
/// measured slower for imports of large outputs on 2 cores, so this stays sequential.)
pub(crate) fn prepare_all(ops: Vec<(Step, Message)>) -> Result<Vec<(Step, Prepared)>> {
    ops.into_iter()
        .enumerate()
        .map(|(i, (op, m))| {
            Prepared::new(m)
                .map(|p| (op, p))
                .map_err(|e| in_batch(i, e))
        })
        .collect()
}

/// An invalid message's error, naming its place (from 1) in a batch.
pub(crate) fn in_batch(i: usize, e: Error) -> Error {
    match e {
        Error::InvalidInput { message } => Error::InvalidInput {
            message: format!("message {}: {message}", i + 1),
        },
        other => other,
    }
}

fn check_expected(head: &Head, expected: Option<ObjectId>) -> Result<()> {
    if head.commit == expected {
        return Ok(());
    }
    let show = |c: Option<ObjectId>| c.map_or_else(|| "(none)".to_string(), |c| c.short());
    Err(Error::HeadMoved {
        branch: head.branch().unwrap_or("HEAD").to_string(),
        expected: show(expected),
        actual: show(head.commit),
    })
}

pub(crate) fn info_of(snap: &Snapshot, id: ObjectId) -> Result<CommitInfo> {
    let commit = snap.commit(&id)?;
    let content = match &commit.blob {
        Some(b) => Some(snap.blob(b)?),
        None => None,
    };
    Ok(CommitInfo::new(id, commit, content))
}

pub(crate) fn resolve_in(snap: &Snapshot, rev: &str) -> Result<ObjectId> {
    let rev = rev.trim();
    let (base, back) = match rev.rsplit_once('~') {
        Some((b, n)) => {
            let n = if n.is_empty() {
                1
            } else {
                n.parse::<usize>()
                    .map_err(|_| Error::invalid_input(format!("'{rev}': ~ takes a number")))?
            };
            (b, n)
        }
        None => (rev, 0),
    };
    let mut id = resolve_base(snap, base)?;
    for _ in 0..back {
        id = snap
            .commit(&id)?
            .parent()
            .ok_or_else(|| Error::not_found(format!("'{rev}' (history is shorter)")))?;
    }
    Ok(id)
}

fn resolve_base(snap: &Snapshot, rev: &str) -> Result<ObjectId> {
    if rev.is_empty() {
        return Err(Error::invalid_input("an empty commit reference"));
    }
    if rev == "HEAD" || rev == "@" {
        let head = snap.head()?;
        return head.commit.ok_or_else(|| {
            Error::not_found(format!(
                "a commit at HEAD (branch '{}' has no commits yet)",
                head.branch().unwrap_or("HEAD")
            ))
        });
    }
    if let Some(id) = snap.branch(rev)? {
        return Ok(id);
    }
    if !rev.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(Error::not_found(format!("commit or branch '{rev}'")));
    }
    let found = snap.commits_with_prefix(rev, 6)?;
    match found.as_slice() {
        [] => Err(Error::not_found(format!("commit or branch '{rev}'"))),
        [one] => Ok(*one),
        many => Err(Error::AmbiguousPrefix {
            prefix: rev.to_string(),
            candidates: many.iter().map(ObjectId::short).collect(),
        }),
    }
}

fn validate_branch_name(name: &str) -> Result<()> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if name.is_empty()
        || name.len() > 200
        || !ok_chars
        || name == "HEAD"
        || name.starts_with(['-', '.', '/'])
        || name.ends_with(['/', '.'])
        || name.contains("..")
        || name.contains("//")
    {
        return Err(Error::invalid_input(format!(
            "'{name}' is not a valid branch name (letters, digits, - _ . /)"
        )));
    }
    Ok(())
}
