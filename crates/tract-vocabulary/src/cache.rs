//! [`CacheReport`]: what a provider's prompt cache could have served a branch's requests, and
//! what broke it (`tract cache`, Python's `cache_report()`).

use serde::Serialize;
use tract_core::{CacheReport as CoreReport, CachedRequest, Provider};

/// Where a request stopped extending the one before it, and why.
#[derive(Debug, Clone, Serialize)]
pub struct CacheBreak {
    /// The commit that broke the prefix: an edit, a compression, a clear, a system prompt
    /// changed, a redacted message (the commit whose content was redacted), or the answer
    /// itself for `model` and `ttl`.
    commit_hash: String,
    /// `edit`, `compress`, `clear`, `redaction`, `system`, `model`, `ttl`; `append` or `merge`
    /// for a message added or merged where it changes what came before it.
    cause: String,
}

/// One model request: what the provider reported, and what tract computes it could have
/// read from the cache.
#[derive(Debug, Clone, Serialize)]
pub struct CacheRequest {
    /// The answer whose usage reports the request.
    commit_hash: String,
    /// When it was answered (the usage's time, else the answer's commit time), RFC 3339 UTC.
    created_at: String,
    /// The same, in microseconds since the Unix epoch.
    timestamp_us: u64,
    /// The model that answered, as the provider named it (`null`: not named).
    model: Option<String>,
    /// Input tokens the provider reported neither read from nor written to its cache.
    input_tokens: u64,
    /// Input tokens the provider reported read from its cache.
    cache_read_input_tokens: u64,
    /// Input tokens the provider reported written to its cache.
    cache_creation_input_tokens: u64,
    /// The request's tokens as tract renders the view the answer was given (tract's count).
    request_tokens: u64,
    /// The prefix, in tokens, this request shares byte for byte with the one before, in whole
    /// messages: what the cache could have served (0 for the first).
    shared_prefix_tokens: u64,
    /// Why it did not extend the request before (`null`: it did).
    #[serde(rename = "break")]
    broke: Option<CacheBreak>,
}

impl From<&CachedRequest> for CacheRequest {
    fn from(r: &CachedRequest) -> Self {
        CacheRequest {
            commit_hash: r.commit.to_hex(),
            created_at: tract_core::clock::rfc3339_micros(r.time_us),
            timestamp_us: r.time_us,
            model: r.usage.model.clone(),
            input_tokens: r.usage.input_tokens,
            cache_read_input_tokens: r.usage.cache_read_input_tokens,
            cache_creation_input_tokens: r.usage.cache_creation_input_tokens,
            request_tokens: r.request_tokens,
            shared_prefix_tokens: r.shared_tokens,
            broke: r.broke.as_ref().map(|b| CacheBreak {
                commit_hash: b.commit.to_hex(),
                cause: b.cause.as_str().to_string(),
            }),
        }
    }
}

/// What a provider's prompt cache could have served each request along a branch's first
/// parents, against what it reported, and each commit that broke the cached prefix.
#[derive(Debug, Clone, Serialize)]
pub struct CacheReport {
    /// The branch (`HEAD` for a detached position).
    branch: String,
    /// Its tip (`null`: no commit yet).
    commit_hash: Option<String>,
    /// The rendering compared: `anthropic`, `openai` or `responses`.
    format: String,
    /// The cache lifetime a gap is held against, in seconds.
    ttl_seconds: u64,
    /// Requests compared.
    request_count: u64,
    /// Requests that did not extend the one before.
    break_count: u64,
    /// Cache reads the provider reported, summed.
    cache_read_input_tokens: u64,
    /// What the cache could have served, summed (`shared_prefix_tokens`).
    shared_prefix_tokens: u64,
    /// Answers with usage off the conversation's path (records of rewound attempts): paid
    /// for, not compared (what they were sent is in no view).
    off_path_request_count: u64,
    /// What the figures leave out.
    notes: Vec<String>,
    /// Each request, oldest first.
    requests: Vec<CacheRequest>,
}

impl From<&CoreReport> for CacheReport {
    fn from(r: &CoreReport) -> Self {
        CacheReport {
            branch: r.branch.clone(),
            commit_hash: r.tip.map(|t| t.to_hex()),
            format: format_name(r.options.provider).to_string(),
            ttl_seconds: r.options.ttl_seconds,
            request_count: r.requests.len() as u64,
            break_count: r.requests.iter().filter(|q| q.broke.is_some()).count() as u64,
            cache_read_input_tokens: r
                .requests
                .iter()
                .map(|q| q.usage.cache_read_input_tokens)
                .sum(),
            shared_prefix_tokens: r.requests.iter().map(|q| q.shared_tokens).sum(),
            off_path_request_count: r.off_path,
            notes: notes(r),
            requests: r.requests.iter().map(CacheRequest::from).collect(),
        }
    }
}

/// The name of a rendering, as `compile --format` spells it.
fn format_name(p: Provider) -> &'static str {
    match p {
        Provider::OpenAi => "openai",
        Provider::Anthropic => "anthropic",
        Provider::Responses { .. } => "responses",
    }
}

/// What the report's figures leave out, for people.
pub fn notes(r: &CoreReport) -> Vec<String> {
    let mut out = Vec::new();
    if !r.requests.is_empty() && !r.system_prompt {
        out.push(
            "no request's view holds a system prompt (an imported session's agent keeps its \
             own out of the session file): the prefix compared starts at the first message"
                .to_string(),
        );
    }
    out.push(
        "tool definitions are not kept in the store: a change to them is not seen".to_string(),
    );
    if r.off_path > 0 {
        let (n, verb) = match r.off_path {
            1 => ("1 answer".to_string(), "is"),
            n => (format!("{n} answers"), "are"),
        };
        out.push(format!(
            "{n} off the conversation's path (rewound attempts) {verb} paid for but not compared"
        ));
    }
    out
}
