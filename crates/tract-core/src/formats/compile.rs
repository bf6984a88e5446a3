//! Rendering a view as provider-ready messages (OpenAI chat, Anthropic Messages).
//!
//! The output is valid by construction: each tool call is followed by exactly one result with
//! its id (a marked synthetic error result when none was recorded), results are moved to
//! directly after their call, and a result that answers no call is reported, not sent. The
//! same view always renders to the same bytes, so provider prompt caches hold.

use crate::id::CommitId;
use crate::json::{content_value, raw_value};
use crate::object::{Content, ContentPart, Message, Role, ToolCall};
use crate::tokens;
use crate::view::{SYNTHETIC_RESULT, SYNTHETIC_RESULT_TOKENS, View, ViewEntry};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

/// A compiled view: cheap to make (it shares the view's entries), rendered on demand.
#[derive(Debug, Clone)]
pub struct Compiled {
    head: Option<CommitId>,
    entries: Arc<Vec<ViewEntry>>,
    token_count: u64,
}

/// One message as it will be sent.
#[derive(Debug, Clone)]
pub struct CompiledMessage<'a> {
    /// The message.
    pub message: Cow<'a, Message>,
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
    pub(crate) fn new(view: &View) -> Self {
        Compiled {
            head: view.head(),
            entries: view.shared_entries(),
            token_count: view.token_count(),
        }
    }

    /// The commit compiled.
    pub fn head(&self) -> Option<CommitId> {
        self.head
    }

    /// Total tokens of the request, framing and reply priming included.
    pub fn token_count(&self) -> u64 {
        self.token_count
    }

    /// The messages in sending order.
    pub fn messages(&self) -> Vec<CompiledMessage<'_>> {
        self.slots()
            .into_iter()
            .map(|slot| match slot {
                Slot::Entry(e) => sent(e),
                Slot::Missing(call) => CompiledMessage {
                    message: Cow::Owned(synthetic_result(call)),
                    tokens: tokens::framed(SYNTHETIC_RESULT_TOKENS, false),
                    position: None,
                    commit: None,
                    synthetic: true,
                },
            })
            .collect()
    }

    /// What is sent, in order: each entry, except tool results, which follow their call (a
    /// call without one gets a synthetic result) or are not sent at all.
    fn slots(&self) -> Vec<Slot<'_>> {
        let mut out = Vec::with_capacity(self.entries.len());
        for e in self.entries.iter() {
            match e.message.role {
                Role::Tool => {} // sent right after its call, or not at all
                Role::Assistant if !e.message.tool_calls.is_empty() => {
                    out.push(Slot::Entry(e));
                    for (call, result) in e.message.tool_calls.iter().zip(&e.results) {
                        match result.and_then(|i| self.entries.get(i)) {
                            Some(r) => out.push(Slot::Entry(r)),
                            None => out.push(Slot::Missing(call)),
                        }
                    }
                }
                _ => out.push(Slot::Entry(e)),
            }
        }
        out
    }

    /// The messages [`Compiled::to_openai`] renders, in order, each to be rendered by
    /// [`openai_message`]: what a rendering kept across steps ([`crate::Rendering`]) renders
    /// message by message.
    pub fn openai_sent(&self) -> Vec<Sent<'_>> {
        self.slots()
            .into_iter()
            .map(Sent::from)
            .filter(|s| !only_unsendable(s.message(), OPENAI_PARTS))
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
        for s in self.slots().into_iter().map(Sent::from) {
            let p = piece(&s);
            let role = match s.message().role {
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

    /// [`Compiled::to_responses`] of pieces: `items` makes a message's items (what
    /// [`crate::formats::responses::items_from_message`] renders), `synthetic` the output
    /// that stands in for a call's missing result; with `limit`, only the last `limit` items,
    /// made from the end.
    pub fn responses_layout<P>(
        &self,
        limit: Option<usize>,
        items: impl FnMut(&Arc<Message>) -> Vec<P>,
        synthetic: impl FnMut(&ToolCall) -> P,
    ) -> Vec<P> {
        crate::formats::responses::items_from_view(&self.entries, limit, items, synthetic)
    }

    /// Problems found while compiling: results that answer no call (not sent), calls that got a
    /// synthetic result.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        for e in self.entries.iter() {
            if e.message.role == Role::Tool && e.caller.is_none() {
                w.push(format!(
                    "tool result {} (tool_call_id {}) answers no earlier tool call; not sent",
                    e.position.short(),
                    e.message.tool_call_id.as_deref().unwrap_or("?")
                ));
            }
            if let Content::Parts(parts) = &e.message.content {
                for kind in parts.iter().filter_map(raw_kind) {
                    for (provider, takes) in
                        [("OpenAI", OPENAI_PARTS), ("Anthropic", ANTHROPIC_PARTS)]
                    {
                        if !takes.contains(&kind.as_str()) {
                            w.push(format!(
                                "message {}: a '{kind}' part is left out of the {provider} rendering ({provider} cannot take it)",
                                e.position.short()
                            ));
                        }
                    }
                }
            }
            for (call, result) in e.message.tool_calls.iter().zip(&e.results) {
                if result.is_none() {
                    w.push(format!(
                        "tool call {} ({}) in {} has no result; a synthetic error result is sent",
                        call.id,
                        call.name,
                        e.position.short()
                    ));
                }
            }
        }
        w
    }

    /// OpenAI chat-completions `messages`.
    pub fn to_openai(&self) -> Value {
        Value::Array(
            self.openai_sent()
                .iter()
                .map(|s| openai_message(s.message()))
                .collect(),
        )
    }

    /// Anthropic Messages request body: `{"system": ..., "messages": [...]}`.
    pub fn to_anthropic(&self) -> Value {
        let layout = self.anthropic_layout(
            |s| anthropic_piece(s.message()),
            |p| p.as_array().is_some_and(Vec::is_empty),
        );
        let mut body = Map::new();
        if !layout.system.is_empty() {
            let texts: Vec<&str> = layout.system.iter().filter_map(Value::as_str).collect();
            body.insert("system".into(), texts.join("\n\n").into());
        }
        let messages = layout
            .messages
            .into_iter()
            .map(|(role, pieces)| {
                let blocks = pieces
                    .into_iter()
                    .flat_map(|p| match p {
                        Value::Array(b) => b,
                        _ => Vec::new(),
                    })
                    .collect();
                anthropic_message(role, Value::Array(blocks))
            })
            .collect();
        body.insert("messages".into(), Value::Array(messages));
        Value::Object(body)
    }

    /// OpenAI Responses `input` items, in view order (with `limit`, the last `limit` of
    /// them): items added as items come back as they were (see [`crate::formats::responses`]).
    pub fn to_responses(&self, limit: Option<usize>) -> Value {
        Value::Array(self.responses_layout(
            limit,
            |m| crate::formats::responses::items_from_message(m),
            crate::formats::responses::synthetic_output,
        ))
    }
}

/// A place in what is sent: an entry of the view, or a call's missing result.
enum Slot<'a> {
    Entry(&'a ViewEntry),
    Missing(&'a ToolCall),
}

/// A message as it is sent, for a rendering made message by message.
#[derive(Debug)]
pub enum Sent<'a> {
    /// A message in view, shared with the view: a rendering kept across steps keeps what it
    /// made of it while the same message stays in view.
    InView(&'a Arc<Message>),
    /// The synthetic error result that stands in for a call with no recorded result.
    Synthetic(Message),
}

impl Sent<'_> {
    /// The message.
    pub fn message(&self) -> &Message {
        match self {
            Sent::InView(m) => m,
            Sent::Synthetic(m) => m,
        }
    }
}

impl<'a> From<Slot<'a>> for Sent<'a> {
    fn from(slot: Slot<'a>) -> Self {
        match slot {
            Slot::Entry(e) => Sent::InView(&e.message),
            Slot::Missing(call) => Sent::Synthetic(synthetic_result(call)),
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

/// The result sent for a tool call that has none.
fn synthetic_result(call: &ToolCall) -> Message {
    Message::tool_result(call.id.clone(), call.name.clone(), SYNTHETIC_RESULT, true)
}

/// An Anthropic message: a role and its content blocks.
fn anthropic_message(role: Role, blocks: Value) -> Value {
    let mut o = Map::new();
    o.insert("role".into(), role.as_str().into());
    o.insert("content".into(), blocks);
    Value::Object(o)
}

fn sent(e: &ViewEntry) -> CompiledMessage<'_> {
    CompiledMessage {
        message: Cow::Borrowed(&e.message),
        tokens: e.tokens,
        position: Some(e.position),
        commit: Some(e.commit),
        synthetic: false,
    }
}

/// One message in OpenAI's wire form.
pub fn openai_message(m: &Message) -> Value {
    let mut o = Map::new();
    o.insert("role".into(), m.role.as_str().into());
    match m.role {
        Role::Tool => {
            o.insert(
                "tool_call_id".into(),
                m.tool_call_id.clone().unwrap_or_default().into(),
            );
            o.insert("content".into(), openai_content(&m.content));
        }
        Role::Assistant if !m.tool_calls.is_empty() => {
            let content = match openai_content(&m.content) {
                Value::String(s) if s.is_empty() => Value::Null,
                Value::Array(a) if a.is_empty() => Value::Null,
                c => c,
            };
            o.insert("content".into(), content);
            if let Some(n) = &m.name {
                o.insert("name".into(), n.clone().into());
            }
            let calls = m
                .tool_calls
                .iter()
                .map(|c| {
                    let mut f = Map::new();
                    f.insert("name".into(), c.name.clone().into());
                    f.insert("arguments".into(), c.arguments.clone().into());
                    let mut t = Map::new();
                    t.insert("id".into(), c.id.clone().into());
                    t.insert("type".into(), "function".into());
                    t.insert("function".into(), Value::Object(f));
                    Value::Object(t)
                })
                .collect();
            o.insert("tool_calls".into(), Value::Array(calls));
        }
        _ => {
            o.insert("content".into(), openai_content(&m.content));
            if let Some(n) = &m.name {
                o.insert("name".into(), n.clone().into());
            }
        }
    }
    Value::Object(o)
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

/// The `type` of a raw part (`None` for a text part).
fn raw_kind(part: &ContentPart) -> Option<String> {
    match part {
        ContentPart::Text(_) => None,
        ContentPart::Raw(raw) => Some(
            raw_value(raw)
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string(),
        ),
    }
}

fn takes(part: &Value, kinds: &[&str]) -> bool {
    part.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| kinds.contains(&t))
}

/// Whether a message holds nothing a provider takes: only parts it leaves out, no tool call.
fn only_unsendable(m: &Message, kinds: &[&str]) -> bool {
    match &m.content {
        Content::Parts(parts) if m.tool_calls.is_empty() && m.role != Role::Tool => {
            !parts.is_empty()
                && parts.iter().all(|p| match p {
                    ContentPart::Text(_) => false,
                    ContentPart::Raw(raw) => !takes(&raw_value(raw), kinds),
                })
        }
        _ => false,
    }
}

/// Content as OpenAI chat takes it: parts it cannot take are left out, and a text part is
/// only its text (an Anthropic `cache_control` on it is not OpenAI's).
fn openai_content(c: &Content) -> Value {
    match content_value(c) {
        Value::Array(parts) => Value::Array(
            parts
                .into_iter()
                .filter(|p| takes(p, OPENAI_PARTS))
                .map(
                    |p| match (p.get("type").and_then(Value::as_str), p.get("text")) {
                        (Some("text"), Some(t)) => serde_json::json!({"type": "text", "text": t}),
                        _ => p,
                    },
                )
                .collect(),
        ),
        other => other,
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
