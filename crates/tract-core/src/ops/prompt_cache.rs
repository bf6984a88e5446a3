//! What a provider's prompt cache could have served (`tract cache`): each model request of a
//! branch's first-parent history (an answer that carries usage) against the one before it, as
//! tract renders the two views those answers were given. A provider caches a request's prefix,
//! so what the next request could read from the cache is the prefix both share, byte for byte;
//! where the earlier request is not all of it, the cache broke, and the commit that broke it is
//! one of the commits between the two requests: an edit, a compression, a clear, a change of
//! the system prompt, or a redaction (which rewrites no commit: its tombstone's time tells).
//! A model switch and a gap longer than the cache's lifetime break it without a commit.
//!
//! Requests are compared message by message: each message's rendering, the pieces a
//! [`crate::Rendering`] puts together, so the prefix shared is counted in whole messages (in
//! tract's token counts, as `compile` counts them), and equal pieces are equal bytes.

use crate::error::Result;
use crate::formats::compile::{Compiled, Sent, anthropic_piece, openai_json};
use crate::formats::render::{Pieces, Provider};
use crate::formats::responses::{items_from_message, synthetic_output};
use crate::id::{BlobId, CommitId};
use crate::object::{Commit, Message, Op, Role};
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::tokens;
use crate::tools::clear::CLEARED_KEY;
use crate::usage::Usage;
use crate::view::revision::Rev;
use crate::view::{SYNTHETIC_RESULT_TOKENS, View, ViewEntry};
use std::collections::HashMap;
use std::sync::Arc;

/// Anthropic's default cache lifetime: five minutes (OpenAI keeps a prefix five to ten
/// minutes, an hour at most).
pub const DEFAULT_CACHE_TTL_SECONDS: u64 = 300;

/// How requests are rendered and when a cached prefix expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheOptions {
    /// The rendering compared (the last items of a Responses rendering are not a request:
    /// its limit is ignored).
    pub provider: Provider,
    /// How long the provider keeps a prefix after it was last read or written, in seconds.
    pub ttl_seconds: u64,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            provider: Provider::Anthropic,
            ttl_seconds: DEFAULT_CACHE_TTL_SECONDS,
        }
    }
}

/// What broke a cached prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// An edit of a message the earlier request sent.
    Edit,
    /// A compression of messages it sent.
    Compress,
    /// A tool result it sent, cleared (`clear`).
    Clear,
    /// A message it sent, redacted since (the commit named is the redacted one).
    Redaction,
    /// The system prompt changed (an edit of a system message, or a new one: a provider puts
    /// every system message first).
    System,
    /// Another model answered (a cache is the model's own; the commit named is the answer).
    Model,
    /// More time passed than the cache keeps a prefix, and the provider read nothing from it
    /// (the commit named is the answer).
    Ttl,
    /// A message added where it changes what comes before it (a tool result that came after
    /// other messages, sent after its call).
    Append,
    /// A merge that changed what the earlier request sent.
    Merge,
}

impl Cause {
    /// The cause's word, as reports print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Edit => "edit",
            Cause::Compress => "compress",
            Cause::Clear => "clear",
            Cause::Redaction => "redaction",
            Cause::System => "system",
            Cause::Model => "model",
            Cause::Ttl => "ttl",
            Cause::Append => "append",
            Cause::Merge => "merge",
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where and why a request did not extend the one before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheBreak {
    /// The commit that broke the prefix (see [`Cause`] for which it is).
    pub commit: CommitId,
    /// Why.
    pub cause: Cause,
}

/// One model request, as tract renders what it was sent.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedRequest {
    /// The answer that reports the request's usage.
    pub commit: CommitId,
    /// When the request was answered (the usage's time, else the answer's commit time), in
    /// microseconds since the Unix epoch.
    pub time_us: u64,
    /// What the provider reported: its cache reads are what it served from the cache.
    pub usage: Usage,
    /// The request's tokens as tract renders it (the view the answer was given).
    pub request_tokens: u64,
    /// The prefix this request shares with the one before, in tokens: what the cache could
    /// have served (0 for the first request).
    pub shared_tokens: u64,
    /// Why the cache could not serve all of the request before (`None`: it extended it).
    pub broke: Option<CacheBreak>,
}

/// What a branch's requests could have read from a provider's cache, and what broke it.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheReport {
    /// The branch (`HEAD` for a detached position).
    pub branch: String,
    /// Its tip (`None`: no commit yet).
    pub tip: Option<CommitId>,
    /// The options the report was made with.
    pub options: CacheOptions,
    /// The requests along the branch's first parents, oldest first.
    pub requests: Vec<CachedRequest>,
    /// Answers with usage that are not on the conversation's path (records of rewound
    /// attempts): paid for, but what they were sent is not in a view, so they are not
    /// compared.
    pub off_path: u64,
    /// Whether any request's view holds a system prompt: an imported session's agent keeps
    /// its own out of the session file, so the prefix compared starts at the first message.
    pub system_prompt: bool,
}

/// One message of a request as rendered: what is compared.
#[derive(Debug, Clone)]
struct Piece {
    role: Role,
    json: Arc<str>,
    tokens: u32,
    /// The commit whose content it is, and its blob (`None`: made up by tract).
    content: Option<(CommitId, BlobId)>,
}

impl PartialEq for Piece {
    fn eq(&self, o: &Self) -> bool {
        self.role == o.role && (Arc::ptr_eq(&self.json, &o.json) || self.json == o.json)
    }
}

/// A request's rendering, message by message, and what its pieces were made of.
struct Renderer {
    provider: Provider,
    pieces: Pieces<Vec<Arc<str>>>,
}

impl Renderer {
    /// The pieces of `view` as `provider` sends them, in order.
    fn pieces(&mut self, repo: &Repo, view: &View) -> Result<Vec<Piece>> {
        let compiled = Compiled::new(view, &repo.store, &repo.views);
        compiled.read(compiled.entries().filter(|e| !self.pieces.has(e)))?;
        self.pieces.begin();
        let out = match self.provider {
            Provider::OpenAi => self.openai(&compiled),
            Provider::Anthropic => self.anthropic(&compiled),
            Provider::Responses { .. } => self.responses(&compiled),
        };
        self.pieces.end();
        out
    }

    /// The kept JSON of the message of `e`, made by `make` if none is kept.
    fn made(
        &mut self,
        compiled: &Compiled,
        e: &ViewEntry,
        make: impl FnOnce(&Message) -> Vec<Arc<str>>,
    ) -> Result<Vec<Arc<str>>> {
        Ok(self
            .pieces
            .piece_of(compiled, e, || compiled.message(e).map(|m| make(&m)))?
            .into_owned())
    }

    fn openai(&mut self, compiled: &Compiled) -> Result<Vec<Piece>> {
        let mut out = Vec::new();
        for s in compiled.openai_sent() {
            out.push(match &s {
                Sent::InView(e) => {
                    let json = self.made(compiled, e, |m| vec![openai_json(m).into()])?;
                    in_view(e, json.into_iter().next().unwrap_or_default())
                }
                Sent::Synthetic(m) => synthetic(m.role, openai_json(m)),
            });
        }
        Ok(out)
    }

    fn anthropic(&mut self, compiled: &Compiled) -> Result<Vec<Piece>> {
        let layout = compiled.anthropic_layout(
            |s| match s {
                Sent::InView(e) => self
                    .made(compiled, e, |m| vec![anthropic_piece(m).to_string().into()])
                    .map(|j| in_view(e, j.into_iter().next().unwrap_or_default())),
                Sent::Synthetic(m) => Ok(synthetic(m.role, anthropic_piece(m).to_string())),
            },
            // A message with no block is left out (`[]`), as the rendering leaves it out.
            |p: &Result<Piece>| p.as_ref().is_ok_and(|p| &*p.json == "[]"),
        );
        // Every system message comes first (Anthropic's one system prompt), then the messages,
        // one role after the other: a piece's role tells where a message starts.
        let mut out = Vec::new();
        for p in layout.system {
            let mut p = p?;
            p.role = Role::System;
            out.push(p);
        }
        for (role, pieces) in layout.messages {
            for p in pieces {
                let mut p = p?;
                p.role = role;
                out.push(p);
            }
        }
        Ok(out)
    }

    fn responses(&mut self, compiled: &Compiled) -> Result<Vec<Piece>> {
        let items = compiled.responses_layout(
            None,
            |e| match self.made(compiled, e, |m| {
                items_from_message(m)
                    .iter()
                    .map(|v| v.to_string().into())
                    .collect()
            }) {
                // The message's tokens go with its first item.
                Ok(items) => items
                    .into_iter()
                    .enumerate()
                    .map(|(k, json)| {
                        let mut p = in_view(e, json);
                        if k > 0 {
                            p.tokens = 0;
                        }
                        Ok(p)
                    })
                    .collect(),
                Err(err) => vec![Err(err)],
            },
            |call| Ok(synthetic(Role::Tool, synthetic_output(call).to_string())),
        );
        items.into_iter().collect()
    }
}

/// The piece of an entry of the view.
fn in_view(e: &ViewEntry, json: Arc<str>) -> Piece {
    Piece {
        role: e.shape.role,
        json,
        tokens: e.tokens,
        content: Some((e.commit, e.blob)),
    }
}

/// The piece of a result tract made up for a call that has none.
fn synthetic(role: Role, json: String) -> Piece {
    Piece {
        role,
        json: json.into(),
        tokens: tokens::framed(SYNTHETIC_RESULT_TOKENS, false),
        content: None,
    }
}

/// How many pieces `a` and `b` begin with alike.
fn shared(a: &[Piece], b: &[Piece]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The tokens of `pieces`.
fn tokens_of(pieces: &[Piece]) -> u64 {
    pieces.iter().map(|p| u64::from(p.tokens)).sum()
}

/// The request before the one being compared.
struct Before {
    pieces: Vec<Piece>,
    view: View,
    /// Its answer's index in the chain.
    at: usize,
    time_us: u64,
    model: Option<String>,
}

/// The report of the branch `branch` names (`None`: the handle's position).
pub(crate) fn report(repo: &Repo, branch: Option<&str>, o: &CacheOptions) -> Result<CacheReport> {
    let snap = repo.read()?;
    let (name, tip) = match branch {
        Some(b) => (b.to_string(), Some(repo.resolve(&snap, &Rev::parse(b)?)?)),
        None => {
            let head = repo.head(&snap)?;
            (head.branch().unwrap_or("HEAD").to_string(), head.commit)
        }
    };
    let mut report = CacheReport {
        branch: name,
        tip,
        options: *o,
        requests: Vec::new(),
        off_path: 0,
        system_prompt: false,
    };
    let Some(tip) = tip else {
        return Ok(report);
    };
    let (chain, _) = snap.first_parents(tip, None)?;
    let redacted = redactions(&snap)?;
    let mut renderer = Renderer {
        provider: o.provider,
        pieces: Pieces::new(),
    };
    let ttl_us = o.ttl_seconds.saturating_mul(1_000_000);
    let mut view = View::default();
    let mut before: Option<Before> = None;
    // The commits applied to `view` so far.
    let mut applied = 0;
    for (i, (id, c)) in chain.iter().enumerate() {
        let Some(usage) = usage_of(&snap, c)? else {
            continue;
        };
        if matches!(c.op, Op::Record { .. }) {
            report.off_path += 1;
            continue;
        }
        // The view this answer was given: everything before it.
        view = view.fold(&snap, chain[applied..i].to_vec())?;
        applied = i;
        let pieces = renderer.pieces(repo, &view)?;
        report.system_prompt |= pieces.iter().any(|p| p.role == Role::System);
        let time_us = usage
            .time
            .as_deref()
            .and_then(rfc3339_us)
            .unwrap_or(c.timestamp_us);
        let mut request = CachedRequest {
            commit: *id,
            time_us,
            request_tokens: tokens_of(&pieces),
            shared_tokens: 0,
            broke: None,
            usage,
        };
        if let Some(b) = &before {
            let mut n = shared(&b.pieces, &pieces);
            // A redaction rewrites no commit: both views render its placeholder now, but the
            // earlier request was sent the content and this one the placeholder.
            let gone = b.pieces[..n].iter().position(|p| {
                p.content.is_some_and(|(_, blob)| {
                    redacted
                        .get(&blob)
                        .is_some_and(|&at| at > b.time_us && at <= time_us)
                })
            });
            let mut broke = None;
            if let Some(k) = gone {
                n = k;
                broke = b.pieces[k].content.map(|(commit, _)| CacheBreak {
                    commit,
                    cause: Cause::Redaction,
                });
            } else if n < b.pieces.len() {
                broke = Some(breaker(repo, &snap, &mut renderer, b, &chain[b.at..i], n)?);
            }
            request.shared_tokens = tokens_of(&pieces[..n]);
            let model = request.usage.model.as_deref();
            if b.model.is_some() && model.is_some() && b.model.as_deref() != model {
                broke = Some(CacheBreak {
                    commit: *id,
                    cause: Cause::Model,
                });
            } else if time_us.saturating_sub(b.time_us) > ttl_us
                && request.shared_tokens > 0
                && request.usage.cache_read_input_tokens == 0
            {
                broke = Some(CacheBreak {
                    commit: *id,
                    cause: Cause::Ttl,
                });
            }
            request.broke = broke;
        }
        before = Some(Before {
            pieces,
            view: view.clone(),
            at: i,
            time_us,
            model: request.usage.model.clone(),
        });
        report.requests.push(request);
    }
    Ok(report)
}

/// The usage commit `c` counts, if any (an edit's counted where its message was appended).
fn usage_of(snap: &Snapshot, c: &Commit) -> Result<Option<Usage>> {
    let (Some(blob), false) = (&c.blob, matches!(c.op, Op::Edit { .. })) else {
        return Ok(None);
    };
    let (m, _) = snap.blob(blob)?;
    Ok(crate::view::ledger::counted(c, &m))
}

/// The commit among `between` (the commits from the earlier request's answer to this
/// request's, oldest first, applied to the earlier request's view) after which the view
/// shares no more than `n` pieces with the earlier request, and what it did.
fn breaker(
    repo: &Repo,
    snap: &Snapshot,
    renderer: &mut Renderer,
    b: &Before,
    between: &[(CommitId, Commit)],
    n: usize,
) -> Result<CacheBreak> {
    let mut view = b.view.clone();
    let mut last = None;
    for (id, c) in between {
        let before = view.clone();
        view = view.fold(snap, vec![(*id, c.clone())])?;
        if matches!(c.op, Op::Record { .. }) {
            continue; // the view did not change
        }
        if shared(&b.pieces, &renderer.pieces(repo, &view)?) <= n {
            return Ok(CacheBreak {
                commit: *id,
                cause: cause(snap, c, &before)?,
            });
        }
        last = Some((*id, c, before));
    }
    // Unreachable while renderings are deterministic: the last commit made the view compared.
    match last {
        Some((id, c, before)) => Ok(CacheBreak {
            commit: id,
            cause: cause(snap, c, &before)?,
        }),
        None => Err(crate::error::Error::corrupt(
            "a request differs from the one before it with no commit between them",
        )),
    }
}

/// What commit `c` did to `view` (the view before it), as a cache break's cause.
fn cause(snap: &Snapshot, c: &Commit, view: &View) -> Result<Cause> {
    Ok(match &c.op {
        Op::Compress { .. } => Cause::Compress,
        Op::Merge { .. } => Cause::Merge,
        Op::Record { .. } | Op::Append => match &c.blob {
            Some(blob) if snap.blob(blob)?.0.role == Role::System => Cause::System,
            _ => Cause::Append,
        },
        Op::Edit { target } => {
            let edited = view.entry_of(target).map(|e| e.shape.role);
            let cleared = match &c.blob {
                Some(blob) => snap.blob(blob)?.0.metadata.contains_key(CLEARED_KEY),
                None => false,
            };
            if cleared {
                Cause::Clear
            } else if edited == Some(Role::System) {
                Cause::System
            } else {
                Cause::Edit
            }
        }
    })
}

/// When each redacted blob was redacted, in microseconds since the Unix epoch.
fn redactions(snap: &Snapshot) -> Result<HashMap<BlobId, u64>> {
    let mut out = HashMap::new();
    for n in 1..=snap.redactions()? {
        if let Some(blob) = snap.redacted_blob(n)?
            && let Some(t) = snap.tombstone(&blob)?
        {
            out.insert(blob, t.redacted_at_us);
        }
    }
    Ok(out)
}

/// An RFC 3339 UTC time in microseconds since the Unix epoch.
fn rfc3339_us(t: &str) -> Option<u64> {
    let at = humantime::parse_rfc3339_weak(t).ok()?;
    let since = at.duration_since(std::time::UNIX_EPOCH).ok()?;
    u64::try_from(since.as_micros()).ok()
}
