//! A summarizer that asks any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama,
//! llama.cpp server), with retries on 429 and 5xx.

use crate::error::{Error, Result};
use crate::summarize::{Summarizer, SummaryRequest};
use serde_json::{Value, json};
use std::time::Duration;

/// Longest wait between two tries, whatever `Retry-After` says.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// An OpenAI-compatible chat-completions client used as a summarizer.
#[derive(Debug, Clone)]
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
            reason: message.to_string(),
        }
    }

    /// One request: the reply text, or whether the failure is worth another try.
    fn attempt(
        &self,
        agent: &ureq::Agent,
        body: &str,
    ) -> std::result::Result<String, (bool, Error, Option<Duration>)> {
        let url = format!("{}/chat/completions", self.base_url);
        let mut request = agent.post(&url).header("Content-Type", "application/json");
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
        format!("openai:{}@{}", self.model, self.base_url)
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
