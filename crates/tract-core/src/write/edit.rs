//! Editing a message in the view: a new commit that replaces the position's content, keeping
//! its role, name, tool calls and `tool_call_id`; the original stays in history.

use crate::error::{Error, Result};
use crate::object::{Content, Message};
use crate::repo::Repo;
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;
use crate::write::txn;
use std::sync::Arc;

/// Replaces the content of `target` (a message in the view at `HEAD`) after `check` has seen
/// the message in view and not refused it, inside the write transaction (nothing can change
/// between the check and the commit).
pub(crate) fn edit(
    repo: &Repo,
    target: &Rev,
    content: Content,
    check: impl FnOnce(&Message) -> Result<()>,
) -> Result<CommitInfo> {
    // Resolved before the lock: the revision may need a store lookup.
    let snap = repo.read()?;
    let id = repo.resolve(&snap, target)?;
    drop(snap);
    let infos = txn::write_edits(repo, |snap, v| {
        let Some(entry) = v.entry_of(&id) else {
            return Err(Error::NotInView {
                commit: id,
                argument: None,
            });
        };
        let current = repo.text(snap, entry)?;
        check(&current)?;
        let mut message = Arc::unwrap_or_clone(current);
        message.content = content;
        Ok(vec![(id, message)])
    })?;
    infos
        .into_iter()
        .next()
        .ok_or_else(|| Error::invalid_op("the edit produced no commit"))
}
