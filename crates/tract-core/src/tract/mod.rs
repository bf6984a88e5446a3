//! [`Tract`]: the handle every surface (Rust, CLI, Python) works through. It owns a store with
//! its view cache, the hooks registered on it and its default summarizer, and hands each call
//! to the operation module that carries it out; it holds no logic of its own.

use crate::error::{Error, Result};
use crate::formats::compile::Compiled;
use crate::formats::imports::ImportReport;
use crate::id::CommitId;
use crate::object::{Content, Message, Role, ToolCall};
use crate::ops::branch::{self, BranchInfo};
use crate::ops::fsck::{self, FsckReport};
use crate::ops::gc::{self, GcOutcome};
use crate::ops::merge::{self, MergeRequest};
use crate::ops::page::{self, ViewPage};
use crate::ops::redact::{self, Redaction};
use crate::ops::search::{self, SearchHit, SearchQuery};
use crate::ops::sync::{self, SyncOptions, SyncReport};
use crate::refs::{Head, ReflogEntry};
use crate::repo::{Bind, Repo};
use crate::storage::store::{DEFAULT_DIR, DEFAULT_FILE, OpenMode, Store, StoreOptions};
use crate::summarize::Summarizer;
use crate::summarize::compress::{self, CompressOutcome, CompressPlan, CompressRequest};
use crate::tools::clear::{self, ClearOptions, ClearOutcome, ClearPlan};
use crate::tools::decision::Decision;
use crate::tools::hooks::{HookRegistry, PendingToolResult, Recorder, ToolResultOutcome};
use crate::tools::policy::{self, ToolPolicy};
use crate::tools::{self, ToolCallInfo, ToolTurn};
use crate::view::info::CommitInfo;
use crate::view::revision::{BranchName, Rev};
use crate::write::txn::AppendOptions;
use crate::{ops::history, write::append, write::edit};
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
}

impl std::fmt::Debug for Tract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tract")
            .field("store", &self.repo.store)
            .finish()
    }
}

impl Tract {
    // ----- opening -----

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
        })
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

    /// The underlying store.
    pub fn store(&self) -> &Store {
        &self.repo.store
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

    // ----- writing -----

    /// Appends a message at `HEAD`; durable when this returns.
    pub fn append(&self, message: Message) -> Result<CommitInfo> {
        self.append_with(message, &AppendOptions::default())
    }

    /// Appends with options (compare-and-swap, note).
    pub fn append_with(&self, message: Message, opts: &AppendOptions) -> Result<CommitInfo> {
        append::append(&self.repo, message, opts)
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
        append::append_batch(&self.repo, messages, opts)
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
    pub fn edit(&self, target: impl Into<Rev>, content: Content) -> Result<CommitInfo> {
        edit::edit(&self.repo, &target.into(), content, |_| Ok(()))
    }

    // ----- tool results and hooks -----

    /// Registers the `tool_result` handler of this handle, replacing the default one (the
    /// store's policy) and any handler registered before.
    pub fn on_tool_result(
        &self,
        handler: impl Fn(&mut PendingToolResult) -> Result<()> + Send + Sync + 'static,
    ) {
        self.hooks_mut().tool_result = Some(Arc::new(handler));
    }

    /// Removes the `tool_result` handler: the store's policy applies again.
    pub fn off_tool_result(&self) {
        self.hooks_mut().tool_result = None;
    }

    /// Records the result of tool call `call_id` from tool `name`, through the `tool_result`
    /// handler (or the store's policy). Returns the recorded position (its original content);
    /// see [`Tract::record_tool_result`] for the summary and warnings.
    pub fn tool_result(
        &self,
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Result<CommitInfo> {
        let message = Message::tool_result(call_id, name, content, is_error);
        Ok(self.record_tool_result(message, None, None)?.original)
    }

    /// Records a tool result. `decision` given: it is applied as is; `None`: the registered
    /// handler decides, else the store's policy. A summary is made by `summarizer`, else the
    /// handle's, else the extractive one; if that fails, the original is recorded unchanged
    /// and the failure is in the warnings: a result is never lost because summarizing it
    /// failed. A rejection or a handler's error commits nothing.
    pub fn record_tool_result(
        &self,
        message: Message,
        decision: Option<Decision>,
        summarizer: Option<&dyn Summarizer>,
    ) -> Result<ToolResultOutcome> {
        self.recorder(summarizer).record(message, decision)
    }

    /// Appends messages in one transaction, each tool result through the `tool_result`
    /// handler or the store's policy as [`Tract::record_tool_result`] does. All or nothing:
    /// an invalid message, a rejection or a handler's error commits none of them. Returns one
    /// outcome per message, in order (other messages are simply approved).
    pub fn append_batch_with_policy(
        &self,
        messages: Vec<Message>,
        summarizer: Option<&dyn Summarizer>,
    ) -> Result<Vec<ToolResultOutcome>> {
        self.recorder(summarizer).record_batch(messages)
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

    /// The store's tool-summarization policy (empty when none was configured).
    pub fn tool_policy(&self) -> Result<ToolPolicy> {
        policy::load(&self.repo)
    }

    /// Replaces the store's tool-summarization policy (durably; every process sees it on its
    /// next tool result). An invalid policy is refused and the stored one kept.
    pub fn set_tool_policy(&self, policy: &ToolPolicy) -> Result<()> {
        policy::store(&self.repo, policy)
    }

    /// Edits a tool result: `target` must be a tool result in view answering `call_id` from
    /// tool `name`. The edit keeps role, `tool_call_id` and name; the original stays in history.
    pub fn edit_tool_result(
        &self,
        target: impl Into<Rev>,
        call_id: &str,
        name: &str,
        content: Content,
    ) -> Result<CommitInfo> {
        tools::edit_result(&self.repo, &target.into(), call_id, name, content)
    }

    /// Tool results in the current view, in view order, each position once: of tool `name`
    /// if given, strictly after `after` and before `before` (commits in view) if given.
    pub fn find_tool_results(
        &self,
        name: Option<&str>,
        after: Option<&Rev>,
        before: Option<&Rev>,
    ) -> Result<Vec<CommitInfo>> {
        tools::find_results(&self.repo, name, after, before)
    }

    /// Assistant commits in the current view that call tools (`name`: that tool), in view order.
    pub fn find_tool_calls(&self, name: Option<&str>) -> Result<Vec<CommitInfo>> {
        tools::find_calls(&self.repo, name)
    }

    /// Tool-call commits paired with their results (`name`: turns that call that tool).
    pub fn find_tool_turns(&self, name: Option<&str>) -> Result<Vec<ToolTurn>> {
        tools::find_turns(&self.repo, name)
    }

    /// Every tool call in view without a result, in view order.
    pub fn pending_tool_calls(&self) -> Result<Vec<ToolCallInfo>> {
        tools::pending_calls(&self.repo)
    }

    /// Commits a marked synthetic error result for every tool call in view that has none, in
    /// one transaction, so a session a crash left mid-tool resumes valid. Returns them.
    pub fn repair(&self) -> Result<Vec<CommitInfo>> {
        tools::repair(&self.repo)
    }

    // ----- clearing and compressing -----

    /// What [`Tract::clear_tool_results`] would clear and the tokens before and after,
    /// without committing anything.
    pub fn plan_clear_tool_results(&self, opts: &ClearOptions) -> Result<ClearPlan> {
        clear::plan_clear(&self.repo, opts)
    }

    /// Replaces the results of all but the last `keep` tool turns with a placeholder naming
    /// the original commit, as edits in one transaction. The originals stay in history.
    pub fn clear_tool_results(&self, opts: &ClearOptions) -> Result<ClearOutcome> {
        clear::clear(&self.repo, opts)
    }

    /// The runs [`Tract::compress`] would replace, without summarizing or committing.
    pub fn plan_compress(&self, req: &CompressRequest<'_>) -> Result<CompressPlan> {
        compress::plan_compress(&self.repo, req)
    }

    /// Replaces the selected positions with one summary per contiguous run (preserved
    /// positions split runs and stay). Everything outside the selection stays as it was; the
    /// sources stay in history, linked from each compress commit. All or nothing: a summarizer
    /// failure, or another writer changing a selected message meanwhile (an edit, a
    /// compression), commits nothing; messages appended meanwhile are kept after the summaries.
    pub fn compress(&self, req: &CompressRequest<'_>) -> Result<CompressOutcome> {
        compress::compress(&self.repo, req, self.summarizer())
    }

    /// Compresses whole tool turns with [`crate::TOOL_SUMMARIZE_SYSTEM`] by default. A
    /// selection that holds part of a turn takes the whole turn; with `commits` `None`, every
    /// turn (of tool `name` if given). With `preserve_answer`, the last assistant message
    /// without tool calls in the selection (the final answer) is kept.
    pub fn compress_tool_calls(
        &self,
        commits: Option<&[Rev]>,
        name: Option<&str>,
        preserve_answer: bool,
        req: CompressRequest<'_>,
    ) -> Result<CompressOutcome> {
        let req = self.tool_turn_request(commits, name, preserve_answer, req)?;
        self.compress(&req)
    }

    /// The request [`Tract::compress_tool_calls`] makes of [`Tract::compress`]: the selection
    /// widened to whole turns, the final answer preserved, the tool prompt by default. Feed it
    /// to [`Tract::plan_compress`] for a dry run.
    pub fn tool_turn_request<'a>(
        &self,
        commits: Option<&[Rev]>,
        name: Option<&str>,
        preserve_answer: bool,
        req: CompressRequest<'a>,
    ) -> Result<CompressRequest<'a>> {
        compress::tool_turn_request(&self.repo, commits, name, preserve_answer, req)
    }

    /// The view positions from `from` to `to`, both included, in view order.
    pub fn positions_between(&self, from: &Rev, to: &Rev) -> Result<Vec<CommitId>> {
        compress::positions_between(&self.repo, from, to)
    }

    // ----- refs -----

    /// The handle's position (its branch, or a commit when detached) and the commit there.
    pub fn head(&self) -> Result<Head> {
        self.repo.head(&self.repo.read()?)
    }

    /// The store's `HEAD`: the command line's current branch. A handle not opened with
    /// [`Bind::StoreHead`] neither follows nor moves it.
    pub fn store_head(&self) -> Result<Head> {
        self.repo.read()?.head()
    }

    /// Every branch, by name.
    pub fn branches(&self) -> Result<Vec<BranchInfo>> {
        branch::branches(&self.repo)
    }

    /// Checks that `name` is there to be read: a branch with commits, or the branch the
    /// store's `HEAD` is on (a new store's, before its first commit). Any other name is
    /// [`Error::UnknownBranch`] naming the existing branches closest to it. A handle bound to
    /// a branch with no commits reads it as empty (its first message creates it); a surface
    /// calls this before reading a branch a user named, so a mistyped name is an error rather
    /// than an empty answer.
    pub fn require_branch(&self, name: &BranchName) -> Result<()> {
        branch::require(&self.repo, name)
    }

    /// Creates a branch at `at` (default: this handle's position): a fork at any commit.
    pub fn create_branch(&self, name: &BranchName, at: Option<&Rev>) -> Result<CommitId> {
        branch::create(&self.repo, name, at.unwrap_or(&Rev::head()))
    }

    /// Forks: creates branch `name` at this handle's position (or at `at`) and returns a handle
    /// bound to it, on the same open store, with this handle's hooks and default summarizer.
    /// Nothing is copied: the new branch is one ref (O(1) at any history size).
    pub fn fork(&self, name: &BranchName, at: Option<&Rev>) -> Result<Tract> {
        self.create_branch(name, at)?;
        let fork = Tract::from_store(self.repo.store.clone(), &Bind::Branch(name.clone()))?;
        *fork.hooks_mut() = self.hooks.read().unwrap_or_else(|e| e.into_inner()).clone();
        fork.set_summarizer(self.summarizer());
        Ok(fork)
    }

    /// Merges branch `name` into this handle's position with a commit of two parents (this
    /// head, then the branch's tip), so the branch's whole history stays reachable. With
    /// [`crate::MergeStrategy::Append`] the view continues with the branch's messages since
    /// it forked; with [`crate::MergeStrategy::ToolResult`] the merge commit is the result of
    /// that pending call: the branch's final assistant answer, or a summary of its messages
    /// (`req.summarize`). A branch merged into itself, one sharing no history, one with nothing
    /// new, or a call that is not pending is an error, and nothing is committed.
    pub fn merge(&self, name: &BranchName, req: &MergeRequest<'_>) -> Result<CommitInfo> {
        merge::merge(&self.repo, name, req, self.summarizer())
    }

    /// Removes the content of the message `rev` names from the store for good: its blob's
    /// record (and the chunks no other blob shares) becomes a tombstone keeping when and
    /// `reason`. Every commit id stays valid; the view shows a placeholder with the message's
    /// role and call structure (requests stay valid); search finds nothing of it; `fsck`
    /// reports it as redacted. Every commit carrying the same content shows the placeholder.
    pub fn redact(&self, rev: impl Into<Rev>, reason: &str) -> Result<Redaction> {
        redact::redact(&self.repo, &rev.into(), reason)
    }

    /// Removes the objects nothing reaches: not a branch, not `HEAD`, not a reflog entry younger
    /// than `grace` (older entries are expired; [`crate::ops::gc::DEFAULT_GRACE`] is 14 days, zero
    /// prunes now). One write transaction: another process's writes wait, and nothing they
    /// add is removed. Refuses (changing nothing) when a commit it must read does not verify.
    pub fn gc(&self, grace: std::time::Duration) -> Result<GcOutcome> {
        gc::gc(&self.repo, grace)
    }

    /// Sends branches (every one, or `options.branches`) and the history they reach to the
    /// store at `dest` (a file or a URL; it must be a tract store): only the objects it lacks,
    /// each hashed again as it is stored; its branches move only by fast-forward
    /// ([`Error::Diverged`] otherwise, unless `options.force`).
    pub fn push(&self, dest: impl AsRef<Path>, options: &SyncOptions) -> Result<SyncReport> {
        let to = Store::open_with(dest, OpenMode::Existing, self.store().options())?;
        let reason = format!("push from {}", self.store().location().unwrap_or_default());
        sync::transfer(self.store(), &to, options, &reason)
    }

    /// Receives branches (every one, or `options.branches`) and their history from the store
    /// at `src` into this one, as [`Tract::push`] sends them.
    pub fn pull(&self, src: impl AsRef<Path>, options: &SyncOptions) -> Result<SyncReport> {
        let from = Store::open_with(src, OpenMode::Existing, self.store().options())?;
        let reason = format!("pull from {}", from.location().unwrap_or_default());
        sync::transfer(&from, self.store(), options, &reason)
    }

    /// Copies the store at `src` into a new store at `dest` (a file or a URL that holds no
    /// store yet): every branch with its history, the settings, and `HEAD`. Ids are identical.
    pub fn clone_store(
        src: impl AsRef<Path>,
        dest: impl AsRef<Path>,
        options: StoreOptions,
    ) -> Result<(Self, SyncReport)> {
        let from = Store::open_with(src, OpenMode::Existing, options)?;
        let to = Store::open_with(dest, OpenMode::CreateIfMissing, options)?;
        let reason = format!("clone from {}", from.location().unwrap_or_default());
        let report = sync::clone(&from, &to, &reason)?;
        Ok((Self::from_store(to, &Bind::HeadAtOpen)?, report))
    }

    /// The tombstone of a redacted message's blob (`None` when `rev`'s message is not redacted,
    /// or it has none): when and why it was redacted.
    pub fn tombstone(
        &self,
        rev: impl Into<Rev>,
    ) -> Result<Option<crate::storage::store::verify::Tombstone>> {
        let snap = self.repo.read()?;
        let id = self.repo.resolve(&snap, &rev.into())?;
        match snap.commit(&id)?.blob {
            Some(b) => snap.tombstone(&b),
            None => Ok(None),
        }
    }

    /// Closes this handle and compacts the store file (see [`Store::compact`]): after `gc` or a
    /// redaction, the file shrinks and no freed page keeps removed bytes.
    pub fn compact(self) -> Result<()> {
        let Tract { repo, .. } = self;
        repo.into_store().compact()
    }

    /// Checks the whole store (every branch, not only this handle's): re-hashes every object
    /// and chunk, checks every link, ref and reflog entry and the kept per-branch counts, and
    /// lists what nothing reaches. Reads only.
    pub fn fsck(&self) -> Result<FsckReport> {
        fsck::fsck(&self.repo)
    }

    /// Deletes branch `name` (not the one this handle or the store's `HEAD` is on); the
    /// reflog keeps its tip, which this returns. A handle elsewhere still bound to it fails
    /// with [`Error::BranchDeleted`] rather than start a new history there.
    pub fn delete_branch(&self, name: &BranchName) -> Result<CommitId> {
        branch::delete(&self.repo, name)
    }

    /// Empties this handle's branch (a session started over): the branch has no commits
    /// again, every handle on it sees it empty, and its old tip stays in the reflog (nothing is
    /// removed). Returns that tip, `None` when the branch was empty already.
    pub fn clear_branch(&self) -> Result<Option<CommitId>> {
        branch::clear(&self.repo)
    }

    /// Imports a transcript (see [`crate::formats::transcript::parse`]) onto this handle's branch, in
    /// one transaction: only what the branch does not hold yet (importing the same transcript
    /// twice adds nothing). Refused when the branch holds other messages at its place.
    pub fn import(
        &self,
        transcript: crate::formats::transcript::Transcript,
    ) -> Result<ImportReport> {
        crate::formats::imports::import(&self.repo, transcript)
    }

    /// Reads the transcript file at `path` (`format` `None`: detected; a Claude Code session
    /// with the sub-agent files beside it) and imports it; a bad line is
    /// [`Error::InvalidTranscript`] naming the file and line, and nothing is written.
    pub fn import_file(
        &self,
        path: impl AsRef<Path>,
        format: Option<crate::formats::transcript::Format>,
    ) -> Result<ImportReport> {
        let path = path.as_ref();
        let transcript = crate::formats::transcript::parse_file(path, format)?;
        self.import(transcript).map_err(|e| e.in_file(path))
    }

    /// This handle's branch written out: a provider request body of the view, tract's JSONL
    /// (the view's messages; with `history`, every commit, which [`Tract::import`] reads back
    /// to identical ids) or a Markdown transcript (the view; with `history`, every commit).
    pub fn export(
        &self,
        format: crate::formats::exports::ExportFormat,
        history: bool,
    ) -> Result<String> {
        crate::formats::exports::export(&self.repo, format, history)
    }

    /// Takes the last message off the view: moves the branch back to just before it was
    /// appended (the reflog keeps everything) and returns it as the view showed it, `None` for
    /// an empty branch. Refused when the last message is a summary or came from a merge.
    pub fn pop(&self) -> Result<Option<Arc<Message>>> {
        branch::pop(&self.repo)
    }

    /// Puts this handle on branch `name` (other handles, and the store's `HEAD`, stay where
    /// they are; a handle bound to [`Bind::StoreHead`] moves `HEAD`).
    pub fn switch(&self, name: &str) -> Result<Head> {
        branch::switch(&self.repo, name)
    }

    /// Checks out `rev`: a branch name switches this handle to it, anything else detaches the
    /// handle there (time travel: appends then grow from that commit without moving any
    /// branch).
    pub fn checkout(&self, rev: &Rev) -> Result<Head> {
        branch::checkout(&self.repo, rev)
    }

    /// Moves the handle's branch (or its detached position) to `rev`. Nothing is lost: the old
    /// head stays in the reflog.
    pub fn reset(&self, rev: &Rev) -> Result<Head> {
        branch::reset(&self.repo, rev)
    }

    /// Appends `messages`, then a record of `kind` holding `data` (see [`crate::write::record`]), in
    /// one transaction: durable together when this returns. Returns the record's info.
    pub fn record(
        &self,
        kind: &str,
        data: impl Into<String>,
        messages: Vec<Message>,
    ) -> Result<CommitInfo> {
        crate::write::record::write(
            &self.repo,
            kind,
            data.into(),
            messages,
            &AppendOptions::default(),
        )?
        .pop()
        .ok_or_else(|| Error::invalid_op("the record produced no commit"))
    }

    /// The records on the first-parent line from `HEAD` (or from just before `before`),
    /// newest first: of `kind` or a kind under it (`langgraph` takes `langgraph.checkpoint`),
    /// at most `limit`.
    pub fn records(
        &self,
        kind: Option<&str>,
        limit: Option<usize>,
        before: Option<&Rev>,
    ) -> Result<Vec<crate::write::record::Record>> {
        crate::write::record::list(&self.repo, kind, limit, before)
    }

    /// The record `rev` names (an error if it is another kind of commit).
    pub fn get_record(&self, rev: impl Into<Rev>) -> Result<crate::write::record::Record> {
        crate::write::record::get(&self.repo, &rev.into())
    }

    /// The moves of a branch or `HEAD`, newest first.
    pub fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<ReflogEntry>> {
        self.repo.read()?.reflog(name, limit)
    }

    // ----- reading -----

    /// The commit `rev` names (`HEAD` is this handle's position).
    pub fn resolve(&self, rev: &Rev) -> Result<CommitId> {
        self.repo.resolve(&self.repo.read()?, rev)
    }

    /// One commit with its message.
    pub fn get_commit(&self, rev: impl Into<Rev>) -> Result<CommitInfo> {
        history::get(&self.repo, &rev.into())
    }

    /// Commits from `start` (default `HEAD`) back along first parents, newest first.
    pub fn log(&self, start: Option<&Rev>, limit: Option<usize>) -> Result<Vec<CommitInfo>> {
        history::log(&self.repo, start, limit, |_| true)
    }

    /// Like [`Tract::log`], keeping only the commits `keep` accepts (`limit` counts those).
    pub fn log_where(
        &self,
        start: Option<&Rev>,
        limit: Option<usize>,
        keep: impl Fn(&CommitInfo) -> bool,
    ) -> Result<Vec<CommitInfo>> {
        history::log(&self.repo, start, limit, keep)
    }

    /// Commits reachable from `start` (default `HEAD`) through every parent (a merged branch's
    /// commits included), newest first: the history as a graph draws it.
    pub fn log_graph(&self, start: Option<&Rev>, limit: Option<usize>) -> Result<Vec<CommitInfo>> {
        history::graph(&self.repo, start, limit)
    }

    /// Every version of the view position `rev` belongs to, oldest first: the original
    /// message, then each edit on this branch.
    pub fn edit_history(&self, rev: impl Into<Rev>) -> Result<Vec<CommitInfo>> {
        history::edit_history(&self.repo, &rev.into())
    }

    /// The compress commit on this branch whose summary replaced `rev`, if any: the link from
    /// a source to its summary (the summary links back with [`CommitInfo::sources`]).
    pub fn compressed_into(&self, rev: impl Into<Rev>) -> Result<Option<CommitInfo>> {
        history::compressed_into(&self.repo, &rev.into())
    }

    /// Entries `offset..offset + limit` of the view at `HEAD` as a person reads them: each
    /// with its calls' states and results, its versions and marks (`offset` `None`: the last
    /// page).
    pub fn view_page(&self, offset: Option<usize>, limit: usize) -> Result<ViewPage> {
        page::view_page(&self.repo, offset, limit)
    }

    /// The positions the compression `rev` summarized, each with the content it had then
    /// (empty when `rev` is no compression).
    pub fn compressed_sources(&self, rev: impl Into<Rev>) -> Result<Vec<CommitInfo>> {
        page::compressed_sources(&self.repo, &rev.into())
    }

    /// The view index at `HEAD` of each commit whose content the view shows (a position never
    /// edited, or the newest edit of one); `None` for any other, an earlier version included.
    pub fn view_indexes(
        &self,
        ids: impl IntoIterator<Item = CommitId>,
    ) -> Result<Vec<Option<usize>>> {
        page::view_indexes(&self.repo, ids)
    }

    /// Where each other branch that shares history with this one forks from it (their merge
    /// base), by branch name, among the commits made at or after `since_us` (0: all): each
    /// branch costs its commits since then.
    pub fn fork_points(&self, since_us: u64) -> Result<Vec<(String, CommitId)>> {
        page::fork_points(&self.repo, since_us)
    }

    /// Messages matching `q`, oldest first, each with a snippet.
    pub fn search(&self, q: &SearchQuery) -> Result<Vec<SearchHit>> {
        search::search(&self.repo, q)
    }

    /// Compiles the view at `HEAD`.
    pub fn compile(&self) -> Result<Compiled> {
        self.repo.at_head(|_, v| Compiled::new(v))
    }

    /// Compiles the view at any commit.
    pub fn compile_at(&self, rev: &Rev) -> Result<Compiled> {
        let snap = self.repo.read()?;
        let id = self.repo.resolve(&snap, rev)?;
        if self.repo.head(&snap)?.commit == Some(id) {
            return self.repo.with_view(&snap, Some(id), Compiled::new);
        }
        Ok(Compiled::new(&crate::view::View::build(
            &snap,
            Some(id),
            None,
        )?))
    }

    /// Where the handle is and what its view holds.
    pub fn status(&self) -> Result<Status> {
        let snap = self.repo.read()?;
        let head = self.repo.head(&snap)?;
        let (messages, token_count, unanswered_calls) =
            self.repo.with_view(&snap, head.commit, |v| {
                (v.len(), v.token_count(), v.unanswered_calls())
            })?;
        Ok(Status {
            head,
            messages,
            token_count,
            unanswered_calls,
            store: self.store().location(),
        })
    }
}
