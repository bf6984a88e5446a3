//! What an answer cost: the token counts a provider reported for the request that produced an
//! assistant message, kept in that message's metadata (`tract.usage`, so in its blob and its
//! id), in Anthropic's names whichever provider reported them. Never rendered for a model,
//! never searched; its strings (model, request id, what else was reported) are scrubbed of
//! secrets as every caller's text is.
//!
//! Anthropic reports input tokens read from the cache and written to it apart from the rest
//! (`input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`); OpenAI reports
//! every input token in `prompt_tokens` (Chat Completions) or `input_tokens` (Responses), the
//! cached ones among them in `*_tokens_details.cached_tokens`, and writes no cache the caller
//! pays for. So OpenAI's input becomes `input_tokens` = input − cached and
//! `cache_read_input_tokens` = cached.
//!
//! [`Totals`] and [`Ledger`] sum requests: what a history's usage ledger keeps
//! (`view::ledger`) and a report gives.

use crate::error::{Error, Result};
use crate::object::{Message, RECORD_METADATA_KEY, Role};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

pub use crate::object::USAGE_METADATA_KEY;

/// The token counts of one model request, in Anthropic's names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens neither read from the provider's cache nor written to it.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's cache.
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the provider's cache.
    pub cache_creation_input_tokens: u64,
    /// The model that answered, as the provider named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's id of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// When the provider answered (RFC 3339), where the caller knows it better than the
    /// commit's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// What else the provider reported (counts of other kinds, details, its total), kept as
    /// given and not summed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other: BTreeMap<String, Value>,
}

/// Token counts summed over requests, in Anthropic's names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Model requests counted.
    pub requests: u64,
    /// Input tokens neither read from the cache nor written to it.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's cache.
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the provider's cache.
    pub cache_creation_input_tokens: u64,
    /// The largest input of one request, all kinds together: the largest context sent.
    pub largest_input_tokens: u64,
}

impl Totals {
    /// Counts one request.
    pub fn add(&mut self, u: &Usage) {
        self.requests = self.requests.saturating_add(1);
        self.input_tokens = self.input_tokens.saturating_add(u.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(u.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(u.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(u.cache_creation_input_tokens);
        self.largest_input_tokens = self.largest_input_tokens.max(u.all_input_tokens());
    }

    /// Adds totals of other requests.
    pub fn merge(&mut self, o: &Totals) {
        self.requests = self.requests.saturating_add(o.requests);
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(o.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(o.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(o.cache_creation_input_tokens);
        self.largest_input_tokens = self.largest_input_tokens.max(o.largest_input_tokens);
    }

    /// Takes away the counts of `o`, requests its history holds too (the largest input stays:
    /// a history holds its ancestor's).
    pub fn take_away(&mut self, o: &Totals) {
        self.requests = self.requests.saturating_sub(o.requests);
        self.input_tokens = self.input_tokens.saturating_sub(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_sub(o.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_sub(o.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_sub(o.cache_creation_input_tokens);
    }

    /// Every input token: not cached, read from the cache and written to it.
    pub fn all_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.cache_creation_input_tokens)
    }

    /// The share of input tokens read from the cache (`None` without input).
    pub fn cache_hit_rate(&self) -> Option<f64> {
        let all = self.all_input_tokens();
        (all > 0).then(|| self.cache_read_input_tokens as f64 / all as f64)
    }

    /// How many times the largest context was written to the cache: tokens written to it over
    /// the largest input of one request (`None` without input). Near 1 when each token was
    /// written once; a prefix that kept breaking writes it again and again.
    pub fn rewrite_factor(&self) -> Option<f64> {
        (self.largest_input_tokens > 0)
            .then(|| self.cache_creation_input_tokens as f64 / self.largest_input_tokens as f64)
    }
}

/// The totals of a history: overall, per model, and the token kinds reported that are not
/// summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Every request.
    pub totals: Totals,
    /// Per model, as the provider named it (`""`: not named).
    pub by_model: BTreeMap<String, Totals>,
    /// Counts of kinds tract does not sum, by name, as reported beside the four it does.
    pub unknown_kinds: BTreeSet<String>,
}

impl Ledger {
    /// Counts one request.
    pub fn add(&mut self, u: &Usage) {
        self.totals.add(u);
        let model = u.model.clone().unwrap_or_default();
        match self.by_model.get_mut(&model) {
            Some(t) => t.add(u),
            None => {
                let mut t = Totals::default();
                t.add(u);
                self.by_model.insert(model, t);
            }
        }
        for k in u.unknown_kinds() {
            if !self.unknown_kinds.contains(k) {
                self.unknown_kinds.insert(k.to_string());
            }
        }
    }

    /// Takes away the counts of `o`, requests counted here already (the largest inputs and the
    /// kinds not summed stay).
    pub fn take_away(&mut self, o: &Ledger) {
        self.totals.take_away(&o.totals);
        for (model, t) in &o.by_model {
            if let Some(mine) = self.by_model.get_mut(model) {
                mine.take_away(t);
            }
        }
    }

    /// Adds the totals of other requests.
    pub fn merge(&mut self, o: &Ledger) {
        self.totals.merge(&o.totals);
        for (model, t) in &o.by_model {
            self.by_model.entry(model.clone()).or_default().merge(t);
        }
        self.unknown_kinds.extend(o.unknown_kinds.iter().cloned());
    }
}

/// Which provider's names a usage object is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names {
    Anthropic,
    /// Chat Completions: `prompt_tokens`, `completion_tokens`.
    OpenAiChat,
    /// Responses: `input_tokens` with `input_tokens_details`.
    OpenAiResponses,
}

/// A count named `key` in `o`: absent or null is 0, anything but a non-negative integer is
/// refused.
fn count(o: &Map<String, Value>, key: &str) -> Result<u64> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v.as_u64().ok_or_else(|| {
            Error::invalid_input(format!(
                "usage: '{key}' must be a whole number of tokens, 0 or more"
            ))
        }),
    }
}

/// The cached input tokens of an OpenAI details object named `key` in `o` (0 without one).
fn cached(o: &Map<String, Value>, key: &str) -> Result<u64> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Object(d)) => count(d, "cached_tokens"),
        Some(_) => Err(Error::invalid_input(format!(
            "usage: '{key}' must be an object"
        ))),
    }
}

/// A text field named `key` in `o`, if given.
fn text(o: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Error::invalid_input(format!(
            "usage: '{key}' must be a string"
        ))),
    }
}

impl Usage {
    /// The usage a provider reported, in Anthropic's names (`input_tokens`, `output_tokens`,
    /// `cache_read_input_tokens`, `cache_creation_input_tokens`), OpenAI Chat Completions'
    /// (`prompt_tokens`, `completion_tokens`, `prompt_tokens_details.cached_tokens`) or OpenAI
    /// Responses' (`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`),
    /// with `model`, `request_id` and `time` beside them. A count that is not a whole number
    /// of tokens, or cached tokens past the input, is refused; what else it holds is kept in
    /// [`Usage::other`].
    pub fn from_json(v: &Value) -> Result<Usage> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::invalid_input("usage must be a JSON object of token counts"))?;
        let has = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
        let chat = has("prompt_tokens") || has("completion_tokens");
        let names = match (chat, has("input_tokens") || has("output_tokens")) {
            (true, true) => {
                return Err(Error::invalid_input(
                    "usage mixes OpenAI Chat's names (prompt_tokens, completion_tokens) with \
                     input_tokens/output_tokens: give one provider's",
                ));
            }
            (true, false) => Names::OpenAiChat,
            (false, _) if has("input_tokens_details") || has("output_tokens_details") => {
                Names::OpenAiResponses
            }
            (false, true) => Names::Anthropic,
            (false, false)
                if has("cache_read_input_tokens") || has("cache_creation_input_tokens") =>
            {
                Names::Anthropic
            }
            (false, false) => {
                return Err(Error::invalid_input(
                    "usage has no token counts (input_tokens and output_tokens, or \
                     prompt_tokens and completion_tokens)",
                ));
            }
        };
        let (input_key, output_key, consumed): (&str, &str, &[&str]) = match names {
            Names::Anthropic => (
                "input_tokens",
                "output_tokens",
                &["cache_read_input_tokens", "cache_creation_input_tokens"],
            ),
            Names::OpenAiChat => ("prompt_tokens", "completion_tokens", &[]),
            Names::OpenAiResponses => ("input_tokens", "output_tokens", &[]),
        };
        let input = count(o, input_key)?;
        let output_tokens = count(o, output_key)?;
        let (input_tokens, cache_read, cache_creation) = match names {
            Names::Anthropic => (
                input,
                count(o, "cache_read_input_tokens")?,
                count(o, "cache_creation_input_tokens")?,
            ),
            Names::OpenAiChat | Names::OpenAiResponses => {
                let details = match names {
                    Names::OpenAiChat => "prompt_tokens_details",
                    _ => "input_tokens_details",
                };
                let hit = cached(o, details)?;
                let rest = input.checked_sub(hit).ok_or_else(|| {
                    Error::invalid_input(format!(
                        "usage: {hit} cached tokens is more than the {input} input tokens"
                    ))
                })?;
                (rest, hit, 0)
            }
        };
        let known = [input_key, output_key, "model", "request_id", "time"];
        let other = o
            .iter()
            .filter(|(k, _)| !known.contains(&k.as_str()) && !consumed.contains(&k.as_str()))
            .filter_map(|(k, v)| match (k.as_str(), v) {
                // OpenAI's cached tokens are read into the counts: the rest of their details
                // object is kept, if anything is.
                ("prompt_tokens_details" | "input_tokens_details", Value::Object(d)) => {
                    let rest: Map<String, Value> = d
                        .iter()
                        .filter(|(k, _)| k.as_str() != "cached_tokens")
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    (!rest.is_empty()).then(|| (k.clone(), Value::Object(rest)))
                }
                _ => Some((k.clone(), v.clone())),
            })
            .collect();
        Ok(Usage {
            input_tokens,
            output_tokens,
            cache_read_input_tokens: cache_read,
            cache_creation_input_tokens: cache_creation,
            model: text(o, "model")?,
            request_id: text(o, "request_id")?,
            time: text(o, "time")?,
            other,
        })
    }

    /// The kinds of tokens reported beside the four tract sums, which it does not sum: the
    /// counts in [`Usage::other`] (OpenAI's `total_tokens`, their sum, left out).
    pub fn unknown_kinds(&self) -> impl Iterator<Item = &str> {
        self.other
            .iter()
            .filter(|(k, v)| v.is_number() && k.as_str() != "total_tokens")
            .map(|(k, _)| k.as_str())
    }

    /// Every input token of the request: those of the cache, read and written, too.
    pub fn all_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.cache_creation_input_tokens)
    }

    /// The usage `m` carries, if any.
    pub fn of(m: &Message) -> Result<Option<Usage>> {
        let Some(text) = m.metadata.get(USAGE_METADATA_KEY) else {
            return Ok(None);
        };
        let v: Value = serde_json::from_str(text)
            .map_err(|_| Error::invalid_message("'tract.usage' must be JSON"))?;
        Usage::from_json(&v).map(Some)
    }

    /// Adds the counts of `more` to these (a response whose lines came apart); the model,
    /// request id, time and what else was reported stay this one's.
    pub fn absorb(&mut self, more: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(more.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(more.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(more.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(more.cache_creation_input_tokens);
    }

    /// Puts this usage on `m`, an assistant message or the record of one a transcript kept
    /// off its conversation (what another role says cost nothing).
    pub fn put_on(&self, m: &mut Message) -> Result<()> {
        if !carries_usage(m) {
            return Err(Error::invalid_input(format!(
                "usage goes with an assistant message (this one is {})",
                m.role
            )));
        }
        let json =
            serde_json::to_string(self).map_err(|e| Error::invalid_input(format!("usage: {e}")))?;
        m.metadata.insert(USAGE_METADATA_KEY.into(), json);
        Ok(())
    }
}

/// Whether `m` may carry usage: an assistant message, or a record (an answer a transcript kept
/// off its conversation: a rewound attempt was paid for too).
fn carries_usage(m: &Message) -> bool {
    m.role == Role::Assistant || m.metadata.contains_key(RECORD_METADATA_KEY)
}

/// Checks the usage a message carries, if any: an assistant's or a record's, and well formed.
pub(crate) fn check(m: &Message) -> Result<()> {
    if m.metadata.contains_key(USAGE_METADATA_KEY) && !carries_usage(m) {
        return Err(Error::invalid_message(format!(
            "usage goes with an assistant message (this one is {})",
            m.role
        )));
    }
    Usage::of(m).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_providers_names_come_out_in_anthropics() {
        let anthropic = Usage::from_json(&json!({
            "input_tokens": 12, "output_tokens": 30, "cache_read_input_tokens": 9000,
            "cache_creation_input_tokens": 400, "model": "claude-sonnet-4-5",
            "service_tier": "standard",
            "cache_creation": {"ephemeral_5m_input_tokens": 400}
        }))
        .unwrap();
        assert_eq!(
            (
                anthropic.input_tokens,
                anthropic.output_tokens,
                anthropic.cache_read_input_tokens,
                anthropic.cache_creation_input_tokens
            ),
            (12, 30, 9000, 400)
        );
        assert_eq!(anthropic.all_input_tokens(), 9412);
        assert_eq!(anthropic.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(anthropic.other["service_tier"], "standard");
        assert!(anthropic.other.contains_key("cache_creation"));

        let chat = Usage::from_json(&json!({
            "prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
            "prompt_tokens_details": {"cached_tokens": 768, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 20}
        }))
        .unwrap();
        assert_eq!(
            (
                chat.input_tokens,
                chat.output_tokens,
                chat.cache_read_input_tokens,
                chat.cache_creation_input_tokens
            ),
            (232, 50, 768, 0)
        );
        assert_eq!(chat.other["total_tokens"], 1050);
        assert_eq!(
            chat.other["completion_tokens_details"]["reasoning_tokens"],
            20
        );

        let responses = Usage::from_json(&json!({
            "input_tokens": 300, "output_tokens": 7, "total_tokens": 307,
            "input_tokens_details": {"cached_tokens": 256},
            "output_tokens_details": {"reasoning_tokens": 0}
        }))
        .unwrap();
        assert_eq!(
            (responses.input_tokens, responses.cache_read_input_tokens),
            (44, 256)
        );
        assert!(!responses.other.contains_key("input_tokens_details"));
    }

    #[test]
    fn bad_counts_are_refused() {
        for bad in [
            json!({"input_tokens": -1, "output_tokens": 2}),
            json!({"input_tokens": 1.5, "output_tokens": 2}),
            json!({"input_tokens": "3", "output_tokens": 2}),
            json!({"prompt_tokens": 1, "output_tokens": 2}),
            json!({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 11}}),
            json!({"model": "m"}),
            json!([1, 2]),
            json!({"input_tokens": 1, "model": 3}),
        ] {
            assert!(
                matches!(Usage::from_json(&bad), Err(Error::InvalidInput { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn usage_rides_on_an_assistant_message_and_reads_back() {
        let u = Usage::from_json(&json!({"input_tokens": 3, "output_tokens": 4})).unwrap();
        let mut m = Message::text(Role::Assistant, "hi");
        u.put_on(&mut m).unwrap();
        assert_eq!(Usage::of(&m).unwrap(), Some(u.clone()));
        check(&m).unwrap();
        let mut user = Message::text(Role::User, "hi");
        assert!(u.put_on(&mut user).is_err());
        user.metadata.insert(
            USAGE_METADATA_KEY.into(),
            m.metadata[USAGE_METADATA_KEY].clone(),
        );
        assert!(check(&user).is_err());
    }
}
