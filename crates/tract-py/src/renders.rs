//! The model input a handle renders for Python step after step: each message in view is made
//! into Python objects once per provider and kept (`tract_core::Pieces`), so a view that grew by
//! one message costs that message; every call gets its own copy of the containers (dicts and
//! lists made again, strings shared: they cannot change), so what a caller does to what it got
//! never reaches a later call.
//!
//! A handle's first rendering for a provider keeps nothing: its objects are the caller's, with
//! no copy made (and the first `to_openai()` reads the text a batch at a time, kept neither by
//! the compile nor by the handle). A process that reads a view once (a worker's cold read) then
//! makes one set of objects, not two, and holds the text once; a handle rendered again (an
//! agent's loop) keeps pieces from its second rendering on. Python's cyclic garbage collector
//! is paused while a rendering makes its objects ([`GcPaused`]).

use crate::convert::{Keys, to_py, to_py_with};
use crate::errors::IntoPyResult;
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyModule, PyString};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use tract_core::formats::compile::{OpenAiContent, OpenAiMessage, OpenAiPart, anthropic_piece};
use tract_core::formats::responses::{items_from_message, synthetic_output};
use tract_core::{Compiled, Pieces, Role, Sent, ViewEntry};

/// What a handle keeps of its renderings, one set of pieces per provider (each shared, so a
/// rendering can hold it past the next lookup).
#[derive(Default)]
pub(crate) struct Renders {
    /// Each message's chat-completions dict.
    openai: Mutex<Kept>,
    /// Each message's Anthropic piece: a system message's text, another's blocks.
    anthropic: Mutex<Kept>,
    /// Each message's Responses items.
    responses: Mutex<Kept>,
}

/// One provider's pieces, and whether the handle rendered for it before (its first rendering
/// keeps none).
#[derive(Default)]
struct Kept {
    pieces: Pieces<Arc<Piece>>,
    rendered: bool,
}

impl Kept {
    /// Whether this rendering keeps pieces: every one but the first.
    fn keeps(&mut self) -> bool {
        std::mem::replace(&mut self.rendered, true)
    }
}

/// Python's cyclic garbage collector paused (if it ran) until this is dropped. A rendering
/// makes many dicts, lists and strings that hold no cycle; each allocation counts towards a
/// collection, which walks them all again, and again: at 50,000 messages that was a third of
/// the rendering's time. A first `to_openai()` lets the GIL go while it reads a batch of text;
/// another thread that runs meanwhile is not collected for those moments (a few milliseconds a
/// batch), which frees nothing later than it would have been.
struct GcPaused<'py>(Option<Bound<'py, PyModule>>);

impl<'py> GcPaused<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        let gc = py.import(intern!(py, "gc"))?;
        if !gc.call_method0(intern!(py, "isenabled"))?.is_truthy()? {
            return Ok(GcPaused(None));
        }
        gc.call_method0(intern!(py, "disable"))?;
        Ok(GcPaused(Some(gc)))
    }
}

impl Drop for GcPaused<'_> {
    fn drop(&mut self) {
        if let Some(gc) = &self.0 {
            let _ = gc.call_method0(intern!(gc.py(), "enable"));
        }
    }
}

/// One message rendered: its objects (one dict, or its blocks or items), each with whether it
/// is flat (no dict or list in it: a shallow copy is the caller's own).
struct Piece(Vec<(Py<PyAny>, bool)>);

impl Piece {
    /// The piece of the JSON values `values`.
    fn of(py: Python<'_>, values: &[serde_json::Value]) -> PyResult<Piece> {
        values
            .iter()
            .map(|v| {
                let flat = match v {
                    serde_json::Value::Object(o) => o.values().all(|v| {
                        !matches!(
                            v,
                            serde_json::Value::Object(_) | serde_json::Value::Array(_)
                        )
                    }),
                    serde_json::Value::Array(_) => false,
                    _ => true,
                };
                Ok((to_py(py, v)?.unbind(), flat))
            })
            .collect::<PyResult<_>>()
            .map(Piece)
    }

    /// The piece of one OpenAI chat message: its dict, flat when nothing in it is a list.
    fn openai(py: Python<'_>, m: &OpenAiMessage<'_>) -> PyResult<Piece> {
        let flat = m.tool_calls.is_none() && !matches!(m.content, OpenAiContent::Parts(_));
        let dict = openai_dict(py, m, &mut Keys::default())?;
        Ok(Piece(vec![(dict.into_any().unbind(), flat)]))
    }

    /// Copies of its objects for one caller.
    fn copies<'py>(&self, py: Python<'py>) -> impl Iterator<Item = PyResult<Bound<'py, PyAny>>> {
        self.0.iter().map(move |(obj, flat)| {
            let obj = obj.bind(py);
            match (flat, obj.cast_exact::<PyDict>()) {
                (true, Ok(d)) => Ok(d.copy()?.into_any()),
                (true, Err(_)) => Ok(obj.clone()),
                (false, _) => fresh(obj),
            }
        })
    }
}

/// The pieces, unless another thread renders with them now (or this one, from a finalizer
/// run in the middle of a rendering): then the caller renders without them.
fn take(pieces: &Mutex<Kept>) -> Option<MutexGuard<'_, Kept>> {
    match pieces.try_lock() {
        Ok(p) => Some(p),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Reads the text of the messages of `c` that `pieces` has no piece of, in one read of the
/// store, without the GIL (the last few items of a Responses rendering read theirs one by one).
fn read_new<T>(py: Python<'_>, c: &Compiled, pieces: &Pieces<T>) -> PyResult<()> {
    let new: Vec<&ViewEntry> = c.entries().filter(|e| !pieces.has(e)).collect();
    if new.is_empty() {
        return Ok(());
    }
    py.detach(|| c.read(new)).py()
}

impl Renders {
    /// Lets go of every kept piece (the handle is closed).
    pub(crate) fn clear(&self) {
        for pieces in [&self.openai, &self.anthropic, &self.responses] {
            if let Some(mut p) = take(pieces) {
                p.pieces = Pieces::new();
            }
        }
    }

    /// `Compiled.to_openai()`; `None` when the pieces are in use.
    pub(crate) fn openai<'py>(
        &self,
        py: Python<'py>,
        c: &Compiled,
    ) -> Option<PyResult<Bound<'py, PyAny>>> {
        let mut kept = take(&self.openai)?;
        if !kept.keeps() {
            drop(kept);
            return Some(openai_once(py, c));
        }
        let pieces = &mut kept.pieces;
        if let Err(e) = read_new(py, c, pieces) {
            return Some(Err(e));
        }
        let paused = match GcPaused::new(py) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        pieces.begin();
        let mut items = Vec::new();
        let made = c.openai_sent().iter().try_for_each(|s| {
            match s {
                Sent::InView(e) => {
                    let piece = pieces.piece_of(c, e, || {
                        let m = c.message(e).py()?;
                        Piece::openai(py, &OpenAiMessage::of(&m)).map(Arc::new)
                    })?;
                    for copy in piece.copies(py) {
                        items.push(copy?);
                    }
                }
                Sent::Synthetic(m) => items
                    .push(openai_dict(py, &OpenAiMessage::of(m), &mut Keys::default())?.into_any()),
            }
            Ok::<_, PyErr>(())
        });
        pieces.end();
        let list = made.and_then(|()| Ok(PyList::new(py, items)?.into_any()));
        drop(paused);
        Some(list)
    }

    /// `Compiled.to_anthropic()`; `None` when the pieces are in use.
    pub(crate) fn anthropic<'py>(
        &self,
        py: Python<'py>,
        c: &Compiled,
    ) -> Option<PyResult<Bound<'py, PyAny>>> {
        let mut kept = take(&self.anthropic)?;
        kept.rendered = true;
        let pieces = &mut kept.pieces;
        if let Err(e) = read_new(py, c, pieces) {
            return Some(Err(e));
        }
        let _paused = match GcPaused::new(py) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        pieces.begin();
        // A piece is the message's blocks (or its system text).
        let piece_of = |m: &tract_core::Message| {
            match anthropic_piece(m) {
                serde_json::Value::Array(blocks) => Piece::of(py, &blocks),
                text => Piece::of(py, &[text]),
            }
            .map(Arc::new)
        };
        let layout = c.anthropic_layout(
            |s| match s {
                Sent::InView(e) => pieces
                    .piece_of(c, e, || piece_of(&*c.message(e).py()?))
                    .map(|p| Arc::clone(&p)),
                Sent::Synthetic(m) => piece_of(m),
            },
            |p| p.as_ref().is_ok_and(|p| p.0.is_empty()),
        );
        pieces.end();
        drop(kept);
        Some((|| {
            let body = PyDict::new(py);
            if !layout.system.is_empty() {
                let mut texts = Vec::new();
                for piece in layout.system {
                    for text in piece?.copies(py) {
                        texts.push(text?);
                    }
                }
                let joined = PyString::new(py, "\n\n").call_method1("join", (texts,))?;
                body.set_item(intern!(py, "system"), joined)?;
            }
            let mut messages = Vec::with_capacity(layout.messages.len());
            for (role, parts) in layout.messages {
                let mut blocks = Vec::new();
                for part in parts {
                    for block in part?.copies(py) {
                        blocks.push(block?);
                    }
                }
                // Interned: a key or role made anew for each of thousands of messages costs
                // more than the rest of the message.
                let role = match role {
                    Role::Assistant => intern!(py, "assistant"),
                    _ => intern!(py, "user"),
                };
                let message = PyDict::new(py);
                message.set_item(intern!(py, "role"), role)?;
                message.set_item(intern!(py, "content"), PyList::new(py, blocks)?)?;
                messages.push(message);
            }
            body.set_item(intern!(py, "messages"), PyList::new(py, messages)?)?;
            Ok(body.into_any())
        })())
    }

    /// `Compiled.to_responses(limit)`; `None` when the pieces are in use.
    pub(crate) fn responses<'py>(
        &self,
        py: Python<'py>,
        c: &Compiled,
        limit: Option<usize>,
    ) -> Option<PyResult<Bound<'py, PyAny>>> {
        let mut kept = take(&self.responses)?;
        // A part of the view (the last few items) keeps its pieces: the next step's rendering
        // of the whole view is no first one.
        let keeps = kept.keeps() || limit.is_some();
        let pieces = &mut kept.pieces;
        if keeps
            && limit.is_none()
            && let Err(e) = read_new(py, c, pieces)
        {
            return Some(Err(e));
        }
        let _paused = match GcPaused::new(py) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        pieces.begin();
        // A first rendering reads the text a batch at a time, as `to_openai()`'s does; one
        // that keeps pieces reads only the new messages, which `read_new` has read.
        let mut passing = (!keeps).then(|| Passing::new(c, c.entries().collect()));
        let mut keys = Keys::default();
        let items = c.responses_layout(
            limit,
            |e| {
                if let Some(passing) = passing.as_mut() {
                    return match passing.message(py, e) {
                        Ok(m) => items_from_message(&m)
                            .iter()
                            .map(|v| to_py_with(py, v, &mut keys))
                            .collect(),
                        Err(e) => vec![Err(e)],
                    };
                }
                match pieces.piece_of(c, e, || {
                    let m = c.message(e).py()?;
                    Piece::of(py, &items_from_message(&m)).map(Arc::new)
                }) {
                    Ok(piece) => piece.copies(py).collect(),
                    Err(e) => vec![Err(e)],
                }
            },
            |call| to_py(py, &synthetic_output(call)),
        );
        match limit {
            Some(_) => pieces.end_part(),
            None => pieces.end(),
        }
        Some(
            items
                .into_iter()
                .collect::<PyResult<Vec<_>>>()
                .and_then(|items| Ok(PyList::new(py, items)?.into_any())),
        )
    }
}

/// Messages a first rendering reads at a time: enough for the store to decode them on every
/// core, few enough that their text is a small part of what the rendering makes of them.
const PASSING_BATCH: usize = 2048;

/// A handle's first `to_openai()`: each message read from the store a batch at a time
/// ([`Compiled::read_passing`], kept neither by the compile nor by the handle), made into the
/// caller's objects and let go; nothing kept.
fn openai_once<'py>(py: Python<'py>, c: &Compiled) -> PyResult<Bound<'py, PyAny>> {
    let sent = c.openai_sent();
    let mut passing = Passing::new(
        c,
        sent.iter()
            .filter_map(|s| match s {
                Sent::InView(e) => Some(*e),
                Sent::Synthetic(_) => None,
            })
            .collect(),
    );
    let mut items = Vec::with_capacity(sent.len());
    let mut keys = Keys::default();
    // Paused across the reads too: started again between batches, the collector would walk
    // every object the batches before made, once a batch.
    let _paused = GcPaused::new(py)?;
    for s in &sent {
        let dict = match s {
            Sent::InView(e) => {
                let m = passing.message(py, e)?;
                openai_dict(py, &OpenAiMessage::of(&m), &mut keys)?
            }
            Sent::Synthetic(m) => openai_dict(py, &OpenAiMessage::of(m), &mut keys)?,
        };
        items.push(dict.into_any());
    }
    Ok(PyList::new(py, items)?.into_any())
}

/// The dict of one OpenAI chat message, made from its fields (the JSON `openai_message`
/// writes, with no JSON tree made between): its keys, its role and a call's `type` are
/// interned strings, shared by every dict; the JSON kept of a provider part goes through
/// `keys`.
fn openai_dict<'py>(
    py: Python<'py>,
    m: &OpenAiMessage<'_>,
    keys: &mut Keys<'py>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let role = match m.role {
        "system" => intern!(py, "system"),
        "user" => intern!(py, "user"),
        "assistant" => intern!(py, "assistant"),
        _ => intern!(py, "tool"),
    };
    dict.set_item(intern!(py, "role"), role)?;
    if let Some(id) = m.tool_call_id {
        dict.set_item(intern!(py, "tool_call_id"), id)?;
    }
    let content = match &m.content {
        OpenAiContent::Null => py.None().into_bound(py),
        OpenAiContent::Text(t) => PyString::new(py, t).into_any(),
        OpenAiContent::Parts(parts) => {
            let list = PyList::empty(py);
            for part in parts {
                list.append(match part {
                    OpenAiPart::Text(t) => {
                        let p = PyDict::new(py);
                        p.set_item(intern!(py, "type"), intern!(py, "text"))?;
                        p.set_item(intern!(py, "text"), t)?;
                        p.into_any()
                    }
                    OpenAiPart::Other(v) => to_py_with(py, v, keys)?,
                })?;
            }
            list.into_any()
        }
    };
    dict.set_item(intern!(py, "content"), content)?;
    if let Some(name) = m.name {
        dict.set_item(intern!(py, "name"), name)?;
    }
    if let Some(calls) = &m.tool_calls {
        let list = PyList::empty(py);
        for call in calls {
            let function = PyDict::new(py);
            function.set_item(intern!(py, "name"), call.name)?;
            function.set_item(intern!(py, "arguments"), call.arguments)?;
            let c = PyDict::new(py);
            c.set_item(intern!(py, "id"), call.id)?;
            c.set_item(intern!(py, "type"), intern!(py, "function"))?;
            c.set_item(intern!(py, "function"), function)?;
            list.append(c)?;
        }
        dict.set_item(intern!(py, "tool_calls"), list)?;
    }
    Ok(dict)
}

/// The messages of a compile's entries read a batch at a time, for a rendering that asks for
/// them one by one in the order it was given them (skipping some)
/// ([`Compiled::read_passing`]: kept neither by the compile nor by the handle).
struct Passing<'c> {
    compiled: &'c Compiled,
    /// The entries in the order they are asked for.
    entries: Vec<&'c ViewEntry>,
    /// Where the next batch starts in `entries`.
    next: usize,
    /// The batch read last, by entry.
    batch: std::collections::HashMap<*const ViewEntry, Arc<tract_core::Message>>,
}

impl<'c> Passing<'c> {
    fn new(compiled: &'c Compiled, entries: Vec<&'c ViewEntry>) -> Self {
        Passing {
            compiled,
            entries,
            next: 0,
            batch: std::collections::HashMap::new(),
        }
    }

    /// The message of `e`, reading the batch that starts at it when the last one does not hold
    /// it.
    fn message(&mut self, py: Python<'_>, e: &ViewEntry) -> PyResult<Arc<tract_core::Message>> {
        if let Some(m) = self.batch.get(&std::ptr::from_ref(e)) {
            return Ok(Arc::clone(m));
        }
        let start = self.entries[self.next..]
            .iter()
            .position(|x| std::ptr::eq(*x, e))
            .map(|k| self.next + k)
            .ok_or_else(|| PyRuntimeError::new_err("a message of the view was not read"))?;
        let end = (start + PASSING_BATCH).min(self.entries.len());
        let wanted = &self.entries[start..end];
        let compiled = self.compiled;
        let read = py.detach(|| compiled.read_passing(wanted)).py()?;
        self.batch = wanted
            .iter()
            .map(|x| std::ptr::from_ref(*x))
            .zip(read)
            .collect();
        self.next = end;
        self.batch
            .get(&std::ptr::from_ref(e))
            .cloned()
            .ok_or_else(|| PyRuntimeError::new_err("a message of the view was not read"))
    }
}

/// A copy of a kept object for one caller: every dict and list in it made again, everything
/// else (strings, numbers, None: what cannot change) shared.
fn fresh<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(d) = obj.cast_exact::<PyDict>() {
        let copy = d.copy()?;
        // Values are replaced after the walk: a dict must not change while it is walked.
        let mut nested = Vec::new();
        for (k, v) in copy.iter() {
            if v.cast_exact::<PyDict>().is_ok() || v.cast_exact::<PyList>().is_ok() {
                nested.push((k, fresh(&v)?));
            }
        }
        for (k, v) in nested {
            copy.set_item(k, v)?;
        }
        return Ok(copy.into_any());
    }
    if let Ok(l) = obj.cast_exact::<PyList>() {
        let items = l.iter().map(|v| fresh(&v)).collect::<PyResult<Vec<_>>>()?;
        return Ok(PyList::new(obj.py(), items)?.into_any());
    }
    Ok(obj.clone())
}
