//! [`SecretFinding`] and [`TextFinding`]: what `tract secrets scan` finds, never the value;
//! [`SecretsRedaction`]: what scrubbing the findings did.

use super::hex;
use serde::Serialize;

/// A value that looks like a credential in a message the store holds.
#[derive(Debug, Clone, Serialize)]
pub struct SecretFinding {
    /// The commit carrying the message.
    commit_hash: String,
    /// The branch it was found on (`null` at a detached position).
    branch: Option<String>,
    /// The rule that found it.
    rule: String,
    /// Its keyed fingerprint, as its marker would show it (`null` in a store that never
    /// scrubbed, which has no key).
    fingerprint: Option<String>,
    /// Which part of the message: `content`, `content[2]`, `tool_calls[0].arguments`,
    /// `metadata.KEY`.
    field: String,
    /// The byte span of the value in that part's text.
    start: usize,
    /// Its end (exclusive).
    end: usize,
}

impl From<&tract_core::SecretFinding> for SecretFinding {
    fn from(f: &tract_core::SecretFinding) -> Self {
        SecretFinding {
            commit_hash: f.commit.to_hex(),
            branch: f.branch.clone(),
            rule: f.rule.clone(),
            fingerprint: f.fingerprint.clone(),
            field: f.field.clone(),
            start: f.start,
            end: f.end,
        }
    }
}

/// A value that looks like a credential in a file (`tract secrets scan FILE`).
#[derive(Debug, Clone, Serialize)]
pub struct TextFinding {
    /// The rule that found it.
    rule: String,
    /// Its line, from 1.
    line: usize,
    /// Its column in bytes, from 1.
    column: usize,
    /// The byte offset of the value in the file.
    start: usize,
    /// Its end (exclusive).
    end: usize,
    /// Its fingerprint with the store's key (`null` when no store was found).
    fingerprint: Option<String>,
}

impl From<&tract_core::secrets::text::TextFinding> for TextFinding {
    fn from(f: &tract_core::secrets::text::TextFinding) -> Self {
        TextFinding {
            rule: f.rule.clone(),
            line: f.line,
            column: f.column,
            start: f.start,
            end: f.end,
            fingerprint: f.fingerprint.clone(),
        }
    }
}

/// What scrubbing the findings where they are stored did (`tract secrets scan --redact
/// --json`, Python's `Tract.redact_secrets()`).
#[derive(Debug, Clone, Serialize)]
pub struct SecretsRedaction {
    /// How many findings were scrubbed.
    findings: usize,
    /// The commits whose message was replaced by its scrubbed stand-in, one per message.
    scrubbed: Vec<String>,
    /// Commits whose content was made from a scrubbed message (a summary, a compression),
    /// redacted with it.
    followed: Vec<String>,
}

impl From<&tract_core::SecretsRedaction> for SecretsRedaction {
    fn from(r: &tract_core::SecretsRedaction) -> Self {
        SecretsRedaction {
            findings: r.findings,
            scrubbed: hex(&r.scrubbed),
            followed: hex(&r.followed),
        }
    }
}
