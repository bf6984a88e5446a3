//! Records: data of the caller's own kept on a branch beside its messages (a framework's
//! checkpoints, a session store's entries). A record is a commit ([`Op::Record`]) whose blob
//! holds the data as a system message's text, marked in its metadata so that it never shares
//! a blob with a message; the view skips it, so the model never sees it, while history, sync,
//! gc, redaction and the reflog treat it as any other commit.

use crate::error::{Error, Result};
use crate::id::CommitId;
pub use crate::object::check_record_kind as check_kind;
use crate::object::{Message, Op};
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;
use crate::write::txn::{self, AppendOptions, ChainStep, Prepared};

pub use crate::object::RECORD_METADATA_KEY;

/// Which records [`crate::Tract::records`] lists, newest first along the first-parent line.
#[derive(Debug, Clone, Default)]
pub struct RecordQuery {
    /// Only records of this kind or a kind under it (`langgraph` takes `langgraph.checkpoint`).
    pub kind: Option<String>,
    /// At most this many.
    pub limit: Option<usize>,
    /// Start just before this commit instead of at `HEAD`.
    pub before: Option<Rev>,
}
/// One record, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The record's commit.
    pub commit: CommitId,
    /// What the data is (`langgraph.checkpoint`).
    pub kind: String,
    /// The data, exactly as written.
    pub data: String,
    /// When it was written, in microseconds since the Unix epoch.
    pub timestamp_us: u64,
}

/// Whether a record of `kind` is one `filter` asks for: the same kind, or one under it
/// (`langgraph` takes `langgraph.checkpoint`, not `langgraphx`).
pub fn matches(kind: &str, filter: &str) -> bool {
    kind.strip_prefix(filter)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// Appends `messages`, then a record of `kind` holding `data`, in one transaction at the
/// handle's position: all of it is durable when this returns, or none of it. Returns the
/// infos of the appends and, last, the record's.
pub(crate) fn write(
    repo: &Repo,
    kind: &str,
    data: String,
    messages: Vec<Message>,
    opts: &AppendOptions,
) -> Result<Vec<CommitInfo>> {
    check_kind(kind)?;
    let appends = messages.into_iter().map(|m| (ChainStep::Op(Op::Append), m));
    let mut steps = txn::prepare_all(appends.collect(), &repo.scrubber()?)?;
    steps.push((
        ChainStep::Op(Op::Record { kind: kind.into() }),
        Prepared::record(kind, data)?,
    ));
    txn::write(repo, opts, steps)
}

/// The records on the first-parent line from the handle's position (or from just before
/// `before`), newest first: those `filter` matches (see [`matches`]), at most `limit`.
pub(crate) fn list(
    repo: &Repo,
    filter: Option<&str>,
    limit: Option<usize>,
    before: Option<&Rev>,
) -> Result<Vec<Record>> {
    let snap = repo.read()?;
    let mut cursor = match before {
        Some(rev) => snap.commit(&repo.resolve(&snap, rev)?)?.parent(),
        None => repo.head(&snap)?.commit,
    };
    let limit = limit.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    while let Some(id) = cursor {
        if out.len() >= limit {
            break;
        }
        let commit = snap.commit(&id)?;
        cursor = commit.parent();
        if let Op::Record { kind } = &commit.op
            && filter.is_none_or(|f| matches(kind, f))
        {
            out.push(read(&snap, id, kind, commit.blob, commit.timestamp_us)?);
        }
    }
    Ok(out)
}

/// The record `rev` names; an error if that commit is not a record.
pub(crate) fn get(repo: &Repo, rev: &Rev) -> Result<Record> {
    let snap = repo.read()?;
    let id = repo.resolve(&snap, rev)?;
    let commit = snap.commit(&id)?;
    match &commit.op {
        Op::Record { kind } => read(&snap, id, kind, commit.blob, commit.timestamp_us),
        other => Err(Error::invalid_input(format!(
            "commit {} is not a record (it is {} {})",
            id.short(),
            if other.name() == "append" { "an" } else { "a" },
            other.name()
        ))),
    }
}

fn read(
    snap: &Snapshot,
    id: CommitId,
    kind: &str,
    blob: Option<crate::id::BlobId>,
    timestamp_us: u64,
) -> Result<Record> {
    let blob = blob.ok_or_else(|| Error::corrupt(format!("record {} has no blob", id.short())))?;
    let (message, _) = snap.blob(&blob)?;
    Ok(Record {
        commit: id,
        kind: kind.to_string(),
        data: message.content.text().into_owned(),
        timestamp_us,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_takes_its_kind_and_the_kinds_under_it() {
        assert!(matches("langgraph.checkpoint", "langgraph"));
        assert!(matches("langgraph", "langgraph"));
        assert!(matches("langgraph.checkpoint", "langgraph.checkpoint"));
        assert!(!matches("langgraphx", "langgraph"));
        assert!(!matches("langgraph", "langgraph.checkpoint"));
    }
}
