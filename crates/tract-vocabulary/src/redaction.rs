//! [`Redaction`]: what stands where a redacted message's content was; [`RedactReport`]: what a
//! redaction did, Python's `Tract.redact()` as JSON.

use super::hex;
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

/// What a redaction removed (`tract redact --json`).
#[derive(Debug, Clone, Serialize)]
pub struct RedactReport {
    /// The commit named.
    commit: String,
    /// The blob whose content was removed (every commit carrying it shows the placeholder).
    blob: String,
    /// When: RFC 3339 UTC with microseconds.
    redacted_at: String,
    /// When, in microseconds since the Unix epoch.
    redacted_at_us: u64,
    /// Why, as the caller gave it.
    reason: String,
    /// The chunks of a large blob removed with it.
    chunks_removed: Vec<String>,
    /// Commits whose content was made from the removed content and still hold it (a summary
    /// or a compression of it, or of such a summary), oldest first.
    derived: Vec<String>,
    /// Those redacted with it (`--follow`).
    followed: Vec<String>,
}

impl From<&tract_core::Redaction> for RedactReport {
    fn from(r: &tract_core::Redaction) -> Self {
        RedactReport {
            commit: r.commit.to_hex(),
            blob: r.blob.to_hex(),
            redacted_at: tract_core::clock::rfc3339_micros(r.redacted_at_us),
            redacted_at_us: r.redacted_at_us,
            reason: r.reason.clone(),
            chunks_removed: hex(&r.chunks_removed),
            derived: hex(&r.derived),
            followed: hex(&r.followed),
        }
    }
}
