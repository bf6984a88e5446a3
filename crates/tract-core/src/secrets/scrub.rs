//! Scrubbing a message: every finding replaced by its marker, and what was scrubbed listed in
//! the message's metadata. Never the secret itself in what is kept or returned.

use super::detect::{Detector, Finding};
use crate::error::{Error, Result};
use crate::object::{Content, ContentPart, Message, RECORD_METADATA_KEY};

/// The metadata key under which a scrubbed message lists what was scrubbed (JSON list of `Scrub`).
pub const SCRUBBED_METADATA_KEY: &str = "tract.scrubbed";

/// One scrubbed value: never the secret itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Scrub {
    /// The rule that found it.
    pub rule: String,
    /// Which part of the message: `content`, `content[2]` (a part), `tool_calls[0].arguments`, `metadata.KEY`.
    pub field: String,
    /// The byte offset of the marker in that field's scrubbed text.
    pub offset: usize,
    /// The value's keyed fingerprint ([`fingerprint`]).
    pub fingerprint: String,
}

/// The store's fingerprint key: 32 bytes.
pub type Key = [u8; 32];

/// How many hex digits of the MAC a fingerprint keeps.
const FINGERPRINT_HEX: usize = 12;

/// A keyed fingerprint of a secret value: BLAKE3 in keyed mode (a MAC) over the value alone, as 12 lowercase hex digits.
pub fn fingerprint(key: &Key, value: &str) -> String {
    let hash = blake3::keyed_hash(key, value.as_bytes());
    hash.to_hex()[..FINGERPRINT_HEX].to_string()
}

/// `[REDACTED:<rule>:<fingerprint>]`
pub fn marker(rule: &str, fingerprint: &str) -> String {
    format!("[REDACTED:{rule}:{fingerprint}]")
}

/// A fresh random key (the `getrandom` crate; add `getrandom = "0.3"` — already in Cargo.lock as 0.3.4).
pub fn new_key() -> Result<Key> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| {
        Error::io(
            "(the system's random source)",
            std::io::Error::other(e.to_string()),
        )
    })?;
    Ok(key)
}

/// How a field is scanned.
#[derive(Clone, Copy)]
enum Kind {
    Plain,
    Json,
}

/// The fields of a message scrubbing reads: (field name, kind, text).
fn fields(message: &Message) -> Vec<(String, Kind, &str)> {
    let mut out = Vec::new();
    match &message.content {
        Content::Text(t) => out.push(("content".to_string(), Kind::Plain, t.as_str())),
        Content::Parts(parts) => {
            for (i, part) in parts.iter().enumerate() {
                let (kind, text) = match part {
                    ContentPart::Text(t) => (Kind::Plain, t),
                    ContentPart::Raw(r) => (Kind::Json, r),
                };
                out.push((format!("content[{i}]"), kind, text.as_str()));
            }
        }
    }
    for (i, call) in message.tool_calls.iter().enumerate() {
        out.push((
            format!("tool_calls[{i}].arguments"),
            Kind::Json,
            call.arguments.as_str(),
        ));
    }
    for (key, value) in &message.metadata {
        // tract's own keys (`tract.record`, `tract.scrubbed`) hold no user text.
        if !key.starts_with("tract.") {
            out.push((format!("metadata.{key}"), Kind::Json, value.as_str()));
        }
    }
    out
}

fn scan(detector: &Detector, kind: Kind, text: &str) -> Vec<Finding> {
    match kind {
        Kind::Plain => detector.find(text),
        Kind::Json => detector.find_in_json(text),
    }
}

/// Every finding in a message, per field (what `secrets scan` lists): (field, finding).
pub fn findings(detector: &Detector, message: &Message) -> Vec<(String, Finding)> {
    let mut out = Vec::new();
    for (field, kind, text) in fields(message) {
        for f in scan(detector, kind, text) {
            out.push((field.clone(), f));
        }
    }
    out
}

/// `text` with each finding replaced by its marker, and the scrubs (offsets in the new text).
fn replace(key: &Key, field: &str, text: &str, found: &[Finding]) -> (String, Vec<Scrub>) {
    let mut out = String::with_capacity(text.len());
    let mut scrubs = Vec::with_capacity(found.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.start]);
        let print = fingerprint(key, &text[f.start..f.end]);
        scrubs.push(Scrub {
            rule: f.rule.clone(),
            field: field.to_string(),
            offset: out.len(),
            fingerprint: print.clone(),
        });
        out.push_str(&marker(&f.rule, &print));
        at = f.end;
    }
    out.push_str(&text[at..]);
    (out, scrubs)
}

/// The message with every finding replaced by its marker and `SCRUBBED_METADATA_KEY` set (appending to a list already there), or `None` when nothing was found (the common case: no copy made).
///
/// A record's carrier (metadata `tract.record`) is never scrubbed here: the caller decides.
pub fn scrub(detector: &Detector, key: &Key, message: &Message) -> Option<(Message, Vec<Scrub>)> {
    if message.metadata.contains_key(RECORD_METADATA_KEY) {
        return None;
    }
    let found: Vec<(String, Kind, Vec<Finding>)> = fields(message)
        .into_iter()
        .filter_map(|(field, kind, text)| {
            let f = scan(detector, kind, text);
            (!f.is_empty()).then_some((field, kind, f))
        })
        .collect();
    if found.is_empty() {
        return None;
    }
    let mut out = message.clone();
    let mut scrubs = Vec::new();
    for (field, _, f) in &found {
        let slot: Option<&mut String> = if field == "content" {
            match &mut out.content {
                Content::Text(t) => Some(t),
                Content::Parts(_) => None,
            }
        } else if let Some(i) = index_of(field, "content[", "]") {
            match &mut out.content {
                Content::Parts(parts) => parts.get_mut(i).map(|p| match p {
                    ContentPart::Text(t) | ContentPart::Raw(t) => t,
                }),
                Content::Text(_) => None,
            }
        } else if let Some(i) = index_of(field, "tool_calls[", "].arguments") {
            out.tool_calls.get_mut(i).map(|c| &mut c.arguments)
        } else if let Some(k) = field.strip_prefix("metadata.") {
            out.metadata.get_mut(k)
        } else {
            None
        };
        if let Some(text) = slot {
            let (new, mut s) = replace(key, field, text, f);
            *text = new;
            scrubs.append(&mut s);
        }
    }
    let mut listed: Vec<Scrub> = out
        .metadata
        .get(SCRUBBED_METADATA_KEY)
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default();
    listed.extend(scrubs.iter().cloned());
    if let Ok(json) = serde_json::to_string(&listed) {
        out.metadata.insert(SCRUBBED_METADATA_KEY.to_string(), json);
    }
    Some((out, scrubs))
}

/// The number in `field` between `prefix` and `suffix`.
fn index_of(field: &str, prefix: &str, suffix: &str) -> Option<usize> {
    field
        .strip_prefix(prefix)?
        .strip_suffix(suffix)?
        .parse()
        .ok()
}
