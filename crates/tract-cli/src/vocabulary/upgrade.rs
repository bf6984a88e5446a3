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
}

impl From<&tract_core::UpgradeReport> for UpgradeReport {
    fn from(r: &tract_core::UpgradeReport) -> Self {
        UpgradeReport {
            from_version: r.from,
            to_version: r.to,
            steps: r.steps.clone(),
        }
    }
}
