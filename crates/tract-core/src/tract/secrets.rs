//! Secrets through a handle: the store's policy, and finding and scrubbing what the store holds
//! already.

use crate::error::Result;
use crate::ops::secrets::{self, ScanOptions, SecretFinding, SecretsRedaction};
use crate::scrubbing;
use crate::secrets::policy::SecretsPolicy;

use super::Tract;

impl Tract {
    /// The store's secrets policy: what every write scrubs before it is stored. `None` for a
    /// store an older build made, which scrubs nothing until it is given one
    /// ([`Tract::set_secrets_policy`], or `tract upgrade`).
    pub fn secrets_policy(&self) -> Result<Option<SecretsPolicy>> {
        scrubbing::load(&self.repo.read()?)
    }

    /// Replaces the store's secrets policy (durably), making its fingerprint key if it has
    /// none. An invalid policy (a rule that does not compile, matches nothing in particular,
    /// or an allowlist that turns every rule off) is refused and the stored one kept.
    pub fn set_secrets_policy(&self, policy: &SecretsPolicy) -> Result<()> {
        scrubbing::store(&self.repo.store, policy)
    }

    /// What looks like a credential in what the store holds already, by the store's rules:
    /// the handle's view, or with `options` its history and every branch. Never the values.
    pub fn scan_secrets(&self, options: &ScanOptions) -> Result<Vec<SecretFinding>> {
        secrets::scan(&self.repo, options)
    }

    /// Scrubs the messages of `found` (from [`Tract::scan_secrets`]) where they are stored, in
    /// one transaction, as `redact` with `follow` removes content: each becomes a tombstone
    /// showing the message with its findings replaced by their markers; ids stay valid.
    pub fn redact_secrets(&self, found: &[SecretFinding]) -> Result<SecretsRedaction> {
        secrets::redact(&self.repo, found)
    }

    /// What looks like a credential in `text` (a file before it is imported), by the store's
    /// rules, with the store's fingerprints.
    pub fn scan_text(&self, text: &str) -> Result<Vec<crate::secrets::text::TextFinding>> {
        let snap = self.repo.read()?;
        let detector = scrubbing::scan_detector(&snap)?;
        let key = scrubbing::key(&snap)?;
        Ok(crate::secrets::text::scan(&detector, key.as_ref(), text))
    }
}
