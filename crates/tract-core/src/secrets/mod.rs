//! Secrets: finding credentials in messages and scrubbing them before anything is written
//! (DESIGN.md §16). A found value is replaced by a marker naming its rule and a keyed
//! fingerprint (`[REDACTED:github-pat:3f9a2c7e1b4d]`), the same wherever the value is written;
//! what a session needs to stay valid (signatures, ids, hashes, images) is never touched.
//!
//! `rules` holds the built-in rules (gitleaks' default set, MIT, see `GITLEAKS.md`, and
//! tract's own), `detect` finds them, `policy` is the store's setting, `scrub` rewrites a
//! message; `text` a file scanned before it is imported. The policy and key as a store keeps
//! them, and the scrubber a write applies, are the scrubbing module's (it reads the store).

pub(crate) mod detect;
pub(crate) mod policy;
mod rules;
pub(crate) mod scrub;
pub mod text;

pub use detect::{Detector, Finding, NEVER_SCRUB_KEYS};
pub use policy::{ORDINARY_TEXTS, SecretsPolicy};
pub use scrub::{
    Key, SCRUBBED_METADATA_KEY, Scrub, findings, fingerprint, listed, marker, new_key, scrub,
};
