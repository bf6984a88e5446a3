//! What a command says on standard error beside its answer, which standard output holds as
//! it is (scripts and `--json` read the same answer): an empty branch read, a branch a write
//! created, what a write scrubbed, a store that does not scrub.

use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;

/// Says on standard error, when the branch `t` reads has no commits while others do, that its
/// answer is empty for that reason (after a capture, an import or a push the sessions are on
/// branches of their own and `HEAD` is on an empty `main`), and `then` what to do: `--all
/// searches them`. Nothing when the store has no other branch with commits. Standard output
/// is left as it is, so scripts and `--json` read the same answer.
pub fn note_if_branch_empty(
    t: &tract_core::Tract,
    ui: &mut Ui<'_>,
    then: &str,
) -> Result<(), CommandError> {
    let head = t.head()?;
    let (Some(name), None) = (head.branch(), head.commit) else {
        return Ok(());
    };
    let others = t
        .store()
        .read()?
        .branches()?
        .iter()
        .filter(|(b, _)| b != name)
        .count();
    if others > 0 {
        ui.note(&format!(
            "{name} has no commits; {} (`tract branch`), {then}",
            crate::render::count(others as u64, "other branch", "other branches")
        ));
    }
    Ok(())
}

/// A branch a write names that has no commits yet, so the write creates it: a session's first
/// message, or a mistyped `--branch` that would otherwise start a new session silently.
pub struct NewBranch {
    name: String,
    /// The existing branches closest to the name (the did-you-mean of a read).
    similar: Vec<String>,
}

impl NewBranch {
    /// `Some` when `name` (the branch a write goes to) is neither a branch with commits nor
    /// the store's `HEAD` (a new store's `main` before its first commit).
    pub fn check(
        t: &tract_core::Tract,
        name: &tract_core::BranchName,
    ) -> Result<Option<NewBranch>, CommandError> {
        match t.require_branch(name) {
            Ok(()) => Ok(None),
            Err(tract_core::Error::UnknownBranch { name, similar }) => {
                Ok(Some(NewBranch { name, similar }))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The branch `--branch` (or `TRACT_BRANCH`) names for a write, when it has no commits.
    pub fn of_flag(
        ctx: &Context,
        t: &tract_core::Tract,
    ) -> Result<Option<NewBranch>, CommandError> {
        match ctx.branch_flag() {
            Some(name) => NewBranch::check(t, &tract_core::BranchName::new(name)?),
            None => Ok(None),
        }
    }

    /// After the write: when it created the branch, says so on standard error (a warning
    /// naming the close ones when there are: the name may be a typo).
    pub fn report(self, t: &tract_core::Tract, ui: &mut Ui<'_>) -> Result<(), CommandError> {
        if t.store().read()?.branch(&self.name)?.is_none() {
            return Ok(());
        }
        let text = format!(
            "created branch '{}'{}",
            self.name,
            tract_core::error::did_you_mean(&self.similar)
        );
        match self.similar.is_empty() {
            true => ui.note(&text),
            false => ui.warning(&text),
        }
        Ok(())
    }
}

/// Says, on standard error, what a write scrubbed from the message of `commit` (the rules,
/// never the values).
pub fn note_scrubbed(ui: &mut Ui<'_>, commit: &str, message: Option<&tract_core::Message>) {
    let rules = message
        .map(crate::render::scrubbed_rules)
        .unwrap_or_default();
    if rules.is_empty() {
        return;
    }
    ui.note(&format!(
        "message {commit}: scrubbed what looks like a credential ({}) before storing it",
        rules.join(", ")
    ));
}

/// Says, on standard error, that a store an older tract made stores what it is given as it is.
pub fn note_unscrubbed(ui: &mut Ui<'_>, t: &tract_core::Tract) -> Result<(), CommandError> {
    if t.secrets_policy()?.is_none() {
        ui.note(UNSCRUBBED_NOTE);
    }
    Ok(())
}

/// What [`note_unscrubbed`] says.
const UNSCRUBBED_NOTE: &str = "this store does not scrub secrets (an older tract made it): \
     `tract upgrade` turns scrubbing on";
