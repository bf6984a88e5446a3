//! Hooks: code that sees each tool result before it is committed and decides what the model
//! sees. Without a registered handler, the default one applies the store's tool-summarization
//! policy ([`crate::ToolPolicy`]). When a result is summarized or edited, the original is
//! committed first and the new text is an edit of it, in one transaction: the model sees the
//! new text, history keeps the original.
//!
//! ```
//! use tract_core::{Decision, Message, RecordOptions, ToolCall, ToolPolicy, Tract};
//! let t = Tract::in_memory()?;
//! t.set_tool_policy(&ToolPolicy {
//!     instructions: [("grep".into(), "file names and line numbers only".into())].into(),
//!     auto_threshold: Some(1000),
//!     default_instructions: None,
//! })?;
//! t.on_tool_result(|p| {
//!     if p.content.contains("BEGIN PRIVATE KEY") {
//!         p.reject("the output holds a private key")
//!     } else {
//!         p.approve()
//!     }
//! });
//! t.assistant("", vec![ToolCall { id: "c1".into(), name: "cat".into(), arguments: "{}".into() }])?;
//! let result = Message::tool_result("c1", "cat", "fn main() {}", false);
//! let out = t.record_tool_result(result, &RecordOptions::default())?;
//! assert_eq!(out.decision, Decision::Approve);
//! assert!(out.replacement.is_none());
//! let refused = t.tool_result("c1", "cat", "-----BEGIN PRIVATE KEY-----", false);
//! assert!(matches!(refused, Err(tract_core::Error::Rejected { .. })));
//! # Ok::<(), tract_core::Error>(())
//! ```

use crate::error::{BatchPosition, Error, Result};
use crate::object::{Content, Message, Op, Role};
use crate::repo::Repo;
use crate::scrubbing::Scrubber;
use crate::summarize::{Summarizer, SummaryRequest, TOOL_SUMMARIZE_SYSTEM, with_default};
use crate::tools::decision::{Decision, DecisionSlot};
use crate::tools::policy::{self, ToolPolicy};
use crate::view::info::{CommitInfo, Current};
use crate::write::txn::{self, AppendOptions, ChainStep, Prepared};
use std::num::NonZeroU32;
use std::sync::Arc;

/// The events a handler can be registered for.
pub const HOOK_EVENTS: &[&str] = &["tool_result"];

pub use crate::object::HOOK_SUMMARY_NOTE;

/// An event a handler is registered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// A tool result about to be recorded by `tool_result`.
    ToolResult,
}

impl HookEvent {
    /// The event named `name`, or an error listing the known ones.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "tool_result" => Ok(HookEvent::ToolResult),
            other => Err(Error::invalid_input(format!(
                "unknown event '{other}'; events: {}",
                HOOK_EVENTS.join(", ")
            ))),
        }
    }
}

/// A tool result a handler decides on. Exactly one of [`approve`](Self::approve),
/// [`summarize`](Self::summarize), [`edit`](Self::edit) or [`reject`](Self::reject) may be
/// called; a handler that calls none approves (with a warning).
#[derive(Debug, Clone)]
pub struct PendingToolResult {
    /// The tool that produced it.
    pub tool_name: String,
    /// The call it answers.
    pub tool_call_id: String,
    /// Its text.
    pub content: String,
    /// Whether the tool reported a failure.
    pub is_error: bool,
    /// Its payload tokens.
    pub token_count: u32,
    decision: DecisionSlot,
}

impl PendingToolResult {
    /// Records the result unchanged.
    pub fn approve(&mut self) -> Result<()> {
        self.decide(Decision::Approve)
    }

    /// Records the result, then its summary as an edit of it.
    pub fn summarize(
        &mut self,
        instructions: Option<String>,
        target_tokens: Option<NonZeroU32>,
    ) -> Result<()> {
        self.decide(Decision::Summarize {
            instructions,
            target_tokens,
        })
    }

    /// Records the result, then `text` as an edit of it.
    pub fn edit(&mut self, text: impl Into<String>) -> Result<()> {
        self.decide(Decision::Edit(text.into()))
    }

    /// Records nothing: the call that recorded the result fails with [`Error::Rejected`].
    pub fn reject(&mut self, reason: impl Into<String>) -> Result<()> {
        self.decide(Decision::Reject(reason.into()))
    }

    /// What was decided so far.
    pub fn decision(&self) -> Option<&Decision> {
        self.decision.get()
    }

    /// Makes decision `d`, as the methods above do; a second decision is refused.
    pub fn decide(&mut self, d: Decision) -> Result<()> {
        self.decision.decide(d)
    }
}

/// A `tool_result` handler. An error it returns propagates and nothing is committed; a
/// handler's own failure is best returned as [`Error::Handler`], which keeps it as the source.
pub type ToolResultHandler =
    Arc<dyn Fn(&mut PendingToolResult) -> Result<()> + Send + Sync + 'static>;

/// The handlers registered on one handle (not stored: a handler is code).
#[derive(Default, Clone)]
pub(crate) struct HookRegistry {
    pub(crate) tool_result: Option<ToolResultHandler>,
}

impl std::fmt::Debug for HookRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRegistry")
            .field("tool_result", &self.tool_result.is_some())
            .finish()
    }
}

/// How [`crate::Tract::record_tool_result`] and [`crate::Tract::append_batch_with_policy`]
/// treat a tool result. The default: the registered `tool_result` handler decides, else the
/// store's policy, and the handle's summarizer (else the extractive one) makes summaries.
#[derive(Clone, Default)]
pub struct RecordOptions<'a> {
    /// Applied as is to every tool result, instead of asking the handler or the policy.
    pub decision: Option<Decision>,
    /// Makes the summaries instead of the handle's summarizer.
    pub summarizer: Option<&'a dyn Summarizer>,
}

impl std::fmt::Debug for RecordOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordOptions")
            .field("decision", &self.decision)
            .field("summarizer", &self.summarizer.is_some())
            .finish()
    }
}

/// What recording a tool result did.
#[derive(Debug, Clone)]
pub struct ToolResultOutcome {
    /// The result as recorded: the position, with its original content (and, when it was
    /// replaced, the replacement as its `current` version).
    pub original: CommitInfo,
    /// The edit the model sees instead (a summary or a handler's text), if one was made.
    pub replacement: Option<CommitInfo>,
    /// What was decided (`Approve` also when a summary was dropped or failed).
    pub decision: Decision,
    /// What the caller should be told: a handler that decided nothing, a summarizer that
    /// failed (the original is kept), a summary that was not shorter than the original.
    pub warnings: Vec<String>,
}

/// Everything recording tool results needs: where to write, who decides, who summarizes.
pub(crate) struct Recorder<'a> {
    pub(crate) repo: &'a Repo,
    /// The registered `tool_result` handler (`None`: the store's policy decides).
    pub(crate) handler: Option<ToolResultHandler>,
    /// The summarizer the call names.
    pub(crate) summarizer: Option<&'a dyn Summarizer>,
    /// The handle's default summarizer.
    pub(crate) default_summarizer: Option<Arc<dyn Summarizer>>,
}

impl Recorder<'_> {
    /// Records a tool result: `decision` given is applied as is; `None`: the handler decides,
    /// else the store's policy. A failed summary keeps the original with a warning; a
    /// rejection or a handler's error commits nothing.
    pub(crate) fn record(
        &self,
        message: Message,
        decision: Option<Decision>,
    ) -> Result<ToolResultOutcome> {
        if message.role != Role::Tool {
            return Err(Error::invalid_message(format!(
                "a tool result has role tool, not {}",
                message.role.as_str()
            )));
        }
        let mut batch = Batch::new(self.repo)?;
        let p = Prepared::new(message, &batch.scrubber)?;
        batch.add(self, p, decision)?;
        self.write(batch)?
            .pop()
            .ok_or_else(|| Error::invalid_op("the tool result produced no commit"))
    }

    /// Appends messages in one transaction, each tool result given `decision`, else through
    /// the handler or the store's policy. All or nothing.
    pub(crate) fn record_batch(
        &self,
        messages: Vec<Message>,
        decision: Option<&Decision>,
    ) -> Result<Vec<ToolResultOutcome>> {
        let mut batch = Batch::new(self.repo)?;
        for (i, m) in messages.into_iter().enumerate() {
            let p = Prepared::new(m, &batch.scrubber)
                .map_err(|e| e.in_batch(BatchPosition::Message(i + 1)))?;
            batch.add(self, p, decision.cloned())?;
        }
        self.write(batch)
    }

    fn write(&self, batch: Batch) -> Result<Vec<ToolResultOutcome>> {
        let mut infos = txn::write(self.repo, &AppendOptions::default(), batch.steps)?.into_iter();
        let mut out = Vec::with_capacity(batch.planned.len());
        for (decision, edited, warnings) in batch.planned {
            let mut original = infos
                .next()
                .ok_or_else(|| Error::invalid_op("a message produced no commit"))?;
            let replacement = if edited { infos.next() } else { None };
            // Like a position a query returns: the version in view rides along.
            if let Some(r) = &replacement
                && let Some(message) = &r.message
            {
                original.current = Some(Current {
                    commit: r.id,
                    message: Arc::clone(message),
                    token_count: r.token_count,
                });
            }
            out.push(ToolResultOutcome {
                original,
                replacement,
                decision,
                warnings,
            });
        }
        Ok(out)
    }

    /// What is decided for `p`: the given decision, or the handler's, else the store policy's
    /// (read once per batch).
    fn decide(
        &self,
        p: &Prepared,
        given: Option<Decision>,
        policy: &mut Option<ToolPolicy>,
        warnings: &mut Vec<String>,
    ) -> Result<Decision> {
        if let Some(d) = given {
            return Ok(d);
        }
        let Some(handler) = &self.handler else {
            let policy = match policy {
                Some(p) => p,
                // An unreadable policy must not cost the result: it is recorded as it is.
                None => policy.insert(policy::load(self.repo).unwrap_or_else(|e| {
                    warnings.push(format!(
                        "the stored tool-summarization policy could not be read ({e}); the result was recorded as it is"
                    ));
                    ToolPolicy::default()
                })),
            };
            let name = p.message.name.as_deref().unwrap_or_default();
            return Ok(policy.decide(name, p.payload));
        };
        let m = &p.message;
        let mut pending = PendingToolResult {
            tool_name: m.name.clone().unwrap_or_default(),
            tool_call_id: m.tool_call_id.clone().unwrap_or_default(),
            content: m.content.text().into_owned(),
            is_error: m.is_error,
            token_count: p.payload,
            decision: DecisionSlot::default(),
        };
        handler(&mut pending)?;
        Ok(pending.decision.take().unwrap_or_else(|| {
            warnings.push(undecided_warning(&pending.tool_name));
            Decision::Approve
        }))
    }

    /// The summary of a result and the note for its edit; `None` (with a warning) when the
    /// summarizer fails or its summary is no shorter than the result.
    fn summarize(
        &self,
        original: &Prepared,
        call: Option<Arc<Message>>,
        (instructions, target_tokens): (Option<String>, Option<NonZeroU32>),
        warnings: &mut Vec<String>,
    ) -> Option<(String, String)> {
        let m = &original.message;
        let name = m.name.as_deref().unwrap_or("tool");
        let request = SummaryRequest {
            system_prompt: TOOL_SUMMARIZE_SYSTEM.to_string(),
            instructions,
            target_tokens: target_tokens.map(NonZeroU32::get),
            // The call tells what the output answers; the result alone is summarized.
            messages: vec![Arc::new(m.clone())],
            context: call.into_iter().collect(),
        };
        let outcome = with_default(self.summarizer, self.default_summarizer.clone(), |s| {
            s.summarize(&request).map(|text| (text, s.identity()))
        });
        match outcome {
            Ok((text, who)) if text.trim().is_empty() => {
                warnings.push(format!(
                    "{who} returned an empty summary of the {name} result; the result was kept as it is"
                ));
                None
            }
            Ok((text, who)) => {
                let tokens = crate::tokens::count_text(&text);
                if tokens >= original.payload {
                    warnings.push(format!(
                        "the summary of the {name} result ({tokens} tokens) is not shorter than the result ({} tokens); the result was kept as it is",
                        original.payload
                    ));
                    return None;
                }
                Some((text, format!("{HOOK_SUMMARY_NOTE}{who}")))
            }
            Err(e) => {
                warnings.push(format!(
                    "summarizing the {name} result failed ({e}); the result was kept as it is"
                ));
                None
            }
        }
    }
}

/// Messages planned for one transaction: their steps, and per message what was decided,
/// whether an edit follows it, and the warnings.
struct Batch {
    steps: Vec<(ChainStep, Prepared)>,
    planned: Vec<(Decision, bool, Vec<String>)>,
    /// Calls made earlier in the batch, by call id, as the index of their step: a result's
    /// summary is asked with its call.
    calls: std::collections::HashMap<String, usize>,
    /// The store's policy, read once per batch when a result needs it.
    policy: Option<ToolPolicy>,
    /// The store's secrets scrubbing, read once per batch: results and their summaries (a
    /// summarizer can echo a secret) are scrubbed alike.
    scrubber: Scrubber,
}

impl Batch {
    fn new(repo: &Repo) -> Result<Self> {
        Ok(Batch {
            steps: Vec::new(),
            planned: Vec::new(),
            calls: Default::default(),
            policy: None,
            scrubber: repo.scrubber()?,
        })
    }

    /// Plans one message: its append, and for a tool result the edit its decision makes.
    fn add(&mut self, r: &Recorder<'_>, p: Prepared, given: Option<Decision>) -> Result<()> {
        let m = &p.message;
        if m.role != Role::Tool {
            for c in &m.tool_calls {
                self.calls.insert(c.id.clone(), self.steps.len());
            }
            self.steps.push((ChainStep::Op(Op::Append), p));
            self.planned.push((Decision::Approve, false, Vec::new()));
            return Ok(());
        }
        let mut warnings = Vec::new();
        let decision = r.decide(&p, given, &mut self.policy, &mut warnings)?;
        let replacement = match &decision {
            Decision::Approve => None,
            Decision::Reject(reason) => {
                return Err(Error::Rejected {
                    reason: reason.clone(),
                });
            }
            Decision::Edit(text) => {
                Some((text.clone(), "edited by the tool_result handler".into()))
            }
            Decision::Summarize {
                instructions,
                target_tokens,
            } => {
                // The call (with its arguments) tells the summarizer what the output answers.
                let call_id = m.tool_call_id.as_deref().unwrap_or_default();
                let call = match self.calls.get(call_id) {
                    Some(&i) => Some(Arc::new(self.steps[i].1.message.clone())),
                    None => r
                        .repo
                        .at_head(|snap, v| {
                            v.open_call(call_id)
                                .map(|e| r.repo.text(snap, e))
                                .transpose()
                        })
                        .ok()
                        .and_then(Result::ok)
                        .flatten(),
                };
                let ask = (instructions.clone(), *target_tokens);
                r.summarize(&p, call, ask, &mut warnings)
            }
        };
        let edit = match replacement {
            Some((text, note)) => {
                let mut edited = m.clone();
                edited.content = Content::Text(text);
                let mut e = Prepared::new(edited, &self.scrubber)?;
                e.note = Some(note);
                Some(e)
            }
            None => None,
        };
        let position = self.steps.len();
        self.steps.push((ChainStep::Op(Op::Append), p));
        let edited = edit.is_some();
        if let Some(e) = edit {
            self.steps.push((ChainStep::EditOf(position), e));
        }
        // A summary that failed or was dropped leaves the result approved as it is.
        let decision = if edited { decision } else { Decision::Approve };
        self.planned.push((decision, edited, warnings));
        Ok(())
    }
}

/// The warning for a handler that returned without deciding.
fn undecided_warning(tool: &str) -> String {
    format!(
        "the tool_result handler decided nothing for the {tool} result; it was approved unchanged"
    )
}
