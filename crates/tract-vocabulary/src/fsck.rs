//! [`FsckReport`]: what `fsck` checked and found, Python's `Tract.fsck()` as JSON.

use super::hex;
use serde::Serialize;

/// What a check of the whole store found.
#[derive(Debug, Clone, Serialize)]
pub struct FsckReport {
    /// Whether nothing is wrong.
    clean: bool,
    /// Commits checked.
    commits: u64,
    /// Blobs checked.
    blobs: u64,
    /// Chunks checked.
    chunks: u64,
    /// Bytes of object records read and hashed again.
    bytes: u64,
    /// Branches checked.
    branches: u64,
    /// Reflog entries checked.
    reflog_entries: u64,
    /// Branches whose kept counts were compared with a replay of their view.
    counts_replayed: u64,
    /// View checkpoints read back and compared with a replay.
    checkpoints_checked: u64,
    /// Every branch: name to the commits a new handle reads past its view checkpoint (its
    /// whole first-parent history without one that reads back).
    past_checkpoint: std::collections::BTreeMap<String, u64>,
    /// Frames of the journal not yet folded into the store file, read whole and checked.
    journal_frames: u64,
    /// Documents of the search index (one per commit) read and checked against the store: no
    /// commit the store lacks, none twice, none a branch reaches missing (0: no index yet).
    index_documents: u64,
    /// Everything found wrong; empty for a sound store.
    problems: Vec<Problem>,
    /// Blobs whose payload was redacted (a tombstone in its place; their ids and commits stay
    /// valid; not a problem).
    redacted: Vec<String>,
    /// Commits whose content was made from redacted content (a summary or compression of it,
    /// or of such a summary), oldest first; `tract redact --follow` removes them too.
    derived_from_redacted: Vec<String>,
    /// Branches whose view has tool calls reusing an id an earlier call used (compile sends
    /// each under a new id; not a problem): branch name to how many.
    reused_call_ids: std::collections::BTreeMap<String, u64>,
    /// Branches whose view holds messages in which the store's secrets rules find something
    /// (a warning, not a problem: `tract secrets scan --redact` scrubs them): branch name to
    /// how many messages.
    secrets_in_view: std::collections::BTreeMap<String, u64>,
    /// The objects nothing reaches (kept; `gc` removes them).
    unreachable: Unreachable,
}

/// One thing found wrong.
#[derive(Debug, Clone, Serialize)]
struct Problem {
    /// `corrupt`, `missing`, `ref`, `bookkeeping`, `checkpoint`, `order` or `index` (the
    /// search index: derived data, `tract index --rebuild` makes it anew).
    kind: &'static str,
    /// What it is about: `commit <id>`, `blob <id>`, `branch <name>`, `HEAD`, `index`, ...
    subject: String,
    /// What is wrong.
    detail: String,
}

/// The objects no branch, `HEAD` or reflog entry reaches.
#[derive(Debug, Clone, Serialize)]
struct Unreachable {
    /// Commits, by id.
    commits: Vec<String>,
    /// Blobs, by id.
    blobs: Vec<String>,
    /// Chunks, by id.
    chunks: Vec<String>,
}

impl From<&tract_core::FsckReport> for FsckReport {
    fn from(r: &tract_core::FsckReport) -> Self {
        FsckReport {
            clean: r.is_clean(),
            commits: r.commits,
            blobs: r.blobs,
            chunks: r.chunks,
            bytes: r.bytes,
            branches: r.branches,
            reflog_entries: r.reflog_entries,
            counts_replayed: r.counts_replayed,
            checkpoints_checked: r.checkpoints_checked,
            past_checkpoint: r.past_checkpoint.iter().cloned().collect(),
            journal_frames: r.journal_frames,
            index_documents: r.index_documents,
            problems: r
                .problems
                .iter()
                .map(|p| Problem {
                    kind: p.kind,
                    subject: p.subject.clone(),
                    detail: p.detail.clone(),
                })
                .collect(),
            redacted: hex(&r.redacted),
            derived_from_redacted: hex(&r.derived_from_redacted),
            reused_call_ids: r.reused_call_ids.iter().cloned().collect(),
            secrets_in_view: r.secrets_in_view.iter().cloned().collect(),
            unreachable: Unreachable {
                commits: hex(&r.unreachable_commits),
                blobs: hex(&r.unreachable_blobs),
                chunks: hex(&r.unreachable_chunks),
            },
        }
    }
}
