//! Redaction: removing a message's content from the store for good (a secret, personal data
//! that reached a tool result) while every commit id stays valid. The blob's record (and the
//! chunks no other blob shares) is replaced by a tombstone saying when and why; the view shows
//! a placeholder with the message's role and call structure, so requests stay valid.

use crate::error::{Error, Result};
use crate::id::{BlobId, ChunkId, CommitId};
use crate::object::Commit;
use crate::repo::Repo;
use crate::storage::backend::ObjectTable;
use crate::storage::store::verify::{self, Tombstone};
use crate::storage::store::writer::Writer;
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
    /// Commits whose content was made from the removed content and still holds it (a summary
    /// or a compression of it, or of such a summary), oldest first; empty after a redaction
    /// that follows them (`fsck` lists those of every redaction).
    pub derived: Vec<CommitId>,
    /// The commits redacted with it because their content was made from it (with `follow`).
    pub followed: Vec<CommitId>,
}

/// How a redaction goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedactOptions {
    /// Also redact, with the same reason, every commit whose content was made from the removed
    /// content: a secret does not live on in a summary of it.
    pub follow: bool,
}

/// Removes the content of the message `rev` names (and, with `follow`, of every commit made
/// from redacted content). A commit without a message, an unknown one, a blank reason or a blob
/// redacted already is an error, and nothing changes.
pub(crate) fn redact(
    repo: &Repo,
    rev: &Rev,
    reason: &str,
    options: &RedactOptions,
) -> Result<Redaction> {
    if reason.trim().is_empty() {
        return Err(Error::invalid_input(
            "a redaction needs a reason (it is kept with the tombstone)",
        ));
    }
    // The revision is resolved before the write transaction, and everything after it is read
    // in that transaction: a store in PostgreSQL with a pool of one connection (which the
    // write holds) redacts too. A commit named by id is the same whenever it is resolved; a
    // branch named is redacted where it was when the call was made.
    let commit = {
        let snap = repo.read()?;
        repo.resolve(&snap, rev)?
    };
    let mut w = repo.store.write()?;
    let blob = w.commit_object(&commit)?.blob.ok_or_else(|| {
        Error::invalid_op(format!("commit {} carries no message", commit.short()))
    })?;
    if let Some(t) = w.tombstone(&blob)? {
        return Err(Error::invalid_op(format!(
            "the message of {} was redacted already ({})",
            commit.short(),
            t.reason
        )));
    }
    let redacted_at_us = w.clock().now_us();
    let chunks_removed = remove(&mut w, &blob, reason, redacted_at_us)?;
    let mut derived = derived(&mut w, &blob)?;
    let mut followed = Vec::new();
    if options.follow {
        for d in std::mem::take(&mut derived) {
            if let Some(b) = w.commit_object(&d)?.blob {
                remove(&mut w, &b, reason, redacted_at_us)?;
                followed.push(d);
            }
        }
    }
    w.commit()?;
    // The redacted text leaves the search index before this returns.
    crate::storage::search::keeper::after_removal(&repo.store, None)?;
    // This process's cached views notice through the redaction count; counts kept per branch
    // (tokens in view) are stale now and counted again from the views when listed.
    Ok(Redaction {
        commit,
        blob,
        redacted_at_us,
        reason: reason.to_string(),
        chunks_removed,
        derived,
        followed,
    })
}

/// Replaces blob `blob` with its tombstone; returns the chunks removed with it.
fn remove(w: &mut Writer, blob: &BlobId, reason: &str, at_us: u64) -> Result<Vec<ChunkId>> {
    let (message, _) = w.blob(blob)?;
    remove_as(w, blob, reason, at_us, message.stand_in(REDACTED_TEXT))
}

/// Replaces blob `blob` with a tombstone that shows `placeholder` in its place; returns the
/// chunks removed with it.
pub(crate) fn remove_as(
    w: &mut Writer,
    blob: &BlobId,
    reason: &str,
    at_us: u64,
    placeholder: crate::object::Message,
) -> Result<Vec<ChunkId>> {
    let payload = tokens::count_message(&placeholder);
    let tombstone = Tombstone {
        redacted_at_us: at_us,
        reason: reason.to_string(),
        placeholder,
    };
    w.redact_blob(blob, &tombstone, payload)
}

/// The commits whose content was made from the content of `blob` (and, in turn, from theirs),
/// read in the write transaction from every commit of the store.
fn derived(w: &mut Writer, blob: &BlobId) -> Result<Vec<CommitId>> {
    derived_from(w, &[*blob].into())
}

/// The commits whose content was made from the content of any of `tainted` (and, in turn, from
/// theirs), oldest first.
pub(crate) fn derived_from(
    w: &mut Writer,
    tainted: &std::collections::HashSet<BlobId>,
) -> Result<Vec<CommitId>> {
    if tainted.is_empty() {
        return Ok(Vec::new());
    }
    let commits = w.scan_objects(ObjectTable::Commits, |id, record| {
        verify::verified_commit(&CommitId::from_bytes(id), record)
    })?;
    let all: Vec<(CommitId, &Commit)> = commits
        .iter()
        .map(|(id, c)| (CommitId::from_bytes(*id), c))
        .collect();
    Ok(crate::view::ancestry::made_from(&all, tainted))
}
