//! The secrets policy as the store keeps it, and its validation.
//!
//! An error here names the rule, id or pattern the user gave, never a text it matched.

use super::rules;
use crate::error::{Error, Result, suggest};
use regex::bytes::{Regex, RegexBuilder};
use std::collections::{BTreeMap, BTreeSet};

/// The secrets policy as the store keeps it (JSON, in a store setting).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecretsPolicy {
    /// Whether messages are scrubbed at all (default true).
    pub enabled: bool,
    /// Custom rules: name -> regex (the secret is the first capture group, else the match).
    pub rules: BTreeMap<String, String>,
    /// Built-in rule ids turned off.
    pub disabled: BTreeSet<String>,
    /// Literal values, or `/regex/` patterns (tested against a found value), never scrubbed.
    pub allow: Vec<String>,
}

impl Default for SecretsPolicy {
    fn default() -> Self {
        SecretsPolicy {
            enabled: true,
            rules: BTreeMap::new(),
            disabled: BTreeSet::new(),
            allow: Vec::new(),
        }
    }
}

/// Ordinary texts no rule may match: a rule that does would scrub every message.
pub const ORDINARY_TEXTS: &[&str] = &[
    "hello",
    "the build passed",
    "a",
    "{}",
    " ",
    "\n",
    "ok, thanks!",
    "fn main() {}",
];

/// The largest compiled size of a custom regex.
const CUSTOM_SIZE_LIMIT: usize = 1 << 20;

impl SecretsPolicy {
    /// Refuses a policy that cannot work as meant: a custom rule with a bad name (empty, not
    /// `[a-z0-9][a-z0-9._-]*`, or a built-in id), a regex that does not compile, matches the
    /// empty string or ordinary text; a disabled id that is no built-in rule; an `allow` entry
    /// that is empty, a `/regex/` that does not compile, or one that would allow everything
    /// (it matches the empty string or every sample secret).
    pub fn validate(&self) -> Result<()> {
        for (name, pattern) in &self.rules {
            compile_custom(name, pattern)?;
        }
        for id in &self.disabled {
            if !rules::builtin_ids().any(|b| b == id) {
                return Err(Error::invalid_input(format!(
                    "secrets policy: disabled rule '{id}' is no built-in rule{}",
                    suggest(id, rules::builtin_ids())
                )));
            }
        }
        for entry in &self.allow {
            allow_pattern(entry)?;
        }
        Ok(())
    }
}

/// A custom rule compiled, after checking its name and what it matches.
pub(crate) fn compile_custom(name: &str, pattern: &str) -> Result<Regex> {
    let name_ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        });
    if !name_ok {
        return Err(Error::invalid_input(format!(
            "secrets policy: custom rule name '{name}' must be lowercase letters, digits, '.', '_' \
             and '-', starting with a letter or digit"
        )));
    }
    if rules::builtin_ids().any(|b| b == name) {
        return Err(Error::invalid_input(format!(
            "secrets policy: custom rule '{name}' has the name of a built-in rule (choose another, \
             or disable the built-in one)"
        )));
    }
    let regex = RegexBuilder::new(pattern)
        .size_limit(CUSTOM_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            Error::invalid_input(format!(
                "secrets policy: custom rule '{name}': its regex does not compile: {}",
                regex_error(e)
            ))
        })?;
    if regex.is_match(b"") {
        return Err(Error::invalid_input(format!(
            "secrets policy: custom rule '{name}' matches the empty string (it would match \
             everywhere)"
        )));
    }
    if let Some(text) = ORDINARY_TEXTS.iter().find(|t| regex.is_match(t.as_bytes())) {
        return Err(Error::invalid_input(format!(
            "secrets policy: custom rule '{name}' matches ordinary text ({text:?}): it would scrub \
             every message"
        )));
    }
    Ok(regex)
}

/// An allow entry as a pattern (`/regex/`), `None` for a literal; refused when it would allow
/// everything.
pub(crate) fn allow_pattern(entry: &str) -> Result<Option<Regex>> {
    if entry.is_empty() {
        return Err(Error::invalid_input(
            "secrets policy: an allow entry is empty",
        ));
    }
    let Some(inner) = entry
        .strip_prefix('/')
        .and_then(|e| e.strip_suffix('/'))
        .filter(|_| entry.len() >= 2)
    else {
        return Ok(None);
    };
    let regex = RegexBuilder::new(inner)
        .size_limit(CUSTOM_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            Error::invalid_input(format!(
                "secrets policy: allow pattern {entry} does not compile: {}",
                regex_error(e)
            ))
        })?;
    if regex.is_match(b"") {
        return Err(Error::invalid_input(format!(
            "secrets policy: allow pattern {entry} matches the empty string (it would allow every \
             secret)"
        )));
    }
    if rules::PROBES
        .iter()
        .all(|(_, _, secret)| regex.is_match(secret.as_bytes()))
    {
        return Err(Error::invalid_input(format!(
            "secrets policy: allow pattern {entry} matches every sample secret (it would disable \
             every rule)"
        )));
    }
    Ok(Some(regex))
}

/// A regex error as one line, without the text it was tried on (the `regex` crate's syntax
/// errors quote the pattern, which the user gave, and point at the fault).
fn regex_error(e: regex::Error) -> String {
    match e {
        regex::Error::Syntax(s) => s
            .lines()
            .filter(|l| l.starts_with("error:"))
            .map(|l| l.trim_start_matches("error:").trim().to_string())
            .next()
            .unwrap_or_else(|| "syntax error".to_string()),
        regex::Error::CompiledTooBig(limit) => {
            format!("it compiles to more than {limit} bytes")
        }
        _ => "it does not compile".to_string(),
    }
}
