//! A client of a model's HTTP API: any OpenAI-compatible chat-completions server (OpenAI, vLLM,
//! Ollama, llama.cpp server) or Anthropic's Messages API, with retries on 429 and 5xx within an
//! overall deadline. It summarizes (the text of an answer) and answers a whole request (the
//! reply as the server sent it, for a replay).

use crate::error::{Error, Result};
use crate::summarize::{Summarizer, SummaryRequest};
use serde_json::{Value, json};
use std::time::Duration;

/// Longest wait between two tries, whatever `Retry-After` says.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The API a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// OpenAI's chat completions: `POST {base}/chat/completions`, the key as a bearer token.
    #[default]
    ChatCompletions,
    /// Anthropic's Messages API: `POST {base}/messages`, the key as `x-api-key`.
    Messages,
}

/// The `max_tokens` a Messages API request must name, when the caller names none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A client of a model's HTTP API (OpenAI-compatible chat completions by default), used as a
/// summarizer and by a replay. Its API key (and a password in its base URL) never leaves it:
/// not in its identity (stored on commits), not in an error, not in its `Debug` output.
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
    /// Every try of one request, and the waits between them, end within this (`None`: no
    /// bound beyond the tries'): a server that never answers fails in bounded time.
    pub deadline: Option<Duration>,
    /// The API spoken.
    pub api: Api,
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
            deadline: None,
            api: Api::ChatCompletions,
        }
    }

    /// What went wrong, with the key and the URL's password taken out.
    fn fail(&self, message: impl std::fmt::Display) -> String {
        self.scrub(&message.to_string())
    }

    /// Where requests go.
    fn endpoint(&self, base: &str) -> String {
        match self.api {
            Api::ChatCompletions => format!("{base}/chat/completions"),
            Api::Messages => format!("{base}/messages"),
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

    /// One request of at most `timeout`: the reply, or what failed and whether it is worth
    /// another try (and when, if the server said).
    fn attempt(
        &self,
        body: &str,
        timeout: Duration,
    ) -> std::result::Result<Value, (bool, String, Option<Duration>)> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let target = self.endpoint(&self.base_url);
        let url = self.endpoint(&self.shown_base_url());
        let mut request = agent
            .post(&target)
            .header("Content-Type", "application/json");
        match (self.api, &self.api_key) {
            (Api::ChatCompletions, Some(key)) => {
                request = request.header("Authorization", format!("Bearer {key}"));
            }
            (Api::Messages, key) => {
                request = request.header("anthropic-version", "2023-06-01");
                if let Some(key) = key {
                    request = request.header("x-api-key", key);
                }
            }
            (Api::ChatCompletions, None) => {}
        }
        let mut response = match request.send(body) {
            Ok(r) => r,
            Err(ureq::Error::Timeout(_)) => {
                let e = self.fail(format!("no answer within {} ms", timeout.as_millis()));
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
        match serde_json::from_str::<Value>(&text) {
            Ok(reply) if reply.is_object() => Ok(reply),
            Ok(_) => Err((
                false,
                self.fail(format!(
                    "the reply is not a JSON object: {}",
                    snippet(&text)
                )),
                None,
            )),
            Err(e) => Err((
                false,
                self.fail(format!("the reply is not JSON ({e}): {}", snippet(&text))),
                None,
            )),
        }
    }

    /// Sends `body` (a whole request, the model named in it) and returns the reply, trying
    /// again on 429, 5xx, timeouts and dropped connections, within the deadline. A failure is
    /// what went wrong the last time, with how many tries were made.
    pub fn request(&self, body: &Value) -> std::result::Result<Value, String> {
        let body = body.to_string();
        let start = std::time::Instant::now();
        let left = || self.deadline.map(|d| d.saturating_sub(start.elapsed()));
        let mut wait = self.backoff;
        let mut tries = 0;
        loop {
            let timeout = left().map_or(self.timeout, |l| l.min(self.timeout));
            match self.attempt(&body, timeout) {
                Ok(reply) => return Ok(reply),
                Err((retry, reason, after)) => {
                    let pause = after.unwrap_or(wait).min(MAX_BACKOFF);
                    // A wait that would end past the deadline is not waited: the last
                    // failure is the answer.
                    let in_time = left().is_none_or(|l| l > pause + Duration::from_millis(100));
                    if !retry || tries >= self.retries || !in_time {
                        return Err(match tries {
                            0 => reason,
                            n => format!("{reason} (after {} tries)", n + 1),
                        });
                    }
                    std::thread::sleep(pause);
                    wait = (wait * 2).min(MAX_BACKOFF);
                    tries += 1;
                }
            }
        }
    }

    /// [`OpenAiCompatible::request`] for a model's answer: a failure is a [`Error::Model`].
    pub fn answer(&self, body: &Value) -> Result<Value> {
        self.request(body).map_err(|reason| Error::Model {
            endpoint: self.shown_base_url(),
            reason,
        })
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
            .field("deadline", &self.deadline)
            .field("api", &self.api)
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
        let kind = match self.api {
            Api::ChatCompletions => "openai",
            Api::Messages => "anthropic",
        };
        format!("{kind}:{}@{}", self.model, self.shown_base_url())
    }

    fn summarize(&self, req: &SummaryRequest) -> Result<String> {
        let messages = req.to_chat_messages();
        let mut body = match self.api {
            Api::ChatCompletions => json!({
                "model": self.model,
                "messages": messages,
                "temperature": 0,
            }),
            Api::Messages => {
                // The system prompt is a field of its own there.
                let all = messages.as_array().cloned().unwrap_or_default();
                let (system, rest): (Vec<Value>, Vec<Value>) =
                    all.into_iter().partition(|m| m["role"] == "system");
                let system: Vec<&str> = system
                    .iter()
                    .filter_map(|m| m["content"].as_str())
                    .collect();
                json!({
                    "model": self.model,
                    "system": system.join("\n\n"),
                    "messages": rest,
                    "max_tokens": DEFAULT_MAX_TOKENS,
                    "temperature": 0,
                })
            }
        };
        if let Some(t) = req.target_tokens {
            // Room over the target so a reply is not cut mid-sentence.
            body["max_tokens"] = json!(t.saturating_mul(2).max(64));
        }
        let fail = |reason: String| Error::Summarizer {
            summarizer: self.identity(),
            reason,
        };
        let reply = self.request(&body).map_err(fail)?;
        let text = match self.api {
            Api::ChatCompletions => reply["choices"][0]["message"]["content"]
                .as_str()
                .map(str::to_string),
            Api::Messages => reply["content"].as_array().map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("")
            }),
        };
        match text {
            Some(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            _ => Err(fail(self.fail(format!(
                "the reply has no message content: {}",
                snippet(&reply.to_string())
            )))),
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
