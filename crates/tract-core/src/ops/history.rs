//! Reading history: commits along first parents or through merges (a graph), one commit, every version of a message, and
//! the compress commit that replaced a message.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::object::Op;
use crate::repo::Repo;
use crate::view::ancestry;
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;

/// Commits from `start` (default `HEAD`) back along first parents, newest first, keeping the
/// ones `keep` accepts (`limit` counts those).
pub(crate) fn log(
    repo: &Repo,
    start: Option<&Rev>,
    limit: Option<usize>,
    keep: impl Fn(&CommitInfo) -> bool,
) -> Result<Vec<CommitInfo>> {
    let snap = repo.read()?;
    let mut cursor = match start {
        Some(rev) => Some(repo.resolve(&snap, rev)?),
        None => repo.head(&snap)?.commit,
    };
    let mut out = Vec::new();
    while let Some(id) = cursor {
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        let info = CommitInfo::load(&snap, id)?;
        cursor = info.commit.parent();
        if keep(&info) {
            out.push(info);
        }
    }
    Ok(out)
}

/// Commits reachable from `start` (default `HEAD`) through every parent of merges, newest
/// first; at most `limit`. What a graph of the history draws.
pub(crate) fn graph(
    repo: &Repo,
    start: Option<&Rev>,
    limit: Option<usize>,
) -> Result<Vec<CommitInfo>> {
    let snap = repo.read()?;
    let start = match start {
        Some(rev) => Some(repo.resolve(&snap, rev)?),
        None => repo.head(&snap)?.commit,
    };
    let heads: Vec<CommitId> = start.into_iter().collect();
    ancestry::ancestors(&snap, &heads, limit)?
        .into_iter()
        .map(|(id, commit)| CommitInfo::with_commit(&snap, id, commit))
        .collect()
}

/// One commit with its message.
pub(crate) fn get(repo: &Repo, rev: &Rev) -> Result<CommitInfo> {
    let snap = repo.read()?;
    CommitInfo::load(&snap, repo.resolve(&snap, rev)?)
}

/// Every version of the view position `rev` belongs to, oldest first.
pub(crate) fn edit_history(repo: &Repo, rev: &Rev) -> Result<Vec<CommitInfo>> {
    repo.at_head(|snap, v| {
        let id = repo.resolve(snap, rev)?;
        let entry = v.entry_of(&id).ok_or(Error::NotInView {
            commit: id,
            argument: None,
        })?;
        entry
            .versions()
            .into_iter()
            .map(|c| CommitInfo::load(snap, c))
            .collect()
    })?
}

/// The compress commit on this branch whose summary replaced `rev`, if any.
pub(crate) fn compressed_into(repo: &Repo, rev: &Rev) -> Result<Option<CommitInfo>> {
    let snap = repo.read()?;
    let id: CommitId = repo.resolve(&snap, rev)?;
    let mut cursor = repo.head(&snap)?.commit;
    while let Some(c) = cursor {
        let commit = snap.commit(&c)?;
        if let Op::Compress { sources, .. } = &commit.op
            && sources.contains(&id)
        {
            return CommitInfo::load(&snap, c).map(Some);
        }
        cursor = commit.parent();
    }
    Ok(None)
}
