//! Writing through a handle: appends (one message, a batch, the role shorthands), edits,
//! records, redaction, and the retention policy `gc` applies.

use crate::error::{BatchPosition, Error, Result};
use crate::object::{Content, Message, Role, ToolCall};
use crate::ops::redact::{self, Redaction};
use crate::retention_policy::{self, RetentionPolicy};
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;
use crate::write::txn::AppendOptions;
use crate::{write::append, write::edit};

use super::Tract;

impl Tract {
    /// Appends a message at `HEAD`; durable when this returns. A user or system message must
    /// say something ([`Message::check_says_something`]).
    pub fn append(&self, message: Message) -> Result<CommitInfo> {
        self.append_with(message, &AppendOptions::default())
    }

    /// Appends with options (compare-and-swap, note).
    pub fn append_with(&self, message: Message, opts: &AppendOptions) -> Result<CommitInfo> {
        message.check_says_something()?;
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
        check_all_say_something(&messages)?;
        append::append_batch(&self.repo, messages, opts)
    }

    /// Appends OpenAI Responses input items, one message each, in one transaction with
    /// options: all of them, or none. An output whose call is not among them takes the call's
    /// tool name from the view ([`Tract::call_names`]). The items are a framework's session
    /// mirrored as it is: an empty input message is kept, as the framework sent it.
    pub fn append_items(
        &self,
        items: &[serde_json::Value],
        opts: &AppendOptions,
    ) -> Result<Vec<CommitInfo>> {
        use crate::formats::responses;
        let calls = self.call_names(&responses::calls_answered_elsewhere(items))?;
        let messages = responses::messages_from_items(items, &calls)?;
        append::append_batch(&self.repo, messages, opts)
    }

    /// Appends what a provider's response body answers with (an OpenAI Chat Completions,
    /// OpenAI Responses or Anthropic Messages response), its first assistant message carrying
    /// the body's usage, in one transaction with options: all of them, or none.
    pub fn append_response(
        &self,
        body: &serde_json::Value,
        opts: &AppendOptions,
    ) -> Result<Vec<CommitInfo>> {
        let messages = crate::formats::response_body::messages_of(body)?;
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
    /// `tool_call_id` are kept; the original stays in history. A user or system message
    /// cannot be made empty.
    pub fn edit(&self, target: impl Into<Rev>, content: Content) -> Result<CommitInfo> {
        let check = |m: &Message| {
            let mut edited = Message::text(m.role, String::new());
            edited.content = content.clone();
            edited.check_says_something()
        };
        edit::edit(&self.repo, &target.into(), content.clone(), check)
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

    /// Removes the content of the message `rev` names from the store for good: its blob's
    /// record (and the chunks no other blob shares) becomes a tombstone keeping when and
    /// `reason`. Every commit id stays valid; the view shows a placeholder with the message's
    /// role and call structure (requests stay valid); search finds nothing of it; `fsck`
    /// reports it as redacted. Every commit carrying the same content shows the placeholder.
    /// The redaction lists the commits whose content was made from redacted content (a
    /// summary of it, or of such a summary): see [`Tract::redact_with`] to remove them too.
    pub fn redact(&self, rev: impl Into<Rev>, reason: &str) -> Result<Redaction> {
        self.redact_with(rev, reason, &redact::RedactOptions::default())
    }

    /// [`Tract::redact`], and with `options.follow` every commit whose content was made from
    /// redacted content too, in the same transaction.
    pub fn redact_with(
        &self,
        rev: impl Into<Rev>,
        reason: &str,
        options: &redact::RedactOptions,
    ) -> Result<Redaction> {
        redact::redact(&self.repo, &rev.into(), reason, options)
    }

    /// The store's retention policy (empty, removing nothing, when none was set).
    pub fn retention_policy(&self) -> Result<RetentionPolicy> {
        RetentionPolicy::decode(
            self.repo
                .read()?
                .setting(retention_policy::SETTING)?
                .as_deref(),
        )
    }

    /// The store's price table (empty when none was set): what a usage report prices
    /// requests with.
    pub fn prices(&self) -> Result<crate::price_table::PriceTable> {
        crate::price_table::PriceTable::decode(
            self.repo
                .read()?
                .setting(crate::price_table::SETTING)?
                .as_deref(),
        )
    }

    /// Replaces the store's price table (durably; an empty one removes it). An invalid table
    /// is refused and the stored one kept.
    pub fn set_prices(&self, table: &crate::price_table::PriceTable) -> Result<()> {
        let value = table.encode()?;
        let mut w = self.repo.store.write()?;
        w.set_setting(crate::price_table::SETTING, value.as_deref())?;
        w.commit()
    }

    /// Replaces the store's retention policy (durably). Only `gc` applies it, and
    /// [`crate::GcOptions::dry_run`] shows what it would do first. An invalid policy is
    /// refused and the stored one kept.
    pub fn set_retention_policy(&self, policy: &RetentionPolicy) -> Result<()> {
        let value = policy.encode()?;
        let mut w = self.repo.store.write()?;
        w.set_setting(retention_policy::SETTING, value.as_deref())?;
        w.commit()
    }
}

/// Each message of a batch says something ([`Message::check_says_something`]); the first
/// that does not is an error naming its place (in a batch of more than one).
pub(crate) fn check_all_say_something(messages: &[Message]) -> Result<()> {
    for (i, m) in messages.iter().enumerate() {
        m.check_says_something().map_err(|e| match messages.len() {
            1 => e,
            _ => e.in_batch(BatchPosition::Message(i + 1)),
        })?;
    }
    Ok(())
}
