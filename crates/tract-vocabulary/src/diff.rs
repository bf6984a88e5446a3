//! [`ViewDiffReport`] and [`HistoryDiffReport`]: how two views differ, what one commit did to
//! its view, and which commits each of two histories holds (`tract diff`, Python's `diff()`).

use super::{Commit, Detail, ToolCallRequest, ViewMessage};
use serde::Serialize;
use tract_core::{DiffSide, HistoryDiff, PageEntry, ViewDiff};

/// One side of a diff.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// The revision as given (for one commit's diff, `REV~1` is the view before it).
    rev: String,
    /// The commit it names (`null`: the empty view before a first commit).
    commit_hash: Option<String>,
    /// Messages in its view.
    message_count: usize,
    /// Tokens of its compiled request.
    token_count: u64,
}

impl From<&DiffSide> for Side {
    fn from(s: &DiffSide) -> Self {
        Side {
            rev: s.rev.clone(),
            commit_hash: s.commit.map(|c| c.to_hex()),
            message_count: s.messages,
            token_count: s.token_count,
        }
    }
}

/// One message of a diff, as the web view shows it, with the tool calls it makes.
#[derive(Debug, Clone, Serialize)]
pub struct DiffMessage {
    /// The message.
    #[serde(flatten)]
    message: ViewMessage,
    /// The tool calls it makes (an assistant's), as it makes them.
    tool_calls: Vec<ToolCallRequest>,
}

impl From<&PageEntry> for DiffMessage {
    fn from(e: &PageEntry) -> Self {
        DiffMessage {
            message: ViewMessage::from(e),
            tool_calls: e
                .message
                .tool_calls
                .iter()
                .map(ToolCallRequest::from)
                .collect(),
        }
    }
}

/// A position both views hold with other content: each side's message.
#[derive(Debug, Clone, Serialize)]
pub struct Changed {
    /// The message in `a`'s view.
    a: DiffMessage,
    /// The message in `b`'s view.
    b: DiffMessage,
}

/// How the views of two revisions differ, as the model saw them (`tract diff A B --json`), or
/// what one commit did to its view (`tract diff REV --json`, with `commit`).
#[derive(Debug, Clone, Serialize)]
pub struct ViewDiffReport {
    /// The view compared from.
    a: Side,
    /// The view compared to.
    b: Side,
    /// `b`'s tokens less `a`'s.
    token_delta: i64,
    /// How many messages both views begin with alike: they part after that many.
    shared_prefix_count: usize,
    /// How many messages both hold alike, wherever they are.
    shared_count: usize,
    /// The messages only `a` holds, in its order (for a compression or a clear: what it took
    /// out of view). A message of a diff is shown apart from its view: its `caller` is null,
    /// its `calls` empty, and the calls it makes are in `tool_calls`.
    only_a: Vec<DiffMessage>,
    /// The messages only `b` holds, in its order (a compression's summary).
    only_b: Vec<DiffMessage>,
    /// The positions both hold with other content (an edit, a clear, a redaction's
    /// placeholder shows as a change of neither: its content address stays).
    changed: Vec<Changed>,
    /// For one commit's diff: the commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<Commit>,
}

impl From<&ViewDiff> for ViewDiffReport {
    fn from(d: &ViewDiff) -> Self {
        let delta = i128::from(d.b.token_count) - i128::from(d.a.token_count);
        ViewDiffReport {
            a: Side::from(&d.a),
            b: Side::from(&d.b),
            token_delta: i64::try_from(delta).unwrap_or(if delta < 0 {
                i64::MIN
            } else {
                i64::MAX
            }),
            shared_prefix_count: d.shared_prefix,
            shared_count: d.shared,
            only_a: d.only_a.iter().map(DiffMessage::from).collect(),
            only_b: d.only_b.iter().map(DiffMessage::from).collect(),
            changed: d
                .changed
                .iter()
                .map(|(a, b)| Changed {
                    a: DiffMessage::from(a),
                    b: DiffMessage::from(b),
                })
                .collect(),
            commit: d.commit.as_ref().map(|c| Commit::new(c, Detail::Full)),
        }
    }
}

/// Which commits each of two histories holds (`tract diff A B --history --json`).
#[derive(Debug, Clone, Serialize)]
pub struct HistoryDiffReport {
    /// The history compared from.
    a: Side,
    /// The history compared to.
    b: Side,
    /// The newest commit both hold (`null`: they share nothing).
    merge_base: Option<String>,
    /// The commits only `a`'s history holds, newest first.
    only_a: Vec<Commit>,
    /// The commits only `b`'s history holds, newest first.
    only_b: Vec<Commit>,
}

impl From<&HistoryDiff> for HistoryDiffReport {
    fn from(d: &HistoryDiff) -> Self {
        HistoryDiffReport {
            a: Side::from(&d.a),
            b: Side::from(&d.b),
            merge_base: d.merge_base.map(|c| c.to_hex()),
            only_a: d
                .only_a
                .iter()
                .map(|c| Commit::new(c, Detail::Full))
                .collect(),
            only_b: d
                .only_b
                .iter()
                .map(|c| Commit::new(c, Detail::Full))
                .collect(),
        }
    }
}
