//! A summarizer that asks any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama,
//! llama.cpp server), with retries on 429 and 5xx.

use crate::error::{Error, Result};
use crate::summarize::{Summarizer, SummaryRequest};
use serde_json::{Value, json};
use std::time::Duration;

/// Longest wait between two tries, whatever `Retry-After` says.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// An OpenAI-compatible chat-completions client used as a summarizer. Its API key (and a
/// password in its base URL) never leaves it: not in its identity (stored on commits), not in
/// an error, not in its `Debug` output.
#[derive(Clone)]
pub struct OpenAiCompatible {
    /// Where the API lives, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    /// The model to ask.
    pub model: String,
    /// Sent as a bearer token when set.
    pub api_key: Option<String>,
    /// Per request, connection to last byte.
    pub timeout: Duration,
    /// Tries after the first, on 429, 5xx, timeouts and dropped connections.
    pub retries: u32,
    /// The first wait between tries; it doubles each time.
    pub backoff: Duration,
}

impl OpenAiCompatible {
    /// A client for `model` at `base_url`, with a 60 s timeout and 3 retries from 1 s.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiCompatible {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            retries: 3,
            backoff: Duration::from_secs(1),
        }
    }

    fn fail(&self, message: impl std::fmt::Display) -> Error {
        Error::Summarizer {
            summarizer: self.identity(),
            reason: self.scrub(&message.to_string()),
        }
    }

    /// The base URL without a user and password in it: how it is shown and recorded.
    pub fn shown_base_url(&self) -> String {
        match userinfo(&self.base_url) {
            Some(info) => self.base_url.replacen(&format!("{info}@"), "", 1),
            None => self.base_url.clone(),
        }
    }

    /// `text` with the API key and the URL's user and password replaced (a server may echo the
    /// request back in an error page, a client library may print the URL it could not reach).
    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        let secrets = self
            .api_key
            .iter()
            .map(String::as_str)
            .chain(userinfo(&self.base_url));
        for secret in secrets.filter(|s| !s.is_empty()) {
            out = out.replace(secret, "[redacted]");
        }
        out
    }

    /// One request: the reply text, or whether the failure is worth another try.
    fn attempt(
        &self,
        agent: &ureq::Agent,
        body: &str,
    ) -> std::result::Result<String, (bool, Error, Option<Duration>)> {
        let target = format!("{}/chat/completions", self.base_url);
        let url = format!("{}/chat/completions", self.shown_base_url());
        let mut request = agent
            .post(&target)
            .header("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        let mut response = match request.send(body) {
            Ok(r) => r,
            Err(ureq::Error::Timeout(_)) => {
                let e = self.fail(format!("no answer within {} ms", self.timeout.as_millis()));
                return Err((true, e, None));
            }
            // Nothing listening, or no such host: trying again will not change that.
            Err(e @ (ureq::Error::ConnectionFailed | ureq::Error::HostNotFound)) => {
                return Err((false, self.fail(format!("cannot reach {url}: {e}")), None));
            }
            Err(ureq::Error::Io(io)) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err((false, self.fail(format!("cannot reach {url}: {io}")), None));
            }
            // A connection dropped mid-request may well work the next time.
            Err(e @ ureq::Error::Io(_)) => {
                return Err((true, self.fail(format!("talking to {url}: {e}")), None));
            }
            Err(e) => return Err((false, self.fail(e), None)),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| (true, self.fail(format!("reading the reply: {e}")), None))?;
        if status == 429 || status >= 500 {
            let e = self.fail(format!("HTTP {status}: {}", snippet(&text)));
            return Err((true, e, retry_after));
        }
        if status >= 400 {
            let e = self.fail(format!("HTTP {status}: {}", snippet(&text)));
            return Err((false, e, None));
        }
        let reply: Value = serde_json::from_str(&text).map_err(|e| {
            (
                false,
                self.fail(format!("the reply is not JSON ({e}): {}", snippet(&text))),
                None,
            )
        })?;
        match reply["choices"][0]["message"]["content"].as_str() {
            Some(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            _ => Err((
                false,
                self.fail(format!(
                    "the reply has no message content: {}",
                    snippet(&text)
                )),
                None,
            )),
        }
    }
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("base_url", &self.shown_base_url())
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("backoff", &self.backoff)
            .finish()
    }
}

/// The `user:password` part of a URL's authority, if it has one.
fn userinfo(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit_once('@').map(|(info, _)| info)
}

fn snippet(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 200 {
        format!("{}…", one_line.chars().take(200).collect::<String>())
    } else {
        one_line
    }
}

impl Summarizer for OpenAiCompatible {
    fn identity(&self) -> String {
        format!("openai:{}@{}", self.model, self.shown_base_url())
    }

    fn summarize(&self, req: &SummaryRequest) -> Result<String> {
        let mut body = json!({
            "model": self.model,
            "messages": req.to_chat_messages(),
            "temperature": 0,
        });
        if let Some(t) = req.target_tokens {
            // Room over the target so a reply is not cut mid-sentence.
            body["max_tokens"] = json!(t.saturating_mul(2).max(64));
        }
        let body = body.to_string();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let mut wait = self.backoff;
        let mut tries = 0;
        loop {
            match self.attempt(&agent, &body) {
                Ok(text) => return Ok(text),
                Err((retry, e, after)) => {
                    if !retry || tries >= self.retries {
                        return Err(match e {
                            Error::Summarizer { summarizer, reason } if tries > 0 => {
                                Error::Summarizer {
                                    summarizer,
                                    reason: format!("{reason} (after {} tries)", tries + 1),
                                }
                            }
                            other => other,
                        });
                    }
                    std::thread::sleep(after.unwrap_or(wait).min(MAX_BACKOFF));
                    wait = (wait * 2).min(MAX_BACKOFF);
                    tries += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_and_a_password_in_the_url_are_never_shown() {
        let mut c = OpenAiCompatible::new("http://me:pw-SECRET@127.0.0.1:9/v1", "m");
        c.api_key = Some("sk-SECRET".into());
        assert_eq!(c.identity(), "openai:m@http://127.0.0.1:9/v1");
        let shown = format!(
            "{c:?} {}",
            c.fail("echo: Bearer sk-SECRET at me:pw-SECRET@host")
        );
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
        let plain = OpenAiCompatible::new("https://api.openai.com/v1", "m");
        assert_eq!(plain.shown_base_url(), "https://api.openai.com/v1");
        assert_eq!(userinfo("http://host/v1?x=a@b"), None);
    }
}
