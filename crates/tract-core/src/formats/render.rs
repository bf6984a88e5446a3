//! Renderings kept across agent steps: a view that grew by one message is rendered again at the
//! cost of that message, not of the whole view.
//!
//! Each message in view is rendered once per provider and its piece kept ([`Pieces`]), keyed by
//! the entry's shape: a view shares each entry's shape (`Arc<Shape>`) with the views and
//! compiles made from it, so a message that stays in view is the same allocation from step to
//! step, and an edit, a compress or a redaction (which makes the view be built again) brings
//! new ones. Only the messages with no kept piece have their text read from the store. A
//! rendering then puts the kept pieces together in the order [`Compiled`] gives. What a
//! rendering did not use is dropped after it, so what is kept follows the view, and content that
//! left the view (redacted, by any process, or compressed) leaves the pieces with it.
//!
//! [`Rendering`] does this for Rust callers, as the JSON text a request carries; the Python
//! binding keeps its own pieces as Python objects.

use crate::error::Result;
use crate::formats::compile::{Compiled, Sent, anthropic_piece, openai_json};
use crate::formats::responses::{items_from_message, synthetic_output};
use crate::object::Message;
use crate::view::{Shape, ViewEntry};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// The pieces one rendering made of the messages of a view, kept for the next.
#[derive(Debug)]
pub struct Pieces<T> {
    kept: HashMap<usize, Kept<T>, BuildHasherDefault<AddressHasher>>,
    /// The rendering under way (or the last one).
    round: u64,
    /// How many kept pieces it used.
    used: usize,
}

#[derive(Debug)]
struct Kept<T> {
    /// Held so that the address the piece is kept under is not another message's meanwhile.
    shape: Arc<Shape>,
    piece: T,
    round: u64,
}

impl<T> Default for Pieces<T> {
    fn default() -> Self {
        Pieces {
            kept: HashMap::default(),
            round: 0,
            used: 0,
        }
    }
}

impl<T> Pieces<T> {
    /// No piece kept yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a rendering.
    pub fn begin(&mut self) {
        self.round += 1;
        self.used = 0;
    }

    /// Whether a piece of the message of `e` is kept.
    pub fn has(&self, e: &ViewEntry) -> bool {
        self.kept.contains_key(&(Arc::as_ptr(&e.shape) as usize))
    }

    /// The piece of the message of `e`: the one kept, else made now by `make` and kept.
    pub fn piece<E>(
        &mut self,
        e: &ViewEntry,
        make: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<&T, E> {
        let round = self.round;
        let kept = match self.kept.entry(Arc::as_ptr(&e.shape) as usize) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(Kept {
                shape: Arc::clone(&e.shape),
                piece: make()?,
                round: round.wrapping_sub(1),
            }),
        };
        if kept.round != round {
            kept.round = round;
            self.used += 1;
        }
        Ok(&kept.piece)
    }

    /// The piece of the message of `e`, an entry of `compiled`, as [`Pieces::piece`] gives
    /// it, except for a message `compiled` sends with other call ids than it holds
    /// ([`Compiled::renamed`]): its piece is made anew and not kept, as the ids it is sent
    /// with depend on the rest of the view.
    pub fn piece_of<E>(
        &mut self,
        compiled: &Compiled,
        e: &ViewEntry,
        make: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<Cow<'_, T>, E>
    where
        T: Clone,
    {
        if compiled.renamed(e) {
            return make().map(Cow::Owned);
        }
        self.piece(e, make).map(Cow::Borrowed)
    }

    /// Ends a rendering: the pieces it did not use are dropped.
    pub fn end(&mut self) {
        if self.kept.len() > self.used {
            let round = self.round;
            self.kept.retain(|_, k| k.round == round);
        }
    }

    /// Ends a rendering of part of a view (the last items of a Responses rendering): what it
    /// did not use may be in view still, so only the pieces of messages that nothing else
    /// holds any more (no view or compile of this process) are dropped.
    pub fn end_part(&mut self) {
        self.kept.retain(|_, k| Arc::strong_count(&k.shape) > 1);
    }

    /// How many pieces are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether no piece is kept.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

/// Hashes a message's address: a multiply and a fold, not SipHash (an address is no input
/// anyone chooses, and a rendering looks up every message in view).
#[derive(Debug, Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = n as u64;
    }
}

/// The request a [`Rendering`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// OpenAI chat-completions `messages` ([`Compiled::to_openai`]).
    OpenAi,
    /// An Anthropic Messages body ([`Compiled::to_anthropic`]).
    Anthropic,
    /// OpenAI Responses `input` items ([`Compiled::to_responses`]), the last `limit` of them
    /// when given.
    Responses {
        /// How many items, counted from the end (all when `None`).
        limit: Option<usize>,
    },
}

/// A view rendered as a provider's request JSON step after step, each message's JSON made once
/// while it stays in view: keep one per session and provider, and hand it each step's
/// [`Compiled`].
///
/// ```
/// use tract_core::{Provider, Rendering, Tract};
/// let t = Tract::in_memory()?;
/// let mut openai = Rendering::new(Provider::OpenAi);
/// t.user("hello")?;
/// let first = openai.json(&t.compile()?)?;
/// t.assistant("hi", Vec::new())?;
/// // Only the new message is read and rendered; the first one's JSON is reused.
/// let second = openai.json(&t.compile()?)?;
/// assert_eq!(second, t.compile()?.to_openai()?.to_string());
/// assert!(second.starts_with(&first[..first.len() - 1]));
/// # Ok::<(), tract_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Rendering {
    provider: Provider,
    /// Each message's JSON: the message (OpenAI), its escaped text or its blocks without the
    /// brackets (Anthropic), its items (Responses); shared, so a rendering that holds them
    /// while it puts them together copies none.
    pieces: Pieces<Vec<Arc<str>>>,
}

impl Rendering {
    /// A rendering for `provider`, nothing rendered yet.
    pub fn new(provider: Provider) -> Self {
        Rendering {
            provider,
            pieces: Pieces::new(),
        }
    }

    /// The provider it renders for.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// How many messages' pieces are kept (those of the view last rendered).
    pub fn kept(&self) -> usize {
        self.pieces.len()
    }

    /// `compiled` as the provider's JSON text: the same text as `to_openai()`,
    /// `to_anthropic()` or `to_responses(limit)` serialized, made of the pieces kept from
    /// the last rendering and those of the messages new since (only their text is read).
    pub fn json(&mut self, compiled: &Compiled) -> Result<String> {
        // The messages with no kept piece, read in one go (the last few items of a Responses
        // rendering read theirs one by one).
        if !matches!(self.provider, Provider::Responses { limit: Some(_) }) {
            compiled.read(compiled.entries().filter(|e| !self.pieces.has(e)))?;
        }
        self.pieces.begin();
        let json = match self.provider {
            Provider::OpenAi => self.openai(compiled),
            Provider::Anthropic => self.anthropic(compiled),
            Provider::Responses { limit } => self.responses(compiled, limit),
        };
        match self.provider {
            Provider::Responses { limit: Some(_) } => self.pieces.end_part(),
            _ => self.pieces.end(),
        }
        json
    }

    fn openai(&mut self, compiled: &Compiled) -> Result<String> {
        let mut out = String::from("[");
        for (i, s) in compiled.openai_sent().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match s {
                Sent::InView(e) => {
                    out.push_str(&self.made(compiled, e, |m| vec![openai_json(m).into()])?[0])
                }
                Sent::Synthetic(m) => out.push_str(&openai_json(m)),
            }
        }
        out.push(']');
        Ok(out)
    }

    fn anthropic(&mut self, compiled: &Compiled) -> Result<String> {
        let layout = compiled.anthropic_layout(
            |s| match s {
                Sent::InView(e) => self
                    .made(compiled, e, |m| vec![anthropic_text(m).into()])
                    .map(|p| Arc::clone(&p[0])),
                Sent::Synthetic(m) => Ok(anthropic_text(m).into()),
            },
            |p: &Result<Arc<str>>| p.as_ref().is_ok_and(|p| p.is_empty()),
        );
        let mut out = String::from("{");
        if !layout.system.is_empty() {
            let system = layout.system.into_iter().collect::<Result<Vec<_>>>()?;
            // JSON escapes character by character: the escaped texts joined by an escaped
            // blank line are the joined text escaped.
            out.push_str("\"system\":\"");
            out.push_str(&system.join("\\n\\n"));
            out.push_str("\",");
        }
        out.push_str("\"messages\":[");
        for (i, (role, pieces)) in layout.messages.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let pieces = pieces.into_iter().collect::<Result<Vec<_>>>()?;
            out.push_str("{\"role\":\"");
            out.push_str(role.as_str());
            out.push_str("\",\"content\":[");
            out.push_str(&pieces.join(","));
            out.push_str("]}");
        }
        out.push_str("]}");
        Ok(out)
    }

    fn responses(&mut self, compiled: &Compiled, limit: Option<usize>) -> Result<String> {
        let items = compiled.responses_layout(
            limit,
            |e| match self.made(compiled, e, |m| {
                items_from_message(m)
                    .iter()
                    .map(|v| text(v).into())
                    .collect()
            }) {
                Ok(piece) => piece.iter().cloned().map(Ok).collect(),
                Err(err) => vec![Err(err)],
            },
            |call| Ok(text(&synthetic_output(call)).into()),
        );
        let items = items.into_iter().collect::<Result<Vec<Arc<str>>>>()?;
        Ok(format!("[{}]", items.join(",")))
    }

    /// The kept piece of the message of `e`, made by `make` of its text (read through
    /// `compiled`) if there is none. A message sent with other call ids than it holds is
    /// made anew each time, and not kept: its ids depend on the rest of the view.
    fn made(
        &mut self,
        compiled: &Compiled,
        e: &ViewEntry,
        make: impl FnOnce(&Message) -> Vec<Arc<str>>,
    ) -> Result<Cow<'_, [Arc<str>]>> {
        Ok(
            match self
                .pieces
                .piece_of(compiled, e, || compiled.message(e).map(|m| make(&m)))?
            {
                Cow::Borrowed(piece) => Cow::Borrowed(piece.as_slice()),
                Cow::Owned(piece) => Cow::Owned(piece),
            },
        )
    }
}

/// A value's JSON text.
fn text(v: &Value) -> String {
    v.to_string()
}

/// A message's piece of an Anthropic body as JSON text: a system message's text escaped
/// (without its quotes), another's blocks (without the brackets; empty: no block).
fn anthropic_text(m: &Message) -> String {
    let json = text(&anthropic_piece(m));
    // Both a string and an array are one character on each side of what is kept.
    json.get(1..json.len().saturating_sub(1))
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::{BlobId, CommitId};
    use crate::object::{Commit, Op, Role};

    /// An entry of a view holding `text` (its own shape).
    fn entry(text: &str) -> ViewEntry {
        let id = CommitId::of(text.as_bytes());
        ViewEntry {
            position: id,
            commit: id,
            blob: BlobId::of(text.as_bytes()),
            shape: Arc::new(Shape::of(&Message::text(Role::User, text))),
            tokens: 1,
            origin: Arc::new(Commit {
                parents: Vec::new(),
                op: Op::Append,
                blob: None,
                timestamp_us: 0,
                message: None,
            }),
            edits: Vec::new(),
            results: Vec::new(),
            caller: None,
        }
    }

    #[test]
    fn a_piece_is_made_once_and_dropped_when_a_rendering_does_not_use_it() {
        let (a, b) = (entry("a"), entry("b"));
        let mut pieces: Pieces<String> = Pieces::new();
        let made = std::cell::Cell::new(0);
        let make = |text: &'static str| {
            let made = &made;
            move || {
                made.set(made.get() + 1);
                Ok::<_, ()>(text.to_string())
            }
        };
        pieces.begin();
        assert_eq!(pieces.piece(&a, make("a")).unwrap(), "a");
        assert_eq!(pieces.piece(&b, make("b")).unwrap(), "b");
        pieces.end();
        pieces.begin();
        assert!(pieces.has(&a));
        assert_eq!(pieces.piece(&a, make("a")).unwrap(), "a");
        pieces.end();
        assert_eq!(made.get(), 2, "a kept piece is not made again");
        assert_eq!(pieces.len(), 1, "b was not used by the last rendering");
        assert!(!pieces.has(&b));
        // The same message in another entry (another shape) is another piece.
        let a2 = entry("a");
        pieces.begin();
        pieces.piece(&a2, make("a")).unwrap();
        pieces.end();
        assert_eq!(made.get(), 3);
        assert_eq!(pieces.len(), 1);
    }

    #[test]
    fn a_part_keeps_the_pieces_of_messages_still_held_elsewhere() {
        let (a, b) = (entry("a"), entry("b"));
        let mut pieces: Pieces<()> = Pieces::new();
        pieces.begin();
        pieces.piece(&a, || Ok::<_, ()>(())).unwrap();
        pieces.piece(&b, || Ok::<_, ()>(())).unwrap();
        pieces.end();
        drop(b);
        pieces.begin();
        pieces.piece(&a, || Ok::<_, ()>(())).unwrap();
        pieces.end_part();
        assert_eq!(pieces.len(), 1, "only b, which nothing holds, is dropped");
        pieces.begin();
        pieces.end_part();
        assert_eq!(pieces.len(), 1, "a is still held here");
    }

    #[test]
    fn a_failed_make_keeps_nothing() {
        let a = entry("a");
        let mut pieces: Pieces<String> = Pieces::new();
        pieces.begin();
        assert!(pieces.piece(&a, || Err("no")).is_err());
        pieces.end();
        assert!(pieces.is_empty());
    }
}
