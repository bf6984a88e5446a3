//! What a store holds already that looks like a credential (written before it scrubbed, or with
//! scrubbing off): found with the store's rules (`tract secrets scan`), and scrubbed where it is
//! as `redact --follow` removes content, in one write transaction: each message's blob becomes
//! a tombstone whose stand-in is the message with its findings replaced by their markers, what
//! was made from it (summaries, compressions) is followed, the search index forgets the text,
//! and every commit id stays valid.

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId};
use crate::object::{Message, Op, RECORD_METADATA_KEY};
use crate::ops::redact::{self, REDACTED_TEXT};
use crate::repo::Repo;
use crate::scrubbing;
use crate::secrets::detect::Detector;
use crate::secrets::scrub::{self, Key};
use crate::storage::store::meta::META_SECRETS_KEY;
use crate::storage::store::snapshot::Snapshot;
use std::collections::{BTreeMap, HashSet};

/// Where a scan looks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanOptions {
    /// Every commit the branches reach (edited and compressed versions, records of transcript
    /// lines), not only what their views show.
    pub history: bool,
    /// Every branch, not only the handle's.
    pub all: bool,
}

/// One value that looks like a credential, in a message the store holds: where it is and which
/// rule found it, never the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretFinding {
    /// The commit carrying the message (the first found; a message shared by several commits
    /// is listed once).
    pub commit: CommitId,
    /// The message's blob.
    pub blob: BlobId,
    /// The branch it was found on (`None` at a detached position).
    pub branch: Option<String>,
    /// The rule that found it.
    pub rule: String,
    /// Its keyed fingerprint, as a marker would show it (`None` in a store that has never
    /// scrubbed, which has no key yet).
    pub fingerprint: Option<String>,
    /// Which part of the message: `content`, `content[2]`, `tool_calls[0].arguments`,
    /// `metadata.KEY`.
    pub field: String,
    /// The byte span of the value in that part's text.
    pub start: usize,
    /// The end of that span (exclusive).
    pub end: usize,
}

/// What `secrets scan --redact` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretsRedaction {
    /// The findings scrubbed.
    pub findings: usize,
    /// The commits whose message was replaced by its scrubbed stand-in, one per message.
    pub scrubbed: Vec<CommitId>,
    /// Commits whose content was made from a scrubbed message (a summary, a compression),
    /// redacted with it.
    pub followed: Vec<CommitId>,
}

/// Messages a scan reads at once.
const SCAN_BATCH: usize = 512;

/// The reason a tombstone of a scrubbed message gives.
pub const SCRUB_REASON: &str = "secrets scan";

/// Every finding the store's rules make in what `options` covers, in the order the messages
/// are met (each branch's view oldest first; with `history`, from each tip back).
pub(crate) fn scan(repo: &Repo, options: &ScanOptions) -> Result<Vec<SecretFinding>> {
    let snap = repo.read()?;
    let detector = scrubbing::scan_detector(&snap)?;
    let key = scrubbing::key(&snap)?;
    let mut seen = HashSet::new();
    // Commits walked already: branches share their history, which is walked once.
    let mut walked = HashSet::new();
    let mut out = Vec::new();
    for (branch, tip) in starts(repo, &snap, options.all)? {
        let Some(tip) = tip else { continue };
        let carriers: Vec<(CommitId, BlobId)> = if options.history {
            history(&snap, tip, &mut walked)?
        } else {
            repo.with_view(&snap, Some(tip), |v| {
                v.entries()
                    .iter()
                    .map(|e| (e.commit, e.blob))
                    .collect::<Vec<_>>()
            })?
        };
        // Each message once, read in batches (one round trip each in a database); a redacted
        // one reads as its stand-in, which holds no finding.
        let carriers: Vec<(CommitId, BlobId)> = carriers
            .into_iter()
            .filter(|(_, b)| seen.insert(*b))
            .collect();
        for batch in carriers.chunks(SCAN_BATCH) {
            let ids: Vec<BlobId> = batch.iter().map(|(_, b)| *b).collect();
            for ((commit, blob), (message, _)) in batch.iter().zip(snap.blobs(&ids)?) {
                for (field, f, fingerprint) in findings(&detector, key.as_ref(), &message) {
                    out.push(SecretFinding {
                        commit: *commit,
                        blob: *blob,
                        branch: branch.clone(),
                        rule: f.rule,
                        fingerprint,
                        field,
                        start: f.start,
                        end: f.end,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Scrubs the messages of `found` where they are stored, in one write transaction (see the
/// module's doc), following what was made from them. A message redacted meanwhile is skipped.
pub(crate) fn redact(repo: &Repo, found: &[SecretFinding]) -> Result<SecretsRedaction> {
    let mut report = SecretsRedaction::default();
    if found.is_empty() {
        return Ok(report);
    }
    let detector = scrubbing::scan_detector(&repo.read()?)?;
    let mut by_blob: BTreeMap<BlobId, (CommitId, usize)> = BTreeMap::new();
    for f in found {
        by_blob.entry(f.blob).or_insert((f.commit, 0)).1 += 1;
    }
    let mut w = repo.store.write()?;
    // A store that never scrubbed gets its key now: the stand-ins' markers need it.
    let key: Key = match w.meta(META_SECRETS_KEY)? {
        Some(bytes) => Key::try_from(bytes.as_slice())
            .map_err(|_| Error::corrupt("the store's secrets key is not 32 bytes"))?,
        None => {
            let key = scrub::new_key()?;
            w.set_meta(META_SECRETS_KEY, Some(key.as_slice()))?;
            key
        }
    };
    let at_us = w.clock().now_us();
    let mut tainted = HashSet::new();
    for (blob, (commit, n)) in &by_blob {
        if w.tombstone(blob)?.is_some() {
            continue;
        }
        let (message, _) = w.blob(blob)?;
        let Some(scrubbed) = scrubbed(&detector, &key, &message) else {
            continue;
        };
        redact::remove_as(&mut w, blob, SCRUB_REASON, at_us, scrubbed)?;
        tainted.insert(*blob);
        report.scrubbed.push(*commit);
        report.findings += n;
    }
    for d in redact::derived_from(&mut w, &tainted)? {
        let Some(blob) = w.commit_object(&d)?.blob else {
            continue;
        };
        if w.tombstone(&blob)?.is_some() {
            continue;
        }
        // A summary that repeats a secret shows its own findings scrubbed; one that does not
        // is removed as a redaction removes it (it may say what the secret was otherwise).
        let (message, _) = w.blob(&blob)?;
        let stand_in =
            scrubbed(&detector, &key, &message).unwrap_or_else(|| message.stand_in(REDACTED_TEXT));
        redact::remove_as(&mut w, &blob, SCRUB_REASON, at_us, stand_in)?;
        report.followed.push(d);
    }
    w.commit()?;
    // The scrubbed text leaves the search index before this returns.
    crate::storage::search::keeper::after_removal(&repo.store, None)?;
    Ok(report)
}

/// The commits `tip` reaches through every parent that no earlier walk reached, with their
/// blobs (the scanned ones), tip first.
fn history(
    snap: &Snapshot,
    tip: CommitId,
    walked: &mut HashSet<CommitId>,
) -> Result<Vec<(CommitId, BlobId)>> {
    let mut out = Vec::new();
    let mut next = vec![tip];
    while let Some(id) = next.pop() {
        if !walked.insert(id) {
            continue;
        }
        let c = snap.commit(&id)?;
        if let Some(blob) = c.blob.filter(|_| scanned(&c.op)) {
            out.push((id, blob));
        }
        next.extend(c.parents.iter().rev());
    }
    Ok(out)
}

/// The branches a scan starts from, with their tips: the handle's position, or every branch.
fn starts(
    repo: &Repo,
    snap: &Snapshot,
    all: bool,
) -> Result<Vec<(Option<String>, Option<CommitId>)>> {
    if all {
        return Ok(snap
            .branches()?
            .into_iter()
            .map(|(name, tip)| (Some(name), Some(tip)))
            .collect());
    }
    let head = repo.head(snap)?;
    Ok(vec![(head.branch().map(str::to_string), head.commit)])
}

/// Whether a commit's blob is scanned: a message, or a record of a transcript's lines; a
/// framework's record is kept as it was written (its encoded state breaks when changed).
fn scanned(op: &Op) -> bool {
    match op {
        Op::Record { kind } => kind.starts_with(TRANSCRIPT_RECORDS),
        _ => true,
    }
}

/// The record kinds an import writes from a transcript's lines.
const TRANSCRIPT_RECORDS: &str = "claude_code.";

/// The findings in a message, each with its fingerprint when the store has a key: a record of
/// a transcript's lines is JSON in its content.
fn findings(
    detector: &Detector,
    key: Option<&Key>,
    message: &Message,
) -> Vec<(String, crate::secrets::detect::Finding, Option<String>)> {
    match message.metadata.get(RECORD_METADATA_KEY) {
        None => match key {
            Some(k) => scrub::fingerprinted(detector, k, message)
                .into_iter()
                .map(|(field, f, print)| (field, f, Some(print)))
                .collect(),
            None => scrub::findings(detector, message)
                .into_iter()
                .map(|(field, f)| (field, f, None))
                .collect(),
        },
        Some(kind) if is_transcript_record(kind) => scrub::record_findings(detector, message)
            .into_iter()
            .flat_map(|(field, text, found)| {
                found.into_iter().map(move |f| {
                    let print = key.map(|k| {
                        scrub::fingerprint(k, text.get(f.start..f.end).unwrap_or_default())
                    });
                    (field.to_string(), f, print)
                })
            })
            .collect(),
        Some(_) => Vec::new(),
    }
}

/// `message` with its findings scrubbed, `None` when nothing is found.
fn scrubbed(detector: &Detector, key: &Key, message: &Message) -> Option<Message> {
    match message.metadata.get(RECORD_METADATA_KEY) {
        None => scrub::scrub(detector, key, message).map(|(m, _)| m),
        Some(kind) if is_transcript_record(kind) => {
            scrub::scrub_record(detector, key, message).map(|(m, _)| m)
        }
        Some(_) => None,
    }
}

/// Whether a record carrier's kind (as JSON text) is a transcript's lines.
fn is_transcript_record(kind_json: &str) -> bool {
    serde_json::from_str::<String>(kind_json).is_ok_and(|k| k.starts_with(TRANSCRIPT_RECORDS))
}
