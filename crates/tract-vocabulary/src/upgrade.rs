//! [`UpgradeReport`]: what `upgrade` did to the store's format, as JSON.

use serde::Serialize;

/// The store format before and after, and what each step changed.
#[derive(Debug, Clone, Serialize)]
pub struct UpgradeReport {
    /// The format version the store was at.
    from_version: u32,
    /// The format version it is at now.
    to_version: u32,
    /// What each step changed, in order (empty when it was at the newest already).
    steps: Vec<String>,
    /// Branches whose view was checkpointed at its tip (those that had no checkpoint there).
    views_checkpointed: usize,
    /// Whether the store was given the default secrets policy (it had none: every write now
    /// scrubs what looks like a credential).
    secrets_policy_added: bool,
}

impl UpgradeReport {
    /// The report of `r`, with how many branches' views were checkpointed after it and
    /// whether the store was given a secrets policy.
    pub fn new(
        r: &tract_core::UpgradeReport,
        views_checkpointed: usize,
        secrets_policy_added: bool,
    ) -> Self {
        UpgradeReport {
            from_version: r.from,
            to_version: r.to,
            steps: r.steps.clone(),
            views_checkpointed,
            secrets_policy_added,
        }
    }
}
