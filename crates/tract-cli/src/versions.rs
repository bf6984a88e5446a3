//! The versions of a message in view (the original, then each edit), as the commands that
//! show one with them read them: `show --json`, `tract mcp` and `tract serve`.

/// The versions of the position `rev` is, or edits, oldest first (the original, then each
/// edit); none for a commit that is not a position of the handle's view.
pub fn of(
    t: &tract_core::Tract,
    rev: tract_core::Rev,
) -> tract_core::Result<Vec<tract_core::CommitInfo>> {
    match t.edit_history(rev) {
        Err(tract_core::Error::NotInView { .. }) => Ok(Vec::new()),
        other => other,
    }
}
