//! The view: the ordered messages the model sees at a commit, folded along first parents.
//!
//! A view is built once per head and then extended in place by each new commit, so an agent
//! step costs O(1) rather than O(history). Alongside the entries it keeps which tool calls
//! have results, so token totals and provider-valid rendering need no extra pass.
//!
//! A view holds each message's [`Shape`], not its text: what pairing, tool queries, token
//! counts and the order of a rendering need. The text is read from the store by blob id when
//! a message is rendered, searched or changed ([`texts`]), so a view's memory follows its
//! length, not what was said.

pub mod ancestry;
pub(crate) mod cache;
pub(crate) mod checkpoint;
pub(crate) mod info;
pub mod ledger;
pub mod revision;

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId, CommitMap};
use crate::object::{Commit, Content, ContentPart, MergeStrategy, Message, Op, Role};
use crate::stats::Tally;
use crate::storage::store::snapshot::Snapshot;
use crate::tokens;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// The text of the synthetic result that stands in for a tool call with no recorded result.
pub const SYNTHETIC_RESULT: &str = "[tract] No result was recorded for this tool call: the agent stopped before the tool returned. Treat the call as failed.";
pub(crate) use crate::tokens::SYNTHETIC_RESULT_TOKENS;

/// What a view keeps of a message: all but its text (content, call arguments, metadata). Who
/// speaks, the tool calls' ids and names, the call a result answers, whether it reports a
/// failure and what kinds of parts its content has: enough to pair calls with results, answer
/// tool queries, count tokens and lay a rendering out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// Who speaks.
    pub role: Role,
    /// The tool name of a tool result, or a participant name.
    pub name: Option<String>,
    /// Each tool call's id and tool name, in the order the model made them.
    pub tool_calls: Vec<CallShape>,
    /// The call a tool result answers.
    pub tool_call_id: Option<String>,
    /// Whether a tool result reports a failure.
    pub is_error: bool,
    /// For content in parts, each part's provider type (`None` for a text part); `None` for
    /// text content.
    pub parts: Option<Vec<Option<String>>>,
}

/// A tool call as a [`Shape`] keeps it: its id and its tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallShape {
    /// The provider's call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
}

impl Shape {
    /// The shape of `m`.
    pub fn of(m: &Message) -> Shape {
        let parts = match &m.content {
            Content::Text(_) => None,
            Content::Parts(parts) => Some(
                parts
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text(_) => None,
                        ContentPart::Raw(raw) => Some(
                            crate::json::raw_value(raw)
                                .get("type")
                                .and_then(serde_json::Value::as_str)
                                .unwrap_or("?")
                                .to_string(),
                        ),
                    })
                    .collect(),
            ),
        };
        Shape {
            role: m.role,
            name: m.name.clone(),
            tool_calls: m
                .tool_calls
                .iter()
                .map(|c| CallShape {
                    id: c.id.clone(),
                    name: c.name.clone(),
                })
                .collect(),
            tool_call_id: m.tool_call_id.clone(),
            is_error: m.is_error,
            parts,
        }
    }

    /// Roughly the bytes it takes in memory.
    fn bytes(&self) -> usize {
        let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        std::mem::size_of::<Shape>()
            + text(&self.name)
            + text(&self.tool_call_id)
            + self
                .tool_calls
                .iter()
                .map(|c| std::mem::size_of::<CallShape>() + c.id.len() + c.name.len())
                .sum::<usize>()
            + self.parts.as_ref().map_or(0, |p| p.len() * 32)
    }
}

/// One position of the view.
#[derive(Debug, Clone)]
pub struct ViewEntry {
    /// The commit that created this position (an append).
    pub position: CommitId,
    /// The commit whose content is current: the position itself or its newest edit.
    pub commit: CommitId,
    /// The current blob: where the message's text is read from.
    pub blob: BlobId,
    /// What the view keeps of the current message (a new one for each edit, compress or
    /// rebuild, so a rendering kept across steps may key what it made of it by its address).
    pub shape: Arc<Shape>,
    /// Tokens of the message with its framing.
    pub tokens: u32,
    /// The position's own commit (the append), as stored.
    pub origin: Arc<Commit>,
    /// The edits of the position on this branch, oldest first (empty, and unallocated, for
    /// the many positions never edited).
    pub edits: Vec<CommitId>,
    /// For an assistant entry: the view index of the result of each tool call, in call order.
    pub(crate) results: Vec<Option<usize>>,
    /// For a tool entry: the view index of the call it answers (unpaired results are not
    /// sent).
    pub(crate) caller: Option<usize>,
}

/// The view at one commit.
#[derive(Debug, Clone, Default)]
pub struct View {
    head: Option<CommitId>,
    entries: Arc<Vec<ViewEntry>>,
    /// Position and edit commit ids to their entry index.
    index: CommitMap<usize>,
    /// Call ids with no result yet, to the entry that made the call.
    open_calls: HashMap<String, usize>,
    total_tokens: u64,
    orphan_tokens: u64,
    unanswered: u64,
    /// Entries that call tools, and tool results, in view order; overall and by tool name.
    /// Kept as commits are applied, so queries cost the number of matches, not the history.
    calls: ToolIndex,
    results: ToolIndex,
    /// How many calls in view hold each call id, and how many reuse one an earlier call
    /// holds: a compile looks for the calls to send under new ids only when some do.
    call_ids: CallIds,
    /// Compress commits applied but not yet spliced in: consecutive ones are spliced in one
    /// pass (see [`View::flush`]), so a compress of many runs costs O(view) once, not per run.
    deferred: Vec<(Vec<CommitId>, ViewEntry)>,
    /// The positions of the deferred summaries, to notice a compress of one of them.
    deferred_positions: CommitMap<()>,
    /// Its branch names a checkpoint this view was built from or written as, or one was tried
    /// (else the next write from it writes one).
    pub(crate) checkpointed: bool,
    /// The checkpoint it was loaded from or last written as.
    pub(crate) stored: Option<checkpoint::Stored>,
    /// How many entries, from the first, are as `stored` holds them: an entry changed (an
    /// edit, a result paired with its call) or moved (a compression) since lowers it, so the
    /// next checkpoint encodes again only from there.
    pub(crate) unchanged: usize,
}

/// Adds `idx` to sorted `list` once: at the end, as appends come (an edit that adds a call to
/// an earlier entry is the rare case that searches).
fn insert_sorted(list: &mut Vec<usize>, idx: usize) {
    match list.last() {
        None => list.push(idx),
        Some(&last) if last < idx => list.push(idx),
        Some(_) => {
            if let Err(at) = list.binary_search(&idx) {
                list.insert(at, idx);
            }
        }
    }
}

/// View indices of entries, in order, overall and per tool name.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ToolIndex {
    pub all: Vec<usize>,
    pub by_name: HashMap<String, Vec<usize>>,
}

impl ToolIndex {
    fn add(&mut self, idx: usize, name: &str) {
        insert_sorted(&mut self.all, idx);
        // Look up before inserting: most names are known, and a lookup allocates nothing.
        match self.by_name.get_mut(name) {
            Some(list) => insert_sorted(list, idx),
            None => {
                self.by_name.insert(name.to_string(), vec![idx]);
            }
        }
    }

    /// The entries for `name` (every entry without one), in view order.
    pub fn get(&self, name: Option<&str>) -> &[usize] {
        match name {
            None => &self.all,
            Some(n) => self.by_name.get(n).map_or(&[], Vec::as_slice),
        }
    }
}

/// How many calls in view hold each call id (by a 64-bit hash of the id: a collision only
/// makes a compile look, and find nothing), kept as the view changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CallIds {
    counts: HashMap<u64, u32, std::hash::BuildHasherDefault<crate::id::IdHasher>>,
    /// Calls beyond the first with their id: the sum over ids of their count less one.
    reused: u64,
}

impl CallIds {
    fn key(id: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        // SipHash with fixed keys: the same in every process, spread well over 64 bits.
        let mut h = std::hash::DefaultHasher::new();
        id.hash(&mut h);
        h.finish()
    }

    /// The calls of `shape` are in view.
    fn add(&mut self, shape: &Shape) {
        for call in &shape.tool_calls {
            let n = self.counts.entry(Self::key(&call.id)).or_insert(0);
            if *n > 0 {
                self.reused += 1;
            }
            *n += 1;
        }
    }

    /// The calls of `shape` left the view.
    fn remove(&mut self, shape: &Shape) {
        for call in &shape.tool_calls {
            let key = Self::key(&call.id);
            if let Some(n) = self.counts.get_mut(&key) {
                if *n > 1 {
                    self.reused -= 1;
                }
                *n -= 1;
                if *n == 0 {
                    self.counts.remove(&key);
                }
            }
        }
    }
}

/// Where the contents of commits come from while folding.
pub(crate) trait Source: Sync {
    fn commit(&self, id: &CommitId) -> Result<Commit>;
    fn blob(&self, id: &BlobId) -> Result<(Message, u32)>;
    /// A blob's message as a view keeps it, with its payload tokens.
    fn shape(&self, id: &BlobId) -> Result<(Arc<Shape>, u32)> {
        self.blob(id).map(|(m, t)| (Arc::new(Shape::of(&m)), t))
    }
    /// Whether blobs may be read from several threads at once.
    fn parallel(&self) -> bool {
        true
    }
    /// The commits from `head` back along first parents to `stop` (excluded), oldest first,
    /// and whether `stop` was reached.
    fn first_parents(
        &self,
        head: CommitId,
        stop: Option<CommitId>,
    ) -> Result<(Vec<(CommitId, Commit)>, bool)> {
        crate::storage::store::verify::walk_first_parents(Vec::new(), Some(head), stop, |id| {
            self.commit(id)
        })
    }
    /// Many blobs at once, when reading them together is cheaper than one by one from
    /// several threads (`None`: read them one by one).
    fn blobs(&self, _ids: &[BlobId]) -> Option<Result<Vec<(Message, u32)>>> {
        None
    }
    /// Many commits at once, when reading them together is cheaper than one by one (`None`:
    /// read them one by one).
    fn commits(&self, _ids: &[CommitId]) -> Option<Result<Vec<Commit>>> {
        None
    }
    /// A metadata value (view checkpoints are kept there).
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>>;
    /// Many metadata values, in order.
    fn metas(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.meta(k)).collect()
    }
    /// How many redactions the store has seen.
    fn redactions(&self) -> Result<u64>;
    /// Asks for the metadata `keys` together with the next read, where a store reads across
    /// a network (one round trip for both); nothing elsewhere.
    fn want_metas(&self, _keys: &[String]) {}
}

impl Source for Snapshot {
    fn commit(&self, id: &CommitId) -> Result<Commit> {
        Snapshot::commit(self, id)
    }
    fn blob(&self, id: &BlobId) -> Result<(Message, u32)> {
        Snapshot::blob(self, id)
    }
    fn first_parents(
        &self,
        head: CommitId,
        stop: Option<CommitId>,
    ) -> Result<(Vec<(CommitId, Commit)>, bool)> {
        Snapshot::first_parents(self, head, stop)
    }
    fn blobs(&self, ids: &[BlobId]) -> Option<Result<Vec<(Message, u32)>>> {
        self.batched().then(|| Snapshot::blobs(self, ids))
    }
    fn commits(&self, ids: &[CommitId]) -> Option<Result<Vec<Commit>>> {
        self.batched().then(|| Snapshot::commits(self, ids))
    }
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Snapshot::meta(self, key)
    }
    fn metas(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        Snapshot::metas(self, keys)
    }
    fn redactions(&self) -> Result<u64> {
        Snapshot::redactions(self)
    }
    fn want_metas(&self, keys: &[String]) {
        Snapshot::want_metas(self, keys)
    }
}

impl Source for crate::storage::store::writer::Writer {
    fn commit(&self, id: &CommitId) -> Result<Commit> {
        self.commit_object(id)
    }
    fn blob(&self, id: &BlobId) -> Result<(Message, u32)> {
        crate::storage::store::writer::Writer::blob(self, id)
    }
    // A write transaction opens its tables one user at a time.
    fn parallel(&self) -> bool {
        false
    }
    fn first_parents(
        &self,
        head: CommitId,
        stop: Option<CommitId>,
    ) -> Result<(Vec<(CommitId, Commit)>, bool)> {
        crate::storage::store::writer::Writer::first_parents(self, head, stop)
    }
    fn blobs(&self, ids: &[BlobId]) -> Option<Result<Vec<(Message, u32)>>> {
        crate::storage::store::writer::Writer::blobs(self, ids)
    }
    fn commits(&self, ids: &[CommitId]) -> Option<Result<Vec<Commit>>> {
        crate::storage::store::writer::Writer::commits(self, ids)
    }
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        crate::storage::store::writer::Writer::meta(self, key)
    }
    fn metas(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        crate::storage::store::writer::Writer::metas(self, keys)
    }
    fn redactions(&self) -> Result<u64> {
        crate::storage::store::writer::Writer::redactions(self)
    }
}

impl ViewEntry {
    /// Every version of the position, oldest first: the append, then each edit.
    pub fn versions(&self) -> Vec<CommitId> {
        std::iter::once(self.position)
            .chain(self.edits.iter().copied())
            .collect()
    }
}

impl View {
    /// The commit this view is of (`None` for an empty branch).
    pub fn head(&self) -> Option<CommitId> {
        self.head
    }

    /// The positions, in order.
    pub fn entries(&self) -> &[ViewEntry] {
        &self.entries
    }

    /// Shares the entries without copying them.
    pub(crate) fn shared_entries(&self) -> Arc<Vec<ViewEntry>> {
        Arc::clone(&self.entries)
    }

    /// How many messages are in view.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry a position or edit commit id belongs to.
    pub fn entry_of(&self, id: &CommitId) -> Option<&ViewEntry> {
        self.index.get(id).map(|&i| &self.entries[i])
    }

    /// The view index of a position or edit commit id.
    pub fn index_of(&self, id: &CommitId) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// Tokens of what compile sends: every entry framed, less results that answer no call,
    /// plus a synthetic result for every call without one, plus reply priming.
    pub fn token_count(&self) -> u64 {
        tokens::request_tokens(self.total_tokens, self.orphan_tokens, self.unanswered)
    }

    /// A view holding only `entries` (a part of another, for reading their messages): no
    /// head, no pairing or indexes beyond what the entries say.
    pub(crate) fn of_entries(entries: Vec<ViewEntry>) -> View {
        View {
            entries: Arc::new(entries),
            ..View::default()
        }
    }

    /// The index of the newest summary in view (the last compress boundary): it and what
    /// comes before it change only with the next compression, so they are the prefix a
    /// provider keeps cached from request to request.
    pub fn compress_boundary(&self) -> Option<usize> {
        newest_summary(&self.entries)
    }

    /// The tokens of the entries from index `i` on (framing included): what a change at `i`
    /// makes a provider's cache take in again.
    pub fn tokens_from(&self, i: usize) -> u64 {
        self.entries
            .get(i..)
            .unwrap_or_default()
            .iter()
            .map(|e| u64::from(e.tokens))
            .sum()
    }

    /// Roughly how many bytes the view takes in memory: its entries, their shapes and
    /// indexes (no text: a view holds none). O(1): the shapes of the first and last entries
    /// stand for the rest.
    pub fn estimated_bytes(&self) -> usize {
        let shape = match (self.entries.first(), self.entries.last()) {
            (Some(a), Some(b)) => (a.shape.bytes() + b.shape.bytes()) / 2,
            _ => 0,
        };
        let entry = std::mem::size_of::<ViewEntry>() + shape + 96;
        self.entries.len().saturating_mul(entry)
    }

    /// What the view holds, in the counts a branch listing keeps.
    pub fn tally(&self) -> Tally {
        Tally {
            messages: self.entries.len() as u64,
            total_tokens: self.total_tokens,
            orphan_tokens: self.orphan_tokens,
            unanswered: self.unanswered,
            open_calls: self.open_calls.keys().cloned().collect(),
        }
    }

    /// View indices of entries that call tools (`name`: that tool), in view order.
    pub(crate) fn call_entries(&self, name: Option<&str>) -> &[usize] {
        self.calls.get(name)
    }

    /// View indices of tool results (`name`: of that tool), in view order.
    pub(crate) fn result_entries(&self, name: Option<&str>) -> &[usize] {
        self.results.get(name)
    }

    /// The entry whose tool call `call_id` still waits for its result.
    pub(crate) fn open_call(&self, call_id: &str) -> Option<&ViewEntry> {
        self.open_calls.get(call_id).map(|&i| &self.entries[i])
    }

    /// Tool calls in view that have no result.
    pub fn unanswered_calls(&self) -> u64 {
        self.unanswered
    }

    /// Whether a call in view may hold an id an earlier call in view holds (`false`: surely
    /// none does). O(1): kept as the view changes.
    pub(crate) fn may_reuse_call_ids(&self) -> bool {
        self.call_ids.reused > 0
    }

    /// The view at `head`, extending `base` when `head` descends from it.
    pub(crate) fn build(
        src: &impl Source,
        head: Option<CommitId>,
        base: Option<View>,
    ) -> Result<View> {
        let Some(head) = head else {
            return Ok(View::default());
        };
        let stop = base.as_ref().and_then(|b| b.head);
        let (chain, reached_base) = first_parents(src, head, stop)?;
        let view = if reached_base {
            base.unwrap_or_default()
        } else {
            View::default()
        };
        view.fold(src, chain)
    }

    /// The messages `tip` added after `base` on its first-parent line, as a view of their own:
    /// what an append merge of `tip` brings in. Edits and compressions of messages from
    /// before `base` change nothing here (those messages are not in it). `None` when `base` is
    /// not on `tip`'s first-parent line.
    pub(crate) fn since(src: &impl Source, tip: CommitId, base: CommitId) -> Result<Option<View>> {
        let (chain, reached_base) = first_parents(src, tip, Some(base))?;
        if !reached_base {
            return Ok(None);
        }
        View::default().fold(src, chain).map(Some)
    }

    /// Applies `chain` (oldest first) on top of this view.
    pub(crate) fn fold(
        mut self,
        src: &impl Source,
        chain: Vec<(CommitId, Commit)>,
    ) -> Result<View> {
        let contents = load_blobs(src, &chain)?;
        for ((id, commit), content) in chain.into_iter().zip(contents) {
            self.apply_from(src, id, Arc::new(commit), content)?;
        }
        self.flush();
        Ok(self)
    }

    /// Applies one commit whose first parent is this view's head, reading the messages an
    /// append merge brings in from `src`.
    pub(crate) fn apply_from(
        &mut self,
        src: &impl Source,
        id: CommitId,
        commit: Arc<Commit>,
        content: Carried,
    ) -> Result<()> {
        let Op::Merge {
            base,
            strategy: MergeStrategy::Append,
            ..
        } = &commit.op
        else {
            return self.apply(id, commit, content);
        };
        let other =
            commit.parents.get(1).copied().ok_or_else(|| {
                Error::corrupt(format!("merge {} has no second parent", id.short()))
            })?;
        let merged = View::since(src, other, *base)?.ok_or_else(|| {
            Error::corrupt(format!(
                "merge {}: its base {} is not on the first-parent line of {}",
                id.short(),
                base.short(),
                other.short()
            ))
        })?;
        self.flush();
        let entries = Arc::unwrap_or_clone(merged.entries);
        Arc::make_mut(&mut self.entries).reserve(entries.len());
        for e in entries {
            self.push_entry(e);
        }
        self.head = Some(id);
        Ok(())
    }

    /// Applies one commit whose first parent is this view's head. An append merge needs the
    /// messages it brings in: see [`View::apply_from`].
    pub(crate) fn apply(
        &mut self,
        id: CommitId,
        commit: Arc<Commit>,
        content: Carried,
    ) -> Result<()> {
        if !self.deferred.is_empty() && !matches!(commit.op, Op::Compress { .. }) {
            self.flush();
        }
        match &commit.op {
            Op::Append
            | Op::Merge {
                strategy: MergeStrategy::ToolResult { .. },
                ..
            } => {
                let (blob, (shape, payload)) = content.ok_or_else(|| {
                    Error::corrupt(format!("{} {} has no blob", commit.op.name(), id.short()))
                })?;
                self.push(id, commit, blob, shape, payload);
                self.head = Some(id);
                return Ok(());
            }
            Op::Merge {
                strategy: MergeStrategy::Append,
                ..
            } => {
                return Err(Error::invalid_op(format!(
                    "merge {} needs the merged branch's messages to apply",
                    id.short()
                )));
            }
            Op::Edit { target } => {
                let (blob, (shape, payload)) = content
                    .ok_or_else(|| Error::corrupt(format!("edit {} has no blob", id.short())))?;
                // An edit whose target left the view (another branch) changes nothing here.
                if let Some(&i) = self.index.get(target) {
                    self.replace(i, id, blob, shape, payload);
                    self.index.insert(id, i);
                }
            }
            // A record keeps its owner's data on the branch; the model never sees it.
            Op::Record { .. } => {}
            Op::Compress { sources, .. } => {
                let (blob, (shape, payload)) = content.ok_or_else(|| {
                    Error::corrupt(format!("compress {} has no blob", id.short()))
                })?;
                // A compress of a summary still waiting to be spliced needs it spliced first.
                if sources
                    .iter()
                    .any(|s| self.deferred_positions.contains_key(s))
                {
                    self.flush();
                }
                let tokens = frame(&shape, payload);
                let sources = sources.clone();
                let summary = ViewEntry {
                    position: id,
                    commit: id,
                    blob,
                    results: Vec::new(),
                    shape,
                    tokens,
                    origin: commit,
                    edits: Vec::new(),
                    caller: None,
                };
                self.deferred_positions.insert(id, ());
                self.deferred.push((sources, summary));
                self.head = Some(id);
                return Ok(());
            }
        }
        self.head = Some(id);
        Ok(())
    }

    fn push(
        &mut self,
        id: CommitId,
        commit: Arc<Commit>,
        blob: BlobId,
        shape: Arc<Shape>,
        payload: u32,
    ) {
        let tokens = frame(&shape, payload);
        self.push_entry(ViewEntry {
            position: id,
            commit: id,
            blob,
            results: vec![None; shape.tool_calls.len()],
            shape,
            tokens,
            origin: commit,
            edits: Vec::new(),
            caller: None,
        });
    }

    /// Adds an entry at the end, pairing tool calls and results and updating the indexes.
    fn push_entry(&mut self, mut entry: ViewEntry) {
        let idx = self.entries.len();
        let framed = entry.tokens;
        let message = Arc::clone(&entry.shape);
        entry.results = vec![None; message.tool_calls.len()];
        entry.caller = None;
        self.total_tokens += u64::from(framed);
        self.call_ids.add(&message);
        self.index.insert(entry.position, idx);
        for e in &entry.edits {
            self.index.insert(*e, idx);
        }
        let entries = Arc::make_mut(&mut self.entries);
        match message.role {
            Role::Assistant => {
                for call in &message.tool_calls {
                    self.calls.add(idx, &call.name);
                    // A reused call id leaves the earlier call unanswered for good.
                    self.open_calls.insert(call.id.clone(), idx);
                    self.unanswered += 1;
                }
            }
            Role::Tool => {
                self.results
                    .add(idx, message.name.as_deref().unwrap_or_default());
                let call_id = message.tool_call_id.as_deref().unwrap_or_default();
                match self.open_calls.remove(call_id) {
                    Some(caller) => {
                        let slot = entries[caller]
                            .shape
                            .tool_calls
                            .iter()
                            .position(|c| c.id == call_id);
                        if let Some(k) = slot {
                            self.unchanged = self.unchanged.min(caller);
                            entries[caller].results[k] = Some(idx);
                            entry.caller = Some(caller);
                            self.unanswered -= 1;
                        }
                    }
                    None => self.orphan_tokens += u64::from(framed),
                }
            }
            Role::System | Role::User => {}
        }
        entries.push(entry);
    }

    /// Splices every deferred compress into the entries in one pass. Callers that apply
    /// commits call this before reading the view.
    pub(crate) fn flush(&mut self) {
        if self.deferred.is_empty() {
            return;
        }
        let runs = self.deferred_runs();
        self.deferred_positions.clear();
        if self.splice_keeps_pairing(&runs) {
            self.splice_in_place(runs);
        } else {
            self.splice_and_replay(runs);
        }
    }

    /// The deferred compresses as `(first, last, summary)` spans of view indices, in view
    /// order, without overlaps.
    fn deferred_runs(&mut self) -> Vec<(usize, usize, ViewEntry)> {
        let mut runs: Vec<(usize, usize, ViewEntry)> = std::mem::take(&mut self.deferred)
            .into_iter()
            .filter_map(|(sources, summary)| {
                // Sources are a contiguous run when written; on another branch some may be
                // missing, and then the span of those in view is replaced.
                let found = sources.iter().filter_map(|s| self.index.get(s).copied());
                let (lo, hi) = found.fold((usize::MAX, 0), |(lo, hi), i| (lo.min(i), hi.max(i)));
                (lo <= hi).then_some((lo, hi, summary))
            })
            .collect();
        runs.sort_by_key(|r| r.0);
        // Runs never overlap when written; a later overlapping one is dropped.
        let mut covered_to: Option<usize> = None;
        runs.retain(|&(lo, hi, _)| {
            let keep = covered_to.is_none_or(|c| lo > c);
            if keep {
                covered_to = Some(hi);
            }
            keep
        });
        runs
    }

    /// Whether removing the spans leaves every remaining call paired as a replay of the
    /// remaining entries would pair it: no call is removed without its results or the other
    /// way round, and no removed call could have taken a call id over from an earlier call
    /// still waiting for its result. Compressing whole tool turns always qualifies.
    fn splice_keeps_pairing(&self, runs: &[(usize, usize, ViewEntry)]) -> bool {
        let Some(last) = runs.last().map(|r| r.1) else {
            return true;
        };
        let inside = |i: usize, lo: usize, hi: usize| (lo..=hi).contains(&i);
        for &(lo, hi, _) in runs {
            for e in &self.entries[lo..=hi] {
                if e.results.iter().flatten().any(|&r| !inside(r, lo, hi))
                    || e.caller.is_some_and(|c| !inside(c, lo, hi))
                    || e.results.iter().any(Option::is_none)
                {
                    return false;
                }
            }
        }
        // An unanswered call before the last span may be reopened by removing a later call
        // that reused its id; replaying decides that exactly.
        self.unanswered == 0
            || !self
                .calls
                .all
                .iter()
                .take_while(|&&i| i <= last)
                .any(|&i| self.entries[i].results.iter().any(Option::is_none))
    }

    /// Replaces each span with its summary and shifts every index after it, keeping the
    /// pairing and the indexes without replaying the view.
    fn splice_in_place(&mut self, runs: Vec<(usize, usize, ViewEntry)>) {
        const GONE: usize = usize::MAX;
        // An entry before the first span may pair with one after it, at another distance now.
        self.unchanged = 0;
        let entries = Arc::make_mut(&mut self.entries);
        for &(lo, hi, ref summary) in &runs {
            self.total_tokens += u64::from(summary.tokens);
            self.call_ids.add(&summary.shape);
            for e in &entries[lo..=hi] {
                self.total_tokens -= u64::from(e.tokens);
                self.call_ids.remove(&e.shape);
                if e.shape.role == Role::Tool && e.caller.is_none() {
                    self.orphan_tokens -= u64::from(e.tokens);
                }
                for id in std::iter::once(&e.position).chain(&e.edits) {
                    self.index.remove(id);
                }
            }
        }
        // Compact in place (a new vector of the whole view would cost more in page faults
        // than the moves): kept entries slide down over removed ones, which gather past the
        // write cursor and are dropped at the end.
        let n = entries.len();
        let mut remap = vec![GONE; n];
        let mut summaries = Vec::with_capacity(runs.len());
        let mut swapped_out = Vec::with_capacity(runs.len());
        let (mut w, mut r) = (0, 0);
        for (lo, hi, mut summary) in runs {
            while r < lo {
                entries.swap(w, r);
                remap[r] = w;
                (w, r) = (w + 1, r + 1);
            }
            summaries.push((summary.position, w));
            std::mem::swap(&mut entries[w], &mut summary);
            swapped_out.push(summary);
            (w, r) = (w + 1, hi + 1);
        }
        while r < n {
            entries.swap(w, r);
            remap[r] = w;
            (w, r) = (w + 1, r + 1);
        }
        entries.truncate(w);
        drop(swapped_out);
        for e in entries.iter_mut() {
            for r in e.results.iter_mut().flatten() {
                *r = remap[*r];
            }
            if let Some(c) = &mut e.caller {
                *c = remap[*c];
            }
        }
        for i in self.index.values_mut() {
            *i = remap[*i];
        }
        self.index.extend(summaries);
        for i in self.open_calls.values_mut() {
            *i = remap[*i];
        }
        for index in [&mut self.calls, &mut self.results] {
            for list in std::iter::once(&mut index.all).chain(index.by_name.values_mut()) {
                list.retain_mut(|i| {
                    *i = remap[*i];
                    *i != GONE
                });
            }
            index.by_name.retain(|_, list| !list.is_empty());
        }
    }

    /// Replaces each span with its summary and rebuilds pairing and indexes by replaying
    /// the remaining entries in order.
    fn splice_and_replay(&mut self, runs: Vec<(usize, usize, ViewEntry)>) {
        let old = std::mem::take(Arc::make_mut(&mut self.entries));
        let mut kept = Vec::with_capacity(old.len());
        let mut runs = runs.into_iter().peekable();
        let mut skip_to = None;
        for (i, e) in old.into_iter().enumerate() {
            if let Some((_, hi, summary)) = runs.next_if(|r| r.0 == i) {
                kept.push(summary);
                skip_to = Some(hi);
            }
            if skip_to.is_some_and(|hi| i <= hi) {
                continue;
            }
            kept.push(e);
        }
        let head = self.head;
        *self = View::default();
        self.head = head;
        Arc::make_mut(&mut self.entries).reserve(kept.len());
        self.index.reserve(kept.len());
        for e in kept {
            self.push_entry(e);
        }
    }

    fn replace(&mut self, i: usize, id: CommitId, blob: BlobId, message: Arc<Shape>, payload: u32) {
        let framed = frame(&message, payload);
        self.unchanged = self.unchanged.min(i);
        let entries = Arc::make_mut(&mut self.entries);
        let e = &mut entries[i];
        self.total_tokens = self.total_tokens - u64::from(e.tokens) + u64::from(framed);
        if e.shape.role == Role::Tool && e.caller.is_none() {
            self.orphan_tokens = self.orphan_tokens - u64::from(e.tokens) + u64::from(framed);
        }
        // Calls an edit adds after the message's own (an imported API response that grew
        // line by line) are open like those of an append; an edit otherwise keeps the calls.
        let old = &e.shape.tool_calls;
        let added: Vec<CallShape> = if message.role == Role::Assistant
            && message.tool_calls.len() > old.len()
            && old
                .iter()
                .zip(&message.tool_calls)
                .all(|(a, b)| a.id == b.id)
        {
            message.tool_calls[old.len()..].to_vec()
        } else {
            Vec::new()
        };
        e.results.resize(e.results.len() + added.len(), None);
        self.call_ids.remove(&e.shape);
        self.call_ids.add(&message);
        e.commit = id;
        e.blob = blob;
        e.shape = message;
        e.tokens = framed;
        e.edits.push(id);
        for call in added {
            self.calls.add(i, &call.name);
            self.open_calls.insert(call.id, i);
            self.unanswered += 1;
        }
    }
}

/// The commits from `head` back along first parents to `stop` (excluded), oldest first, and
/// whether `stop` was reached.
fn first_parents(
    src: &impl Source,
    head: CommitId,
    stop: Option<CommitId>,
) -> Result<(Vec<(CommitId, Commit)>, bool)> {
    src.first_parents(head, stop)
}

/// The index of the newest entry of `entries` that a compression made (a summary).
pub(crate) fn newest_summary(entries: &[ViewEntry]) -> Option<usize> {
    entries
        .iter()
        .rposition(|e| matches!(e.origin.op, Op::Compress { .. }))
}

/// Below this many blobs, threads cost more than they save.
const PARALLEL_MIN: usize = 2048;

/// What a commit carries for the view: its blob, and its message's shape with payload tokens.
pub(crate) type Carried = Option<(BlobId, (Arc<Shape>, u32))>;

/// The shapes of the blobs `ids`, in order: read together where the store reads many at once,
/// else one by one (across the machine's cores for many).
pub(crate) fn shapes(src: &impl Source, ids: &[BlobId]) -> Result<Vec<(Arc<Shape>, u32)>> {
    // In batches: a batch's messages are dropped before the next is read.
    const BATCH: usize = 4096;
    let mut out = Vec::with_capacity(ids.len());
    for part in ids.chunks(BATCH) {
        match src.blobs(part) {
            Some(loaded) => out.extend(
                loaded?
                    .into_iter()
                    .map(|(m, t)| (Arc::new(Shape::of(&m)), t)),
            ),
            None => out.extend(load_many(src, part, |b| src.shape(b))?),
        }
    }
    Ok(out)
}

/// The messages of the blobs `ids`, text included, read from `src`, in order: what a rendering,
/// a search or a change reads (the view keeps only their shapes).
pub(crate) fn texts(src: &impl Source, ids: &[BlobId]) -> Result<Vec<Arc<Message>>> {
    let loaded = match src.blobs(ids) {
        Some(loaded) => loaded?,
        None => load_many(src, ids, |b| src.blob(b))?,
    };
    Ok(loaded.into_iter().map(|(m, _)| Arc::new(m)).collect())
}

/// The blob of each commit in `chain` as the view keeps it, in order.
fn load_blobs(src: &impl Source, chain: &[(CommitId, Commit)]) -> Result<Vec<Carried>> {
    let ids: Vec<BlobId> = chain.iter().filter_map(|(_, c)| c.blob).collect();
    let mut loaded = ids.iter().copied().zip(shapes(src, &ids)?);
    Ok(chain
        .iter()
        .map(|(_, c)| c.blob.and_then(|_| loaded.next()))
        .collect())
}

/// `read` of each of `items`, in order. Decoding (decompression, allocation) is most of a cold
/// build, so many items are split across the machine's cores when `src` may be read from
/// several threads.
fn load_many<T: Sync, R: Send>(
    src: &impl Source,
    items: &[T],
    read: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let min = match src.parallel() {
        true => PARALLEL_MIN,
        false => usize::MAX,
    };
    crate::parallel::map(items.iter().collect(), min, read)
}

/// Framed tokens of a message: tool messages are sent without their name.
fn frame(m: &Shape, payload: u32) -> u32 {
    tokens::framed(payload, m.name.is_some() && m.role != Role::Tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so a failure can be replayed.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    struct Builder {
        view: View,
        next: u64,
    }

    impl Builder {
        fn commit(&mut self, op: Op, message: Message) -> CommitId {
            self.next += 1;
            let id = CommitId::of(&self.next.to_le_bytes());
            let bytes = message.encode().unwrap();
            let payload = tokens::count_message(&message);
            let commit = Commit {
                parents: self.view.head().into_iter().collect(),
                op,
                blob: Some(BlobId::of(&bytes)),
                timestamp_us: self.next,
                message: None,
            };
            let blob = BlobId::of(&bytes);
            let shape = Arc::new(Shape::of(&message));
            self.view
                .apply(id, Arc::new(commit), Some((blob, (shape, payload))))
                .unwrap();
            id
        }

        fn append(&mut self, message: Message) -> CommitId {
            self.commit(Op::Append, message)
        }
    }

    fn assistant(calls: &[(&str, &str)]) -> Message {
        let mut m = Message::text(Role::Assistant, "let me look");
        m.tool_calls = calls
            .iter()
            .map(|(id, name)| crate::object::ToolCall {
                id: (*id).to_string(),
                name: (*name).to_string(),
                arguments: "{}".into(),
            })
            .collect();
        m
    }

    /// Everything a view derives from its entries, in a comparable form.
    fn fingerprint(v: &View) -> String {
        let entries: Vec<_> = v
            .entries()
            .iter()
            .map(|e| {
                (
                    e.position.short(),
                    e.commit.short(),
                    &e.results,
                    e.caller,
                    e.tokens,
                )
            })
            .collect();
        let sorted = |mut list: Vec<String>| {
            list.sort();
            list
        };
        let index = sorted(
            v.index
                .iter()
                .map(|(k, i)| format!("{}={i}", k.short()))
                .collect(),
        );
        let open = sorted(
            v.open_calls
                .iter()
                .map(|(k, i)| format!("{k}={i}"))
                .collect(),
        );
        let names = |t: &ToolIndex| {
            sorted(
                t.by_name
                    .iter()
                    .map(|(k, l)| format!("{k}={l:?}"))
                    .collect(),
            )
        };
        format!(
            "{entries:?}\n{} {} {}\n{index:?}\n{open:?}\n{:?} {:?}\n{:?} {:?}",
            v.total_tokens,
            v.orphan_tokens,
            v.unanswered,
            v.calls.all,
            names(&v.calls),
            v.results.all,
            names(&v.results),
        )
    }

    /// A transcript with parallel calls, orphan results, reused call ids, edits and (with
    /// `missing`) calls without results; ends with a turn whose call still waits for its result.
    fn transcript(rng: &mut Rng, missing: bool) -> Builder {
        let mut b = Builder {
            view: View::default(),
            next: 0,
        };
        b.append(Message::text(Role::System, "you are an agent"));
        for turn in 0..30 {
            b.append(Message::text(Role::User, format!("task {turn}")));
            let calls: Vec<(String, &str)> = (0..rng.below(3))
                .map(|k| {
                    let id = if rng.below(12) == 0 {
                        "reused".to_string()
                    } else {
                        format!("c{turn}.{k}")
                    };
                    (id, ["grep", "bash"][k as usize % 2])
                })
                .collect();
            let refs: Vec<(&str, &str)> = calls.iter().map(|(i, n)| (i.as_str(), *n)).collect();
            b.append(assistant(&refs));
            for (id, name) in &calls {
                if !missing || rng.below(10) != 0 {
                    b.append(Message::tool_result(
                        id.as_str(),
                        *name,
                        format!("out {id}"),
                        false,
                    ));
                }
            }
            if rng.below(15) == 0 {
                b.append(Message::tool_result("nobody", "grep", "stray", false));
            }
            if rng.below(4) == 0 {
                let i = rng.below(b.view.len() as u64) as usize;
                // Edits change content only, as every edit the API makes.
                let e = &b.view.entries()[i];
                let mut edited = Message::text(e.shape.role, "edited");
                edited.name = e.shape.name.clone();
                edited.tool_call_id = e.shape.tool_call_id.clone();
                edited.is_error = e.shape.is_error;
                edited.tool_calls = e
                    .shape
                    .tool_calls
                    .iter()
                    .map(|c| crate::object::ToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: "{}".into(),
                    })
                    .collect();
                let target = e.position;
                b.commit(Op::Edit { target }, edited);
            }
            b.append(Message::text(Role::Assistant, format!("answer {turn}")));
        }
        b.append(assistant(&[("last", "grep")]));
        b
    }

    /// Queues a compress of each span (view index ranges) without splicing it.
    fn queue(b: &mut Builder, spans: &[(usize, usize)]) {
        for &(lo, hi) in spans {
            let sources = b.view.entries()[lo..=hi]
                .iter()
                .map(|e| e.position)
                .collect();
            let op = Op::Compress {
                sources,
                preserved: Vec::new(),
                summarizer: "test".into(),
                params: Default::default(),
            };
            b.commit(
                op,
                Message::text(Role::User, format!("summary of {lo}..{hi}")),
            );
        }
    }

    #[test]
    fn splicing_in_place_matches_a_replay() {
        let mut in_place = 0;
        for seed in 1..200u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut b = transcript(&mut rng, seed % 4 != 0);
            let n = b.view.len();
            // Whole turns (user .. answer) or arbitrary spans, a few per compress.
            let whole_turns = seed % 2 == 0;
            let starts: Vec<usize> = if whole_turns {
                (1..n)
                    .filter(|&i| b.view.entries()[i].shape.role == Role::User)
                    .collect()
            } else {
                (1..n).collect()
            };
            let mut spans = Vec::new();
            let mut from = 0;
            for _ in 0..1 + rng.below(4) {
                let candidates: Vec<usize> = starts.iter().copied().filter(|&s| s > from).collect();
                if candidates.len() < 2 {
                    break;
                }
                let lo = candidates[rng.below(candidates.len() as u64 - 1) as usize];
                let ends: Vec<usize> = starts.iter().copied().filter(|&s| s > lo).collect();
                let hi = ends[rng.below(ends.len().min(3) as u64) as usize] - 1;
                spans.push((lo, hi));
                from = hi;
            }
            queue(&mut b, &spans);
            let mut replayed = b.view.clone();
            let runs = replayed.deferred_runs();
            replayed.splice_and_replay(runs);
            let mut spliced = b.view.clone();
            spliced.flush();
            let runs = b.view.deferred_runs();
            if b.view.splice_keeps_pairing(&runs) {
                in_place += 1;
            }
            assert_eq!(fingerprint(&spliced), fingerprint(&replayed), "seed {seed}");
            // Later commits pair with what the splice left open, as after a replay.
            for v in [&mut spliced, &mut replayed] {
                let mut later = Builder {
                    view: std::mem::take(v),
                    next: 10_000,
                };
                later.append(Message::tool_result("last", "grep", "late", false));
                later.append(Message::tool_result("reused", "grep", "late", false));
                *v = later.view;
            }
            assert_eq!(
                fingerprint(&spliced),
                fingerprint(&replayed),
                "seed {seed}, later"
            );
        }
        assert!(
            in_place > 50,
            "only {in_place} cases took the in-place path"
        );
    }

    #[test]
    fn synthetic_token_constant_matches_the_tokenizer() {
        assert_eq!(
            tokens::count_text(SYNTHETIC_RESULT),
            SYNTHETIC_RESULT_TOKENS
        );
    }
}
