//! A page of a view as a person reads it (`tract serve`): each position with its tool calls'
//! states and results, how many versions it has and what its content is (edited, summarized by
//! a hook, cleared, redacted, repaired), without walking more of the view than the page.

use crate::error::Result;
use crate::id::CommitId;
use crate::object::Message;
use crate::object::{Content, Op};
use crate::ops::redact::REDACTED_TEXT;
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::tools::clear::CLEARED_KEY;
use crate::tools::hooks::HOOK_SUMMARY_NOTE;
use crate::tools::{ToolCallInfo, call_infos, entry_info};
use crate::view::ancestry::merge_base_since;
use crate::view::info::CommitInfo;
use crate::view::revision::Rev;
use crate::view::{View, ViewEntry};
use std::sync::Arc;

/// The metadata key `repair` sets on the results it commits for calls that had none.
const REPAIR_KEY: &str = "tract_repair";

/// What a position's current content is, besides the message itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// It has earlier versions (it was edited).
    Edited,
    /// A hook or the stored policy summarized it (the original is its first version).
    Summarized,
    /// `clear` replaced it with a placeholder naming the original.
    Cleared,
    /// Its content was removed for good; a placeholder stands in its place.
    Redacted,
    /// `repair` committed it as the result of a call that had none.
    Repaired,
    /// What looked like a credential was replaced by a marker before it was stored (or by
    /// `secrets scan --redact` since).
    Scrubbed,
}

impl Mark {
    /// The mark's name: `edited`, `summarized`, `cleared`, `redacted`, `repaired` or
    /// `scrubbed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mark::Edited => "edited",
            Mark::Summarized => "summarized",
            Mark::Cleared => "cleared",
            Mark::Redacted => "redacted",
            Mark::Repaired => "repaired",
            Mark::Scrubbed => "scrubbed",
        }
    }
}

/// One position of a page.
#[derive(Debug, Clone)]
pub struct PageEntry {
    /// Its index in the view.
    pub index: usize,
    /// The position as the view holds it (shape, tokens, edits).
    pub entry: ViewEntry,
    /// Its current message, text included.
    pub message: Arc<Message>,
    /// The note of the commit whose content is shown (an edit's, or the position's own).
    pub note: Option<String>,
    /// What its content is.
    pub marks: Vec<Mark>,
    /// For a tool result: the index of the entry whose call it answers (`None` for a result
    /// that answers no call, which is not sent, and for other roles).
    pub caller: Option<usize>,
    /// For an assistant entry that calls tools: each call with its result.
    pub calls: Vec<PageCall>,
}

/// One tool call of a page entry.
#[derive(Debug, Clone)]
pub struct PageCall {
    /// The call, its state and duration.
    pub info: ToolCallInfo,
    /// The entry of its result (`None` while pending: the model is then sent a synthetic
    /// error result).
    pub result: Option<Box<PageEntry>>,
}

/// A slice of the view at the handle's position.
#[derive(Debug, Clone)]
pub struct ViewPage {
    /// The commit the view is of (`None` for an empty branch).
    pub head: Option<CommitId>,
    /// Entries in the whole view.
    pub total: usize,
    /// Tokens of the whole compiled request.
    pub token_count: u64,
    /// The index of the first entry of the page.
    pub offset: usize,
    /// The page's entries, in view order.
    pub entries: Vec<PageEntry>,
}

/// Where a page of the view starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageAt {
    /// The last page: the newest entries, as many as fit.
    Last,
    /// At this entry (0 is the oldest); past the end, the page is empty.
    Offset(usize),
}

/// The entries `offset..offset + limit` of the view at the handle's position; `offset`
/// defaults to the start of the last page. An offset past the end gives no entries.
pub(crate) fn view_page(repo: &Repo, at: PageAt, limit: usize) -> Result<ViewPage> {
    repo.at_head(|snap, v| {
        let total = v.len();
        let offset = match at {
            PageAt::Offset(offset) => offset,
            PageAt::Last => total.saturating_sub(limit),
        };
        let end = offset.saturating_add(limit).min(total);
        let entries = (offset.min(end)..end)
            .map(|i| page_entry(repo, snap, v, i, true))
            .collect::<Result<Vec<_>>>()?;
        Ok(ViewPage {
            head: v.head(),
            total,
            token_count: v.token_count(),
            offset,
            entries,
        })
    })?
}

/// The entry `index` of `v` as a page shows it: its current message, text included, what its
/// content is, and (`with_calls`) each of its calls with its result's entry.
fn page_entry(
    repo: &Repo,
    snap: &Snapshot,
    v: &View,
    index: usize,
    with_calls: bool,
) -> Result<PageEntry> {
    let message = repo.text(snap, &v.entries()[index])?;
    entry_with(repo, snap, v, index, message, with_calls)
}

/// The entries `indexes` of `v` as a page shows them, without their calls: their texts read
/// in one go.
pub(crate) fn page_entries(
    repo: &Repo,
    snap: &Snapshot,
    v: &View,
    indexes: &[usize],
) -> Result<Vec<PageEntry>> {
    let texts = repo.texts(snap, indexes.iter().map(|&i| &v.entries()[i]))?;
    indexes
        .iter()
        .zip(texts)
        .map(|(&i, message)| entry_with(repo, snap, v, i, message, false))
        .collect()
}

/// [`page_entry`] of a message already read.
fn entry_with(
    repo: &Repo,
    snap: &Snapshot,
    v: &View,
    index: usize,
    message: Arc<Message>,
    with_calls: bool,
) -> Result<PageEntry> {
    let e = &v.entries()[index];
    let note = if e.edits.is_empty() {
        e.origin.message.clone()
    } else {
        snap.commit(&e.commit)?.message
    };
    let mut marks = Vec::new();
    if !e.edits.is_empty() {
        marks.push(Mark::Edited);
        if note
            .as_deref()
            .is_some_and(|n| n.starts_with(HOOK_SUMMARY_NOTE))
        {
            marks.push(Mark::Summarized);
        }
    }
    if message.metadata.contains_key(CLEARED_KEY) {
        marks.push(Mark::Cleared);
    }
    if message.metadata.contains_key(REPAIR_KEY) {
        marks.push(Mark::Repaired);
    }
    if message
        .metadata
        .contains_key(crate::secrets::scrub::SCRUBBED_METADATA_KEY)
    {
        marks.push(Mark::Scrubbed);
    }
    // Only a message showing the placeholder's text can be a redacted one: the tombstone is
    // looked up for those alone.
    if matches!(&message.content, Content::Text(t) if t == REDACTED_TEXT)
        && snap.tombstone(&e.blob)?.is_some()
    {
        marks.push(Mark::Redacted);
    }
    let calls = if with_calls {
        call_infos(repo, snap, v, e)?
            .into_iter()
            .zip(&e.results)
            .map(|(info, result)| {
                let result = result
                    .map(|r| page_entry(repo, snap, v, r, false).map(Box::new))
                    .transpose()?;
                Ok(PageCall { info, result })
            })
            .collect::<Result<Vec<_>>>()?
    } else {
        Vec::new()
    };
    Ok(PageEntry {
        index,
        entry: e.clone(),
        message,
        note,
        marks,
        caller: e.caller,
        calls,
    })
}

/// The positions a compression summarized, each with the content it had when it was
/// summarized (an edited source shows its edit); empty for a commit that is no compression.
pub(crate) fn compressed_sources(repo: &Repo, rev: &Rev) -> Result<Vec<CommitInfo>> {
    let snap = repo.read()?;
    let id = repo.resolve(&snap, rev)?;
    let commit = snap.commit(&id)?;
    let Op::Compress { sources, .. } = &commit.op else {
        return Ok(Vec::new());
    };
    // Built apart from the handle's cached view, which stays at the head for the next read.
    let before = View::build(&snap, commit.parent(), None)?;
    sources
        .iter()
        .map(|s| match before.entry_of(s) {
            Some(e) => entry_info(&snap, e, repo.text(&snap, e)?),
            None => CommitInfo::load(&snap, *s),
        })
        .collect()
}

/// Where each other branch that shares history with the handle's position forks from it,
/// among the commits made at or after `since_us` (0: all of them): the branch's name and the
/// merge base of the two tips (a commit of this history), by branch name. A branch whose tip
/// is in this history (merged, or not moved since its fork) forks at its tip. Costs each
/// branch's commits since `since_us`, not its whole history.
pub(crate) fn fork_points(repo: &Repo, since_us: u64) -> Result<Vec<(String, CommitId)>> {
    let snap = repo.read()?;
    let Some(head) = repo.head(&snap)?.commit else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (name, tip) in snap.branches()? {
        if tip == head {
            continue;
        }
        if let Some(base) = merge_base_since(&snap, head, tip, since_us)? {
            out.push((name, base));
        }
    }
    Ok(out)
}

/// The view index of each commit whose content the view at the handle's position shows (a
/// position never edited, or the newest edit of one); `None` for any other commit, an earlier
/// version included.
pub(crate) fn view_indexes(
    repo: &Repo,
    ids: impl IntoIterator<Item = CommitId>,
) -> Result<Vec<Option<usize>>> {
    repo.at_head(|_, v| {
        ids.into_iter()
            .map(|id| v.index_of(&id).filter(|&i| v.entries()[i].commit == id))
            .collect()
    })
}
