//! Rendering a view as provider-ready messages (OpenAI chat, Anthropic Messages).
//!
//! The output is valid by construction: each tool call is followed by exactly one result with
//! its id (a marked synthetic error result when none was recorded), results are moved to
//! directly after their call, and a result that answers no call is reported, not sent. The
//! same view always renders to the same bytes, so provider prompt caches hold.
//!
//! Every call id is sent once per request: a call whose id was used earlier in the view (a
//! model that numbers its calls `call_0` every turn, or two writers that both chose `c1`) is
//! sent under a new id made from its position, and its result with it ([`ReusedCallId`]),
//! the same way in every rendering.

use crate::error::Result;
use crate::id::CommitId;
use crate::json::raw_value;
use crate::object::{Content, ContentPart, Message, Role};
use crate::storage::store::Store;
use crate::tokens;
use crate::view::cache::ViewCache;
use crate::view::{CallShape, SYNTHETIC_RESULT, SYNTHETIC_RESULT_TOKENS, Shape, View, ViewEntry};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

/// A compiled view: cheap to make (it shares the view's entries, which hold no text), rendered
/// on demand, each message's text read from the store the first time this compile needs it.
#[derive(Debug, Clone)]
pub struct Compiled {
    head: Option<CommitId>,
    entries: Arc<Vec<ViewEntry>>,
    token_count: u64,
    texts: Texts,
    /// Whether a call may reuse an id (the view's count, kept as it changes): most views
    /// have none, and then no compile looks.
    reuses: bool,
    /// The ids sent in place of reused ones, worked out the first time a rendering needs them.
    sent_ids: Arc<OnceLock<SentIds>>,
}

/// Where a compile reads its messages' text (the handle's kept messages, else the store it was
/// compiled from), and what it has read: by the address of the entry's shape, which the
/// compile holds.
#[derive(Clone)]
struct Texts {
    store: Store,
    handle: Arc<ViewCache>,
    read: Arc<Mutex<HashMap<usize, Arc<Message>>>>,
}

impl std::fmt::Debug for Texts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Texts").finish_non_exhaustive()
    }
}

/// The key an entry's text is kept under.
fn key(e: &ViewEntry) -> usize {
    Arc::as_ptr(&e.shape) as usize
}

/// One message as it will be sent.
#[derive(Debug, Clone)]
pub struct CompiledMessage {
    /// The message.
    pub message: Arc<Message>,
    /// Its tokens with framing.
    pub tokens: u32,
    /// The view position it renders, `None` for a synthetic result.
    pub position: Option<CommitId>,
    /// The commit whose content it shows (the newest edit), `None` for a synthetic result.
    pub commit: Option<CommitId>,
    /// Whether tract made it up to keep the conversation valid.
    pub synthetic: bool,
}

impl Compiled {
    pub(crate) fn new(view: &View, store: &Store, handle: &Arc<ViewCache>) -> Self {
        Compiled {
            head: view.head(),
            entries: view.shared_entries(),
            token_count: view.token_count(),
            texts: Texts {
                store: store.clone(),
                handle: Arc::clone(handle),
                read: Arc::default(),
            },
            reuses: view.may_reuse_call_ids(),
            sent_ids: Arc::default(),
        }
    }

    /// The commit compiled.
    pub fn head(&self) -> Option<CommitId> {
        self.head
    }

    /// OpenAI's `prompt_cache_key` for the requests of this conversation: derived from the
    /// first commit of its first-parent history (`tract-` and 32 hex digits of its id), so the
    /// same in every process, for every request of the branch and of its forks, which share
    /// their start. `None` for an empty branch.
    pub fn prompt_cache_key(&self) -> Result<Option<String>> {
        let Some(head) = self.head else {
            return Ok(None);
        };
        let snap = self.texts.store.read()?;
        let root = crate::view::ledger::at(&snap, Some(head))?.root;
        Ok(root.map(|r| format!("tract-{}", &r.to_hex()[..32])))
    }

    /// Total tokens of the request, framing and reply priming included.
    pub fn token_count(&self) -> u64 {
        self.token_count
    }

    /// How many messages are sent (synthetic results included), reading no text.
    pub fn len(&self) -> usize {
        self.slots().len()
    }

    /// Whether nothing is sent.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads the text of those of `entries` (entries of this compile) this compile has not
    /// read yet, in one read of the store: what a rendering does before it renders them one
    /// by one with [`Compiled::message`].
    pub fn read<'e>(&self, entries: impl IntoIterator<Item = &'e ViewEntry>) -> Result<()> {
        let missing: Vec<&ViewEntry> = {
            let read = self.texts.read.lock().unwrap_or_else(|e| e.into_inner());
            entries
                .into_iter()
                .filter(|e| !read.contains_key(&key(e)))
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        let snap = self.texts.store.read()?;
        let blobs: Vec<crate::id::BlobId> = missing.iter().map(|e| e.blob).collect();
        let texts = self.texts.handle.texts(&snap, &blobs)?;
        let mut read = self.texts.read.lock().unwrap_or_else(|e| e.into_inner());
        for (e, m) in missing.into_iter().zip(texts) {
            read.insert(key(e), m);
        }
        Ok(())
    }

    /// The message of `e`, an entry of this compile, as it is sent: its text read from the
    /// store the first time (a message redacted since shows its tombstone), and its call ids
    /// (or the id its result answers) those sent where the view reuses an id
    /// ([`Compiled::renamed`]).
    pub fn message(&self, e: &ViewEntry) -> Result<Arc<Message>> {
        Ok(self.as_sent(e, self.stored_message(e)?))
    }

    /// The messages of `entries` (entries of this compile) as they are sent, as
    /// [`Compiled::message`] gives them, read from the store in one go and kept neither by this
    /// compile nor by the handle (those read already are taken from what this compile holds).
    /// For a rendering that makes each message into objects of its own once and keeps those:
    /// a process that reads a view once then holds its text once, a batch at a time.
    pub fn read_passing(&self, entries: &[&ViewEntry]) -> Result<Vec<Arc<Message>>> {
        let held: Vec<Option<Arc<Message>>> = {
            let read = self.texts.read.lock().unwrap_or_else(|e| e.into_inner());
            entries.iter().map(|e| read.get(&key(e)).cloned()).collect()
        };
        let blobs: Vec<crate::id::BlobId> = entries
            .iter()
            .zip(&held)
            .filter(|(_, h)| h.is_none())
            .map(|(e, _)| e.blob)
            .collect();
        let mut read = match blobs.is_empty() {
            true => Vec::new(),
            false => crate::view::texts(&self.texts.store.read()?, &blobs)?,
        }
        .into_iter();
        entries
            .iter()
            .zip(held)
            .map(|(e, h)| {
                let stored = match h {
                    Some(m) => m,
                    None => read.next().ok_or_else(|| {
                        crate::error::Error::corrupt(format!(
                            "the message of {} could not be read",
                            e.position.short()
                        ))
                    })?,
                };
                Ok(self.as_sent(e, stored))
            })
            .collect()
    }

    /// `stored`, the message of `e`, with the call ids it is sent with.
    fn as_sent(&self, e: &ViewEntry, stored: Arc<Message>) -> Arc<Message> {
        match self.sent_ids().of_position(&e.position) {
            Some(ids) => Arc::new(with_ids(&stored, ids)),
            None => stored,
        }
    }

    /// Whether `e` is sent with other call ids than it holds (a call that reuses an id used
    /// earlier in the view, or the result of one): a rendering kept across steps makes such
    /// a message anew each time, as what it is sent with depends on the rest of the view.
    pub fn renamed(&self, e: &ViewEntry) -> bool {
        self.sent_ids().of_position(&e.position).is_some()
    }

    /// The calls this compile sends under another id than they hold, in view order.
    pub fn reused_call_ids(&self) -> &[ReusedCallId] {
        &self.sent_ids().reused
    }

    fn sent_ids(&self) -> &SentIds {
        self.sent_ids.get_or_init(|| match self.reuses {
            true => SentIds::of(&self.entries),
            false => SentIds::default(),
        })
    }

    /// The message of `e` as stored.
    fn stored_message(&self, e: &ViewEntry) -> Result<Arc<Message>> {
        if let Some(m) = self
            .texts
            .read
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key(e))
        {
            return Ok(Arc::clone(m));
        }
        self.read([e])?;
        let read = self.texts.read.lock().unwrap_or_else(|e| e.into_inner());
        match read.get(&key(e)) {
            Some(m) => Ok(Arc::clone(m)),
            None => Err(crate::error::Error::corrupt(format!(
                "the message of {} could not be read",
                e.position.short()
            ))),
        }
    }

    /// The message `s` sends, text included.
    pub fn sent_message(&self, s: &Sent<'_>) -> Result<Arc<Message>> {
        match s {
            Sent::InView(e) => self.message(e),
            Sent::Synthetic(m) => Ok(Arc::new(m.clone())),
        }
    }

    /// The call `k` of `e` (one of its calls) as it is sent: its id replaced where the view
    /// reuses it.
    fn sent_call(&self, e: &ViewEntry, k: usize) -> CallShape {
        let mut call = e
            .shape
            .tool_calls
            .get(k)
            .cloned()
            .unwrap_or_else(|| CallShape {
                id: String::new(),
                name: String::new(),
            });
        if let Some(id) = self
            .sent_ids()
            .of_position(&e.position)
            .and_then(|ids| ids.get(k))
        {
            call.id.clone_from(id);
        }
        call
    }

    /// `slot` as it is sent.
    fn sent<'a>(&self, slot: Slot<'a>) -> Sent<'a> {
        match slot {
            Slot::Entry(e) => Sent::InView(e),
            Slot::Missing(e, k) => Sent::Synthetic(synthetic_result(&self.sent_call(e, k))),
        }
    }

    /// The tokens of each message sent, framing included, in sending order (no text read).
    pub fn message_tokens(&self) -> Vec<u32> {
        self.slots()
            .iter()
            .map(|s| match s {
                Slot::Entry(e) => e.tokens,
                Slot::Missing(..) => tokens::framed(SYNTHETIC_RESULT_TOKENS, false),
            })
            .collect()
    }

    /// The messages in sending order, their text read from the store.
    pub fn messages(&self) -> Result<Vec<CompiledMessage>> {
        let slots = self.slots();
        self.read(slots.iter().filter_map(|s| match s {
            Slot::Entry(e) => Some(*e),
            Slot::Missing(..) => None,
        }))?;
        slots
            .into_iter()
            .map(|slot| match slot {
                Slot::Entry(e) => Ok(CompiledMessage {
                    message: self.message(e)?,
                    tokens: e.tokens,
                    position: Some(e.position),
                    commit: Some(e.commit),
                    synthetic: false,
                }),
                Slot::Missing(e, k) => Ok(CompiledMessage {
                    message: Arc::new(synthetic_result(&self.sent_call(e, k))),
                    tokens: tokens::framed(SYNTHETIC_RESULT_TOKENS, false),
                    position: None,
                    commit: None,
                    synthetic: true,
                }),
            })
            .collect()
    }

    /// What is sent, in order: each entry, except tool results, which follow their call (a
    /// call without one gets a synthetic result) or are not sent at all.
    fn slots(&self) -> Vec<Slot<'_>> {
        let mut out = Vec::with_capacity(self.entries.len());
        for e in self.entries.iter() {
            match e.shape.role {
                Role::Tool => {} // sent right after its call, or not at all
                Role::Assistant if !e.shape.tool_calls.is_empty() => {
                    out.push(Slot::Entry(e));
                    // Zipped: an edit may leave a message fewer calls than it had results.
                    for (k, (_, result)) in e.shape.tool_calls.iter().zip(&e.results).enumerate() {
                        match result.and_then(|i| self.entries.get(i)) {
                            Some(r) => out.push(Slot::Entry(r)),
                            None => out.push(Slot::Missing(e, k)),
                        }
                    }
                }
                _ => out.push(Slot::Entry(e)),
            }
        }
        out
    }

    /// The view's entries, in view order (what a rendering reads the text of).
    pub fn entries(&self) -> impl Iterator<Item = &ViewEntry> {
        self.entries.iter()
    }

    /// The messages [`Compiled::to_openai`] renders, in order, each to be rendered by
    /// [`openai_message`]: what a rendering kept across steps ([`crate::Rendering`]) renders
    /// message by message.
    pub fn openai_sent(&self) -> Vec<Sent<'_>> {
        self.slots()
            .into_iter()
            .map(|s| self.sent(s))
            .filter(|s| !matches!(s, Sent::InView(e) if only_unsendable(&e.shape, OPENAI_PARTS)))
            .collect()
    }

    /// The shape of [`Compiled::to_anthropic`], of pieces made by `piece` from each message
    /// sent (what [`anthropic_piece`] renders: a system message's text, another message's
    /// content blocks): the system messages' pieces, to be joined by a blank line, and the
    /// messages, consecutive ones of one role merged (their pieces' blocks in order), pieces
    /// that are `empty` (no block) left out.
    pub fn anthropic_layout<P>(
        &self,
        mut piece: impl FnMut(&Sent<'_>) -> P,
        empty: impl Fn(&P) -> bool,
    ) -> AnthropicLayout<P> {
        let mut layout = AnthropicLayout {
            system: Vec::new(),
            messages: Vec::new(),
        };
        for s in self.slots().into_iter().map(|s| self.sent(s)) {
            let p = piece(&s);
            let role = match s.role() {
                // Anthropic has one top-level system prompt: every system message goes there.
                Role::System => {
                    layout.system.push(p);
                    continue;
                }
                Role::Assistant => Role::Assistant,
                Role::User | Role::Tool => Role::User,
            };
            if empty(&p) {
                continue;
            }
            // Consecutive messages of one role become one message: parallel tool results share
            // one user message, in call order.
            match layout.messages.last_mut() {
                Some((r, pieces)) if *r == role => pieces.push(p),
                _ => layout.messages.push((role, vec![p])),
            }
        }
        layout
    }

    /// [`Compiled::to_responses`] of pieces: `items` makes an entry's items (what
    /// [`crate::formats::responses::items_from_message`] renders of its message), `synthetic`
    /// the output that stands in for a call's missing result; with `limit`, only the last
    /// `limit` items, made from the end.
    pub fn responses_layout<P>(
        &self,
        limit: Option<usize>,
        items: impl FnMut(&ViewEntry) -> Vec<P>,
        mut synthetic: impl FnMut(&CallShape) -> P,
    ) -> Vec<P> {
        crate::formats::responses::items_from_view(&self.entries, limit, items, |e, k| {
            synthetic(&self.sent_call(e, k))
        })
    }

    /// Problems found while compiling: results that answer no call (not sent), calls that got a
    /// synthetic result.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        for e in self.entries.iter() {
            if let Some(big) = tokens::too_large(e.tokens) {
                w.push(format!("message {}: {big}", e.position.short()));
            }
            if e.shape.role == Role::Tool && e.caller.is_none() {
                w.push(format!(
                    "tool result {} (tool_call_id {}) answers no earlier tool call; not sent",
                    e.position.short(),
                    e.shape.tool_call_id.as_deref().unwrap_or("?")
                ));
            }
            for kind in e.shape.parts.iter().flatten().flatten() {
                for (provider, takes) in [("OpenAI", OPENAI_PARTS), ("Anthropic", ANTHROPIC_PARTS)]
                {
                    if !takes.contains(&kind.as_str()) {
                        w.push(format!(
                            "message {}: a '{kind}' part is left out of the {provider} rendering ({provider} cannot take it)",
                            e.position.short()
                        ));
                    }
                }
            }
            for (call, result) in e.shape.tool_calls.iter().zip(&e.results) {
                if result.is_none() {
                    w.push(format!(
                        "tool call {} ({}) in {} has no result; a synthetic error result is sent",
                        call.id,
                        call.name,
                        e.position.short()
                    ));
                }
            }
            for provider in self.left_out(e) {
                w.push(format!(
                    "message {} has nothing the {provider} rendering can send (no text, no part \
                     it takes); it is left out of it",
                    e.position.short()
                ));
            }
        }
        for r in self.reused_call_ids() {
            w.push(r.to_string());
        }
        w
    }

    /// The renderings that leave the message of `e` out, having nothing to send of it: a
    /// user's or assistant's message with no call whose content is empty, or only parts the
    /// provider cannot take (Anthropic rejects an empty message; the OpenAI chat rendering
    /// leaves out one made only of parts it cannot take). Reads the text of small messages
    /// only: a message whose payload is more than a few tokens has text to send.
    fn left_out(&self, e: &ViewEntry) -> Vec<&'static str> {
        let shape = &e.shape;
        if !matches!(shape.role, Role::User | Role::Assistant) || !shape.tool_calls.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        if only_unsendable(shape, OPENAI_PARTS) {
            out.push("OpenAI");
        }
        let framing = tokens::framed(0, shape.name.is_some());
        // An empty text has no tokens; a name adds a few.
        let small = e.tokens.saturating_sub(framing) <= 8;
        if only_unsendable(shape, ANTHROPIC_PARTS)
            || (small && self.message(e).is_ok_and(|m| blocks(&m.content).is_empty()))
        {
            out.push("Anthropic");
        }
        out
    }

    /// OpenAI chat-completions `messages`.
    pub fn to_openai(&self) -> Result<Value> {
        self.read(self.entries())?;
        let sent = self.openai_sent();
        let mut out = Vec::with_capacity(sent.len());
        for s in &sent {
            let m = self.sent_message(s)?;
            out.push(openai_message(&m));
        }
        Ok(Value::Array(out))
    }

    /// Anthropic Messages request body: `{"system": ..., "messages": [...]}`.
    pub fn to_anthropic(&self) -> Result<Value> {
        self.anthropic_body(false)
    }

    /// [`Compiled::to_anthropic`] with `cache_control` breakpoints where a prefix stays the
    /// same from request to request, at most 4 (Anthropic's limit), by rule: the end of the
    /// system prompt (which becomes one text block), the end of the newest summary in view
    /// (the last compress boundary: what comes before it changes only with the next
    /// compression), and the end of the newest message in view (not a synthetic result, which
    /// the real one replaces). A breakpoint goes on the last block there that takes one (not a
    /// thinking block), else on the nearest such block before it.
    pub fn to_anthropic_with_cache_breakpoints(&self) -> Result<Value> {
        self.anthropic_body(true)
    }

    /// The newest summary in view, by position: the last compress boundary.
    pub fn compress_boundary(&self) -> Option<CommitId> {
        crate::view::newest_summary(&self.entries).map(|i| self.entries[i].position)
    }

    fn anthropic_body(&self, breakpoints: bool) -> Result<Value> {
        self.read(self.entries())?;
        let boundary = breakpoints.then(|| self.compress_boundary()).flatten();
        // Each piece with what it is: the summary at the boundary, a message in view (stable),
        // or a synthetic result.
        let layout = self.anthropic_layout(
            |s| {
                let kind = match s {
                    Sent::InView(e) if Some(e.position) == boundary => Mark::Boundary,
                    Sent::InView(_) => Mark::Stable,
                    Sent::Synthetic(_) => Mark::Synthetic,
                };
                self.sent_message(s).map(|m| (anthropic_piece(&m), kind))
            },
            |p| {
                p.as_ref()
                    .is_ok_and(|(p, _)| p.as_array().is_some_and(Vec::is_empty))
            },
        );
        let mut body = Map::new();
        if !layout.system.is_empty() {
            let texts = layout.system.into_iter().collect::<Result<Vec<_>>>()?;
            let texts: Vec<&str> = texts.iter().filter_map(|(t, _)| t.as_str()).collect();
            let system = texts.join("\n\n");
            body.insert(
                "system".into(),
                match breakpoints && !system.is_empty() {
                    true => json!([{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]),
                    false => system.into(),
                },
            );
        }
        let mut messages = Vec::with_capacity(layout.messages.len());
        // Where the boundary's and the newest stable message's last blocks are.
        let (mut at_boundary, mut at_stable) = (None, None);
        for (role, pieces) in layout.messages {
            let mut blocks = Vec::new();
            for p in pieces {
                let (v, kind) = p?;
                if let Value::Array(b) = v {
                    blocks.extend(b);
                }
                let here = blocks.len().checked_sub(1).map(|b| (messages.len(), b));
                match kind {
                    Mark::Boundary => (at_boundary, at_stable) = (here, here),
                    Mark::Stable => at_stable = here,
                    Mark::Synthetic => {}
                }
            }
            messages.push(anthropic_message(role, Value::Array(blocks)));
        }
        for at in [at_boundary, at_stable]
            .into_iter()
            .flatten()
            .filter(|_| breakpoints)
        {
            put_breakpoint(&mut messages, at);
        }
        body.insert("messages".into(), Value::Array(messages));
        Ok(Value::Object(body))
    }

    /// OpenAI Responses `input` items, in view order (with `limit`, the last `limit` of
    /// them): items added as items come back as they were (see [`crate::formats::responses`]).
    pub fn to_responses(&self, limit: Option<usize>) -> Result<Value> {
        // The last few items read their messages one by one; the whole view, in one read.
        if limit.is_none() {
            self.read(self.entries())?;
        }
        let items = self.responses_layout(
            limit,
            |e| match self.message(e) {
                Ok(m) => crate::formats::responses::items_from_message(&m)
                    .into_iter()
                    .map(Ok)
                    .collect(),
                Err(err) => vec![Err(err)],
            },
            |call| Ok(crate::formats::responses::synthetic_output(call)),
        );
        Ok(Value::Array(items.into_iter().collect::<Result<_>>()?))
    }
}

/// A place in what is sent: an entry of the view, or a call's missing result.
enum Slot<'a> {
    Entry(&'a ViewEntry),
    /// The result of call `k` of the entry.
    Missing(&'a ViewEntry, usize),
}

/// A message as it is sent, for a rendering made message by message.
#[derive(Debug)]
pub enum Sent<'a> {
    /// An entry of the view, its text read with [`Compiled::message`]: a rendering kept
    /// across steps keeps what it made of it while the entry's shape stays in view.
    InView(&'a ViewEntry),
    /// The synthetic error result that stands in for a call with no recorded result.
    Synthetic(Message),
}

impl Sent<'_> {
    /// Who speaks it.
    pub fn role(&self) -> Role {
        match self {
            Sent::InView(e) => e.shape.role,
            Sent::Synthetic(m) => m.role,
        }
    }
}

/// The shape of an Anthropic rendering, of pieces made message by message
/// ([`Compiled::anthropic_layout`]).
#[derive(Debug)]
pub struct AnthropicLayout<P> {
    /// The system messages' pieces (their text), in order, for the top-level system prompt.
    pub system: Vec<P>,
    /// The messages: a role (user or assistant) and the pieces whose blocks make its content.
    pub messages: Vec<(Role, Vec<P>)>,
}

/// A tool call sent under another id than it holds: its id was used by an earlier call in
/// view, and providers take each id once per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReusedCallId {
    /// The position of the message that makes the call.
    pub position: CommitId,
    /// Which of the message's calls it is (0 for the first).
    pub index: usize,
    /// The id it holds.
    pub id: String,
    /// The id it is sent with, its result's `tool_call_id` (`tool_use_id`) with it.
    pub sent_as: String,
}

impl std::fmt::Display for ReusedCallId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tool call id {} in {} was used by an earlier call; sent as {}",
            self.id,
            self.position.short(),
            self.sent_as
        )
    }
}

/// The calls of `view` that a compile sends under another id, in view order.
pub(crate) fn reused_call_ids(view: &View) -> Vec<ReusedCallId> {
    match view.may_reuse_call_ids() {
        true => SentIds::of(view.entries()).reused,
        false => Vec::new(),
    }
}

/// The ids a view's calls and results are sent with where they differ from those they hold.
#[derive(Debug, Default)]
struct SentIds {
    /// By position: for a message making calls, the id each of them is sent with; for a
    /// result, the one id it answers.
    by_position: HashMap<CommitId, Vec<String>>,
    reused: Vec<ReusedCallId>,
}

impl SentIds {
    /// Where the calls of `entries` reuse ids: the first call with an id keeps it, each later
    /// one is sent as `<id>_<8 hex digits of its position>` (longer where that is taken by
    /// any id in view), and the result paired with it answers that id. Deterministic; run
    /// only when the view's count says some id may be reused.
    fn of(entries: &[ViewEntry]) -> SentIds {
        let mut seen: HashSet<&str> = HashSet::new();
        let reuses = entries.iter().any(|e| {
            e.shape
                .tool_calls
                .iter()
                .any(|c| !seen.insert(c.id.as_str()))
        });
        if !reuses {
            return SentIds::default();
        }
        // Every id held anywhere in view, later ones included: a new id never takes one.
        let held: HashSet<&str> = entries
            .iter()
            .flat_map(|e| e.shape.tool_calls.iter().map(|c| c.id.as_str()))
            .collect();
        let mut sent: HashSet<String> = HashSet::new();
        let mut out = SentIds::default();
        for e in entries {
            let calls = &e.shape.tool_calls;
            let mut ids: Option<Vec<String>> = None;
            for (k, call) in calls.iter().enumerate() {
                if !sent.contains(&call.id) {
                    sent.insert(call.id.clone());
                    continue;
                }
                let new = fresh_id(&call.id, &e.position, k, |id| {
                    held.contains(id) || sent.contains(id)
                });
                sent.insert(new.clone());
                if let Some(r) = e
                    .results
                    .get(k)
                    .copied()
                    .flatten()
                    .and_then(|r| entries.get(r))
                {
                    out.by_position.insert(r.position, vec![new.clone()]);
                }
                ids.get_or_insert_with(|| calls.iter().map(|c| c.id.clone()).collect())[k] =
                    new.clone();
                out.reused.push(ReusedCallId {
                    position: e.position,
                    index: k,
                    id: call.id.clone(),
                    sent_as: new,
                });
            }
            if let Some(ids) = ids {
                out.by_position.insert(e.position, ids);
            }
        }
        out
    }

    /// The ids `position` is sent with, where they differ from its own.
    fn of_position(&self, position: &CommitId) -> Option<&Vec<String>> {
        if self.by_position.is_empty() {
            return None;
        }
        self.by_position.get(position)
    }
}

/// A new id for call `k` of the message at `position`, whose id `id` was used before: the
/// first of `<id>_<8 hex>`, `<id>_<8 hex>_<k>`, `<id>_<64 hex>_<k>` that is not `taken`
/// (then underscores added until one is free). Only letters, digits, `_` and `-` are added,
/// which every provider takes in an id.
fn fresh_id(id: &str, position: &CommitId, k: usize, taken: impl Fn(&str) -> bool) -> String {
    let hex = position.to_hex();
    let short = &hex[..8];
    let mut candidate = format!("{id}_{short}");
    for next in [format!("{id}_{short}_{k}"), format!("{id}_{hex}_{k}")] {
        if !taken(&candidate) {
            return candidate;
        }
        candidate = next;
    }
    while taken(&candidate) {
        candidate.push('_');
    }
    candidate
}

/// `m` with the ids it is sent with: each call's (a message making calls) or the one its
/// result answers.
fn with_ids(m: &Message, ids: &[String]) -> Message {
    let mut m = m.clone();
    if m.role == Role::Tool {
        if let Some(id) = ids.first() {
            m.tool_call_id = Some(id.clone());
        }
    } else {
        for (call, id) in m.tool_calls.iter_mut().zip(ids) {
            call.id.clone_from(id);
        }
    }
    m
}

/// The result sent for a tool call that has none.
fn synthetic_result(call: &CallShape) -> Message {
    Message::tool_result(call.id.clone(), call.name.clone(), SYNTHETIC_RESULT, true)
}

/// What a piece of an Anthropic body is, for its cache breakpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// The newest summary in view.
    Boundary,
    /// Another message in view.
    Stable,
    /// A result tract made up for a call that has none.
    Synthetic,
}

/// Puts a `cache_control` breakpoint on block `at` (message, block) of `messages`, or on the
/// nearest block before it that takes one: a thinking block does not, nor an empty text.
/// A block that has one already is left as it is.
fn put_breakpoint(messages: &mut [Value], (m, b): (usize, usize)) {
    let takes = |block: &Value| {
        !matches!(
            block.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        ) && block.get("text").and_then(Value::as_str) != Some("")
    };
    let blocks = messages
        .iter_mut()
        .take(m + 1)
        .rev()
        .enumerate()
        .flat_map(|(k, message)| {
            let blocks = message
                .get_mut("content")
                .and_then(Value::as_array_mut)
                .map(|v| v.as_mut_slice())
                .unwrap_or_default();
            // In the breakpoint's own message, only its block and those before it.
            let end = if k == 0 {
                (b + 1).min(blocks.len())
            } else {
                blocks.len()
            };
            blocks[..end].iter_mut().rev()
        });
    for block in blocks {
        if takes(block) {
            if let Value::Object(o) = block {
                o.entry("cache_control")
                    .or_insert_with(|| json!({"type": "ephemeral"}));
            }
            return;
        }
    }
}

/// An Anthropic message: a role and its content blocks.
fn anthropic_message(role: Role, blocks: Value) -> Value {
    let mut o = Map::new();
    o.insert("role".into(), role.as_str().into());
    o.insert("content".into(), blocks);
    Value::Object(o)
}

/// One message in OpenAI's wire form: [`OpenAiMessage`] as JSON.
pub fn openai_message(m: &Message) -> Value {
    // A struct of strings, sequences and JSON values: nothing in it fails to serialize.
    serde_json::to_value(OpenAiMessage::of(m)).unwrap_or_default()
}

/// One message in OpenAI's wire form as JSON text: [`openai_message`] written out, with no
/// JSON tree made between.
pub fn openai_json(m: &Message) -> String {
    serde_json::to_string(&OpenAiMessage::of(m)).unwrap_or_default()
}

/// One message in OpenAI's chat-completions form, borrowing the message's text: its JSON is
/// [`openai_message`] (fields in this order, those that are `None` left out), and a binding
/// makes its own objects from it with no JSON tree between.
#[derive(Debug, serde::Serialize)]
pub struct OpenAiMessage<'a> {
    /// `role`.
    pub role: &'static str,
    /// `tool_call_id`: a tool result's (empty when the message names none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
    /// `content`.
    pub content: OpenAiContent<'a>,
    /// `name`, of a message that is not a tool result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    /// `tool_calls`, of an assistant message that made some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<OpenAiCall<'a>>>,
}

/// A message's `content` as the OpenAI chat format takes it.
#[derive(Debug)]
pub enum OpenAiContent<'a> {
    /// `null`: an assistant message that only calls tools.
    Null,
    /// A string.
    Text(&'a str),
    /// A list of the parts the format takes (others are left out, with a warning).
    Parts(Vec<OpenAiPart<'a>>),
}

/// One part of a message's content in the OpenAI chat format.
#[derive(Debug)]
pub enum OpenAiPart<'a> {
    /// `{"type": "text", "text": ...}`.
    Text(&'a str),
    /// Another part (an image, a file), as the provider JSON it was kept as.
    Other(Value),
}

/// One tool call in the OpenAI chat format: `{"id", "type": "function", "function": {"name",
/// "arguments"}}`.
#[derive(Debug)]
pub struct OpenAiCall<'a> {
    /// `id`.
    pub id: &'a str,
    /// `function.name`.
    pub name: &'a str,
    /// `function.arguments`: the raw JSON text the model wrote.
    pub arguments: &'a str,
}

impl<'a> OpenAiMessage<'a> {
    /// The form of `m`.
    pub fn of(m: &'a Message) -> Self {
        let role = m.role.as_str();
        match m.role {
            Role::Tool => OpenAiMessage {
                role,
                tool_call_id: Some(m.tool_call_id.as_deref().unwrap_or_default()),
                content: OpenAiContent::of(&m.content),
                name: None,
                tool_calls: None,
            },
            Role::Assistant if !m.tool_calls.is_empty() => OpenAiMessage {
                role,
                tool_call_id: None,
                content: match OpenAiContent::of(&m.content) {
                    OpenAiContent::Text("") => OpenAiContent::Null,
                    OpenAiContent::Parts(p) if p.is_empty() => OpenAiContent::Null,
                    c => c,
                },
                name: m.name.as_deref(),
                tool_calls: Some(
                    m.tool_calls
                        .iter()
                        .map(|c| OpenAiCall {
                            id: &c.id,
                            name: &c.name,
                            arguments: &c.arguments,
                        })
                        .collect(),
                ),
            },
            _ => OpenAiMessage {
                role,
                tool_call_id: None,
                content: OpenAiContent::of(&m.content),
                name: m.name.as_deref(),
                tool_calls: None,
            },
        }
    }
}

impl<'a> OpenAiContent<'a> {
    /// The content `c` as the format takes it: its text, or the parts it takes, a text part
    /// only its text (an Anthropic `cache_control` on it is not OpenAI's).
    fn of(c: &'a Content) -> Self {
        match c {
            Content::Text(t) => OpenAiContent::Text(t),
            Content::Parts(parts) => OpenAiContent::Parts(
                parts
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::Text(t) => Some(OpenAiPart::Text(t)),
                        ContentPart::Raw(raw) => {
                            let v = raw_value(raw);
                            if !takes(&v, OPENAI_PARTS) {
                                return None;
                            }
                            Some(OpenAiPart::Other(
                                match (v.get("type").and_then(Value::as_str), v.get("text")) {
                                    (Some("text"), Some(t)) => json!({"type": "text", "text": t}),
                                    _ => v,
                                },
                            ))
                        }
                    })
                    .collect(),
            ),
        }
    }
}

impl serde::Serialize for OpenAiContent<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            OpenAiContent::Null => s.serialize_none(),
            OpenAiContent::Text(t) => s.serialize_str(t),
            OpenAiContent::Parts(parts) => s.collect_seq(parts),
        }
    }
}

impl serde::Serialize for OpenAiPart<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            OpenAiPart::Text(t) => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("type", "text")?;
                m.serialize_entry("text", t)?;
                m.end()
            }
            OpenAiPart::Other(v) => v.serialize(s),
        }
    }
}

impl serde::Serialize for OpenAiCall<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Function<'b>(&'b OpenAiCall<'b>);
        impl serde::Serialize for Function<'_> {
            fn serialize<S: serde::Serializer>(
                &self,
                s: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("name", self.0.name)?;
                m.serialize_entry("arguments", self.0.arguments)?;
                m.end()
            }
        }
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("id", self.id)?;
        m.serialize_entry("type", "function")?;
        m.serialize_entry("function", &Function(self))?;
        m.end()
    }
}

fn text_block(text: &str) -> Value {
    let mut b = Map::new();
    b.insert("type".into(), "text".into());
    b.insert("text".into(), text.into());
    Value::Object(b)
}

/// Content blocks of a user or assistant message; empty text is left out (Anthropic rejects it).
fn blocks(c: &Content) -> Vec<Value> {
    match c {
        Content::Text(t) if t.is_empty() => Vec::new(),
        Content::Text(t) => vec![text_block(t)],
        Content::Parts(parts) => parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text(t) if t.is_empty() => None,
                ContentPart::Text(t) => Some(text_block(t)),
                ContentPart::Raw(raw) => {
                    let v = raw_value(raw);
                    takes(&v, ANTHROPIC_PARTS).then_some(v)
                }
            })
            .collect(),
    }
}

/// Content part types the OpenAI chat format takes; other provider parts (Anthropic
/// thinking, Responses items) are left out of its rendering, with a warning.
const OPENAI_PARTS: &[&str] = &["text", "image_url", "input_audio", "file", "refusal"];

/// Content block types the Anthropic Messages format takes in a message.
const ANTHROPIC_PARTS: &[&str] = &[
    "text",
    "image",
    "document",
    "search_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "mcp_tool_use",
    "mcp_tool_result",
    "container_upload",
];

fn takes(part: &Value, kinds: &[&str]) -> bool {
    part.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| kinds.contains(&t))
}

/// Whether a message holds nothing a provider takes: only parts it leaves out, no tool call.
fn only_unsendable(m: &Shape, kinds: &[&str]) -> bool {
    match &m.parts {
        Some(parts) if m.tool_calls.is_empty() && m.role != Role::Tool => {
            !parts.is_empty()
                && parts
                    .iter()
                    .all(|p| p.as_ref().is_some_and(|k| !kinds.contains(&k.as_str())))
        }
        _ => false,
    }
}

/// A tool call's `input`: its arguments when they are a JSON object, otherwise the raw text
/// under `_raw_arguments` (Anthropic requires an object; the model still sees what it wrote).
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            let mut o = Map::new();
            o.insert("_raw_arguments".into(), arguments.into());
            Value::Object(o)
        }
    }
}

/// One message's piece of an Anthropic rendering: a system message's text (a string), or
/// the content blocks (an array) of any other: a user's or assistant's content and tool uses,
/// or a tool result's `tool_result` block.
pub fn anthropic_piece(m: &Message) -> Value {
    match m.role {
        Role::System => Value::String(m.content.text().into_owned()),
        Role::User => Value::Array(blocks(&m.content)),
        Role::Assistant => {
            let mut b = blocks(&m.content);
            for call in &m.tool_calls {
                let mut t = Map::new();
                t.insert("type".into(), "tool_use".into());
                t.insert("id".into(), call.id.clone().into());
                t.insert("name".into(), call.name.clone().into());
                t.insert("input".into(), tool_input(&call.arguments));
                b.push(Value::Object(t));
            }
            Value::Array(b)
        }
        Role::Tool => {
            let mut t = Map::new();
            t.insert("type".into(), "tool_result".into());
            t.insert(
                "tool_use_id".into(),
                m.tool_call_id.clone().unwrap_or_default().into(),
            );
            let content = match &m.content {
                Content::Text(s) => Value::String(s.clone()),
                Content::Parts(_) => Value::Array(blocks(&m.content)),
            };
            t.insert("content".into(), content);
            if m.is_error {
                t.insert("is_error".into(), true.into());
            }
            Value::Array(vec![Value::Object(t)])
        }
    }
}
