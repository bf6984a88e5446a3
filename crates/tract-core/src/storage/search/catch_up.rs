//! What an index does not hold yet: the commits found by walking back from each branch's tip
//! to what it holds, placed in the lanes and made documents, for every kind of index.
//!
//! The same walk serves a search, which matches the few commits not indexed yet as they are,
//! beside the index, and the catch-ups, which add them to it (and take out of it what
//! redactions and collections took out of the store).

use crate::error::Result;
use crate::id::{BlobId, CommitId};
use crate::object::{Commit, Message, Op, Role};
use crate::storage::search::lanes::{Lanes, Place};
use crate::storage::search::state::State;
use crate::storage::store::snapshot::Snapshot;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Messages read from the store at once while documents are made.
const BATCH: usize = 256;

/// Commits a walk reads ahead at most in one query, from a store across a network.
const READ_AHEAD: usize = 1024;

/// What a walk found: the commits' places and the state they bring the index to.
pub(crate) struct Walked {
    /// The lanes with the new commits placed.
    pub(crate) lanes: Lanes,
    /// Each branch's tip and its place (every branch: those whose tip did not move too).
    pub(crate) tips: BTreeMap<String, ([u8; 32], Place)>,
    /// The newest commit time among what the index then holds.
    pub(crate) newest_us: u64,
    /// Commits found.
    pub(crate) commits: u64,
    /// Each branch's tip and its place.
    pub(crate) tip_places: Vec<(String, CommitId, Place)>,
    /// The places of the commits found, and of the extra heads walked.
    pub(crate) placed: HashMap<CommitId, Place>,
    /// It stopped at its limit: what it found is not all there is.
    pub(crate) stopped: bool,
}

/// Told, as a catch-up goes, how many commits it has added to the index so far (a progress
/// display's; `None`: nobody asks).
pub(crate) type Indexed<'a> = Option<&'a (dyn Fn(u64) + Sync)>;

/// The name of an operation, as documents hold it.
pub(crate) fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Append => "append",
        Op::Edit { .. } => "edit",
        Op::Compress { .. } => "compress",
        Op::Merge { .. } => "merge",
        Op::Record { .. } => "record",
    }
}

/// The text a message is searched by: its content, then each tool call's name and arguments.
pub(crate) fn searchable(m: &Message) -> String {
    let mut text = m.content.text().into_owned();
    for c in &m.tool_calls {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&c.name);
        text.push('(');
        text.push_str(&c.arguments);
        text.push(')');
    }
    text
}

/// What the index holds of a commit, before it is a document of the index (or, for a commit
/// not indexed yet, searched as it is).
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub(crate) id: CommitId,
    pub(crate) blob: Option<BlobId>,
    /// The operation's name ([`op_name`]).
    pub(crate) op: &'static str,
    pub(crate) time: u64,
    pub(crate) place: Place,
    /// Its message, when it says something (not a record's data).
    pub(crate) said: Option<Said>,
}

/// What a message says, as the index holds it.
#[derive(Debug, Clone)]
pub(crate) struct Said {
    pub(crate) role: Role,
    /// A result's tool, and the tools an assistant message calls.
    pub(crate) tools: Vec<String>,
    pub(crate) error: bool,
    /// [`searchable`] text.
    pub(crate) text: String,
}

impl Doc {
    fn new(id: CommitId, commit: &Commit, place: Place, message: Option<&Message>) -> Doc {
        // A record's data is its owner's (a framework's state), not something said.
        let said = message
            .filter(|_| !matches!(commit.op, Op::Record { .. }))
            .map(|m| Said {
                role: m.role,
                tools: m
                    .name
                    .iter()
                    .filter(|_| m.role == Role::Tool)
                    .chain(m.tool_calls.iter().map(|c| &c.name))
                    .cloned()
                    .collect(),
                error: m.is_error,
                text: searchable(m),
            });
        Doc {
            id,
            blob: commit.blob,
            op: op_name(&commit.op),
            time: commit.timestamp_us,
            place,
            said,
        }
    }
}

/// Commits placed and waiting for their messages.
struct Pending<'a> {
    snap: &'a Snapshot,
    items: Vec<(CommitId, Commit, Place)>,
}

impl Pending<'_> {
    /// Makes the documents of the waiting commits (their messages read at once) and hands
    /// them to `sink`.
    fn flush(&mut self, sink: &mut dyn FnMut(Vec<Doc>) -> Result<()>) -> Result<()> {
        if self.items.is_empty() {
            return Ok(());
        }
        let blobs: Vec<BlobId> = self
            .items
            .iter()
            .filter(|(_, c, _)| !matches!(c.op, Op::Record { .. }))
            .filter_map(|(_, c, _)| c.blob)
            .collect();
        let mut messages = self.snap.blobs(&blobs)?.into_iter();
        let docs = self
            .items
            .drain(..)
            .map(|(id, c, place)| {
                let m = match (&c.op, c.blob) {
                    (Op::Record { .. }, _) | (_, None) => None,
                    _ => messages.next().map(|(m, _)| m),
                };
                Doc::new(id, &c, place, m.as_ref())
            })
            .collect();
        sink(docs)
    }
}

/// Walks back from each branch's tip that moved since `state` (`locate` finds the place of a
/// commit the index holds) (and from each of
/// `extra`, a detached handle's commit) to the commits the index holds, places what it finds,
/// and hands their documents to `sink`, parents first. `empty`: the index is being built
/// anew, so it holds nothing (whatever its searcher still shows). With a `limit`, it stops
/// once it has found more commits than that (`Walked::stopped`): a search indexes them
/// instead of reading them all.
pub(crate) fn walk(
    snap: &Snapshot,
    state: &State,
    locate: &mut dyn FnMut(&CommitId) -> Result<Option<Place>>,
    extra: &[CommitId],
    empty: bool,
    limit: Option<u64>,
    sink: &mut dyn FnMut(Vec<Doc>) -> Result<()>,
) -> Result<Walked> {
    let branches = snap.branches()?;
    let tops = state.lanes.tops();
    let mut lanes = state.lanes.clone();
    let mut newest_us = state.newest_us;
    let mut placed: HashMap<CommitId, Place> = HashMap::new();
    let mut seen: HashSet<CommitId> = HashSet::new();
    let mut pending = Pending {
        snap,
        items: Vec::new(),
    };
    let mut found = 0u64;
    // The place of a commit the index holds (`None`: it does not).
    let mut indexed = |id: &CommitId, commit: &Commit| -> Result<Option<Place>> {
        if let Some(p) = tops.get(id.as_bytes()) {
            return Ok(Some(*p));
        }
        // Nothing newer than the newest commit indexed can be in the index.
        if empty || commit.timestamp_us > state.newest_us {
            return Ok(None);
        }
        locate(id)
    };
    let starts = branches
        .iter()
        .map(|(name, tip)| (Some(name.as_str()), *tip))
        .chain(extra.iter().map(|id| (None, *id)));
    let mut tip_places = Vec::with_capacity(branches.len());
    for (name, tip) in starts {
        if placed.contains_key(&tip) {
            continue;
        }
        // A branch that did not move since the index's last batch: its tip's place is known.
        if let Some((_, p)) = name
            .and_then(|n| state.tips.get(n))
            .filter(|(t, _)| t == tip.as_bytes())
        {
            placed.insert(tip, *p);
            continue;
        }
        // Depth first, a commit emitted after its parents.
        let mut stack: Vec<(CommitId, Option<Commit>)> = vec![(tip, None)];
        // Commits read from this tip: a store across a network reads ahead as many again
        // (up to [`READ_AHEAD`]), so a long walk costs a few round trips and a short one
        // reads little it does not need.
        let mut read = 0usize;
        while let Some((id, commit)) = stack.pop() {
            if let Some(commit) = commit {
                let place_of = |p: &CommitId| placed.get(p).copied();
                let parent = commit.parents.first().and_then(place_of);
                let merged = commit.parents.get(1).and_then(place_of);
                let place = lanes.place(*id.as_bytes(), parent, merged);
                placed.insert(id, place);
                newest_us = newest_us.max(commit.timestamp_us);
                pending.items.push((id, commit, place));
                found += 1;
                if limit.is_some_and(|l| found > l) {
                    return Ok(Walked {
                        lanes,
                        tips: BTreeMap::new(),
                        newest_us,
                        commits: found,
                        tip_places,
                        placed,
                        stopped: true,
                    });
                }
                if pending.items.len() >= BATCH {
                    pending.flush(sink)?;
                }
                continue;
            }
            if !seen.insert(id) {
                continue;
            }
            snap.read_ahead(id, read.min(READ_AHEAD))?;
            let commit = snap.commit(&id)?;
            read += 1;
            if let Some(place) = indexed(&id, &commit)? {
                placed.insert(id, place);
                continue;
            }
            let parents = commit.parents.clone();
            stack.push((id, Some(commit)));
            for p in parents.iter().rev() {
                if !seen.contains(p) {
                    stack.push((*p, None));
                }
            }
        }
    }
    pending.flush(sink)?;
    for (name, tip) in &branches {
        if let Some(p) = placed.get(tip) {
            tip_places.push((name.clone(), *tip, *p));
        }
    }
    Ok(Walked {
        lanes,
        tips: tip_places
            .iter()
            .map(|(n, t, p)| (n.clone(), (*t.as_bytes(), *p)))
            .collect(),
        newest_us,
        commits: found,
        tip_places,
        placed,
        stopped: false,
    })
}

/// What a catch-up did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Caught {
    /// Commits added.
    pub(crate) added: u64,
    /// Documents dropped or rewritten after redactions and collections.
    pub(crate) removed: u64,
    /// Whether the index was built from nothing.
    pub(crate) rebuilt: bool,
}

impl Caught {
    /// Whether it changed the index's documents.
    pub(crate) fn changed(&self) -> bool {
        self.added > 0 || self.removed > 0 || self.rebuilt
    }
}

impl Walked {
    /// `state` brought up to what a catch-up's walk found and the store's counts it applied.
    pub(crate) fn applied_to(self, state: &mut State, redactions: u64, collections: u64) {
        state.lanes = self.lanes;
        state.tips = self.tips;
        state.newest_us = self.newest_us;
        state.redactions = redactions;
        state.collections = collections;
    }
}

/// The document of commit `id` at `place`, read from the store as it is now.
pub(crate) fn doc_of(snap: &Snapshot, id: CommitId, place: Place) -> Result<Doc> {
    let commit = snap.commit(&id)?;
    let message = commit
        .blob
        .map(|b| snap.blob(&b).map(|(m, _)| m))
        .transpose()?;
    Ok(Doc::new(id, &commit, place, message.as_ref()))
}
