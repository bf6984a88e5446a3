//! tract's named values beside its objects, as a backend keeps them: the metadata keys (format,
//! token encoding, `HEAD`, settings, the redaction counter), small values encoded with postcard
//! (`HEAD`, reflog entries, branch counts, tombstones), and the reads of them that a snapshot and
//! a write transaction share.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::refs::{Head, HeadRef};
use crate::stats::BranchStats;
use crate::storage::backend::ReadTx;
use serde::{Deserialize, Serialize};

/// The store format's version, as a 4-byte little-endian integer.
pub(crate) const META_FORMAT: &str = "format";
/// The store's id: 16 random bytes, written when the store is made (format 2).
pub(crate) const META_STORE_ID: &str = "store_id";
/// The encoding token counts were made with.
pub(crate) const META_ENCODING: &str = "encoding";
/// What `HEAD` names.
pub(crate) const META_HEAD: &str = "HEAD";
/// The key of the secrets scrubbing's fingerprints: 32 random bytes, written when the store is
/// made or scrubbing is first turned on. Not a setting: `config show` never shows it, and a push
/// or pull of the settings does not carry it (a clone does).
pub(crate) const META_SECRETS_KEY: &str = "secrets_key";
/// The setting holding the secrets policy (JSON): a store made without it (by an older build)
/// scrubs nothing until it is set.
pub(crate) const SECRETS_SETTING: &str = "secrets";
/// Settings live in `meta` under this prefix (e.g. `setting.tool_summarization`).
const SETTING_PREFIX: &str = "setting.";
/// How many redactions the store has seen: a handle whose cached view is older builds it again
/// (it may hold a redacted message).
pub(crate) const META_REDACTIONS: &str = "redactions";
/// The blob the n-th redaction removed (32 bytes, under `redacted.<n>`): what derived data
/// (the search index) drops after a redaction it did not see.
const REDACTED_PREFIX: &str = "redacted.";
/// How many times `gc` removed objects: derived data older than the count checks what it holds.
pub(crate) const META_COLLECTIONS: &str = "collections";

/// The metadata key naming the blob of the `n`-th redaction.
pub(crate) fn redacted_key(n: u64) -> String {
    format!("{REDACTED_PREFIX}{n}")
}

/// The metadata key of setting `name`.
pub(crate) fn setting_key(name: &str) -> String {
    format!("{SETTING_PREFIX}{name}")
}

/// A small value (`HEAD`, a reflog entry, counts, a tombstone) as stored.
pub(crate) fn encode_small<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    postcard::to_allocvec(v).map_err(|e| Error::corrupt(format!("cannot encode: {e}")))
}

/// A small value from its stored bytes (bytes that do not decode are a corrupt store).
pub(crate) fn decode_small<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|e| Error::corrupt(format!("cannot decode: {e}")))
}

/// A [`BranchStats`] row as tract wrote it before it counted commits since a checkpoint.
#[derive(Deserialize)]
struct BranchStatsV1 {
    tip: crate::id::CommitId,
    last_activity_us: u64,
    tally: crate::stats::Tally,
}

/// The counts a branch's row holds, in this layout or the one before. (`postcard`: a newer
/// field goes last, so an older reader, which ignores what follows the fields it knows, still
/// reads the row.)
pub(crate) fn decode_stats(bytes: &[u8]) -> Result<BranchStats> {
    decode_small(bytes).or_else(|e| {
        let old: BranchStatsV1 = decode_small(bytes).map_err(|_| e)?;
        Ok(BranchStats {
            tip: old.tip,
            last_activity_us: old.last_activity_us,
            tally: old.tally,
            since_checkpoint: None,
        })
    })
}

/// A counter kept in `meta` (0 when it was never set).
pub(crate) fn read_counter(tx: &(impl ReadTx + ?Sized), key: &str) -> Result<u64> {
    Ok(tx
        .meta(key)?
        .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
        .map_or(0, u64::from_le_bytes))
}

/// What `HEAD` names, as stored.
pub(crate) fn read_head_ref(tx: &(impl ReadTx + ?Sized)) -> Result<HeadRef> {
    let raw = tx
        .meta(META_HEAD)?
        .ok_or_else(|| Error::corrupt("HEAD is missing"))?;
    decode_small(&raw)
}

/// `HEAD` and the commit it names.
pub(crate) fn read_head(tx: &(impl ReadTx + ?Sized)) -> Result<Head> {
    let target = read_head_ref(tx)?;
    let commit = match &target {
        HeadRef::Branch(b) => tx.tip(b)?.map(CommitId::from_bytes),
        HeadRef::Detached(id) => Some(*id),
    };
    Ok(Head { target, commit })
}

/// The error for branch `name`, which has no tip: the branches there are, the closest named.
pub(crate) fn unknown_branch(tx: &(impl ReadTx + ?Sized), name: &str) -> Result<Error> {
    let tips = tx.tips()?;
    Ok(Error::unknown_branch(
        name,
        tips.iter().map(|(n, _)| n.as_str()),
    ))
}

/// Every branch and its tip, by name.
pub(crate) fn tips(tx: &(impl ReadTx + ?Sized)) -> Result<Vec<(String, CommitId)>> {
    Ok(tx
        .tips()?
        .into_iter()
        .map(|(name, id)| (name, CommitId::from_bytes(id)))
        .collect())
}
