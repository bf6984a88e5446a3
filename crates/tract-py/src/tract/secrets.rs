//! Secrets through a handle: the store's policy, and finding and scrubbing what the store holds
//! already.

use super::PyTract;
use pyo3::prelude::*;

#[pymethods]
impl PyTract {
    /// The store's secrets policy as a dict (`enabled`, `rules`: your own, name to regex,
    /// `disabled`: built-in rule ids turned off, `allow`: values, or `/regex/` patterns, never
    /// scrubbed), in the JSON form `tract config show --json` prints under `secrets`; `None`
    /// for a store an older tract made, which scrubs nothing until it is given one.
    fn secrets_policy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let policy = self.with(py, |t| t.secrets_policy())?;
        crate::vocabulary::value(py, &policy)
    }

    /// Replaces the store's secrets policy, which every write applies: what looks like a
    /// credential is replaced by `[REDACTED:<rule>:<fingerprint>]` before a message is stored.
    /// `policy` is a dict with the keys `secrets_policy()` returns (those left out take their
    /// default: on, every built-in rule, nothing of your own). An invalid policy (an unknown
    /// key, a rule that does not compile or would match every message, an allowed pattern
    /// that would turn every rule off) raises `InvalidInputError` and the stored one is kept.
    fn set_secrets_policy(&self, py: Python<'_>, policy: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = crate::convert::from_py(policy)?;
        let policy: tract_core::SecretsPolicy = serde_json::from_value(value).map_err(|e| {
            crate::errors::to_py(tract_core::Error::InvalidInput {
                message: format!("invalid secrets policy: {e}"),
            })
        })?;
        self.with(py, move |t| t.set_secrets_policy(&policy))
    }

    /// What looks like a credential in what the store holds already (written before it
    /// scrubbed, or with scrubbing off), by the store's rules: the handle's view, or with
    /// `history` every commit it reaches, with `all` on every branch. A list of dicts
    /// (`commit_hash`, `branch`, `rule`, `fingerprint`, `field`, `start`, `end`), never the
    /// values.
    #[pyo3(signature = (*, history = false, all = false))]
    fn scan_secrets<'py>(
        &self,
        py: Python<'py>,
        history: bool,
        all: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = tract_core::ScanOptions { history, all };
        let found = self.with(py, move |t| t.scan_secrets(&options))?;
        let list: Vec<_> = found
            .iter()
            .map(tract_vocabulary::SecretFinding::from)
            .collect();
        crate::vocabulary::value(py, &list)
    }

    /// Scans as `scan_secrets` does, then scrubs every finding where it is stored, in one
    /// transaction: each message becomes a tombstone showing it with its findings replaced by
    /// their markers, what was made from it (summaries, compressions) follows, the search index
    /// forgets the text; ids stay valid. Returns a dict: `findings` (how many), `scrubbed` and
    /// `followed` (commit ids).
    #[pyo3(signature = (*, history = false, all = false))]
    fn redact_secrets<'py>(
        &self,
        py: Python<'py>,
        history: bool,
        all: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = tract_core::ScanOptions { history, all };
        let r = self.with(py, move |t| {
            let found = t.scan_secrets(&options)?;
            t.redact_secrets(&found)
        })?;
        crate::vocabulary::value(py, &tract_vocabulary::SecretsRedaction::from(&r))
    }
}
