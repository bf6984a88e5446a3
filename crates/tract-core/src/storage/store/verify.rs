//! Object records checked against their ids: a record is decoded and its bytes hashed again on
//! every read, so a record that changed after it was written is never served
//! ([`Error::CorruptObject`]); tombstones of redacted blobs; a blob as another store receives it.

use crate::error::{Error, Result};
use crate::id::{BlobId, ChunkId, CommitId};
use crate::object::{Commit, Message};
use crate::storage::backend::{ObjectTable, ReadTx, Records};
use crate::storage::codec;
use crate::storage::store::meta::decode_small;
use serde::{Deserialize, Serialize};

/// What stands where a redacted blob's record was: when, why, and the message the view shows
/// in its place (the original's role and call structure, no content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    /// When it was redacted, in microseconds since the Unix epoch.
    pub redacted_at_us: u64,
    /// Why, as the caller gave it.
    pub reason: String,
    /// What the view shows instead.
    pub placeholder: Message,
}

impl Tombstone {
    fn decode(body: &[u8]) -> Result<Self> {
        decode_small(body)
    }
}

/// The tombstone of a redacted blob record, `None` for a record that is not one.
pub(crate) fn tombstone_of(record: &[u8]) -> Option<Result<Tombstone>> {
    codec::tombstone_body(record).map(Tombstone::decode)
}

/// The tombstone of blob `id` as transaction `tx` sees it, `None` for one not redacted (or
/// not there).
pub(crate) fn tombstone_in(tx: &(impl ReadTx + ?Sized), id: &BlobId) -> Result<Option<Tombstone>> {
    match tx.object(ObjectTable::Blobs, id.as_bytes())? {
        Some(rec) => tombstone_of(&rec).transpose(),
        None => Ok(None),
    }
}

/// A blob as another store receives it.
pub(crate) enum BlobCopy {
    /// The message's bytes (verified) and its payload tokens.
    Payload {
        /// The encoded message.
        bytes: Vec<u8>,
        /// Its payload tokens.
        tokens: u32,
    },
    /// A redacted blob: its tombstone record, as stored.
    Tombstone {
        /// The record.
        record: Vec<u8>,
    },
}

/// A blob record decoded and verified against its id, with the ids of its chunks: what `fsck`
/// checks of each blob (`chunk` fetches a chunk record).
pub(crate) fn verified_blob_bytes(
    id: &BlobId,
    record: &[u8],
    chunk: impl FnMut(&ChunkId) -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    let bytes = codec::decode(record, true, chunk).map_err(|e| decoding("blob", id.to_hex(), e))?;
    if BlobId::of(&bytes) != *id {
        return Err(damaged(
            "blob",
            id.to_hex(),
            "its bytes do not hash to its id",
        ));
    }
    Ok(bytes)
}

/// A commit record decoded and verified against its id.
pub(crate) fn verified_commit(id: &CommitId, record: &[u8]) -> Result<Commit> {
    Commit::decode(&commit_bytes(id, record)?).map_err(|e| decoding("commit", id.to_hex(), e))
}

/// The error for an object whose record does not decode or whose bytes do not hash to its id.
pub(crate) fn damaged(kind: &'static str, id: String, reason: impl Into<String>) -> Error {
    Error::CorruptObject {
        kind,
        id,
        reason: reason.into(),
    }
}

/// What a damaged record's decoding error says, as the reason of [`Error::CorruptObject`];
/// other errors (the storage engine's, a missing chunk) pass through.
pub(crate) fn decoding(kind: &'static str, id: String, e: Error) -> Error {
    match e {
        Error::Corrupt { message } => damaged(kind, id, message),
        other => other,
    }
}

/// The object bytes of a commit record, verified against the id: a record that changed after
/// it was written is never served.
fn commit_bytes(id: &CommitId, record: &[u8]) -> Result<Vec<u8>> {
    let bytes = codec::decode(record, false, |_| {
        Err(Error::corrupt("commit records are never chunked"))
    })
    .map_err(|e| decoding("commit", id.to_hex(), e))?;
    if CommitId::of(&bytes) != *id {
        return Err(damaged(
            "commit",
            id.to_hex(),
            "its bytes do not hash to its id",
        ));
    }
    Ok(bytes)
}

/// The commit in a record, verified against its id.
pub(crate) fn read_commit(record: Option<Vec<u8>>, id: &CommitId) -> Result<Commit> {
    let record = record.ok_or(Error::MissingCommit { commit: *id })?;
    verified_commit(id, &record)
}

/// A blob's message and payload tokens from its record (a tombstone's placeholder for a
/// redacted one), its chunks fetched by `chunk`; hashed against its id when `verify`.
pub(crate) fn read_blob(
    record: Option<Vec<u8>>,
    id: &BlobId,
    verify: bool,
    chunk: impl FnMut(&ChunkId) -> Result<Vec<u8>>,
) -> Result<(Message, u32)> {
    let rec = record.ok_or_else(|| damaged("blob", id.to_hex(), "its record is missing"))?;
    let tokens = codec::tokens(&rec).map_err(|e| decoding("blob", id.to_hex(), e))?;
    if let Some(body) = codec::tombstone_body(&rec) {
        let t = Tombstone::decode(body).map_err(|e| decoding("blob", id.to_hex(), e))?;
        return Ok((t.placeholder, tokens));
    }
    let bytes = codec::decode(&rec, true, chunk).map_err(|e| decoding("blob", id.to_hex(), e))?;
    if verify && BlobId::of(&bytes) != *id {
        return Err(damaged(
            "blob",
            id.to_hex(),
            "its bytes do not hash to its id",
        ));
    }
    let message = Message::decode(&bytes).map_err(|e| decoding("blob", id.to_hex(), e))?;
    Ok((message, tokens))
}

/// A chunk's record from `tx` (a missing one is a corrupt store).
pub(crate) fn chunk_from(tx: &(impl ReadTx + ?Sized), id: &ChunkId) -> Result<Vec<u8>> {
    tx.object(ObjectTable::Chunks, id.as_bytes())?
        .ok_or_else(|| Error::corrupt(format!("its chunk {} is missing", id.short())))
}

/// Adds to `chain` the commits of `records` (a backend's walk back from `from`, newest first,
/// following the parent it keeps beside each record) as long as each is the parent of the one
/// before, verified (`keep` sees each); returns where a walk goes on from.
fn linked_records(
    records: Records,
    from: CommitId,
    chain: &mut Vec<(CommitId, Commit)>,
    mut keep: impl FnMut(&CommitId, &Commit),
) -> Result<Option<CommitId>> {
    let mut cursor = Some(from);
    for (key, record) in records {
        let id = CommitId::from_bytes(key);
        if cursor != Some(id) {
            break;
        }
        let commit = verified_commit(&id, &record)?;
        keep(&id, &commit);
        cursor = commit.parent();
        chain.push((id, commit));
    }
    Ok(cursor)
}

/// Walks back from `from` towards `stop` (excluded) in one query, where `tx` has a quicker way
/// than reading commit by commit, adding what it verified to `chain` (newest first; `keep` sees
/// each); returns where a walk goes on from.
pub(crate) fn walk_in_one_query(
    tx: &(impl ReadTx + ?Sized),
    from: CommitId,
    stop: Option<CommitId>,
    chain: &mut Vec<(CommitId, Commit)>,
    keep: impl FnMut(&CommitId, &Commit),
) -> Result<Option<CommitId>> {
    if Some(from) == stop {
        return Ok(Some(from));
    }
    let stop_key = stop.map(|s| *s.as_bytes());
    match tx.first_parent_records(from.as_bytes(), stop_key.as_ref())? {
        Some(records) => linked_records(records, from, chain, keep),
        None => Ok(Some(from)),
    }
}

/// Walks from `cursor` back along first parents to `stop` (excluded), after the newest-first
/// `chain` already walked; returns the whole chain oldest first, and whether `stop` was
/// reached.
pub(crate) fn walk_first_parents(
    mut chain: Vec<(CommitId, Commit)>,
    mut cursor: Option<CommitId>,
    stop: Option<CommitId>,
    commit: impl Fn(&CommitId) -> Result<Commit>,
) -> Result<(Vec<(CommitId, Commit)>, bool)> {
    while let Some(id) = cursor {
        if Some(id) == stop {
            break;
        }
        let c = commit(&id)?;
        cursor = c.parent();
        chain.push((id, c));
    }
    chain.reverse();
    Ok((chain, cursor.is_some() && cursor == stop))
}
