//! Redaction: removing a message's content from the store for good (a secret, personal data
//! that reached a tool result) while every commit id stays valid. The blob's record (and the
//! chunks no other blob shares) is replaced by a tombstone saying when and why; the view shows
//! a placeholder with the message's role and call structure, so requests stay valid.

use crate::error::{Error, Result};
use crate::id::{BlobId, ChunkId, CommitId};
use crate::object::{Content, Message, ToolCall};
use crate::repo::Repo;
use crate::storage::store::verify::Tombstone;
use crate::tokens;
use crate::view::revision::Rev;

/// The text the view shows in place of redacted content.
pub const REDACTED_TEXT: &str = "[tract] This content was redacted.";

/// What a redaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    /// The commit named.
    pub commit: CommitId,
    /// The blob whose content was removed (every commit carrying it shows the placeholder).
    pub blob: BlobId,
    /// When, in microseconds since the Unix epoch.
    pub redacted_at_us: u64,
    /// Why.
    pub reason: String,
    /// The chunks of a large blob that were removed with it.
    pub chunks_removed: Vec<ChunkId>,
}

/// The message the view shows for a redacted one: its role, name, call id, error flag and
/// tool calls (ids and names; arguments emptied, as they may hold the secret), and no content.
fn placeholder(m: &Message) -> Message {
    Message {
        role: m.role,
        content: Content::Text(REDACTED_TEXT.to_string()),
        name: m.name.clone(),
        tool_calls: m
            .tool_calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: "{}".to_string(),
            })
            .collect(),
        tool_call_id: m.tool_call_id.clone(),
        is_error: m.is_error,
        metadata: Default::default(),
    }
}

/// Removes the content of the message `rev` names. A commit without a message, an unknown
/// one, a blank reason or a blob redacted already is an error, and nothing changes.
pub(crate) fn redact(repo: &Repo, rev: &Rev, reason: &str) -> Result<Redaction> {
    if reason.trim().is_empty() {
        return Err(Error::invalid_input(
            "a redaction needs a reason (it is kept with the tombstone)",
        ));
    }
    let mut w = repo.store.write()?;
    // Resolved inside the write transaction, so what is redacted is what was named now.
    let snap = repo.read()?;
    let commit = repo.resolve(&snap, rev)?;
    drop(snap);
    let blob = w.commit_object(&commit)?.blob.ok_or_else(|| {
        Error::invalid_op(format!("commit {} carries no message", commit.short()))
    })?;
    let snap = repo.read()?;
    if let Some(t) = snap.tombstone(&blob)? {
        return Err(Error::invalid_op(format!(
            "the message of {} was redacted already ({})",
            commit.short(),
            t.reason
        )));
    }
    drop(snap);
    let (message, _) = w.blob(&blob)?;
    let placeholder = placeholder(&message);
    let payload = tokens::count_message(&placeholder);
    let tombstone = Tombstone {
        redacted_at_us: w.clock().now_us(),
        reason: reason.to_string(),
        placeholder,
    };
    let chunks_removed = w.redact_blob(&blob, &tombstone, payload)?;
    w.commit()?;
    // This process's cached views notice through the redaction count; counts kept per branch
    // (tokens in view) are stale now and counted again from the views when listed.
    Ok(Redaction {
        commit,
        blob,
        redacted_at_us: tombstone.redacted_at_us,
        reason: tombstone.reason,
        chunks_removed,
    })
}
