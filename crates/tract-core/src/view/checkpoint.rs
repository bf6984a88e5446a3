//! A view's checkpoint: what a view at a commit holds besides the messages (each position's
//! ids and its pairing), stored in the store's metadata as derived data, so a new handle builds
//! the view from the nearest checkpoint and the commits after it instead of from the whole
//! history (docs/decisions.md, "View checkpoints").
//!
//! A checkpoint is a manifest under `checkpoint.<commit>` naming chunks of its positions, each
//! stored once under `checkpoint-chunk.<BLAKE3 of its bytes>`: chunks end where a position's id
//! says (a content-defined boundary), and a position records its pairing relative to itself,
//! so the chunks before what changed since an earlier checkpoint are the same bytes and are
//! shared. Messages are not in it (a redaction changes a message, never an id): they are read
//! from the store, as a replay reads them. A branch's newest checkpoint is named by
//! `checkpoint-at.<branch>`. Nothing here is in a hashed object: commit ids never change.

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId};
use crate::object::{Commit, Role};
use crate::stats::Tally;
use crate::view::{Shape, Source, View, ViewEntry, first_parents, frame, shapes};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;

/// What a checkpoint's layout is: 3 keeps each position's commit too (a view is loaded
/// without reading a commit before the checkpoint, each checked against its id); 2 keeps each
/// position's shape and tokens (a view is loaded without reading a message), the commits then
/// read from the store; 1, written before, is still read, the shapes then read from the
/// blobs. A checkpoint of another is not read (a replay is).
const VERSION: u8 = 3;

/// The metadata key of the checkpoint of the view at `at`.
pub(crate) fn key(at: &CommitId) -> String {
    format!("{MANIFEST_PREFIX}{}", at.to_hex())
}

/// What every manifest's key starts with (not the chunks' or the pointers').
const MANIFEST_PREFIX: &str = "checkpoint.";
/// What every chunk's key starts with.
const CHUNK_PREFIX: &str = "checkpoint-chunk.";
/// What every branch's pointer key starts with.
const POINTER_PREFIX: &str = "checkpoint-at.";

/// The metadata key of a chunk.
fn chunk_key(id: &[u8; 32]) -> String {
    format!("{CHUNK_PREFIX}{}", blake3::Hash::from_bytes(*id).to_hex())
}

/// The metadata key naming the newest checkpoint written on `branch`.
pub(crate) fn branch_key(branch: &str) -> String {
    format!("{POINTER_PREFIX}{branch}")
}

/// A chunk ends after a position whose id's second byte is below this: 64 positions a chunk
/// on average (about 7 KB), so an append rewrites one small chunk.
const BOUNDARY: u8 = 4;

/// From this many positions, a checkpoint's chunks are decoded and the commits it keeps
/// checked against their ids on every core (about a microsecond each). Below it one thread
/// does it: a thread started in a new process costs far more than its tens of microseconds to
/// start, since what it allocates comes from memory of its own, fresh pages each touched for
/// the first time (a cold read of 1,000 positions restored in 3.2 ms on two threads, 2.3 ms on
/// one; at 50,000, 114 and 109 ms on this 2-core machine).
const PARALLEL_MIN: usize = 8192;

/// One position as a checkpoint keeps it.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Slot {
    position: CommitId,
    /// The commit whose content is current, when it is not the position itself.
    commit: Option<CommitId>,
    blob: BlobId,
    edits: Vec<CommitId>,
    /// For each tool call, how many positions after this one its result is.
    results: Vec<Option<u32>>,
    /// For a tool result, how many positions before this one its call is.
    caller: Option<u32>,
    /// The message's shape and its framed tokens (`None` in a checkpoint of layout 1). Behind
    /// an `Arc`, as the view keeps it (encoded as the shape itself): decoded straight into its
    /// own allocation, and a slot stays small as it moves from chunk to view.
    shape: Option<(Arc<Shape>, u32)>,
    /// The position's own commit (`None` in a checkpoint of layout 1 or 2): a cold read need
    /// not read it from the store, and checks it hashes to the position's id. Behind an `Arc`,
    /// as the view keeps it.
    origin: Option<Arc<Commit>>,
}

impl From<SlotV1> for SlotV2 {
    fn from(s: SlotV1) -> SlotV2 {
        SlotV2 {
            position: s.position,
            commit: s.commit,
            blob: s.blob,
            edits: s.edits,
            results: s.results,
            caller: s.caller,
            shape: None,
        }
    }
}

impl From<SlotV2> for Slot {
    fn from(s: SlotV2) -> Slot {
        Slot {
            position: s.position,
            commit: s.commit,
            blob: s.blob,
            edits: s.edits,
            results: s.results,
            caller: s.caller,
            shape: s.shape,
            origin: None,
        }
    }
}

/// A position in a checkpoint of layout 2: a [`Slot`] without its commit.
#[derive(Debug, Serialize, Deserialize)]
struct SlotV2 {
    position: CommitId,
    commit: Option<CommitId>,
    blob: BlobId,
    edits: Vec<CommitId>,
    results: Vec<Option<u32>>,
    caller: Option<u32>,
    shape: Option<(Arc<Shape>, u32)>,
}

/// A position in a checkpoint of layout 1: a [`Slot`] without its shape.
#[derive(Debug, Serialize, Deserialize)]
struct SlotV1 {
    position: CommitId,
    commit: Option<CommitId>,
    blob: BlobId,
    edits: Vec<CommitId>,
    results: Vec<Option<u32>>,
    caller: Option<u32>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    version: u8,
    at: CommitId,
    positions: u32,
    /// The store's redaction count the shapes were read under: a redaction since may have
    /// replaced a message (and its tokens), and then the shapes are read from the blobs.
    redactions: u64,
    chunks: Vec<[u8; 32]>,
    /// What the view holds, counted (`None` in a manifest written before it was kept): a
    /// diff of two checkpointed views says each one's counts without restoring either.
    tally: Option<Tally>,
}

/// A manifest of layout 2 or 3 written before the view's counts were kept.
#[derive(Debug, Serialize, Deserialize)]
struct ManifestV3 {
    version: u8,
    at: CommitId,
    positions: u32,
    redactions: u64,
    chunks: Vec<[u8; 32]>,
}

/// The manifest of layout 1.
#[derive(Debug, Serialize, Deserialize)]
struct ManifestV1 {
    version: u8,
    at: CommitId,
    positions: u32,
    chunks: Vec<[u8; 32]>,
}

/// A checkpoint encoded, to be stored with [`write`].
pub(crate) struct Encoded {
    at: CommitId,
    /// Each chunk's id, in order, with its bytes when they were encoded here (not for a chunk
    /// of the checkpoint the branch names, taken as it is).
    chunks: Vec<([u8; 32], Option<Vec<u8>>)>,
    /// The chunks that end at a boundary, as [`Stored::ends`] keeps them.
    ends: Vec<(usize, [u8; 32])>,
    manifest: Vec<u8>,
}

/// The checkpoint a view was loaded from or last written as. Its chunks are in the store
/// while its branch's pointer names it (`gc` keeps them), so the view's next checkpoint need
/// neither ask for each of them again nor encode again those before the first entry changed
/// since ([`View::unchanged`]).
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    at: CommitId,
    /// Every chunk's id.
    ids: Arc<HashSet<[u8; 32]>>,
    /// The chunks that end at a boundary (a position whose id says so, not the view's end),
    /// in order, each with the number of positions up to its end: the same bytes in a
    /// checkpoint of the view while no entry before that end has changed, since a chunk
    /// begins after each boundary.
    ends: Arc<Vec<(usize, [u8; 32])>>,
}

/// The chunks of the checkpoint `pointer` names (a branch's) that a checkpoint of `view` takes
/// as they are: those that end before its first entry changed since it was loaded from that
/// checkpoint or written as it.
fn kept(view: &View, pointer: Option<CommitId>) -> &[(usize, [u8; 32])] {
    match &view.stored {
        Some(s) if pointer == Some(s.at) => {
            let n = s.ends.partition_point(|&(end, _)| end <= view.unchanged);
            &s.ends[..n]
        }
        _ => &[],
    }
}

/// Whether a chunk ends after the position `id`.
fn boundary(id: &CommitId) -> bool {
    id.as_bytes()[1] < BOUNDARY
}

/// A checkpoint of `view`: its chunks and manifest. `pointer` is the checkpoint its branch
/// names: the chunks of it that end before the first entry changed since the view was loaded
/// from it or written as it are taken as they are, and only what follows is encoded.
/// `None` when the view's pairing and indexes are not what its positions alone give back
/// (a call id reused while an earlier call waited, an edit that renamed a tool): that view is
/// not checkpointed, and a new handle replays it.
pub(crate) fn encode(
    view: &View,
    redactions: u64,
    pointer: Option<CommitId>,
) -> Result<Option<Encoded>> {
    let Some(at) = view.head() else {
        return Ok(None);
    };
    if !view.deferred.is_empty() || !derives_back(view) {
        return Ok(None);
    }
    let kept = kept(view, pointer);
    let from = kept.last().map_or(0, |&(end, _)| end);
    let mut chunks: Vec<([u8; 32], Option<Vec<u8>>)> =
        kept.iter().map(|&(_, id)| (id, None)).collect();
    let mut ends = kept.to_vec();
    let mut run: Vec<Slot> = Vec::new();
    let entries = view.entries();
    for (i, e) in entries.iter().enumerate().skip(from) {
        let Some(slot) = slot_of(i, e) else {
            return Ok(None);
        };
        run.push(slot);
        let ends_here = boundary(&e.position);
        if ends_here || i + 1 == entries.len() {
            let bytes = crate::storage::store::meta::encode_small(&run)?;
            let id = *blake3::hash(&bytes).as_bytes();
            if ends_here {
                ends.push((i + 1, id));
            }
            chunks.push((id, Some(bytes)));
            run.clear();
        }
    }
    let manifest = Manifest {
        version: VERSION,
        at,
        positions: u32::try_from(entries.len()).unwrap_or(u32::MAX),
        redactions,
        chunks: chunks.iter().map(|(id, _)| *id).collect(),
        tally: Some(view.tally()),
    };
    Ok(Some(Encoded {
        at,
        chunks,
        ends,
        manifest: sealed(&manifest)?,
    }))
}

/// Whether a branch `since` commits past its checkpoint, with `in_view` messages in view, is
/// checkpointed again: at `interval` commits, or sooner for a small view, every sixteenth of
/// its length and at least every 16 commits. A cold read then walks at most a sixteenth of
/// the view past the checkpoint (or `interval`), and a checkpoint, which encodes the whole
/// view, costs a write about as much as 16 of its positions would.
pub(crate) fn due(since: u64, in_view: u64, interval: u64) -> bool {
    interval > 0 && since >= interval.min((in_view / 16).max(16))
}

/// Reads ahead, in one query on a database, what a view at `branch`'s tip is built from: its
/// tip, the store's redaction count, the branch's pointer and the checkpoint it names.
pub(crate) fn read_ahead(
    snap: &crate::storage::store::snapshot::Snapshot,
    branch: &str,
) -> Result<()> {
    let pointer = branch_key(branch);
    let keys = [
        crate::storage::store::meta::META_REDACTIONS.to_string(),
        pointer.clone(),
    ];
    snap.read_ahead_refs(branch, &keys, Some((&pointer, MANIFEST_PREFIX)))
}

/// The commits whose views have a checkpoint in the store (any branch's, the newest or one
/// written before it that `gc` has not removed yet), from the keys alone.
pub(crate) fn all_at(
    snap: &crate::storage::store::snapshot::Snapshot,
) -> Result<HashSet<CommitId>> {
    Ok(snap
        .meta_keys(MANIFEST_PREFIX)?
        .iter()
        .filter_map(|k| CommitId::from_hex(&k[MANIFEST_PREFIX.len()..]))
        .collect())
}

/// The commit of the newest checkpoint written on `branch`, if any.
pub(crate) fn of_branch(src: &impl Source, branch: &str) -> Result<Option<CommitId>> {
    Ok(src
        .meta(&branch_key(branch))?
        .and_then(|v| <[u8; 32]>::try_from(v.as_slice()).ok())
        .map(CommitId::from_bytes))
}

/// Writes a checkpoint [`encode`] made on `branch`, whose pointer names `pointer` in this
/// transaction (the one `encode` was given): the chunks not stored yet, the manifest, and the
/// branch's pointer to it. `stored` is the checkpoint the view was loaded from or last written
/// as: while the pointer names it, its chunks are known to be there; any other chunk is looked
/// for first (one read each). Returns what the checkpoint stored, for the view it was made of.
pub(crate) fn write(
    w: &mut crate::storage::store::writer::Writer,
    branch: &str,
    pointer: Option<CommitId>,
    encoded: Encoded,
    stored: Option<&Stored>,
) -> Result<Stored> {
    let known = match stored {
        Some(s) if pointer == Some(s.at) => Some(&s.ids),
        _ => None,
    };
    let mut ids = HashSet::with_capacity(encoded.chunks.len());
    for (id, bytes) in encoded.chunks {
        ids.insert(id);
        if known.is_some_and(|k| k.contains(&id)) {
            continue;
        }
        let k = chunk_key(&id);
        // A chunk is named by its bytes: one already stored is the same.
        match (w.meta(&k)?, bytes) {
            (Some(_), _) => {}
            (None, Some(bytes)) => w.set_meta(&k, Some(&bytes))?,
            // Taken from the checkpoint the pointer named when it was encoded, in this same
            // transaction: only a store changed under it gets here.
            (None, None) => {
                return Err(Error::corrupt(format!(
                    "checkpoint of {}: a chunk of the checkpoint it extends is not in the store",
                    encoded.at.short()
                )));
            }
        }
    }
    w.set_meta(&key(&encoded.at), Some(&encoded.manifest))?;
    w.set_meta(&branch_key(branch), Some(encoded.at.as_bytes()))?;
    Ok(Stored {
        at: encoded.at,
        ids: Arc::new(ids),
        ends: Arc::new(encoded.ends),
    })
}

/// What `gc` removed of the view checkpoints.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Collected {
    /// Checkpoints (manifests) removed.
    pub(crate) checkpoints: u64,
    /// Chunks removed, no kept checkpoint using them.
    pub(crate) chunks: u64,
}

/// Removes every checkpoint but those the pointers of `branches` name, and the chunks only
/// removed ones used (only a pointer's checkpoint is ever read). A pointer of a branch not in
/// `branches`, or naming a commit `reached` says is gone, goes too. When a kept checkpoint's
/// manifest cannot be read, no chunk is removed: what it uses is not known (`fsck` names it).
pub(crate) fn collect(
    w: &mut crate::storage::store::writer::Writer,
    branches: &HashSet<String>,
    reached: impl Fn(&CommitId) -> bool,
) -> Result<Collected> {
    let mut kept = HashSet::new();
    for k in w.meta_keys(POINTER_PREFIX)? {
        let branch = &k[POINTER_PREFIX.len()..];
        let at = of_branch(&*w, branch)?;
        match at {
            Some(at) if branches.contains(branch) && reached(&at) => {
                kept.insert(key(&at));
            }
            _ => w.set_meta(&k, None)?,
        }
    }
    let mut out = Collected::default();
    let mut used = HashSet::new();
    let mut known = true;
    for k in w.meta_keys(MANIFEST_PREFIX)? {
        if !kept.contains(&k) {
            w.set_meta(&k, None)?;
            out.checkpoints += 1;
            continue;
        }
        match w.meta(&k)?.as_deref().map(unsealed) {
            Some(Ok(m)) => used.extend(m.chunks.iter().map(chunk_key)),
            _ => known = false,
        }
    }
    if known {
        for k in w.meta_keys(CHUNK_PREFIX)? {
            if !used.contains(&k) {
                w.set_meta(&k, None)?;
                out.chunks += 1;
            }
        }
    }
    Ok(out)
}

/// Whether the checkpoint at `at` is of this layout and of the store's `redactions` (a
/// damaged one is not).
fn is_current(src: &impl Source, at: &CommitId, redactions: u64) -> Result<bool> {
    Ok(src
        .meta(&key(at))?
        .and_then(|b| unsealed(&b).ok())
        .is_some_and(|m| m.version == VERSION && m.redactions == redactions))
}

/// The manifest's bytes with 8 bytes of its BLAKE3 after them: a damaged one is found, not
/// read as another.
fn sealed(m: &Manifest) -> Result<Vec<u8>> {
    let mut bytes = crate::storage::store::meta::encode_small(m)?;
    let check = blake3::hash(&bytes);
    bytes.extend_from_slice(&check.as_bytes()[..8]);
    Ok(bytes)
}

/// The manifest [`sealed`] wrote (one of layout 1 with no redaction count), or what is wrong
/// with its bytes.
fn unsealed(bytes: &[u8]) -> std::result::Result<Manifest, &'static str> {
    let (body, check) = bytes
        .split_at_checked(bytes.len().saturating_sub(8))
        .ok_or("too short")?;
    if blake3::hash(body).as_bytes()[..8] != *check {
        return Err("its check does not match");
    }
    let wrong = |_| "it does not decode";
    match body.first() {
        Some(1) => {
            let m: ManifestV1 = crate::storage::store::meta::decode_small(body).map_err(wrong)?;
            Ok(Manifest {
                version: m.version,
                at: m.at,
                positions: m.positions,
                redactions: u64::MAX,
                chunks: m.chunks,
                tally: None,
            })
        }
        // A manifest without the view's counts ends after its chunks (postcard reads a
        // newer one, with fields after those it knows, as its own).
        _ => crate::storage::store::meta::decode_small(body).or_else(|_| {
            let m: ManifestV3 = crate::storage::store::meta::decode_small(body).map_err(wrong)?;
            Ok(Manifest {
                version: m.version,
                at: m.at,
                positions: m.positions,
                redactions: m.redactions,
                chunks: m.chunks,
                tally: None,
            })
        }),
    }
}

/// Position `i` as a checkpoint keeps it; `None` when its pairing points the wrong way (a
/// result before its call), which no view is expected to hold.
fn slot_of(i: usize, e: &ViewEntry) -> Option<Slot> {
    let mut results = Vec::with_capacity(e.results.len());
    for r in &e.results {
        results.push(match r {
            None => None,
            Some(r) => Some(u32::try_from(r.checked_sub(i)?).ok().filter(|&d| d > 0)?),
        });
    }
    let caller = match e.caller {
        None => None,
        Some(c) => Some(u32::try_from(i.checked_sub(c)?).ok().filter(|&d| d > 0)?),
    };
    Some(Slot {
        position: e.position,
        commit: (e.commit != e.position).then_some(e.commit),
        blob: e.blob,
        edits: e.edits.clone(),
        results,
        caller,
        shape: Some((Arc::clone(&e.shape), e.tokens)),
        origin: Some(Arc::clone(&e.origin)),
    })
}

/// Whether the indexes and counts `restore` derives from the view's entries are the view's.
fn derives_back(view: &View) -> bool {
    let mut derived = View {
        head: view.head,
        entries: Arc::clone(&view.entries),
        ..View::default()
    };
    derive(&mut derived);
    same_derived(&derived, view)
}

/// Whether two views have the same indexes and counts.
fn same_derived(a: &View, b: &View) -> bool {
    a.index == b.index
        && a.open_calls == b.open_calls
        && a.total_tokens == b.total_tokens
        && a.orphan_tokens == b.orphan_tokens
        && a.unanswered == b.unanswered
        && a.calls == b.calls
        && a.results == b.results
        && a.call_ids == b.call_ids
}

/// The indexes and counts of a view whose entries (with their pairing) are set.
fn derive(view: &mut View) {
    // Sized once: grown by doubling, a long view's index would touch twice its memory.
    view.index.reserve(view.entries.len());
    for (i, e) in view.entries.iter().enumerate() {
        view.total_tokens += u64::from(e.tokens);
        view.call_ids.add(&e.shape);
        view.index.insert(e.position, i);
        for edit in &e.edits {
            view.index.insert(*edit, i);
        }
        match e.shape.role {
            Role::Assistant => {
                for (call, result) in e.shape.tool_calls.iter().zip(&e.results) {
                    view.calls.add(i, &call.name);
                    if result.is_none() {
                        view.unanswered += 1;
                        view.open_calls.insert(call.id.clone(), i);
                    }
                }
            }
            Role::Tool => {
                view.results
                    .add(i, e.shape.name.as_deref().unwrap_or_default());
                if e.caller.is_none() {
                    view.orphan_tokens += u64::from(e.tokens);
                }
            }
            Role::System | Role::User => {}
        }
    }
}

/// The view at `head` built from the checkpoint of the view at `at` when `head` descends from
/// it (the commits after it folded on top), else by a replay of the whole history. A
/// checkpoint that is damaged or missing is replayed past, and said so once.
pub(crate) fn build(
    src: &impl Source,
    head: Option<CommitId>,
    at: Option<CommitId>,
) -> Result<View> {
    let (Some(head), Some(at)) = (head, at) else {
        return View::build(src, head, None);
    };
    // The manifest is read first (a read ahead has it already), so its chunks go with the
    // walk: one round trip for both on a database.
    let manifest = src.meta(&key(&at)).and_then(|b| manifest_of(&at, b));
    if let Ok(Some(m)) = &manifest {
        src.want_metas(&m.chunks.iter().map(chunk_key).collect::<Vec<_>>());
    }
    let (chain, reached) = first_parents(src, head, Some(at))?;
    let view = match reached {
        false => View::default(),
        true => match manifest.and_then(|m| m.map(|m| from_manifest(src, &at, m)).transpose()) {
            Ok(Some(view)) => view,
            // A message or commit of the view that is damaged is no fault of the checkpoint:
            // a replay would read it too.
            Err(e @ Error::CorruptObject { .. }) => return Err(e),
            problem => {
                replayed(&at, problem.err());
                // The chain stops at the checkpoint: the history up to it is replayed too.
                let (before, _) = first_parents(src, at, None)?;
                View::default().fold(src, before)?
            }
        },
    };
    view.fold(src, chain)
}

/// Says, once a process, that a checkpoint could not be read and the history was replayed.
pub(crate) fn replayed(at: &CommitId, problem: Option<Error>) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        let why = problem.map_or_else(|| "it is missing".to_string(), |e| e.to_string());
        eprintln!(
            "tract: the view checkpoint at {} could not be read ({why}); the history was \
             replayed instead (`tract fsck` checks checkpoints)",
            at.short()
        );
    });
}

/// Whether two views of one commit hold the same positions, pairing, counts and indexes.
pub(crate) fn same(a: &View, b: &View) -> bool {
    let entries = |v: &View| -> Vec<Option<Slot>> {
        v.entries()
            .iter()
            .enumerate()
            .map(|(i, e)| slot_of(i, e))
            .collect()
    };
    let tokens = |v: &View| -> Vec<u32> { v.entries().iter().map(|e| e.tokens).collect() };
    a.head == b.head && entries(a) == entries(b) && tokens(a) == tokens(b) && same_derived(a, b)
}

/// The bytes of the chunks `ids`, read in one go and each checked against its id; what is
/// wrong with them when one is missing or does not match.
fn chunks(
    src: &impl Source,
    ids: &[[u8; 32]],
) -> Result<std::result::Result<Vec<Vec<u8>>, &'static str>> {
    let keys: Vec<String> = ids.iter().map(chunk_key).collect();
    let mut out = Vec::with_capacity(ids.len());
    for (id, chunk) in ids.iter().zip(src.metas(&keys)?) {
        match chunk {
            None => return Ok(Err("a chunk is missing")),
            Some(c) if blake3::hash(&c).as_bytes() != id => {
                return Ok(Err("a chunk does not match its id"));
            }
            Some(c) => out.push(c),
        }
    }
    Ok(Ok(out))
}

/// Two checkpoints compared by their chunks: chunks end where a position's id says, so two
/// views that begin with the same positions begin with the same chunks, byte for byte.
#[derive(Debug)]
pub(crate) struct Tails {
    /// How many positions the chunks both begin with hold (counted from the manifests'
    /// totals: those chunks are not read).
    pub(crate) shared: usize,
    /// Each view's positions after them, restored as a view's are (each commit checked
    /// against its id; a tool result's call before them is not named).
    pub(crate) a: Vec<ViewEntry>,
    /// The same, of the second view.
    pub(crate) b: Vec<ViewEntry>,
    /// What each whole view holds, counted, when its manifest keeps it.
    pub(crate) tallies: (Option<Tally>, Option<Tally>),
}

/// The positions of the checkpoints at `a` and `b` after the chunks they begin with alike;
/// `None` when either has no checkpoint of this layout and redaction count (then the views
/// are built whole).
pub(crate) fn tails(src: &impl Source, a: &CommitId, b: &CommitId) -> Result<Option<Tails>> {
    let (Some(ma), Some(mb)) = (
        manifest_of(a, src.meta(&key(a))?)?,
        manifest_of(b, src.meta(&key(b))?)?,
    ) else {
        return Ok(None);
    };
    let redactions = src.redactions()?;
    if ma.version != VERSION
        || mb.version != VERSION
        || ma.redactions != redactions
        || mb.redactions != redactions
    {
        return Ok(None);
    }
    let k = ma
        .chunks
        .iter()
        .zip(&mb.chunks)
        .take_while(|(x, y)| x == y)
        .count();
    let tail = |at: &CommitId, m: &Manifest| -> Result<Vec<Slot>> {
        let read = chunks(src, &m.chunks[k..])?.map_err(|what| damaged(at, what))?;
        let mut slots = Vec::new();
        for chunk in read {
            slots.extend(crate::storage::store::meta::decode_small::<Vec<Slot>>(
                &chunk,
            )?);
        }
        Ok(slots)
    };
    let (sa, sb) = (tail(a, &ma)?, tail(b, &mb)?);
    let shared = (ma.positions as usize).checked_sub(sa.len());
    if shared.is_none() || shared != (mb.positions as usize).checked_sub(sb.len()) {
        return Err(damaged(a, "its chunks hold another number of positions"));
    }
    Ok(Some(Tails {
        shared: shared.unwrap_or_default(),
        a: tail_entries(*a, sa)?,
        b: tail_entries(*b, sb)?,
        tallies: (ma.tally, mb.tally),
    }))
}

/// The entries of `slots`, the last positions of the checkpoint at `at`: as [`restore`] makes
/// them (each commit checked against its id), a result whose call is before them naming none.
fn tail_entries(at: CommitId, slots: Vec<Slot>) -> Result<Vec<ViewEntry>> {
    for (i, s) in slots.iter().enumerate() {
        if !keeps_its_commit(s) {
            return Err(Error::corrupt(format!(
                "checkpoint of {}: position {i} of its tail",
                at.short()
            )));
        }
    }
    entries_of(at, vec![slots], Caller::MayBeBefore)
}

/// Whether `slot` keeps its position's own commit: one that hashes to the position's id.
fn keeps_its_commit(slot: &Slot) -> bool {
    slot.origin.as_ref().and_then(|c| c.id().ok()) == Some(slot.position)
}

/// Where a position's tool call may be, relative to the slots made into entries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Caller {
    /// Among them: a call before the first is damage.
    Among,
    /// Possibly before them (a tail of a view): such a result names no call.
    MayBeBefore,
}

/// The view entries of the slots of `chunks` (in order, each with its commit), pairing
/// resolved among them: a slot whose shape, results, caller or commit do not fit is damage of
/// the checkpoint at `at`. Each chunk is freed as soon as its slots are made entries.
fn entries_of(at: CommitId, chunks: Vec<Vec<Slot>>, callers: Caller) -> Result<Vec<ViewEntry>> {
    let n = chunks.iter().map(Vec::len).sum();
    let mut entries = Vec::with_capacity(n);
    for (i, slot) in chunks.into_iter().flatten().enumerate() {
        let wrong = || Error::corrupt(format!("checkpoint of {}: position {i}", at.short()));
        let (shape, tokens) = slot.shape.ok_or_else(wrong)?;
        let origin = slot.origin.ok_or_else(wrong)?;
        if slot.results.len() != shape.tool_calls.len() {
            return Err(wrong());
        }
        let results = slot
            .results
            .iter()
            .map(|r| match r {
                None => Ok(None),
                Some(d) => {
                    let r = i + *d as usize;
                    (r < n).then_some(Some(r)).ok_or_else(wrong)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let caller = match (slot.caller, callers) {
            (None, _) => None,
            (Some(d), Caller::Among) => Some(i.checked_sub(d as usize).ok_or_else(wrong)?),
            (Some(d), Caller::MayBeBefore) => i.checked_sub(d as usize),
        };
        entries.push(ViewEntry {
            position: slot.position,
            commit: slot.commit.unwrap_or(slot.position),
            blob: slot.blob,
            shape,
            tokens,
            origin,
            edits: slot.edits,
            results,
            caller,
        });
    }
    Ok(entries)
}

/// The view at `at` from its checkpoint: `None` when there is none; an error when it is
/// damaged or does not fit the store (the caller replays instead).
pub(crate) fn load(src: &impl Source, at: &CommitId) -> Result<Option<View>> {
    manifest_of(at, src.meta(&key(at))?)?
        .map(|m| from_manifest(src, at, m))
        .transpose()
}

/// The manifest of the checkpoint at `at`, from the `bytes` stored under its key (`None`:
/// there is none); an error when it is damaged or of another layout or commit.
fn manifest_of(at: &CommitId, bytes: Option<Vec<u8>>) -> Result<Option<Manifest>> {
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    let manifest = unsealed(&bytes).map_err(|what| damaged(at, what))?;
    if !(1..=VERSION).contains(&manifest.version) || manifest.at != *at {
        return Err(damaged(at, "of another layout or commit"));
    }
    Ok(Some(manifest))
}

/// The checkpoint at `at` is damaged: `what` is wrong with it.
fn damaged(at: &CommitId, what: &str) -> Error {
    Error::corrupt(format!("checkpoint of {}: {what}", at.short()))
}

/// [`load`], from the checkpoint's `manifest`.
fn from_manifest(src: &impl Source, at: &CommitId, manifest: Manifest) -> Result<View> {
    let damaged = |what: &str| damaged(at, what);
    let version = manifest.version;
    // The chunks decode independently: on every core, for a long view (64 positions a chunk
    // on average).
    let decoded = crate::parallel::map(
        chunks(src, &manifest.chunks)?.map_err(damaged)?,
        PARALLEL_MIN / 64,
        |chunk| -> Result<Vec<Slot>> {
            use crate::storage::store::meta::decode_small;
            Ok(match version {
                1 => decode_small::<Vec<SlotV1>>(&chunk)?
                    .into_iter()
                    .map(|s| Slot::from(SlotV2::from(s)))
                    .collect(),
                2 => decode_small::<Vec<SlotV2>>(&chunk)?
                    .into_iter()
                    .map(Slot::from)
                    .collect(),
                _ => decode_small::<Vec<Slot>>(&chunk)?,
            })
        },
    )?;
    let lengths: Vec<usize> = decoded.iter().map(Vec::len).collect();
    if lengths.iter().sum::<usize>() != manifest.positions as usize {
        return Err(damaged("its chunks hold another number of positions"));
    }
    // Shapes kept before a redaction may show what it removed: they are read again.
    let current = manifest.redactions == src.redactions()?;
    let mut view = restore(src, *at, decoded, current)?;
    // The counts it keeps are what a diff reads without restoring it: they must be its own.
    if current && manifest.tally.as_ref().is_some_and(|t| *t != view.tally()) {
        return Err(damaged("its counts are not those of its positions"));
    }
    // Every chunk was just read back: they are in the store. Those of this layout that end at
    // a boundary are the bytes a checkpoint of this view encodes, unless its shapes were read
    // again (then it is not marked checkpointed): the next checkpoint takes them as they are.
    let mut ends = Vec::new();
    if version == VERSION && view.checkpointed {
        let mut end = 0;
        for (&n, id) in lengths.iter().zip(&manifest.chunks) {
            end += n;
            if n > 0 && boundary(&view.entries()[end - 1].position) {
                ends.push((end, *id));
            }
        }
        view.unchanged = view.len();
    }
    view.stored = Some(Stored {
        at: *at,
        ids: Arc::new(manifest.chunks.into_iter().collect()),
        ends: Arc::new(ends),
    });
    if manifest.positions as usize >= TRIM_AFTER {
        give_back_freed_memory();
    }
    Ok(view)
}

/// Positions from which a view's restore gives back what it freed ([`give_back_freed_memory`]).
const TRIM_AFTER: usize = 16_384;

/// Returns to the OS the memory the C allocator holds freed: a restore of a long view reads and
/// decodes its chunks (at 50,000 positions about 40 MB, for a moment), and glibc keeps what is
/// freed for its own reuse, so a process that reads a long view once would keep that
/// high-water mark under what it makes next (a Python process's objects come from memory of
/// their own). About 2 ms at 50,000 positions; nothing elsewhere than glibc.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases memory the allocator holds free; it takes the
    // allocator's own locks and touches nothing a caller holds.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The view of the slots of `chunks` (in order), the position commits read from `src` unless
/// the slots keep them, and the messages' shapes too unless `current` (and the slots hold
/// them). A view whose shapes were read is not marked checkpointed: its next write
/// checkpoints it again, as this layout and redaction count. The slots stay in their chunks,
/// each freed once made entries: a long view's restore moves them once.
fn restore(
    src: &impl Source,
    at: CommitId,
    mut chunks: Vec<Vec<Slot>>,
    current: bool,
) -> Result<View> {
    let read = !current || chunks.iter().flatten().any(|s| s.shape.is_none());
    if read {
        let blobs: Vec<BlobId> = chunks.iter().flatten().map(|s| s.blob).collect();
        for (slot, (shape, payload)) in chunks.iter_mut().flatten().zip(shapes(src, &blobs)?) {
            let tokens = frame(&shape, payload);
            slot.shape = Some((shape, tokens));
        }
    }
    if chunks.iter().flatten().all(|s| s.origin.is_some()) {
        // Kept in the checkpoint: each is the position's commit only if it hashes to its id,
        // hashed again where it lies, on every core for many.
        let kept: Vec<(usize, &Slot)> = chunks.iter().flatten().enumerate().collect();
        crate::parallel::map(kept, PARALLEL_MIN, |(i, slot)| {
            match keeps_its_commit(slot) {
                true => Ok(()),
                false => Err(Error::corrupt(format!(
                    "checkpoint of {}: position {i} keeps another commit",
                    at.short()
                ))),
            }
        })?;
    } else {
        let positions: Vec<CommitId> = chunks.iter().flatten().map(|s| s.position).collect();
        let loaded = match src.commits(&positions) {
            Some(loaded) => loaded?,
            None => positions
                .iter()
                .map(|p| src.commit(p))
                .collect::<Result<_>>()?,
        };
        for (slot, commit) in chunks.iter_mut().flatten().zip(loaded) {
            slot.origin = Some(Arc::new(commit));
        }
    }
    let entries = entries_of(at, chunks, Caller::Among)?;
    let mut view = View {
        head: Some(at),
        entries: Arc::new(entries),
        checkpointed: !read,
        ..View::default()
    };
    derive(&mut view);
    Ok(view)
}

/// Gives `branch` of the store `to` the checkpoint `src` (another store, which sent it the
/// branch's commits as `src_branch`) names for `src_branch`, when the receiver names none for
/// it, neither store has ever redacted (every message is then the same bytes on both sides,
/// so the shapes the checkpoint keeps are the receiver's too; a blob one side redacted and the
/// other holds whole would not be) and the checkpoint is of this layout. Returns whether it was
/// copied. What a receiver checkpoints from instead of replaying the history it received.
pub(crate) fn copy(
    src: &crate::storage::store::snapshot::Snapshot,
    to: &crate::storage::store::Store,
    src_branch: &str,
    branch: &str,
) -> Result<bool> {
    let Some(at) = of_branch(src, src_branch)? else {
        return Ok(false);
    };
    let Some(manifest) = src.meta(&key(&at))?.and_then(|b| unsealed(&b).ok()) else {
        return Ok(false);
    };
    if manifest.version != VERSION || manifest.redactions != 0 || src.redactions()? != 0 {
        return Ok(false);
    }
    let Ok(chunks) = chunks(src, &manifest.chunks)? else {
        return Ok(false);
    };
    let keys: Vec<String> = manifest.chunks.iter().map(chunk_key).collect();
    let mut w = to.write_refs(&[branch])?;
    if w.redactions()? != 0 || of_branch(&w, branch)?.is_some() || !w.has_commit(&at)? {
        return Ok(false);
    }
    let present = w.metas(&keys)?;
    for ((k, chunk), there) in keys.iter().zip(&chunks).zip(present) {
        if there.is_none() {
            w.set_meta(k, Some(chunk))?;
        }
    }
    w.set_meta(&key(&at), Some(&sealed(&manifest)?))?;
    w.set_meta(&branch_key(branch), Some(at.as_bytes()))?;
    w.commit()?;
    Ok(true)
}

/// Checkpoints the view of every branch whose pointer does not name its tip (a store older
/// code wrote) or names one of an older layout or redaction count: [`write_branches`] of them
/// all. Returns how many were written.
pub(crate) fn write_all(store: &crate::storage::store::Store) -> Result<usize> {
    let names: Vec<String> = store
        .read()?
        .branches()?
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    write_branches(store, &names)
}

/// [`write_branches`] after a write that stored `branches`' commits without folding them (an
/// import of commits, a sub-agent's branch, a transfer's receiver), unless the store's handle
/// keeps no checkpoints. The write stands if this fails: checkpoints are derived data, reads
/// replay past what is missing, and the branch's next write checkpoints it.
pub(crate) fn after_write(store: &crate::storage::store::Store, branches: &[String]) {
    if store.options().checkpoint_interval > 0 && !branches.is_empty() {
        let _ = write_branches(store, branches);
    }
}

/// Checkpoints the view of each of `branches` (at its tip) unless its pointer names its tip
/// already in this layout and redaction count: one transaction a branch, each view built from
/// the branch's checkpoint if it has one, and the branch's counts and usage ledger rows kept
/// with it. What a write
/// that moved a branch without folding its commits (an import of commits, a push, a pull or a
/// clone received) runs after it, so the next cold read starts at the tip. Returns how many
/// were written.
pub(crate) fn write_branches(
    store: &crate::storage::store::Store,
    branches: &[String],
) -> Result<usize> {
    let mut written = 0;
    for name in branches {
        let mut w = store.write_refs(&[name.as_str()])?;
        // Read again under the branch's lock: it may have moved or gone.
        let Some(tip) = w.branch(name)? else {
            continue;
        };
        let rows = crate::view::ledger::catch_up(&mut w, tip)?;
        let from = of_branch(&w, name)?;
        let redactions = w.redactions()?;
        if from == Some(tip) && is_current(&w, &tip, redactions)? {
            if rows {
                w.commit()?;
            }
            continue;
        }
        let view = build(&w, Some(tip), from)?;
        if let Some(encoded) = encode(&view, redactions, from)? {
            write(&mut w, name, from, encoded, view.stored.as_ref())?;
            written += 1;
        }
        let stats = crate::stats::BranchStats {
            tip,
            last_activity_us: w.commit_object(&tip)?.timestamp_us,
            tally: view.tally(),
            since_checkpoint: Some(0),
        };
        w.set_branch_stats(name, Some(&stats))?;
        w.commit()?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        Bind, BranchName, CompressRequest, Content, FnSummarizer, OpenOptions, Rev, StoreOptions,
        ToolCall, Tract,
    };

    /// The checkpoint `t`'s branch `main` names, unless it is `last`: where it is, its
    /// manifest, and the manifest a replay of its view encodes whole.
    fn stored_and_whole(t: &Tract, last: Option<CommitId>) -> Option<(CommitId, Vec<u8>, Vec<u8>)> {
        let snap = t.store().read().unwrap();
        let at = of_branch(&snap, "main")
            .unwrap()
            .filter(|at| Some(*at) != last)?;
        let stored = snap.meta(&key(&at)).unwrap().unwrap();
        let view = View::build(&snap, Some(at), None).unwrap();
        let whole = encode(&view, snap.redactions().unwrap(), None)
            .unwrap()
            .unwrap();
        Some((at, stored, whole.manifest))
    }

    /// A checkpoint that takes the chunks of the one before it as they are is, byte for byte,
    /// the one a replay of its view encodes whole: through appends, results answering calls
    /// made long before, edits of old messages, compressions, and handles that loaded their
    /// view from a checkpoint.
    #[test]
    fn a_checkpoint_extending_the_last_is_the_one_encoded_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.tract");
        let options = OpenOptions {
            bind: Bind::Branch(BranchName::new("main").unwrap()),
            store: StoreOptions {
                checkpoint_interval: 16,
                ..StoreOptions::default()
            },
            ..OpenOptions::default()
        };
        let summarizer = FnSummarizer::new("fixed", |req| {
            Ok(format!("{} messages", req.messages.len()))
        });
        let mut t = Tract::open_with(&path, &options).unwrap();
        let mut open_calls: Vec<String> = Vec::new();
        let mut positions = Vec::new();
        let mut checked = 0;
        let mut last = None;
        for k in 0..1500u32 {
            let info = match k % 10 {
                0..=3 => t.user(format!("question {k}")).unwrap(),
                4 => {
                    let id = format!("c{k}");
                    open_calls.push(id.clone());
                    let call = ToolCall {
                        id,
                        name: "grep".into(),
                        arguments: "{}".into(),
                    };
                    t.assistant("", vec![call]).unwrap()
                }
                // The oldest call open gets its result: its entry, a dozen calls back and in a
                // chunk checkpointed since, changes.
                5 | 6 if open_calls.len() > 12 => {
                    let id = open_calls.remove(0);
                    t.tool_result(&id, "grep", format!("found {k}"), false)
                        .unwrap()
                }
                7 if k % 70 == 7 && positions.len() > 40 => {
                    let old: CommitId = positions[positions.len() / 3];
                    t.edit(Rev::from(old), Content::Text(format!("edited at {k}")))
                        .unwrap()
                }
                8 if k % 300 == 8 => {
                    let run: Vec<Rev> = positions[positions.len() / 2..positions.len() / 2 + 4]
                        .iter()
                        .map(|p| Rev::from(*p))
                        .collect();
                    let _ = t.compress(&CompressRequest {
                        commits: Some(run),
                        summarizer: Some(&summarizer),
                        ..CompressRequest::default()
                    });
                    positions = t
                        .compile()
                        .unwrap()
                        .messages()
                        .unwrap()
                        .iter()
                        .filter_map(|m| m.position)
                        .collect();
                    continue;
                }
                9 if k % 250 == 9 => {
                    // A new handle: its view comes from the checkpoint.
                    drop(t);
                    t = Tract::open_with(&path, &options).unwrap();
                    t.compile().unwrap();
                    continue;
                }
                _ => t.assistant(format!("answer {k}"), vec![]).unwrap(),
            };
            positions.push(info.id);
            if let Some((at, stored, whole)) = stored_and_whole(&t, last) {
                assert_eq!(stored, whole, "the checkpoint written after {k}");
                checked += 1;
                last = Some(at);
            }
        }
        assert!(checked > 60, "{checked} checkpoints compared");
    }

    /// A manifest written before the view's counts were kept reads as one without them; one
    /// written now reads back with them.
    #[test]
    fn a_manifest_without_counts_still_reads() {
        let at = CommitId::from_bytes([7; 32]);
        let old = ManifestV3 {
            version: VERSION,
            at,
            positions: 3,
            redactions: 2,
            chunks: vec![[1; 32], [2; 32]],
        };
        let mut bytes = crate::storage::store::meta::encode_small(&old).unwrap();
        let check = blake3::hash(&bytes);
        bytes.extend_from_slice(&check.as_bytes()[..8]);
        let read = unsealed(&bytes).unwrap();
        assert_eq!(
            (read.at, read.positions, read.redactions, read.chunks.len()),
            (at, 3, 2, 2)
        );
        assert!(read.tally.is_none());

        let tally = Tally {
            messages: 3,
            total_tokens: 40,
            ..Tally::default()
        };
        let new = Manifest {
            version: VERSION,
            at,
            positions: 3,
            redactions: 2,
            chunks: old.chunks,
            tally: Some(tally.clone()),
        };
        assert_eq!(unsealed(&sealed(&new).unwrap()).unwrap().tally, Some(tally));
    }
}
