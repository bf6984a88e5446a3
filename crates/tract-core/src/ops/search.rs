//! Full-text search over message text, tool-call names and arguments, and tool results: on
//! the current view, or over every version in the branch's history.

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId};
use crate::object::{Message, Op, Role};
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::view::ancestry;
use crate::view::info::CommitInfo;
use regex::{Regex, RegexBuilder};

/// Characters of context on each side of a match in a snippet.
const SNIPPET_CONTEXT: usize = 40;

/// What to look for.
#[derive(Debug, Clone, Default)]
pub struct SearchQuery {
    /// The text (case-insensitive substring), or a regular expression with `regex`.
    pub query: String,
    /// Treat `query` as a regular expression (case-insensitive unless it says otherwise).
    pub regex: bool,
    /// Only messages of this role.
    pub role: Option<Role>,
    /// Only results of this tool, and assistant messages that call it.
    pub tool: Option<String>,
    /// Search every version in the branch's history (originals of edited messages included,
    /// and the history of every branch merged into it), not just what is in view.
    pub history: bool,
    /// At most this many hits.
    pub limit: Option<usize>,
}

/// One match.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// The commit whose message matched (for the view: the version in view).
    pub info: CommitInfo,
    /// The matching line, cut to the match with some context.
    pub snippet: String,
}

fn matcher(q: &SearchQuery) -> Result<Regex> {
    if q.query.is_empty() {
        return Err(Error::invalid_input("an empty search query"));
    }
    let pattern = if q.regex {
        q.query.clone()
    } else {
        regex::escape(&q.query)
    };
    RegexBuilder::new(&pattern)
        .case_insensitive(true)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| {
            // The engine's message spans lines (pattern, caret, reason): keep the reason.
            let text = e.to_string();
            let reason = text
                .lines()
                .last()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            Error::invalid_input(format!(
                "invalid regular expression '{}': {reason}",
                q.query
            ))
        })
}

/// Whether a message of `role`, `name` and tools `calls` passes the query's filters.
fn wanted<'a>(
    role: Role,
    name: Option<&str>,
    mut calls: impl Iterator<Item = &'a str>,
    q: &SearchQuery,
) -> bool {
    if q.role.is_some_and(|r| r != role) {
        return false;
    }
    match &q.tool {
        None => true,
        Some(t) => name == Some(t.as_str()) && role == Role::Tool || calls.any(|c| c == t),
    }
}

/// [`wanted`] of a message.
fn wanted_message(m: &Message, q: &SearchQuery) -> bool {
    wanted(
        m.role,
        m.name.as_deref(),
        m.tool_calls.iter().map(|c| c.name.as_str()),
        q,
    )
}

/// The snippet of the first match in `m`, if any.
fn find(re: &Regex, m: &Message) -> Option<String> {
    let text = m.content.text();
    if let Some(hit) = re.find(&text) {
        return Some(snippet(&text, hit.start(), hit.end()));
    }
    m.tool_calls.iter().find_map(|c| {
        let call = format!("{}({})", c.name, c.arguments);
        re.find(&call)
            .map(|hit| snippet(&call, hit.start(), hit.end()))
    })
}

/// The line around `start..end`, with at most [`SNIPPET_CONTEXT`] characters each side.
fn snippet(text: &str, start: usize, end: usize) -> String {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let before: String = text[line_start..start]
        .chars()
        .rev()
        .take(SNIPPET_CONTEXT)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let after: String = text[end..line_end].chars().take(SNIPPET_CONTEXT).collect();
    let lead = if before.len() < start - line_start {
        "…"
    } else {
        ""
    };
    let tail = if after.len() < line_end - end {
        "…"
    } else {
        ""
    };
    format!("{lead}{before}{}{after}{tail}", &text[start..end])
}

/// Messages matching `q` in the view at `HEAD` (or its branch's history), oldest first.
pub(crate) fn search(repo: &Repo, q: &SearchQuery) -> Result<Vec<SearchHit>> {
    let re = matcher(q)?;
    let limit = q.limit.unwrap_or(usize::MAX);
    let snap = repo.read()?;
    let head = repo.head(&snap)?.commit;
    if q.history {
        return search_history(&snap, head, &re, q, limit);
    }
    // The entries the filters keep, taken under the view's lock; their messages are read in
    // batches after, and the scan stops at the limit.
    let candidates: Vec<(CommitId, BlobId)> = repo.with_view(&snap, head, |v| {
        v.entries()
            .iter()
            .filter(|e| {
                let s = &e.shape;
                wanted(
                    s.role,
                    s.name.as_deref(),
                    s.tool_calls.iter().map(|c| c.name.as_str()),
                    q,
                )
            })
            .map(|e| (e.commit, e.blob))
            .collect()
    })?;
    const BATCH: usize = 256;
    let mut found = Vec::new();
    for part in candidates.chunks(BATCH) {
        let blobs: Vec<BlobId> = part.iter().map(|(_, b)| *b).collect();
        let texts = repo.blob_texts(&snap, &blobs)?;
        for ((commit, _), m) in part.iter().zip(texts) {
            if found.len() < limit
                && let Some(s) = find(&re, &m)
            {
                found.push((*commit, s));
            }
        }
        if found.len() >= limit {
            break;
        }
    }
    found
        .into_iter()
        .map(|(commit, snippet)| {
            Ok(SearchHit {
                info: CommitInfo::load(&snap, commit)?,
                snippet,
            })
        })
        .collect()
}

/// Every version of every message reachable from `head`, through both parents of merges (a
/// merged sub-agent's work is part of the history), oldest first.
fn search_history(
    snap: &Snapshot,
    head: Option<CommitId>,
    re: &Regex,
    q: &SearchQuery,
    limit: usize,
) -> Result<Vec<SearchHit>> {
    let mut hits = Vec::new();
    let heads: Vec<CommitId> = head.into_iter().collect();
    for (id, commit) in ancestry::ancestors(snap, &heads, None)? {
        // A record's data is its owner's (a framework's state), not something said.
        if matches!(commit.op, Op::Record { .. }) {
            continue;
        }
        let info = CommitInfo::with_commit(snap, id, commit)?;
        let snippet = info
            .message
            .as_deref()
            .filter(|m| wanted_message(m, q))
            .and_then(|m| find(re, m));
        if let Some(snippet) = snippet {
            hits.push(SearchHit { info, snippet });
        }
    }
    hits.reverse();
    hits.truncate(limit);
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_cut_long_lines_around_the_match() {
        let line = format!("{}needle{}", "a".repeat(100), "b".repeat(100));
        let s = snippet(&line, 100, 106);
        assert!(
            s.starts_with('…') && s.ends_with('…') && s.contains("needle"),
            "{s}"
        );
        assert_eq!(s.chars().count(), 2 + 40 + 6 + 40);
        let text = "first\nsecond needle line\nthird";
        let start = text.find("needle").unwrap_or(0);
        assert_eq!(snippet(text, start, start + 6), "second needle line");
    }

    #[test]
    fn queries_are_case_insensitive_and_bad_regexes_are_errors() {
        let q = SearchQuery {
            query: "Database_URL".into(),
            ..SearchQuery::default()
        };
        let m = Message::text(Role::User, "where is DATABASE_URL read?");
        assert!(find(&matcher(&q).unwrap(), &m).is_some());
        let bad = SearchQuery {
            query: "(unclosed".into(),
            regex: true,
            ..SearchQuery::default()
        };
        assert!(matches!(matcher(&bad), Err(Error::InvalidInput { .. })));
        let literal = SearchQuery {
            query: "(unclosed".into(),
            ..SearchQuery::default()
        };
        assert!(matcher(&literal).is_ok());
    }
}
