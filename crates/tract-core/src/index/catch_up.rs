//! Bringing the index up to the store: the commits it does not hold yet, found by walking
//! back from each branch's tip to what it holds, placed in the lanes and made documents; what
//! redactions and collections took out of the store, taken out of the index.
//!
//! The same walk serves a search, which indexes the few commits not indexed yet in memory
//! and searches them beside the index, and the writers, which add them to the index.

use crate::error::Result;
use crate::id::{BlobId, CommitId};
use crate::index::lanes::{self, Lanes, Place};
use crate::index::{Fields, Index, PLACE, Reading, State, Writer, failed, key_of};
use crate::object::{Commit, Message, Op, Role};
use crate::storage::store::Store;
use crate::storage::store::snapshot::Snapshot;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, Searcher, TERMINATED, TantivyDocument, Term};

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

/// The place of commit `id` in the index as `reading` has it, if it holds it.
pub(crate) fn locate(searcher: &Searcher, fields: &Fields, id: &CommitId) -> Result<Option<Place>> {
    let term = Term::from_field_bytes(fields.id, id.as_bytes());
    for seg in searcher.segment_readers() {
        let inverted = seg
            .inverted_index(fields.id)
            .map_err(|e| failed("reading its ids", e))?;
        let Some(mut postings) = inverted
            .read_postings(&term, IndexRecordOption::Basic)
            .map_err(|e| failed("reading its ids", e))?
        else {
            continue;
        };
        let alive = seg.alive_bitset();
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                let place = seg
                    .fast_fields()
                    .u64(PLACE)
                    .map_err(|e| failed("reading its places", e))?;
                if let Some(v) = place.first(doc) {
                    return Ok(Some(lanes::unpack(v)));
                }
            }
            doc = postings.advance();
        }
    }
    Ok(None)
}

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

    /// The index's document.
    pub(crate) fn tantivy(&self, fields: &Fields) -> TantivyDocument {
        let mut d = TantivyDocument::new();
        d.add_bytes(fields.id, self.id.as_bytes().as_slice());
        if let Some(b) = &self.blob {
            d.add_bytes(fields.blob, b.as_bytes().as_slice());
        }
        d.add_text(fields.op, self.op);
        d.add_u64(fields.time, self.time);
        d.add_u64(fields.place, lanes::pack(self.place));
        for (f, k) in fields.key.iter().zip(key_of(&self.id)) {
            d.add_u64(*f, k);
        }
        if let Some(s) = &self.said {
            d.add_text(fields.role, s.role.as_str());
            for t in &s.tools {
                d.add_text(fields.tool, t);
            }
            d.add_bool(fields.error, s.error);
            d.add_text(fields.text, &s.text);
        }
        d
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

/// Brings the index up to `store` holding its write lock `w`: the redactions and collections
/// it has not applied, then the commits it does not hold. `collected`: the commits the last
/// collection removed, when the caller knows them. Rebuilds it with `rebuild`, or when it
/// cannot tell what a redaction removed.
pub(crate) fn catch_up(
    index: &Index,
    w: &mut Writer,
    store: &Store,
    collected: Option<&[CommitId]>,
    rebuild: bool,
    indexed: Indexed<'_>,
) -> Result<Caught> {
    let reading = index.read()?;
    // The store is read after the index: it holds everything the index does.
    let snap = store.read()?;
    let mut state: State = (*reading.state).clone();
    let mut caught = Caught::default();
    let fields = index.fields;
    let redactions = snap.redactions()?;
    let mut redacted = Vec::new();
    let mut rebuild = rebuild || reading.stale || state.redactions > redactions;
    for n in state.redactions + 1..=redactions {
        match snap.redacted_blob(n)? {
            Some(b) => redacted.push(b),
            // A redaction this build did not record: what it removed is not known.
            None => rebuild = true,
        }
    }
    let before = reading.searcher.num_docs();
    let reading = if rebuild {
        w.tantivy
            .delete_all_documents()
            .map_err(|e| failed("emptying it", e))?;
        state = State::default();
        caught.rebuilt = true;
        Reading {
            searcher: reading.searcher,
            state: Arc::new(State::default()),
            stale: false,
        }
    } else {
        caught.removed += redact(&reading, &snap, w, &fields, &redacted)?;
        let collections = snap.collections()?;
        if state.collections < collections {
            caught.removed += match collected.filter(|_| state.collections + 1 == collections) {
                Some(ids) => forget(w, &fields, ids),
                None => reconcile(&reading.searcher, &snap, w, &fields)?,
            };
        }
        reading
    };
    let searcher = &reading.searcher;
    let mut at = |id: &CommitId| locate(searcher, &fields, id);
    let mut added = 0u64;
    let walked = walk(
        &snap,
        &reading.state,
        &mut at,
        &[],
        rebuild,
        None,
        &mut |docs| {
            added += docs.len() as u64;
            for d in docs {
                w.tantivy
                    .add_document(d.tantivy(&fields))
                    .map_err(|e| failed("adding a document", e))?;
            }
            if let Some(tell) = indexed {
                tell(added);
            }
            Ok(())
        },
    )?;
    caught.added = walked.commits;
    if caught.rebuilt {
        // Every document it held was dropped; `added` counts those made anew.
        caught.removed = before;
    }
    state.lanes = walked.lanes;
    state.tips = walked.tips;
    state.newest_us = walked.newest_us;
    state.redactions = redactions;
    state.collections = snap.collections()?;
    if caught.added == 0 && caught.removed == 0 && !caught.rebuilt && *reading.state == state {
        return Ok(caught);
    }
    index.commit(w, state)?;
    if caught.removed > 0 || caught.rebuilt {
        index.purge(w)?;
    }
    Ok(caught)
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

/// Rewrites the documents of the commits carrying `blobs` (redacted: their text is the
/// placeholder now). Returns how many.
fn redact(
    reading: &Reading,
    snap: &Snapshot,
    w: &mut Writer,
    fields: &Fields,
    blobs: &[BlobId],
) -> Result<u64> {
    let mut rewritten = 0;
    for blob in blobs {
        let term = Term::from_field_bytes(fields.blob, blob.as_bytes());
        let hits = docs_with(&reading.searcher, &term, fields)?;
        w.tantivy.delete_term(term);
        for (id, place) in hits {
            let doc = doc_of(snap, id, place)?;
            w.tantivy
                .add_document(doc.tantivy(fields))
                .map_err(|e| failed("adding a document", e))?;
            rewritten += 1;
        }
    }
    Ok(rewritten)
}

/// The commits (and places) of the live documents holding `term`.
fn docs_with(searcher: &Searcher, term: &Term, fields: &Fields) -> Result<Vec<(CommitId, Place)>> {
    let mut out = Vec::new();
    for seg in searcher.segment_readers() {
        let inverted = seg
            .inverted_index(term.field())
            .map_err(|e| failed("reading its terms", e))?;
        let Some(mut postings) = inverted
            .read_postings(term, IndexRecordOption::Basic)
            .map_err(|e| failed("reading its terms", e))?
        else {
            continue;
        };
        let ff = seg.fast_fields();
        let place = ff.u64(PLACE).map_err(|e| failed("reading its places", e))?;
        let keys = key_columns(seg, fields)?;
        let alive = seg.alive_bitset();
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc))
                && let Some(p) = place.first(doc)
            {
                out.push((key_at(&keys, doc), lanes::unpack(p)));
            }
            doc = postings.advance();
        }
    }
    Ok(out)
}

/// The four key columns of a segment.
pub(crate) fn key_columns(
    seg: &tantivy::SegmentReader,
    _fields: &Fields,
) -> Result<[tantivy::columnar::Column<u64>; 4]> {
    let ff = seg.fast_fields();
    let col = |n: &str| ff.u64(n).map_err(|e| failed("reading its ids", e));
    Ok([col(super::KEY0)?, col("k1")?, col("k2")?, col("k3")?])
}

/// The commit id of document `doc` from its key columns.
pub(crate) fn key_at(keys: &[tantivy::columnar::Column<u64>; 4], doc: u32) -> CommitId {
    super::id_of(std::array::from_fn(|i| keys[i].first(doc).unwrap_or(0)))
}

/// Deletes the documents of `ids`. Returns how many ids.
fn forget(w: &mut Writer, fields: &Fields, ids: &[CommitId]) -> u64 {
    for id in ids {
        w.tantivy
            .delete_term(Term::from_field_bytes(fields.id, id.as_bytes()));
    }
    ids.len() as u64
}

/// Deletes the documents of commits the store no longer holds (a collection this index did
/// not see). Returns how many.
fn reconcile(searcher: &Searcher, snap: &Snapshot, w: &mut Writer, fields: &Fields) -> Result<u64> {
    let mut ids = Vec::new();
    for seg in searcher.segment_readers() {
        let keys = key_columns(seg, fields)?;
        let alive = seg.alive_bitset();
        for doc in 0..seg.max_doc() {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                ids.push(key_at(&keys, doc));
            }
        }
    }
    let mut gone = Vec::new();
    for part in ids.chunks(4096) {
        for (id, held) in part.iter().zip(snap.has_commits(part)?) {
            if !held {
                gone.push(*id);
            }
        }
    }
    Ok(forget(w, fields, &gone))
}
