//! The clear strategy: old tool results replaced by a short placeholder that names the
//! original commit, as edits (like Anthropic's `clear_tool_uses`). Being commits, the cleared
//! view is the same on every compile, so provider prompt caches hold.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::object::{Content, Message};
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::tokens;
use crate::view::info::CommitInfo;
use crate::view::{View, ViewEntry};
use crate::write::txn;
use std::sync::Arc;

/// The metadata key marking a cleared result (so it is not cleared twice).
pub const CLEARED_KEY: &str = "tract_cleared";

/// The default placeholder. `{tool}`, `{commit}`, `{tokens}` and `{bytes}` are filled in.
pub const DEFAULT_PLACEHOLDER: &str = "[tract] Cleared this {tool} result to save context ({tokens} tokens, {bytes} bytes). The original is commit {commit}.";

/// What to clear.
#[derive(Debug, Clone)]
pub struct ClearOptions {
    /// The most recent tool turns to leave untouched.
    pub keep: usize,
    /// Tools whose results are never cleared.
    pub exclude_tools: Vec<String>,
    /// Clear nothing unless at least this many tokens would be freed.
    pub clear_at_least: u64,
    /// The placeholder text (default [`DEFAULT_PLACEHOLDER`]).
    pub placeholder: Option<String>,
    /// Keep the stable prefix: no result up to the newest summary in view (the last compress
    /// boundary) is cleared, so what a provider has cached before it stays as it is.
    pub keep_prefix: bool,
}

impl Default for ClearOptions {
    fn default() -> Self {
        ClearOptions {
            keep: 3,
            exclude_tools: Vec::new(),
            clear_at_least: 0,
            placeholder: None,
            keep_prefix: false,
        }
    }
}

/// One result to clear.
#[derive(Debug, Clone)]
pub struct ClearCandidate {
    /// The result's view position (its original commit).
    pub position: CommitId,
    /// The tool.
    pub tool: String,
    /// Tokens it takes in view now (framing included).
    pub tokens: u32,
    /// Tokens the placeholder will take.
    pub placeholder_tokens: u32,
}

impl ClearCandidate {
    /// Tokens clearing it frees.
    pub fn saving(&self) -> u64 {
        u64::from(self.tokens.saturating_sub(self.placeholder_tokens))
    }
}

/// What a clear did.
#[derive(Debug, Clone)]
pub struct ClearOutcome {
    /// The edit commits, one per cleared result.
    pub cleared: Vec<CommitInfo>,
    /// The request's tokens before.
    pub tokens_before: u64,
    /// The request's tokens after.
    pub tokens_after: u64,
}

/// The results to clear and their new messages; empty when `clear_at_least` is not reached.
fn plan(
    repo: &Repo,
    snap: &Snapshot,
    v: &View,
    opts: &ClearOptions,
) -> Result<Vec<(ClearCandidate, Message)>> {
    if let Some(p) = &opts.placeholder
        && p.trim().is_empty()
    {
        return Err(Error::invalid_input("the placeholder must not be empty"));
    }
    let template = opts.placeholder.as_deref().unwrap_or(DEFAULT_PLACEHOLDER);
    let calls = v.call_entries(None);
    let old = calls.len().saturating_sub(opts.keep);
    let boundary = v.compress_boundary().filter(|_| opts.keep_prefix);
    // The results of the older turns, of tools not excluded: their messages are read.
    let results: Vec<&ViewEntry> = calls[..old]
        .iter()
        .filter(|&&i| boundary.is_none_or(|b| i > b))
        .flat_map(|&i| v.entries()[i].results.iter().flatten())
        .map(|&r| &v.entries()[r])
        .filter(|e| {
            let tool = e.shape.name.as_deref().unwrap_or_default();
            !opts.exclude_tools.iter().any(|t| t == tool)
        })
        .collect();
    let texts = repo.texts(snap, results.iter().copied())?;
    let mut out = Vec::new();
    for (e, message) in results.into_iter().zip(texts) {
        {
            let tool = e.shape.name.clone().unwrap_or_default();
            if message.metadata.contains_key(CLEARED_KEY) {
                continue;
            }
            let text = template
                .replace("{tool}", &tool)
                .replace("{commit}", &e.position.to_hex()[..12])
                .replace("{tokens}", &e.tokens.to_string())
                .replace("{bytes}", &message.content.text().len().to_string());
            let placeholder_tokens = tokens::framed(tokens::count_text(&text), false);
            if placeholder_tokens >= e.tokens {
                continue; // already smaller than its placeholder
            }
            let mut m = Arc::unwrap_or_clone(message);
            m.content = Content::Text(text);
            m.metadata.insert(CLEARED_KEY.into(), "true".into());
            out.push((
                ClearCandidate {
                    position: e.position,
                    tool,
                    tokens: e.tokens,
                    placeholder_tokens,
                },
                m,
            ));
        }
    }
    let freed: u64 = out.iter().map(|(c, _)| c.saving()).sum();
    if freed < opts.clear_at_least {
        out.clear();
    }
    Ok(out)
}

/// What a clear would do, without committing anything: the results it would replace and the
/// request's tokens before and after.
#[derive(Debug, Clone)]
pub struct ClearPlan {
    /// The results to clear, in view order.
    pub candidates: Vec<ClearCandidate>,
    /// The request's tokens now.
    pub tokens_before: u64,
    /// The request's tokens once they are cleared.
    pub tokens_after: u64,
    /// The cached tokens it invalidates: those of the view from the first result it clears
    /// on, which a provider's cache takes in again at the next request.
    pub cached_tokens_invalidated: u64,
}

/// What [`clear`] would clear.
pub(crate) fn plan_clear(repo: &Repo, opts: &ClearOptions) -> Result<ClearPlan> {
    repo.at_head(|snap, v| {
        let candidates: Vec<ClearCandidate> = plan(repo, snap, v, opts)?
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        let tokens_before = v.token_count();
        let freed: u64 = candidates.iter().map(ClearCandidate::saving).sum();
        let first = candidates.first().and_then(|c| v.index_of(&c.position));
        Ok(ClearPlan {
            candidates,
            tokens_before,
            tokens_after: tokens_before.saturating_sub(freed),
            cached_tokens_invalidated: first.map(|i| v.tokens_from(i)).unwrap_or_default(),
        })
    })?
}

/// Replaces the results of all but the last `keep` tool turns with a placeholder naming the
/// original commit, as edits in one transaction.
pub(crate) fn clear(repo: &Repo, opts: &ClearOptions) -> Result<ClearOutcome> {
    let tokens_before = repo.at_head(|_, v| v.token_count())?;
    let cleared = txn::write_edits(repo, |snap, v| {
        Ok(plan(repo, snap, v, opts)?
            .into_iter()
            .map(|(c, m)| (c.position, m))
            .collect())
    })?;
    let tokens_after = repo.at_head(|_, v| v.token_count())?;
    Ok(ClearOutcome {
        cleared,
        tokens_before,
        tokens_after,
    })
}
