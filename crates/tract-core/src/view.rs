//! The view: the ordered messages the model sees at a commit, folded along first parents.
//!
//! A view is built once per head and then extended in place by each new commit, so an agent
//! step costs O(1) rather than O(history). Alongside the entries it keeps which tool calls
//! have results, so token totals and provider-valid rendering need no extra pass.

use crate::error::{Error, Result};
use crate::id::{IdMap, ObjectId};
use crate::object::{Commit, Message, Op, Role};
use crate::store::Snapshot;
use crate::tokens;
use std::collections::HashMap;
use std::sync::Arc;

/// The text of the synthetic result that stands in for a tool call with no recorded result.
pub const SYNTHETIC_RESULT: &str = "[tract] No result was recorded for this tool call: the agent stopped before the tool returned. Treat the call as failed.";
/// Payload tokens of [`SYNTHETIC_RESULT`] (checked against the tokenizer by a test, so that
/// reading commands never load it).
pub(crate) const SYNTHETIC_RESULT_TOKENS: u32 = 26;

/// One position of the view.
#[derive(Debug, Clone)]
pub struct ViewEntry {
    /// The commit that created this position (an append).
    pub position: ObjectId,
    /// The commit whose content is current: the position itself or its newest edit.
    pub commit: ObjectId,
    /// The current blob.
    pub blob: ObjectId,
    /// The current message.
    pub message: Arc<Message>,
    /// Tokens of the message with its framing.
    pub tokens: u32,
    /// The position's own commit (the append), as stored.
    pub origin: Arc<Commit>,
    /// The edits of the position on this branch, oldest first (empty, and unallocated, for
    /// the many positions never edited).
    pub edits: Vec<ObjectId>,
    /// For an assistant entry: the view index of the result of each tool call, in call order.
    pub(crate) results: Vec<Option<usize>>,
    /// For a tool entry: whether it answers a call (unpaired results are not sent).
    pub(crate) paired: bool,
}

/// The view at one commit.
#[derive(Debug, Clone, Default)]
pub struct View {
    head: Option<ObjectId>,
    entries: Arc<Vec<ViewEntry>>,
    /// Position and edit commit ids to their entry index.
    index: IdMap<usize>,
    /// Call ids with no result yet, to the entry that made the call.
    open_calls: HashMap<String, usize>,
    total_tokens: u64,
    orphan_tokens: u64,
    unanswered: u64,
    /// Entries that call tools, and tool results, in view order; overall and by tool name.
    /// Kept as commits are applied, so queries cost the number of matches, not the history.
    calls: ToolIndex,
    results: ToolIndex,
    /// Compress commits applied but not yet spliced in: consecutive ones are spliced in one
    /// pass (see [`View::flush`]), so a compress of many runs costs O(view) once, not per run.
    deferred: Vec<(Vec<ObjectId>, ViewEntry)>,
    /// The positions of the deferred summaries, to notice a compress of one of them.
    deferred_positions: IdMap<()>,
}

/// View indices of entries, in order, overall and per tool name.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolIndex {
    pub all: Vec<usize>,
    pub by_name: HashMap<String, Vec<usize>>,
}

impl ToolIndex {
    fn add(&mut self, idx: usize, name: &str) {
        if self.all.last() != Some(&idx) {
            self.all.push(idx);
        }
        // Look up before inserting: most names are known, and a lookup allocates nothing.
        match self.by_name.get_mut(name) {
            Some(list) if list.last() == Some(&idx) => {}
            Some(list) => list.push(idx),
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

/// Where the contents of commits come from while folding.
pub(crate) trait Source: Sync {
    fn commit(&self, id: &ObjectId) -> Result<Commit>;
    fn blob(&self, id: &ObjectId) -> Result<(Message, u32)>;
}

impl Source for Snapshot {
    fn commit(&self, id: &ObjectId) -> Result<Commit> {
        Snapshot::commit(self, id)
    }
    fn blob(&self, id: &ObjectId) -> Result<(Message, u32)> {
        Snapshot::blob(self, id)
    }
}

impl ViewEntry {
    /// Every version of the position, oldest first: the append, then each edit.
    pub fn versions(&self) -> Vec<ObjectId> {
        std::iter::once(self.position)
            .chain(self.edits.iter().copied())
            .collect()
    }
}

impl View {
    /// The commit this view is of (`None` for an empty branch).
    pub fn head(&self) -> Option<ObjectId> {
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
    pub fn entry_of(&self, id: &ObjectId) -> Option<&ViewEntry> {
        self.index.get(id).map(|&i| &self.entries[i])
    }

    /// The view index of a position or edit commit id.
    pub fn index_of(&self, id: &ObjectId) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// Tokens of what compile sends: every entry framed, less results that answer no call,
    /// plus a synthetic result for every call without one, plus reply priming.
    pub fn token_count(&self) -> u64 {
        self.total_tokens - self.orphan_tokens
            + self.unanswered * u64::from(synthetic_framed())
            + u64::from(tokens::REPLY_PRIMING)
    }

    /// View indices of entries that call tools (`name`: that tool), in view order.
    pub(crate) fn call_entries(&self, name: Option<&str>) -> &[usize] {
        self.calls.get(name)
    }

    /// View indices of tool results (`name`: of that tool), in view order.
    pub(crate) fn result_entries(&self, name: Option<&str>) -> &[usize] {
        self.results.get(name)
    }

    /// Resolves `rev` (a full id, unique prefix, branch or `HEAD~N`) and finds its view index.
    /// A full id already in view needs no store lookup: most calls pass ids a query returned.
    pub(crate) fn locate(&self, snap: &Snapshot, rev: &str) -> Result<(ObjectId, Option<usize>)> {
        if rev.len() == 64
            && let Ok(id) = ObjectId::from_hex(rev)
            && let Some(i) = self.index_of(&id)
        {
            return Ok((id, Some(i)));
        }
        let id = crate::tract::resolve_in(snap, rev)?;
        Ok((id, self.index_of(&id)))
    }

    /// The view index of `rev`, which must be a message in view (a position or an edit of one).
    pub(crate) fn position_in_view(&self, snap: &Snapshot, rev: &str) -> Result<usize> {
        let (id, index) = self.locate(snap, rev)?;
        index.ok_or_else(|| {
            Error::invalid_op(format!(
                "commit {} is not a message in the current view",
                id.short()
            ))
        })
    }

    /// Tool calls in view that have no result.
    pub fn unanswered_calls(&self) -> u64 {
        self.unanswered
    }

    /// The view at `head`, extending `base` when `head` descends from it.
    pub(crate) fn build(
        src: &impl Source,
        head: Option<ObjectId>,
        base: Option<View>,
    ) -> Result<View> {
        let Some(head) = head else {
            return Ok(View::default());
        };
        let stop = base.as_ref().and_then(|b| b.head);
        let mut chain = Vec::new();
        let mut cursor = Some(head);
        while let Some(id) = cursor {
            if Some(id) == stop {
                break;
            }
            let commit = src.commit(&id)?;
            cursor = commit.parent();
            chain.push((id, commit));
        }
        let reached_base = cursor.is_some() && cursor == stop;
        let mut view = if reached_base {
            base.unwrap_or_default()
        } else {
            View::default()
        };
        chain.reverse();
        let contents = load_blobs(src, &chain)?;
        for ((id, commit), content) in chain.into_iter().zip(contents) {
            view.apply(id, Arc::new(commit), content)?;
        }
        view.flush();
        Ok(view)
    }

    /// Applies one commit whose first parent is this view's head.
    pub(crate) fn apply(
        &mut self,
        id: ObjectId,
        commit: Arc<Commit>,
        content: Option<(ObjectId, (Message, u32))>,
    ) -> Result<()> {
        if !self.deferred.is_empty() && !matches!(commit.op, Op::Compress { .. }) {
            self.flush();
        }
        match &commit.op {
            Op::Append => {
                let (blob, (message, payload)) = content
                    .ok_or_else(|| Error::corrupt(format!("append {} has no blob", id.short())))?;
                self.push(id, commit, blob, Arc::new(message), payload);
                self.head = Some(id);
                return Ok(());
            }
            Op::Edit { target } => {
                let (blob, (message, payload)) = content
                    .ok_or_else(|| Error::corrupt(format!("edit {} has no blob", id.short())))?;
                // An edit whose target left the view (another branch) changes nothing here.
                if let Some(&i) = self.index.get(target) {
                    self.replace(i, id, blob, Arc::new(message), payload);
                    self.index.insert(id, i);
                }
            }
            Op::Compress { sources, .. } => {
                let (blob, (message, payload)) = content.ok_or_else(|| {
                    Error::corrupt(format!("compress {} has no blob", id.short()))
                })?;
                // A compress of a summary still waiting to be spliced needs it spliced first.
                if sources
                    .iter()
                    .any(|s| self.deferred_positions.contains_key(s))
                {
                    self.flush();
                }
                let message = Arc::new(message);
                let tokens = frame(&message, payload);
                let sources = sources.clone();
                let summary = ViewEntry {
                    position: id,
                    commit: id,
                    blob,
                    results: Vec::new(),
                    message,
                    tokens,
                    origin: commit,
                    edits: Vec::new(),
                    paired: false,
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
        id: ObjectId,
        commit: Arc<Commit>,
        blob: ObjectId,
        message: Arc<Message>,
        payload: u32,
    ) {
        let tokens = frame(&message, payload);
        self.push_entry(ViewEntry {
            position: id,
            commit: id,
            blob,
            results: vec![None; message.tool_calls.len()],
            message,
            tokens,
            origin: commit,
            edits: Vec::new(),
            paired: false,
        });
    }

    /// Adds an entry at the end, pairing tool calls and results and updating the indexes.
    fn push_entry(&mut self, mut entry: ViewEntry) {
        let idx = self.entries.len();
        let framed = entry.tokens;
        let message = Arc::clone(&entry.message);
        entry.results = vec![None; message.tool_calls.len()];
        entry.paired = false;
        self.total_tokens += u64::from(framed);
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
                            .message
                            .tool_calls
                            .iter()
                            .position(|c| c.id == call_id);
                        if let Some(k) = slot {
                            entries[caller].results[k] = Some(idx);
                            entry.paired = true;
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

    /// Splices every deferred compress into the entries in one pass, then rebuilds pairing
    /// and indexes. Callers that apply commits call this before reading the view.
    pub(crate) fn flush(&mut self) {
        if self.deferred.is_empty() {
            return;
        }
        let mut runs: Vec<(usize, usize, Option<ViewEntry>)> = std::mem::take(&mut self.deferred)
            .into_iter()
            .filter_map(|(sources, summary)| {
                // Sources are a contiguous run when written; on another branch some may be
                // missing, and then the span of those in view is replaced.
                let found = sources.iter().filter_map(|s| self.index.get(s).copied());
                let (lo, hi) = found.fold((usize::MAX, 0), |(lo, hi), i| (lo.min(i), hi.max(i)));
                (lo <= hi).then_some((lo, hi, Some(summary)))
            })
            .collect();
        runs.sort_by_key(|r| r.0);
        let old = std::mem::take(Arc::make_mut(&mut self.entries));
        let mut kept = Vec::with_capacity(old.len());
        let mut r = 0;
        let mut covered_to = None;
        for (i, e) in old.into_iter().enumerate() {
            while r < runs.len() && runs[r].0 == i {
                // Runs never overlap when written; a later overlapping one is dropped.
                if covered_to.is_none_or(|c| i > c) {
                    covered_to = Some(runs[r].1);
                    kept.extend(runs[r].2.take());
                }
                r += 1;
            }
            if covered_to.is_some_and(|c| i <= c) {
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

    fn replace(
        &mut self,
        i: usize,
        id: ObjectId,
        blob: ObjectId,
        message: Arc<Message>,
        payload: u32,
    ) {
        let framed = frame(&message, payload);
        let entries = Arc::make_mut(&mut self.entries);
        let e = &mut entries[i];
        self.total_tokens = self.total_tokens - u64::from(e.tokens) + u64::from(framed);
        if e.message.role == Role::Tool && !e.paired {
            self.orphan_tokens = self.orphan_tokens - u64::from(e.tokens) + u64::from(framed);
        }
        e.commit = id;
        e.blob = blob;
        e.message = message;
        e.tokens = framed;
        e.edits.push(id);
    }
}

/// Below this many blobs, threads cost more than they save.
const PARALLEL_MIN: usize = 2048;

type Loaded = Option<(ObjectId, (Message, u32))>;

/// The blob of each commit in `chain`, in order. Decoding (decompression, allocation) is most
/// of a cold build, so long chains are split across the machine's cores.
fn load_blobs(src: &impl Source, chain: &[(ObjectId, Commit)]) -> Result<Vec<Loaded>> {
    let load = |part: &[(ObjectId, Commit)]| -> Result<Vec<Loaded>> {
        part.iter()
            .map(|(_, c)| c.blob.map(|b| src.blob(&b).map(|m| (b, m))).transpose())
            .collect()
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads < 2 || chain.len() < PARALLEL_MIN {
        return load(chain);
    }
    let size = chain.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = chain
            .chunks(size)
            .map(|part| scope.spawn(move || load(part)))
            .collect();
        let mut out = Vec::with_capacity(chain.len());
        for h in handles {
            let part = h
                .join()
                .map_err(|_| Error::corrupt("a blob could not be decoded"))??;
            out.extend(part);
        }
        Ok(out)
    })
}

/// Framed tokens of a message: tool messages are sent without their name.
fn frame(m: &Message, payload: u32) -> u32 {
    tokens::framed(payload, m.name.is_some() && m.role != Role::Tool)
}

fn synthetic_framed() -> u32 {
    tokens::framed(SYNTHETIC_RESULT_TOKENS, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_token_constant_matches_the_tokenizer() {
        assert_eq!(
            tokens::count_text(SYNTHETIC_RESULT),
            SYNTHETIC_RESULT_TOKENS
        );
    }
}
