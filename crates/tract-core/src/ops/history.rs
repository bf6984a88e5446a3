//! Reading history: commits along first parents or through merges (a graph), one commit, every version of a message, and
//! the compress commit that replaced a message.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::object::{Op, Role};
use crate::repo::Repo;
use crate::view::ancestry;
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;

/// Which commits [`crate::Tract::log`] lists: where it starts, how many, along which parents,
/// and which it keeps.
#[derive(Debug, Clone, Default)]
pub struct LogQuery {
    /// Where to start (default: `HEAD`, the handle's position).
    pub start: Option<Rev>,
    /// At most this many commits (of those kept).
    pub limit: Option<usize>,
    /// Through every parent of merges (a merged branch's commits included), as a graph of the
    /// history draws it; otherwise along first parents.
    pub graph: bool,
    /// Only commits whose message has this role.
    pub role: Option<Role>,
    /// Only results of this tool and messages that call it.
    pub tool: Option<String>,
}

impl LogQuery {
    fn keeps(&self, info: &CommitInfo) -> bool {
        self.role.is_none_or(|r| info.role() == Some(r))
            && self
                .tool
                .as_deref()
                .is_none_or(|t| info.tool_names().contains(&t))
    }

    fn filters(&self) -> bool {
        self.role.is_some() || self.tool.is_some()
    }
}

/// The commits `q` names, newest first.
pub(crate) fn log(repo: &Repo, q: &LogQuery) -> Result<Vec<CommitInfo>> {
    let snap = repo.read()?;
    let start = match &q.start {
        Some(rev) => Some(repo.resolve(&snap, rev)?),
        None => repo.head(&snap)?.commit,
    };
    if q.graph {
        let heads: Vec<CommitId> = start.into_iter().collect();
        // A filter keeps fewer than it reads, so the limit applies after it.
        let read_limit = if q.filters() { None } else { q.limit };
        let mut out = Vec::new();
        for (id, commit) in ancestry::ancestors(&snap, &heads, read_limit)? {
            if q.limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            let info = CommitInfo::with_commit(&snap, id, commit)?;
            if q.keeps(&info) {
                out.push(info);
            }
        }
        return Ok(out);
    }
    let mut cursor = start;
    let mut out = Vec::new();
    while let Some(id) = cursor {
        if q.limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        let info = CommitInfo::load(&snap, id)?;
        cursor = info.commit.parent();
        if q.keeps(&info) {
            out.push(info);
        }
    }
    Ok(out)
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
