//! The search index's operations: bringing it up to date, rebuilding it, and checking it
//! against the store (for `fsck`).

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::storage::search::state::State;
use crate::storage::search::{Reading, Upkeep, keeper};
use crate::storage::store::Store;
use crate::storage::store::snapshot::Snapshot;
use std::collections::HashSet;
use std::time::Duration;

/// How long `tract index` waits for another process's index writer.
const WAIT: Duration = Duration::from_secs(60);

/// What bringing the index up to date did, and what it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexReport {
    /// Commits added.
    pub added: u64,
    /// Documents dropped or rewritten after redactions and collections (for a rebuild: every
    /// document the index held before).
    pub removed: u64,
    /// Whether it was built anew from the store.
    pub rebuilt: bool,
    /// Documents it holds (one per commit).
    pub documents: u64,
    /// Bytes of its files, or of its tables and their indexes in a database (0 for an index
    /// in memory).
    pub bytes: u64,
    /// Where it is (`None`: in this process's memory for a store in memory, or in the
    /// database beside a store in PostgreSQL).
    pub path: Option<std::path::PathBuf>,
    /// Whether it is in the database, beside the tables of a store in PostgreSQL.
    pub in_database: bool,
}

/// Brings `store`'s search index up to date (what is new, what redactions and collections
/// removed), or, with `rebuild`, builds it anew from every branch. Waits up to a minute for
/// another process that is indexing.
pub fn update_index(store: &Store, rebuild: bool) -> Result<IndexReport> {
    update_index_with(store, rebuild, None)
}

/// [`update_index`], telling `indexed` (when given) how many commits it has added so far as
/// it goes: for a progress display.
pub fn update_index_with(
    store: &Store,
    rebuild: bool,
    indexed: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<IndexReport> {
    keeper::settle(store);
    let keeper = keeper::of(store);
    let upkeep = Upkeep {
        rebuild,
        indexed,
        ..Upkeep::default()
    };
    let index = keeper.index();
    let whereabouts = index.whereabouts();
    let caught = keeper
        .catch_up(store, WAIT, upkeep)?
        .ok_or_else(|| Error::StoreLocked {
            path: whereabouts.path.clone().unwrap_or_default(),
            reason: crate::error::LockReason::Busy { waited: WAIT },
        })?;
    let (reading, snap) = index.read(&mut || store.read())?;
    Ok(IndexReport {
        added: caught.added,
        removed: caught.removed,
        rebuilt: caught.rebuilt,
        documents: reading.documents(&snap)?,
        bytes: reading.bytes(&snap)?,
        path: whereabouts.path,
        in_database: whereabouts.in_database,
    })
}

/// The commits of every document the index of `store` holds and its state, read in `snap`'s
/// transaction where the index is in the store's (a database's), or else beside it with a
/// snapshot of the store read after it (holding everything the index does); `None` when there
/// is nothing to check: an index in this process's memory, one never made, one of another
/// layout (the next catch-up builds it anew).
fn held_by(store: &Store, snap: &Snapshot) -> Result<Option<Held>> {
    let keeper = keeper::of(store);
    let index = keeper.index();
    if !index.shared() || !index.exists() {
        return Ok(None);
    }
    let held = |reading: &dyn Reading, snap: &Snapshot| -> Result<Option<(Vec<CommitId>, State)>> {
        match reading.usable() {
            true => Ok(Some((reading.ids(snap)?, reading.state().clone()))),
            false => Ok(None),
        }
    };
    if let Some(reading) = index.read_in(snap)? {
        return Ok(held(&*reading, snap)?.map(|(ids, state)| (ids, state, None)));
    }
    let (reading, later) = index.read(&mut || store.read())?;
    let found = held(&*reading, &later)?;
    drop(reading);
    Ok(found.map(|(ids, state)| (ids, state, Some(later))))
}

/// What an index holds: its documents' commits, its state, and the snapshot they were read
/// with when it is not `fsck`'s.
type Held = (Vec<CommitId>, State, Option<Snapshot>);

/// What `fsck` finds of the index: documents read, and each problem as (subject, detail).
pub(crate) struct IndexCheck {
    pub(crate) documents: u64,
    pub(crate) problems: Vec<(String, String)>,
}

/// Checks the search index (a store file's, or a database's) against `snap`: every document's commit is in the store, no
/// commit has two, every commit the branches' tips it recorded reach is in it, and it applied
/// every redaction the store recorded before its last batch. `commits`: every commit's
/// parents, as `fsck` read them (`None`: not in the store when it read). A store without an
/// index has nothing to check.
pub(crate) fn check<'a>(
    store: &Store,
    snap: &Snapshot,
    parents: impl Fn(&CommitId) -> Option<&'a [CommitId]>,
) -> Result<Option<IndexCheck>> {
    let mut out = IndexCheck {
        documents: 0,
        problems: Vec::new(),
    };
    let (documents, state, later) = match held_by(store, snap) {
        Ok(Some(found)) => found,
        Ok(None) => return Ok(None),
        Err(e) => {
            out.problems.push(("index".into(), format!("{e}")));
            return Ok(Some(out));
        }
    };
    let mut held: HashSet<CommitId> = HashSet::new();
    let mut unknown = Vec::new();
    for id in documents {
        out.documents += 1;
        if parents(&id).is_none() {
            unknown.push(id);
        }
        if !held.insert(id) {
            out.problems.push((
                format!("commit {}", id.to_hex()),
                "the search index holds it twice".into(),
            ));
        }
    }
    // Written since fsck read the store, or gone from it: asked of the store as the index
    // was read.
    let now = later.as_ref().unwrap_or(snap);
    for part in unknown.chunks(4096) {
        for (id, there) in part.iter().zip(now.has_commits(part)?) {
            if !there {
                out.problems.push((
                    format!("commit {}", id.to_hex()),
                    "the search index holds it and the store does not (a collection it missed, \
                     or another store's index): `tract index --rebuild` drops it"
                        .into(),
                ));
            }
        }
    }
    // What the recorded tips reach must all be in it.
    let mut todo: Vec<CommitId> = state
        .tips
        .values()
        .map(|(t, _)| CommitId::from_bytes(*t))
        .filter(|t| parents(t).is_some())
        .collect();
    let mut seen: HashSet<CommitId> = HashSet::new();
    let mut missing = 0u64;
    while let Some(id) = todo.pop() {
        if !seen.insert(id) {
            continue;
        }
        if !held.contains(&id) {
            missing += 1;
            if missing <= 16 {
                out.problems.push((
                    format!("commit {}", id.to_hex()),
                    "a branch reaches it and the search index does not hold it: `tract index \
                     --rebuild`"
                        .into(),
                ));
            }
        }
        todo.extend(parents(&id).into_iter().flatten().copied());
    }
    if missing > 16 {
        out.problems.push((
            "index".into(),
            format!(
                "{} more commits a branch reaches are not in it",
                missing - 16
            ),
        ));
    }
    let redactions = snap.redactions()?;
    if state.redactions < redactions && !state.tips.is_empty() {
        out.problems.push((
            "index".into(),
            format!(
                "it has not applied {} of the store's redactions (text they removed may still be \
                 in it): `tract index` applies them",
                redactions - state.redactions
            ),
        ));
    }
    Ok(Some(out))
}
