//! [`Redaction`]: what stands where a redacted message's content was.

use serde::Serialize;
use tract_core::Tombstone;

/// When and why a message's content was removed for good (its ids stay valid).
#[derive(Debug, Clone, Serialize)]
pub struct Redaction {
    /// Why, as the caller gave it.
    reason: String,
    /// When: RFC 3339 UTC with microseconds.
    redacted_at: String,
    /// When, in microseconds since the Unix epoch.
    redacted_at_us: u64,
}

impl From<&Tombstone> for Redaction {
    fn from(t: &Tombstone) -> Self {
        Redaction {
            reason: t.reason.clone(),
            redacted_at: tract_core::clock::rfc3339_micros(t.redacted_at_us),
            redacted_at_us: t.redacted_at_us,
        }
    }
}
