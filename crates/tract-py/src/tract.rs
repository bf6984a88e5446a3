//! `tract.Tract`: a store and the operations on it.

use crate::commit::PyCommitInfo;
use crate::compiled::PyCompiled;
use crate::compress::{outcome_dict, positive, summarizer_of};
use crate::convert::{from_py, to_py};
use crate::errors::IntoPyResult;
use crate::hooks::PyPendingToolResult;
use crate::renders::Renders;
use crate::tools::{PySearchHit, PyToolCall, PyToolTurn};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyWeakrefReference};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use tract_core::json::{message_from_json, messages_from_list, tool_calls_from_json};
use tract_core::{
    AppendOptions, Bind, BranchName, ClearOptions, CompressRequest, Content, Error, LogQuery,
    Manual, MergeRequest, MergeStrategy, Message, OpenOptions, RecordOptions, Rev, Role,
    SearchQuery, SearchScope, Summarizer, Tract,
};

/// A tract store. Open one with `Tract.open(path)` (in memory without a path) and use it as a
/// context manager; every append is durable when the call returns.
#[pyclass(name = "Tract", module = "tract", frozen, weakref)]
pub struct PyTract {
    inner: RwLock<Option<Arc<Tract>>>,
    /// What its compiles rendered, kept for the next step.
    renders: Arc<Renders>,
}

impl PyTract {
    /// A handle on `t`, nothing rendered yet.
    fn of(t: Tract) -> Self {
        PyTract {
            inner: RwLock::new(Some(Arc::new(t))),
            renders: Arc::default(),
        }
    }

    fn get(&self) -> PyResult<Arc<Tract>> {
        let guard = self.inner.read().unwrap_or_else(|e| e.into_inner());
        guard.clone().ok_or_else(|| {
            crate::errors::to_py(Error::InvalidOperation {
                message: "this Tract is closed".into(),
            })
        })
    }

    /// Runs `f` on the core tract with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Tract) -> Result<T, Error> + Send,
    ) -> PyResult<T> {
        let t = self.get()?;
        py.detach(|| f(&t)).py()
    }

    fn append_one(
        &self,
        py: Python<'_>,
        m: Message,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        let expected = expected_head.map(rev_of).transpose()?;
        self.with(py, move |t| t.append_with(m, &options(t, expected)?))
            .map(Into::into)
    }
}

/// Append options for a caller's compare-and-swap: fail with `HeadMovedError` unless the
/// handle's branch is at `expected_head`.
fn options(t: &Tract, expected_head: Option<Rev>) -> Result<AppendOptions, Error> {
    let expected_head = match expected_head {
        None => None,
        Some(rev) => Some(Some(match rev.as_commit() {
            Some(id) => id,
            None => t.resolve(&rev)?,
        })),
    };
    Ok(AppendOptions {
        expected_head,
        note: None,
    })
}

/// An `InvalidInputError` for arguments the core never sees.
fn invalid_input(message: impl Into<String>) -> PyErr {
    crate::errors::to_py(Error::InvalidInput {
        message: message.into(),
    })
}

/// The summarizer a call names: its `content` (a summary written by the caller), else its
/// `summarizer`; `None` leaves the choice to the handle's default.
fn chosen(
    py: Python<'_>,
    summarizer: Option<Py<PyAny>>,
    content: Option<String>,
) -> Option<Arc<dyn Summarizer>> {
    match (content, summarizer) {
        (Some(text), _) => Some(Arc::new(Manual(text))),
        (None, Some(f)) => Some(summarizer_of(py, f)),
        (None, None) => None,
    }
}

/// Calls a Python `tool_result` handler with a `PendingToolResult` holding what the core's
/// pending result holds, and passes its decision on to the core (which warns if it made none).
fn run_handler(
    py: Python<'_>,
    handler: &Py<PyAny>,
    tract: &Py<PyWeakrefReference>,
    pending: &mut tract_core::PendingToolResult,
) -> PyResult<()> {
    let tract = tract
        .bind(py)
        .upgrade()
        .map_or_else(|| py.None(), |t| t.unbind());
    let shown = Py::new(py, PyPendingToolResult::new(pending, tract))?;
    handler.bind(py).call1((shown.clone_ref(py),))?;
    match shown.get().take_decision() {
        Some(d) => pending.decide(d).py(),
        None => Ok(()),
    }
}

/// A token threshold from Python: a non-negative int (not a bool).
fn threshold(v: &Bound<'_, PyAny>) -> PyResult<u32> {
    let invalid = |what: String| {
        crate::errors::to_py(Error::InvalidInput {
            message: format!("auto_threshold must be a non-negative number of tokens, not {what}"),
        })
    };
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Err(invalid(v.repr()?.to_string()));
    }
    let n: i64 = v
        .extract()
        .map_err(|_| invalid(v.repr().map(|r| r.to_string()).unwrap_or_default()))?;
    u32::try_from(n).map_err(|_| invalid(n.to_string()))
}

/// Commit references from Python, each as [`rev_of`] reads it.
fn revs_of(list: &[Bound<'_, PyAny>]) -> PyResult<Vec<Rev>> {
    list.iter().map(rev_of).collect()
}

/// A commit reference from Python: a hash (prefix), a branch, `HEAD~N`, or a CommitInfo.
fn rev_of(obj: &Bound<'_, PyAny>) -> PyResult<Rev> {
    if let Ok(ci) = obj.cast::<PyCommitInfo>() {
        return Ok(Rev::from(ci.get().inner.id));
    }
    let text: String = obj.extract().map_err(|_| {
        crate::errors::to_py(Error::InvalidInput {
            message: "expected a commit hash, a branch name or a CommitInfo".into(),
        })
    })?;
    Rev::parse(&text).py()
}

#[pymethods]
impl PyTract {
    /// Opens the store file at `path` (created if missing; its directory must exist), or a new
    /// in-memory store when `path` is None. The handle works on `branch` (created by its first
    /// message), else on the branch `HEAD` names now; other handles and `tract switch` never
    /// move it. `summarizer` is used when a call names none (else the LLM the `TRACT_LLM_*`
    /// environment names, else the built-in extractive one). With `read_only`, the store must
    /// exist and nothing of it changes (not a byte of its file, not its format); a store this
    /// process cannot write opens that way by itself. A write then raises
    /// `ReadOnlyStoreError`.
    #[staticmethod]
    #[pyo3(signature = (path=None, summarizer=None, *, branch=None, read_only=false))]
    fn open(
        py: Python<'_>,
        path: Option<PathBuf>,
        summarizer: Option<Py<PyAny>>,
        branch: Option<String>,
        read_only: bool,
    ) -> PyResult<Self> {
        let env = tract_core::Environment::from_process();
        if let Some(bytes) = env.view_cache_budget() {
            tract_core::set_view_cache_budget(bytes);
        }
        if read_only && path.is_none() {
            return Err(crate::errors::to_py(tract_core::Error::InvalidInput {
                message: "read_only needs a store to read: give its path or URL".into(),
            }));
        }
        let options = OpenOptions {
            mode: match read_only {
                true => tract_core::OpenMode::ReadOnly,
                false => tract_core::OpenMode::CreateIfMissing,
            },
            store: env.store_options().py()?,
            bind: match branch {
                Some(name) => Bind::Branch(BranchName::new(&name).py()?),
                None => Bind::HeadAtOpen,
            },
        };
        let default = match summarizer {
            Some(f) => Some(summarizer_of(py, f)),
            None => env.summarizer().map(|s| Arc::new(s) as Arc<dyn Summarizer>),
        };
        let t = py
            .detach(|| match path {
                Some(p) => Tract::open_with(p, &options),
                None => Tract::in_memory_with(&options),
            })
            .py()?;
        t.set_summarizer(default);
        Ok(PyTract::of(t))
    }

    /// Where the store is: its file, or its URL without the password (None in memory).
    #[getter]
    fn path(&self) -> PyResult<Option<String>> {
        Ok(self.get()?.store().location())
    }

    /// Why this handle may only read (None: it may write): it was opened with `read_only`, or
    /// this process cannot write the store.
    #[getter]
    fn read_only(&self) -> PyResult<Option<String>> {
        Ok(self.get()?.store().read_only().map(str::to_string))
    }

    /// Closes the store; later calls raise InvalidOperationError.
    fn close(&self) {
        let mut guard = self.inner.write().unwrap_or_else(|e| e.into_inner());
        *guard = None;
        self.renders.clear();
    }

    /// Closes this handle and compacts the store file: it shrinks, and no freed page keeps the
    /// bytes of what `gc` removed or `redact` replaced. Needs the only open handle on the store
    /// in this process (forks included) and no transaction of another process under way.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        let taken = {
            let mut guard = self.inner.write().unwrap_or_else(|e| e.into_inner());
            guard.take()
        };
        let Some(arc) = taken else {
            return Err(crate::errors::to_py(Error::InvalidOperation {
                message: "this Tract is closed".into(),
            }));
        };
        let t = Arc::try_unwrap(arc).map_err(|_| {
            crate::errors::to_py(Error::InvalidOperation {
                message: "a call on this handle is still running".into(),
            })
        })?;
        py.detach(move || t.into_store().compact()).py()
    }

    /// Removes the content of the message `commit` names from the store for good: a tombstone
    /// keeps when and `reason`; ids stay valid; views show a placeholder with the message's
    /// role and call structure; search no longer finds it. With `follow=True`, every commit
    /// whose content was made from the removed content (a summary or compression of it, or of such
    /// a summary) is redacted too. Returns a dict: `commit`, `blob`, `redacted_at` (RFC 3339
    /// UTC) and `redacted_at_us`, `reason`, `chunks_removed`, `derived` (commits made from the
    /// removed content that still hold it) and `followed` (those redacted with it), as `tract
    /// redact --json` says. `compact()` afterwards makes sure no freed page of the file keeps
    /// the bytes.
    #[pyo3(signature = (commit, reason, *, follow=false))]
    fn redact<'py>(
        &self,
        py: Python<'py>,
        commit: &Bound<'py, PyAny>,
        reason: String,
        follow: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let rev = rev_of(commit)?;
        let options = tract_core::RedactOptions { follow };
        let r = self.with(py, move |t| t.redact_with(rev, &reason, &options))?;
        crate::vocabulary::dict(py, &tract_vocabulary::RedactReport::from(&r))
    }

    /// Sends branches (all, or `branches`) and the history they reach to the store at `dest`
    /// (a file or a postgresql:// URL; it must be a tract store): only the objects it lacks,
    /// each hashed again as it is stored. A branch is a name, or `"SRC:DST"` to send the
    /// branch SRC as DST (`"main:theirs/main"`). Each branch moves only by fast-forward; one
    /// that has diverged is refused and the others move: then DivergedError is raised after
    /// the transfer, naming each refused branch, with `report` (the dict below, its `refused`
    /// listing them); `force` moves them anyway (the old tip stays in the reflog). `settings`
    /// sends the tool-summarization, retention and secrets policies too. Returns a dict: `branches`
    /// (each `name`, `source`, `old`, `new`, `up_to_date`, `forced`, `ahead_of`: the
    /// sender's tip when the receiver's branch already contained it, and stayed), `refused`
    /// (each `name`, `source`, `receiver`, `sender`, `reason`), `commits`, `blobs`,
    /// `settings`.
    #[pyo3(signature = (dest, branches=None, *, force=false, settings=false))]
    fn push<'py>(
        &self,
        py: Python<'py>,
        dest: PathBuf,
        branches: Option<Vec<String>>,
        force: bool,
        settings: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let options = sync_options(branches, force, settings)?;
        let report = self.with(py, move |t| tract_core::push(t.store(), &dest, &options))?;
        sync_result(py, &report)
    }

    /// Imports the transcript file at `path` onto this handle's branch (`format`: auto,
    /// claude-code, openai, openai-responses, anthropic or jsonl), in one transaction; only
    /// what the branch does not hold yet (a Claude Code session is keyed by line: each line
    /// once, a response that grew edited, a rewound conversation followed). Returns a dict:
    /// `file` (`path` as given), `branch`, `format`, `added`, `already`, `skipped`, `off_path`,
    /// `recorded` (lines kept as records, out of the view), `edited`, `rewound`,
    /// `session_store` (the branch is the Claude Agent SDK session store's: nothing imported),
    /// `waiting_agents` (sub-agents still running), `warnings` (dicts with `line` and
    /// `warning`: lines that are not JSON, skipped as Claude Code skips them), `tip`: the
    /// report of `tract import --json`. A bad line raises InvalidInputError naming the file
    /// and line (`path`, `line`), and nothing is written.
    #[pyo3(signature = (path, format="auto"))]
    fn import_file<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        format: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let format = tract_core::formats::transcript::Format::parse(format).py()?;
        let report = self.with(py, move |t| {
            let r = t.import_file(&path, format)?;
            // A detached handle imports at its commit; the core names that `HEAD`.
            let head = t.head()?;
            let branch = head.branch().unwrap_or("HEAD");
            Ok(tract_vocabulary::ImportReport::new(&path, branch, &r))
        })?;
        crate::vocabulary::dict(py, &report)
    }

    /// This handle's branch written out as text: `format` openai or anthropic (a request
    /// body of the view, JSON), jsonl (the view's messages; with `history`, every commit,
    /// which `import_file` reads back to identical ids) or markdown.
    #[pyo3(signature = (format="jsonl", *, history=false))]
    fn export(&self, py: Python<'_>, format: &str, history: bool) -> PyResult<String> {
        let format = tract_core::formats::exports::ExportFormat::parse(format).py()?;
        self.with(py, move |t| t.export(format, history))
    }

    /// Receives branches (all, or `branches`, each a name or `"SRC:DST"`: the sender's SRC
    /// as this store's DST) and their history from the store at `src` into this one, as
    /// `push` sends them: a diverged branch is refused (DivergedError with `report`, after
    /// the others moved); `pull(src, ["main:theirs/main"])` then brings it in under another
    /// name, to `merge("theirs/main")`. Returns the same dict as `push`.
    #[pyo3(signature = (src, branches=None, *, force=false, settings=false))]
    fn pull<'py>(
        &self,
        py: Python<'py>,
        src: PathBuf,
        branches: Option<Vec<String>>,
        force: bool,
        settings: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let options = sync_options(branches, force, settings)?;
        let report = self.with(py, move |t| tract_core::pull(t.store(), &src, &options))?;
        sync_result(py, &report)
    }

    /// Copies the store at `src` into a new store at `dest` (a file that does not exist yet, or
    /// a postgresql:// URL whose schema holds no store): every branch with its history, the
    /// settings and HEAD, every id the same. Returns a handle on the copy.
    #[staticmethod]
    fn clone_store(py: Python<'_>, src: PathBuf, dest: PathBuf) -> PyResult<Self> {
        if dest.exists() {
            return Err(invalid_input(format!(
                "{} exists; clone into a new file",
                dest.display()
            )));
        }
        let env = tract_core::Environment::from_process();
        let options = env.store_options().py()?;
        let (t, _) = py
            .detach(|| Tract::clone_store(&src, &dest, options))
            .py()?;
        Ok(PyTract::of(t))
    }

    /// Applies the store's retention policy (see `set_retention_policy`; nothing without a
    /// rule), then removes the objects nothing reaches: not a branch, not HEAD, not a reflog
    /// entry younger than `grace_days` (older entries are expired); `prune_now=True` for no
    /// grace; `dry_run=True` changes nothing and says what would go. Returns a dict:
    /// `commits`, `blobs`, `chunks`, `bytes`, `reflog_entries`, and the view checkpoints (all
    /// but each branch's newest; not counted in a dry run) and their chunks, `checkpoints`,
    /// `checkpoint_chunks`, removed; `dry_run`; and `retention`, one dict per rule in the
    /// policy's order: `rule`, `deleted_branches` (`branch`, `commit_hash`, `idle_since`: RFC
    /// 3339 UTC),
    /// `replaced_results` (`commits`, `summary`: the summary's hash or None for a
    /// placeholder), `bytes` and `kept` (`pinned`, `current`, `shared`, `newest`,
    /// `unsummarized`: what the rule covers but kept, by why), as `tract gc --json` says.
    #[pyo3(signature = (*, grace_days=14.0, prune_now=false, dry_run=false))]
    fn gc<'py>(
        &self,
        py: Python<'py>,
        grace_days: f64,
        prune_now: bool,
        dry_run: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        if !grace_days.is_finite() || grace_days < 0.0 {
            return Err(invalid_input(format!(
                "grace_days must be a number of days, 0 or more (got {grace_days})"
            )));
        }
        let grace = if prune_now {
            std::time::Duration::ZERO
        } else {
            std::time::Duration::from_secs_f64(grace_days * 86_400.0)
        };
        let options = tract_core::GcOptions { grace, dry_run };
        let out = self.with(py, move |t| tract_core::gc_with(t.store(), &options))?;
        crate::vocabulary::dict(py, &tract_vocabulary::GcReport::from(&out))
    }

    /// Brings the store's search index up to date: the commits written since it was last
    /// brought up to date (by any process), and the text redactions and `gc` removed; with
    /// `rebuild=True`, builds it anew from every branch. Searching never needs this (a search
    /// finds what is not indexed yet itself, and the processes that write index in batches);
    /// it is for after a bulk import, and to repair an index `fsck` finds wrong. Waits up to a
    /// minute for another process that is indexing (`StoreLockedError` after that). Returns a
    /// dict: `added` (commits), `removed` (documents dropped or rewritten), `rebuilt`,
    /// `documents` (one per commit), `bytes` (of its files, or of its tables in a database),
    /// `path` (its directory beside the store file; None for a store in memory or in
    /// PostgreSQL) and `in_database` (True for a store in PostgreSQL, whose index is the
    /// database's own full-text search, beside the store's tables).
    #[pyo3(signature = (*, rebuild=false))]
    fn update_index<'py>(&self, py: Python<'py>, rebuild: bool) -> PyResult<Bound<'py, PyDict>> {
        let r = self.with(py, move |t| tract_core::update_index(t.store(), rebuild))?;
        crate::vocabulary::dict(py, &tract_vocabulary::IndexReport::from(&r))
    }

    /// Checkpoints the view of every branch whose tip has no checkpoint of this layout (a
    /// store written by older code, a clone, a pull), so a new handle builds it from there
    /// instead of replaying its history; what `tract upgrade` does. Returns how many were
    /// written.
    fn checkpoint_views(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |t| t.checkpoint_views())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    /// Appends a system message. With `expected_head` (a commit), only if the handle's
    /// branch is still there (else `HeadMovedError`, nothing committed); the same on every
    /// append.
    #[pyo3(signature = (text, *, expected_head=None))]
    fn system(
        &self,
        py: Python<'_>,
        text: String,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        self.append_one(py, Message::text(Role::System, text), expected_head)
    }

    /// Appends a user message.
    #[pyo3(signature = (text, *, expected_head=None))]
    fn user(
        &self,
        py: Python<'_>,
        text: String,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        self.append_one(py, Message::text(Role::User, text), expected_head)
    }

    /// Appends an assistant message. `tool_calls` is a list of `{"id", "name", "arguments"}`
    /// (arguments a dict or a JSON string) or OpenAI `{"id", "type", "function": {...}}`.
    #[pyo3(signature = (text=None, tool_calls=None, *, expected_head=None))]
    fn assistant(
        &self,
        py: Python<'_>,
        text: Option<String>,
        tool_calls: Option<&Bound<'_, PyAny>>,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        let mut m = Message::text(Role::Assistant, text.unwrap_or_default());
        if let Some(calls) = tool_calls {
            m.tool_calls = tool_calls_from_json(&from_py(calls)?).py()?;
        }
        self.append_one(py, m, expected_head)
    }

    /// Records the result of tool call `call_id` from tool `name`. The `tool_result` handler
    /// registered with `on` decides what the model sees, else the store's tool-summarization
    /// policy; a summarized or edited result is committed first and its new text as an edit
    /// of it. Returns the recorded position (with its original content). With `edit=hash`,
    /// replaces the content of that tool result instead (it must answer `call_id` from
    /// `name`); no handler runs then.
    #[pyo3(signature = (call_id, name, content, is_error=false, edit=None))]
    fn tool_result(
        &self,
        py: Python<'_>,
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
        edit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        if let Some(target) = edit {
            let target = rev_of(target)?;
            return self
                .with(py, move |t| {
                    t.edit_tool_result(target, &call_id, &name, Content::Text(content))
                })
                .map(Into::into);
        }
        let message = Message::tool_result(call_id, name, content, is_error);
        let outcome = self.with(py, |t| {
            t.record_tool_result(message, &RecordOptions::default())
        })?;
        for w in &outcome.warnings {
            crate::errors::warn(py, w)?;
        }
        Ok(outcome.original.into())
    }

    /// Registers `handler` for `event` (`"tool_result"`), replacing the default handler (the
    /// store's tool-summarization policy) and any handler registered before. The handler is
    /// called with a `PendingToolResult` and decides with its methods; an exception it raises
    /// propagates and nothing is committed.
    fn on(slf: &Bound<'_, Self>, event: &str, handler: Bound<'_, PyAny>) -> PyResult<()> {
        tract_core::HookEvent::parse(event).py()?;
        if !handler.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "the handler for '{event}' must be callable, not {}",
                handler.get_type().name()?
            )));
        }
        // A weak reference: the handler lives in the core handle, which this object owns.
        let tract = PyWeakrefReference::new(slf.as_any())?.unbind();
        let handler = handler.unbind();
        slf.get().get()?.on_tool_result(move |pending| {
            Python::attach(|py| run_handler(py, &handler, &tract, pending))
                .map_err(crate::errors::from_py)
        });
        Ok(())
    }

    /// Removes the handler registered for `event`: the store's policy applies again.
    fn off(&self, event: &str) -> PyResult<()> {
        tract_core::HookEvent::parse(event).py()?;
        self.get()?.off_tool_result();
        Ok(())
    }

    /// Sets the store's tool-summarization policy (replacing the stored one; every process
    /// and the CLI apply it). `instructions`: tool name to instructions, whose results are
    /// summarized with them; `auto_threshold`: results over this many tokens are summarized
    /// with `default_instructions` (or the tool prompt alone). The instructions apply when an
    /// LLM summarizer is set (an `OpenAICompatible` or a callable as `summarizer=` on open,
    /// or the LLM `TRACT_LLM_MODEL` names); until then the built-in extractive summarizer
    /// shortens those results and ignores them. Called with nothing, it clears the policy.
    #[pyo3(signature = (instructions=None, *, auto_threshold=None, default_instructions=None))]
    fn configure_tool_summarization(
        &self,
        py: Python<'_>,
        instructions: Option<std::collections::BTreeMap<String, String>>,
        auto_threshold: Option<&Bound<'_, PyAny>>,
        default_instructions: Option<String>,
    ) -> PyResult<()> {
        let auto_threshold = match auto_threshold {
            None => None,
            Some(v) => Some(threshold(v)?),
        };
        let policy = tract_core::ToolPolicy {
            instructions: instructions.unwrap_or_default(),
            auto_threshold,
            default_instructions,
        };
        self.with(py, move |t| t.set_tool_policy(&policy))
    }

    /// The store's retention policy as a dict (`rules`, `pinned`), in the JSON form `tract
    /// config show --json` prints under `retention`; `{"rules": [], "pinned": []}` when none
    /// was set.
    fn retention_policy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let policy = self.with(py, |t| t.retention_policy())?;
        crate::vocabulary::value(py, &policy)
    }

    /// Replaces the store's retention policy, which only `gc` applies (`gc(dry_run=True)`
    /// shows what it would do). `policy` is a dict: `rules`, a list of rules, each with a
    /// `name`, `branches` (name patterns: `*` any run of characters, `/` included) and either
    /// `replace_tool_results` (`older_than_days`, `keep_newest`: the newest messages of each
    /// view kept, `with`: `"summary"` (only results that have one, by it) or
    /// `"placeholder"`) or `delete_idle_branches` (`idle_days`); and `pinned`, branch
    /// patterns no rule touches. An invalid policy raises `InvalidInputError` and the stored
    /// one is kept; `{}` clears it.
    fn set_retention_policy(&self, py: Python<'_>, policy: &Bound<'_, PyAny>) -> PyResult<()> {
        let text = crate::convert::from_py(policy)?.to_string();
        let policy = tract_core::RetentionPolicy::from_json(&text).map_err(crate::errors::to_py)?;
        self.with(py, move |t| t.set_retention_policy(&policy))
    }

    /// The store's secrets policy as a dict (`enabled`, `rules`: your own, name to regex,
    /// `disabled`: built-in rule ids turned off, `allow`: values, or `/regex/` patterns, never
    /// scrubbed), in the JSON form `tract config show --json` prints under `secrets`; `None`
    /// for a store an older tract made, which scrubs nothing until it is given one.
    fn secrets_policy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let policy = self.with(py, |t| t.secrets_policy())?;
        crate::vocabulary::value(py, &policy)
    }

    /// Replaces the store's secrets policy, which every write applies: what looks like a
    /// credential is replaced by `[REDACTED:<rule>:<fingerprint>]` before a message is stored.
    /// `policy` is a dict with the keys `secrets_policy()` returns (those left out take their
    /// default: on, every built-in rule, nothing of your own). An invalid policy (an unknown
    /// key, a rule that does not compile or would match every message, an allowed pattern
    /// that would turn every rule off) raises `InvalidInputError` and the stored one is kept.
    fn set_secrets_policy(&self, py: Python<'_>, policy: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = crate::convert::from_py(policy)?;
        let policy: tract_core::SecretsPolicy = serde_json::from_value(value).map_err(|e| {
            crate::errors::to_py(tract_core::Error::InvalidInput {
                message: format!("invalid secrets policy: {e}"),
            })
        })?;
        self.with(py, move |t| t.set_secrets_policy(&policy))
    }

    /// What looks like a credential in what the store holds already (written before it
    /// scrubbed, or with scrubbing off), by the store's rules: the handle's view, or with
    /// `history` every commit it reaches, with `all` on every branch. A list of dicts
    /// (`commit_hash`, `branch`, `rule`, `fingerprint`, `field`, `start`, `end`), never the
    /// values.
    #[pyo3(signature = (*, history = false, all = false))]
    fn scan_secrets<'py>(
        &self,
        py: Python<'py>,
        history: bool,
        all: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = tract_core::ScanOptions { history, all };
        let found = self.with(py, move |t| t.scan_secrets(&options))?;
        let list: Vec<_> = found
            .iter()
            .map(tract_vocabulary::SecretFinding::from)
            .collect();
        crate::vocabulary::value(py, &list)
    }

    /// Scans as `scan_secrets` does, then scrubs every finding where it is stored, in one
    /// transaction: each message becomes a tombstone showing it with its findings replaced by
    /// their markers, what was made from it (summaries, compressions) follows, the search index
    /// forgets the text; ids stay valid. Returns a dict: `findings` (how many), `scrubbed` and
    /// `followed` (commit ids).
    #[pyo3(signature = (*, history = false, all = false))]
    fn redact_secrets<'py>(
        &self,
        py: Python<'py>,
        history: bool,
        all: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = tract_core::ScanOptions { history, all };
        let r = self.with(py, move |t| {
            let found = t.scan_secrets(&options)?;
            t.redact_secrets(&found)
        })?;
        crate::vocabulary::value(py, &tract_vocabulary::SecretsRedaction::from(&r))
    }

    /// The store's tool-summarization policy (empty when none is configured).
    fn tool_summarization(&self, py: Python<'_>) -> PyResult<crate::hooks::PyToolSummarization> {
        Ok(self.with(py, |t| t.tool_policy())?.into())
    }

    /// The policy as the default handler reads it, None when nothing is configured (so a
    /// handler written as `if config and ...` works as in the documentation).
    #[getter]
    fn _tool_summarization_config(
        &self,
        py: Python<'_>,
    ) -> PyResult<Option<crate::hooks::PyToolSummarization>> {
        let policy = self.with(py, |t| t.tool_policy())?;
        Ok((!policy.is_empty()).then(|| policy.into()))
    }

    /// Tool result commits in the current view, in view order, each position once.
    #[pyo3(signature = (name=None, after=None, before=None))]
    fn find_tool_results(
        &self,
        py: Python<'_>,
        name: Option<String>,
        after: Option<&Bound<'_, PyAny>>,
        before: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let query = tract_core::ResultQuery {
            name,
            after: after.map(rev_of).transpose()?,
            before: before.map(rev_of).transpose()?,
        };
        let infos = self.with(py, move |t| t.find_tool_results(&query))?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// Assistant commits in the current view that call tools (`name`: that tool).
    #[pyo3(signature = (name=None))]
    fn find_tool_calls(&self, py: Python<'_>, name: Option<String>) -> PyResult<Vec<PyCommitInfo>> {
        let infos = self.with(py, move |t| t.find_tool_calls(name.as_deref()))?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// Tool-call commits paired with their results, matched by tool_call_id.
    #[pyo3(signature = (name=None))]
    fn find_tool_turns(&self, py: Python<'_>, name: Option<String>) -> PyResult<Vec<PyToolTurn>> {
        let turns = self.with(py, move |t| t.find_tool_turns(name.as_deref()))?;
        Ok(turns.into_iter().map(Into::into).collect())
    }

    /// Tool calls in the current view that have no result yet.
    fn pending_tool_calls(&self, py: Python<'_>) -> PyResult<Vec<PyToolCall>> {
        let calls = self.with(py, |t| t.pending_tool_calls())?;
        Ok(calls.into_iter().map(Into::into).collect())
    }

    /// Every version of a message in view, oldest first: the original, then each edit.
    fn edit_history(
        &self,
        py: Python<'_>,
        commit: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let rev = rev_of(commit)?;
        let infos = self.with(py, move |t| t.edit_history(rev))?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// Commits a marked synthetic error result for every tool call left without one (after a
    /// crash), in one transaction; returns them.
    fn repair(&self, py: Python<'_>) -> PyResult<Vec<PyCommitInfo>> {
        let infos = self.with(py, |t| t.repair())?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// Replaces the results of all but the last `keep` tool turns with a short placeholder
    /// naming the original commit (`{tool}`, `{commit}`, `{tokens}`, `{bytes}` are filled in),
    /// as edits in one transaction; results of `exclude_tools` stay; nothing is cleared unless
    /// at least `clear_at_least` tokens are freed. With `dry_run=True` nothing is committed and
    /// `cleared` lists the positions that would be. Returns a dict: `cleared`,
    /// `tokens_before`, `tokens_after`, as `tract clear --json` says.
    #[pyo3(signature = (keep=3, exclude_tools=Vec::new(), clear_at_least=0, placeholder=None, dry_run=false))]
    fn clear_tool_results<'py>(
        &self,
        py: Python<'py>,
        keep: usize,
        exclude_tools: Vec<String>,
        clear_at_least: u64,
        placeholder: Option<String>,
        dry_run: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let opts = ClearOptions {
            keep,
            exclude_tools,
            clear_at_least,
            placeholder,
        };
        if dry_run {
            let plan = self.with(py, move |t| t.plan_clear_tool_results(&opts))?;
            return crate::vocabulary::dict(py, &tract_vocabulary::ClearPlan::from(&plan));
        }
        let out = self.with(py, move |t| t.clear_tool_results(&opts))?;
        let report = tract_vocabulary::ClearReport::from(&out);
        crate::vocabulary::with_commits(py, &report, "cleared", out.cleared)
    }

    /// Replaces the selected positions (default: the whole view but system messages) with one
    /// summary per contiguous run; `preserve` positions stay and split runs. The summary comes
    /// from `content` (written by you), `summarizer` (a callable `fn(messages) -> str` given
    /// OpenAI-style messages, system prompt first), the one given to `Tract.open`, or the
    /// built-in extractive summarizer. All or nothing. Returns a dict: `commits`, `sources`,
    /// `skipped`, `warnings`, `tokens_before`, `tokens_after` (with `dry_run=True`: the runs'
    /// `sources` and `tokens`, nothing committed), as `tract compress --json` says.
    #[pyo3(signature = (commits=None, system_prompt=None, instructions=None, preserve=None, target_tokens=None, content=None, summarizer=None, dry_run=false))]
    #[allow(clippy::too_many_arguments)]
    fn compress<'py>(
        &self,
        py: Python<'py>,
        commits: Option<Vec<Bound<'py, PyAny>>>,
        system_prompt: Option<String>,
        instructions: Option<String>,
        preserve: Option<Vec<Bound<'py, PyAny>>>,
        target_tokens: Option<i64>,
        content: Option<String>,
        summarizer: Option<Py<PyAny>>,
        dry_run: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let commits = commits.as_deref().map(revs_of).transpose()?;
        let preserve = revs_of(&preserve.unwrap_or_default())?;
        let target_tokens = positive(target_tokens)?;
        if dry_run {
            let req = CompressRequest {
                commits,
                preserve,
                ..CompressRequest::default()
            };
            let plan = self.with(py, move |t| t.plan_compress(&req))?;
            return crate::vocabulary::dict(py, &tract_vocabulary::CompressPlan::from(&plan));
        }
        let chosen = chosen(py, summarizer, content);
        let out = self.with(py, move |t| {
            let s = chosen.as_deref();
            t.compress(&CompressRequest {
                commits,
                preserve,
                system_prompt,
                instructions,
                target_tokens,
                summarizer: s,
                ..CompressRequest::default()
            })
        })?;
        outcome_dict(py, out)
    }

    /// Compresses whole tool turns with `TOOL_SUMMARIZE_SYSTEM` by default: `commits` (any
    /// part of a turn takes the whole turn) or every turn (of tool `name`). The final answer
    /// (the last assistant message without tool calls in the selection) is kept unless
    /// `preserve_answer=False`.
    #[pyo3(signature = (commits=None, *, name=None, target_tokens=None, instructions=None, system_prompt=None, preserve_answer=true, content=None, summarizer=None))]
    #[allow(clippy::too_many_arguments)]
    fn compress_tool_calls<'py>(
        &self,
        py: Python<'py>,
        commits: Option<Vec<Bound<'py, PyAny>>>,
        name: Option<String>,
        target_tokens: Option<i64>,
        instructions: Option<String>,
        system_prompt: Option<String>,
        preserve_answer: bool,
        content: Option<String>,
        summarizer: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let commits = commits.as_deref().map(revs_of).transpose()?;
        let target_tokens = positive(target_tokens)?;
        let chosen = chosen(py, summarizer, content);
        let out = self.with(py, move |t| {
            let s = chosen.as_deref();
            let turns = tract_core::ToolTurns {
                commits,
                name,
                preserve_answer,
            };
            t.compress_tool_calls(
                &turns,
                CompressRequest {
                    system_prompt,
                    instructions,
                    target_tokens,
                    summarizer: s,
                    ..CompressRequest::default()
                },
            )
        })?;
        outcome_dict(py, out)
    }

    /// Searches message text, tool-call names and arguments, and tool results. By words, the
    /// hits ranked best first (BM25; on PostgreSQL the database's `ts_rank_cd`, among a
    /// query's newest 1,000 matches when it has more and the page reaches no further): every
    /// word must appear (case does not matter),
    /// `"some words"` in this order, `-word` must not, `a OR b` either; `getUserName`,
    /// `src/main.rs` and `DATABASE_URL` are searched as their parts (`user name` finds
    /// `getUserName`), and punctuation is not searched. With `regex=True`, a regular
    /// expression (case-insensitive), the hits oldest first. What was just written is found at
    /// once.
    ///
    /// It searches the current view of this handle's position, of `branch`, or of every branch
    /// (`all_branches=True`; not with `regex`); with `history=True` every version in history
    /// (originals of edited messages, compressed messages, what merges brought in). Filters:
    /// `role`, `tool` (its results and the calls to it), `op` (`append`, `edit`, `compress`,
    /// `merge`), `errors` (tool results marked as errors), `since` (inclusive) and `until`
    /// (exclusive), each a `datetime` (naive: UTC) or seconds since the epoch. `offset` hits
    /// are skipped, then at most `limit` returned (None: all). A commit several branches
    /// share is one hit naming them all in `branches`.
    #[pyo3(signature = (
        query, role=None, tool=None, history=false, regex=false, limit=None, *, branch=None,
        all_branches=false, op=None, errors=false, since=None, until=None, offset=0
    ))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        query: String,
        role: Option<String>,
        tool: Option<String>,
        history: bool,
        regex: bool,
        limit: Option<i64>,
        branch: Option<String>,
        all_branches: bool,
        op: Option<String>,
        errors: bool,
        since: Option<&Bound<'_, PyAny>>,
        until: Option<&Bound<'_, PyAny>>,
        offset: i64,
    ) -> PyResult<Vec<PySearchHit>> {
        let role = role.as_deref().map(Role::parse).transpose().py()?;
        let scope = match (branch, all_branches) {
            (Some(name), true) => {
                return Err(invalid_input(format!(
                    "search one branch (branch='{name}') or every branch (all_branches=True), \
                     not both"
                )));
            }
            (Some(name), false) => SearchScope::Branch(name),
            (None, true) => SearchScope::All,
            (None, false) => SearchScope::Here,
        };
        if regex && scope == SearchScope::All {
            return Err(invalid_input(
                "a regular expression scans one branch: leave out all_branches=True, or search \
                 by words",
            ));
        }
        let count = |name: &str, n: i64| {
            usize::try_from(n).map_err(|_| {
                invalid_input(format!(
                    "{name} must be a number of hits, 0 or more (got {n})"
                ))
            })
        };
        let limit = limit.map(|n| count("limit", n)).transpose()?;
        let offset = count("offset", offset)?;
        let since_us = since
            .filter(|v| !v.is_none())
            .map(|v| crate::convert::epoch_micros(v, "since"))
            .transpose()?;
        let until_us = until
            .filter(|v| !v.is_none())
            .map(|v| crate::convert::epoch_micros(v, "until"))
            .transpose()?;
        let q = SearchQuery {
            query,
            regex,
            role,
            tool,
            history,
            scope,
            op,
            errors,
            since_us,
            until_us,
            offset,
            limit,
        };
        let hits = self.with(py, move |t| t.search(&q))?;
        Ok(hits.into_iter().map(Into::into).collect())
    }

    /// Appends one message given as a dict (`role`, `content`, `tool_calls`, …).
    #[pyo3(signature = (message, *, expected_head=None))]
    fn append(
        &self,
        py: Python<'_>,
        message: &Bound<'_, PyAny>,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        let m = message_from_json(&from_py(message)?).py()?;
        self.append_one(py, m, expected_head)
    }

    /// Appends several message dicts in one transaction: all of them, or none. With
    /// `expected_head`, only if the handle's branch is still at that commit.
    #[pyo3(signature = (messages, *, expected_head=None))]
    fn append_many(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let parsed = messages_from_list(&from_py(messages)?).py()?;
        let expected = expected_head.map(rev_of).transpose()?;
        let infos = self.with(py, move |t| {
            t.append_batch_with(parsed, &options(t, expected)?)
        })?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// Appends OpenAI Responses input items (dicts) in one transaction, one message each:
    /// all of them, or none. They come back as they were from `compile().to_responses()`.
    #[pyo3(signature = (items, *, expected_head=None))]
    fn append_items(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let items = items_of(items)?;
        let expected = expected_head.map(rev_of).transpose()?;
        let infos = self.with(py, move |t| append_items(t, &items, expected))?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// `append_items` without waiting: the items are read here (a value that is not a list
    /// raises here), appended on a worker thread, and then `done(commits, None)` or
    /// `done(None, error)` is called from that thread. For an event loop, whose thread goes
    /// on meanwhile: `done` settles a future through `loop.call_soon_threadsafe`.
    #[pyo3(name = "_append_items_then", signature = (items, done, *, expected_head=None))]
    fn append_items_then(
        &self,
        items: &Bound<'_, PyAny>,
        done: Py<PyAny>,
        expected_head: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let items = items_of(items)?;
        let expected = expected_head.map(rev_of).transpose()?;
        let t = self.get()?;
        let started = crate::worker::run(move || {
            let outcome = append_items(&t, &items, expected);
            // The handle may be the last reference (closed meanwhile): let it go, and what its
            // close does, before taking the GIL.
            drop(t);
            Python::attach(move |py| {
                let args = match outcome {
                    Ok(infos) => {
                        let infos: Vec<PyCommitInfo> = infos.into_iter().map(Into::into).collect();
                        (
                            infos.into_pyobject(py).map(|o| o.into_any().unbind()),
                            py.None(),
                        )
                    }
                    Err(e) => (
                        Ok(py.None()),
                        crate::errors::to_py(e).into_value(py).into_any(),
                    ),
                };
                let called = match args {
                    (Ok(infos), error) => done.call1(py, (infos, error)).map(drop),
                    (Err(e), _) => done.call1(py, (py.None(), e.into_value(py))).map(drop),
                };
                if let Err(e) = called {
                    e.write_unraisable(py, Some(done.bind(py)));
                }
                // Released here, with the GIL, rather than queued for later.
                drop(done);
            })
        });
        started.map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!("no thread to append on: {e}"))
        })
    }

    /// Appends `messages` (message dicts), then a record of `kind` holding `data`, in one
    /// transaction: all of it, or none. Records keep data of the caller's own (a framework's
    /// checkpoints) on the branch; the view never shows them. Returns the record's commit.
    #[pyo3(signature = (kind, data, *, messages=None))]
    fn record(
        &self,
        py: Python<'_>,
        kind: String,
        data: String,
        messages: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCommitInfo> {
        let parsed = match messages {
            Some(m) => messages_from_list(&from_py(m)?).py()?,
            None => Vec::new(),
        };
        self.with(py, move |t| t.record(&kind, data, parsed))
            .map(Into::into)
    }

    /// The records on the branch's first-parent line from the head (or from just before the
    /// commit `before`), newest first: of `kind` or a kind under it (`"langgraph"` takes
    /// `"langgraph.checkpoint"`), at most `limit`.
    #[pyo3(signature = (kind=None, *, limit=None, before=None))]
    fn records(
        &self,
        py: Python<'_>,
        kind: Option<String>,
        limit: Option<usize>,
        before: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<crate::record::PyRecord>> {
        let query = tract_core::RecordQuery {
            kind,
            limit,
            before: before.map(rev_of).transpose()?,
        };
        let records = self.with(py, move |t| t.records(&query))?;
        Ok(records.into_iter().map(Into::into).collect())
    }

    /// The record a commit holds (an InvalidInputError for any other commit).
    fn get_record(
        &self,
        py: Python<'_>,
        commit: &Bound<'_, PyAny>,
    ) -> PyResult<crate::record::PyRecord> {
        let rev = rev_of(commit)?;
        self.with(py, move |t| t.get_record(rev)).map(Into::into)
    }

    /// Takes the last message off the view and nothing else: the branch moves back to just
    /// before it was appended, and what was committed since (edits, a compression or a clear
    /// of earlier messages, records) is written again on top; the reflog keeps the old tip.
    /// Returns it as a message dict, or None for an empty branch; refused when it is a summary
    /// or came from a merge.
    fn pop<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let popped = self.with(py, |t| t.pop())?;
        popped
            .map(|m| to_py(py, &tract_core::json::message_to_json(&m)))
            .transpose()
    }

    /// Empties the handle's branch (a session started over): every handle on it sees it
    /// empty, and the old tip stays in the reflog. Returns that tip, or None.
    fn clear_branch(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let tip = self.with(py, |t| t.clear_branch())?;
        Ok(tip.map(|c| c.to_hex()))
    }

    /// Replaces the content of a message in the current view; the original stays in history.
    fn edit(
        &self,
        py: Python<'_>,
        commit: &Bound<'_, PyAny>,
        content: String,
    ) -> PyResult<PyCommitInfo> {
        let rev = rev_of(commit)?;
        self.with(py, move |t| t.edit(rev, Content::Text(content)))
            .map(Into::into)
    }

    /// Compiles the view at HEAD (or at commit `at`).
    #[pyo3(signature = (at=None))]
    fn compile(&self, py: Python<'_>, at: Option<&Bound<'_, PyAny>>) -> PyResult<PyCompiled> {
        let at = at.map(rev_of).transpose()?;
        let inner = self.with(py, move |t| match at {
            Some(rev) => t.compile_at(&rev),
            None => t.compile(),
        })?;
        Ok(PyCompiled {
            inner,
            renders: Arc::clone(&self.renders),
        })
    }

    /// History from `start` (default HEAD) back along first parents, newest first. With
    /// `graph=True`, every commit reachable through both parents of merges (a merged branch's
    /// commits too), newest first.
    #[pyo3(signature = (limit=None, start=None, *, graph=false))]
    fn log(
        &self,
        py: Python<'_>,
        limit: Option<usize>,
        start: Option<&Bound<'_, PyAny>>,
        graph: bool,
    ) -> PyResult<Vec<PyCommitInfo>> {
        let start = start.map(rev_of).transpose()?;
        let query = LogQuery {
            start,
            limit,
            graph,
            ..LogQuery::default()
        };
        let infos = self.with(py, move |t| t.log(&query))?;
        Ok(infos.into_iter().map(Into::into).collect())
    }

    /// One commit by hash (a unique prefix works), branch name or `HEAD~N`.
    fn get_commit(&self, py: Python<'_>, commit: &Bound<'_, PyAny>) -> PyResult<PyCommitInfo> {
        let rev = rev_of(commit)?;
        self.with(py, move |t| t.get_commit(rev)).map(Into::into)
    }

    /// The content stored in that commit: a string, or a list of part dicts.
    fn get_content<'py>(
        &self,
        py: Python<'py>,
        commit: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let info = match commit.cast::<PyCommitInfo>() {
            Ok(ci) if ci.get().inner.message.is_some() => ci.get().inner.clone(),
            _ => {
                let rev = rev_of(commit)?;
                self.with(py, move |t| t.get_commit(rev))?
            }
        };
        match info.message.as_deref() {
            Some(m) => to_py(py, &tract_core::json::message_to_json(m)["content"]),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// The compress commit whose summary replaced this message, if any.
    fn compressed_into(
        &self,
        py: Python<'_>,
        commit: &Bound<'_, PyAny>,
    ) -> PyResult<Option<PyCommitInfo>> {
        let rev = rev_of(commit)?;
        Ok(self
            .with(py, move |t| t.compressed_into(rev))?
            .map(Into::into))
    }

    /// Resolves a reference to a full commit hash.
    fn resolve(&self, py: Python<'_>, rev: &Bound<'_, PyAny>) -> PyResult<String> {
        let rev = rev_of(rev)?;
        Ok(self.with(py, move |t| t.resolve(&rev))?.to_hex())
    }

    /// The commit this handle is at (None on a branch with no commits yet).
    #[getter]
    fn head(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.with(py, |t| t.head())?.commit.map(|c| c.to_hex()))
    }

    /// The branch this handle is on (None when detached).
    #[getter]
    fn current_branch(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.with(py, |t| t.head())?.branch().map(str::to_string))
    }

    /// Every branch (every session) with its tip, messages and tokens in view and last
    /// activity, as kept while it moved (nothing is compiled). Each unpacks as `(name, head)`.
    fn branches(&self, py: Python<'_>) -> PyResult<Vec<crate::branch::PyBranchInfo>> {
        let list = self.with(py, |t| t.branches())?;
        Ok(list.into_iter().map(Into::into).collect())
    }

    /// Creates branch `name` at `at` (default HEAD); returns the commit it starts at.
    #[pyo3(signature = (name, at=None))]
    fn branch(
        &self,
        py: Python<'_>,
        name: String,
        at: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let at = at.map(rev_of).transpose()?;
        let name = BranchName::new(&name).py()?;
        Ok(self
            .with(py, move |t| {
                t.create_branch(&name, &at.unwrap_or_else(Rev::head))
            })?
            .to_hex())
    }

    /// A new branch `name` at this handle's position (or at `at`), returned as a handle bound
    /// to it, on the same store, with this handle's hooks and default summarizer. Nothing is
    /// copied: a fork costs the same at any history size.
    #[pyo3(signature = (name, at=None))]
    fn fork(
        &self,
        py: Python<'_>,
        name: String,
        at: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTract> {
        let at = at.map(rev_of).transpose()?;
        let name = BranchName::new(&name).py()?;
        let fork = self.with(py, move |t| t.fork(&name, &at.unwrap_or_else(Rev::head)))?;
        Ok(PyTract::of(fork))
    }

    /// Merges branch `name` into this handle's branch with a commit of two parents (the
    /// branch's whole history stays reachable). `strategy="append"`: the view continues with
    /// the branch's messages since it forked. `strategy="tool_result", call_id=ID`: the branch's
    /// final assistant answer (or, with `summarize=True`, a summary of its work by `summarizer`,
    /// the handle's, or the extractive one) becomes the result of that pending call. A branch
    /// merged into itself, one with no common history or nothing new, or a call that is not
    /// pending raises, and nothing is committed. Returns the merge commit.
    #[pyo3(signature = (branch, *, strategy="append", call_id=None, summarize=false, summarizer=None, target_tokens=None, note=None))]
    #[allow(clippy::too_many_arguments)]
    fn merge(
        &self,
        py: Python<'_>,
        branch: String,
        strategy: &str,
        call_id: Option<String>,
        summarize: bool,
        summarizer: Option<Py<PyAny>>,
        target_tokens: Option<i64>,
        note: Option<String>,
    ) -> PyResult<PyCommitInfo> {
        let name = BranchName::new(&branch).py()?;
        let strategy = match (strategy, call_id) {
            ("append", None) => MergeStrategy::Append,
            ("tool_result", Some(call_id)) => MergeStrategy::ToolResult { call_id },
            ("append", Some(_)) => {
                return Err(invalid_input("call_id goes with strategy=\"tool_result\""));
            }
            ("tool_result", None) => {
                return Err(invalid_input("strategy=\"tool_result\" needs call_id"));
            }
            (other, _) => {
                return Err(invalid_input(format!(
                    "unknown merge strategy '{other}' (expected \"append\" or \"tool_result\")"
                )));
            }
        };
        let target_tokens = positive(target_tokens)?;
        let chosen = chosen(py, summarizer, None);
        self.with(py, move |t| {
            t.merge(
                &name,
                &MergeRequest {
                    strategy,
                    summarize,
                    summarizer: chosen.as_deref(),
                    target_tokens,
                    note,
                },
            )
        })
        .map(Into::into)
    }

    /// Deletes branch `name` (not the one this handle or the store's HEAD is on); its reflog
    /// keeps the tip, which this returns. A handle still bound to it raises NotFoundError
    /// rather than start a new history there.
    fn delete_branch(&self, py: Python<'_>, name: String) -> PyResult<String> {
        let name = BranchName::new(&name).py()?;
        Ok(self.with(py, move |t| t.delete_branch(&name))?.to_hex())
    }

    /// Puts this handle on branch `name` (other handles and the store's HEAD stay put).
    fn switch(&self, py: Python<'_>, name: String) -> PyResult<()> {
        self.with(py, move |t| t.switch(&name)).map(|_| ())
    }

    /// Puts this handle on a branch, or detaches it at a commit (time travel).
    fn checkout(&self, py: Python<'_>, rev: &Bound<'_, PyAny>) -> PyResult<()> {
        let rev = rev_of(rev)?;
        self.with(py, move |t| t.checkout(&rev)).map(|_| ())
    }

    /// Moves this handle's branch to `rev`; the old head stays in the reflog.
    fn reset(&self, py: Python<'_>, rev: &Bound<'_, PyAny>) -> PyResult<()> {
        let rev = rev_of(rev)?;
        self.with(py, move |t| t.reset(&rev)).map(|_| ())
    }

    /// The moves of a ref, newest first: dicts with `old`, `new`, `reason`, `timestamp_us`.
    #[pyo3(signature = (name="HEAD".to_string(), limit=None))]
    fn reflog<'py>(
        &self,
        py: Python<'py>,
        name: String,
        limit: Option<usize>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let entries = self.with(py, move |t| t.reflog(&name, limit.unwrap_or(usize::MAX)))?;
        entries
            .into_iter()
            .map(|e| {
                let d = PyDict::new(py);
                d.set_item("old", e.old.map(|c| c.to_hex()))?;
                d.set_item("new", e.new.map(|c| c.to_hex()))?;
                d.set_item("reason", e.reason)?;
                d.set_item("timestamp_us", e.timestamp_us)?;
                Ok(d)
            })
            .collect()
    }

    /// Branch, head, message and token counts of the current view: `branch` (None when
    /// detached), `head`, `detached`, `messages`, `token_count`, `unanswered_tool_calls`,
    /// `reused_call_ids` (tool calls whose id an earlier call in view used: compile sends each
    /// under a new id), `path`: the fields of `tract status --json`.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.with(py, |t| t.status())?;
        crate::vocabulary::dict(py, &tract_vocabulary::Status::from(&s))
    }

    /// Checks the whole store (every branch): re-hashes every object and chunk, checks every
    /// link, ref and reflog entry and the kept per-branch counts, lists what nothing reaches.
    /// Returns a dict: `clean`, the counts checked (`commits`, `blobs`, `chunks`, `bytes`,
    /// `branches`, `reflog_entries`, `counts_replayed`, `checkpoints_checked`, `journal_frames`,
    /// `index_documents`: the search index's documents checked against the store, 0 without an
    /// index file), `problems` (dicts with `kind`, `subject`, `detail`; the search index's are
    /// of kind `index`, and `update_index(rebuild=True)` repairs them), `unreachable`
    /// (`commits`, `blobs`, `chunks`: full ids), `redacted` (blob ids) and
    /// `derived_from_redacted` (commits whose content was made from redacted content:
    /// `redact(..., follow=True)` removes them too), `reused_call_ids` (branch name to how
    /// many tool calls in its view reuse an id an earlier call used: not a problem, compile
    /// sends each under a new id), `secrets_in_view` (branch name to how many messages in its
    /// view hold what looks like a credential: a warning, `redact_secrets()` scrubs them), and
    /// `past_checkpoint` (every branch's name to the commits a new handle reads past its view
    /// checkpoint: at most the checkpoint interval, the whole history without a checkpoint).
    fn fsck<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.with(py, |t| tract_core::fsck(t.store()))?;
        crate::vocabulary::dict(py, &tract_vocabulary::FsckReport::from(&r))
    }

    fn __repr__(&self) -> String {
        match self.get() {
            Ok(t) => match t.store().location() {
                Some(p) => format!("Tract({p})"),
                None => "Tract(<memory>)".into(),
            },
            Err(_) => "Tract(<closed>)".into(),
        }
    }
}

/// The core's sync options from Python's arguments.
fn sync_options(
    branches: Option<Vec<String>>,
    force: bool,
    settings: bool,
) -> PyResult<tract_core::SyncOptions<'static>> {
    let branches = branches
        .map(|specs| {
            specs
                .iter()
                .map(|s| tract_core::BranchSpec::parse(s))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
        .py()?;
    Ok(tract_core::SyncOptions {
        branches,
        force,
        settings,
        on_progress: None,
    })
}

/// A push's or pull's report as a dict, or DivergedError carrying it when a branch was refused.
fn sync_result<'py>(py: Python<'py>, r: &tract_core::SyncReport) -> PyResult<Bound<'py, PyDict>> {
    let report = sync_report(py, r)?;
    if r.is_complete() {
        Ok(report)
    } else {
        Err(crate::errors::refused(py, r, report))
    }
}

/// A sync report as a dict.
fn sync_report<'py>(py: Python<'py>, r: &tract_core::SyncReport) -> PyResult<Bound<'py, PyDict>> {
    crate::vocabulary::dict(py, &tract_vocabulary::SyncReport::from(r))
}

/// The list of Responses items a call was given.
fn items_of(items: &Bound<'_, PyAny>) -> PyResult<Vec<serde_json::Value>> {
    match from_py(items)? {
        serde_json::Value::Array(items) => Ok(items),
        _ => Err(pyo3::exceptions::PyTypeError::new_err(
            "items must be a list of dicts",
        )),
    }
}

/// Appends Responses items (`Tract::append_items`), with the caller's compare-and-swap.
fn append_items(
    t: &Tract,
    items: &[serde_json::Value],
    expected: Option<Rev>,
) -> Result<Vec<tract_core::CommitInfo>, Error> {
    t.append_items(items, &options(t, expected)?)
}
