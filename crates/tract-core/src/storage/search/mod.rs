//! The search index: derived data that ranks what agents said and saw, one seam for every kind
//! of store.
//!
//! One document per commit: its message's text (content, then each tool call's name and
//! arguments), cut by [`tokenizer`]; its role, tool names, operation, error flag and time as
//! filters; its place in the [`lanes`], from which a search tells every branch holding it.
//! What is not indexed yet is found by walking back from the branches' tips to what is
//! ([`catch_up`]), so a search always sees every commit; who brings an index up to date, and
//! when, is the [`keeper`]'s.
//!
//! Each kind of store keeps its index its own way behind [`SearchIndex`], chosen where the
//! backend is (`storage::open`): a store file's is tantivy's files beside it ([`tantivy_index`]), a
//! store in memory (or one open to read only) has one in this process's memory (the same
//! code), a store in PostgreSQL uses the database's own full-text search
//! (`storage::postgres::search`). Nothing above this seam knows which.

pub(crate) mod catch_up;
pub(crate) mod keeper;
pub(crate) mod lanes;
pub(crate) mod query;
pub(crate) mod snippet;
pub(crate) mod state;
pub(crate) mod tantivy_index;
pub(crate) mod tokenizer;

use crate::error::Result;
use crate::id::CommitId;
use crate::object::Role;
use crate::storage::store::Store;
use crate::storage::store::snapshot::Snapshot;
use catch_up::{Caught, Doc, Indexed};
use lanes::Place;
use query::{Parsed, Positions, Weights};
use state::State;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What a catch-up is asked to do besides adding what is new.
#[derive(Clone, Copy, Default)]
pub(crate) struct Upkeep<'a> {
    /// The commits the last collection removed, when the caller knows them.
    pub(crate) collected: Option<&'a [CommitId]>,
    /// Build it anew from every branch.
    pub(crate) rebuild: bool,
    /// Only take out what store-wide work removed: an index not made yet is not made.
    pub(crate) only_existing: bool,
    /// Told how many commits it has added so far, as it goes.
    pub(crate) indexed: Indexed<'a>,
}

/// Where an index is, for a report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Whereabouts {
    /// Its directory (`None`: in this process's memory, or in a database).
    pub(crate) path: Option<PathBuf>,
    /// In the database, beside the store's tables.
    pub(crate) in_database: bool,
}

/// A kind of store's search index. One per store and process, made where the backend is
/// opened and kept by the store's [`keeper`].
pub(crate) trait SearchIndex: Send + Sync {
    /// Brings it up to `store` (the redactions and collections it has not applied, then the
    /// commits it does not hold), waiting up to `wait` for another writer of it: `None` when
    /// that one is still busy (the work is then left to it, or to the next catch-up).
    fn catch_up(&self, store: &Store, wait: Duration, upkeep: Upkeep<'_>)
    -> Result<Option<Caught>>;

    /// Reads it and the store in one state: the snapshot (taken with `snapshot`) holds
    /// everything the reading does, read after it or in the same transaction.
    fn read(
        &self,
        snapshot: &mut dyn FnMut() -> Result<Snapshot>,
    ) -> Result<(Box<dyn Reading + '_>, Snapshot)>;

    /// Reads it in `snap`'s own transaction, where it lives in the store's (a database's
    /// tables): no second transaction, so a pool of one connection is enough. `None` for an
    /// index beside the store, read with [`SearchIndex::read`].
    fn read_in<'s>(&self, _snap: &'s Snapshot) -> Result<Option<Box<dyn Reading + 's>>> {
        Ok(None)
    }

    /// Whether it was ever made (there may be something in it to take out).
    fn exists(&self) -> bool;

    /// Whether the processes writing the store keep it, in batches (not one in this
    /// process's memory, which only its searches bring up to date), so `fsck` checks it.
    fn shared(&self) -> bool;

    /// Where it is.
    fn whereabouts(&self) -> Whereabouts;
}

/// A search's filters besides the words: what the index's documents are kept by.
#[derive(Debug, Default)]
pub(crate) struct Filters<'a> {
    pub(crate) role: Option<Role>,
    pub(crate) tool: Option<&'a str>,
    pub(crate) op: Option<&'a str>,
    pub(crate) errors: bool,
    pub(crate) since_us: Option<u64>,
    pub(crate) until_us: Option<u64>,
    /// Each lane's bound (the highest height reached, plus one): only documents within them
    /// (`None`: every place).
    pub(crate) bounds: Option<Arc<Vec<u32>>>,
    /// Only documents whose first id key is one of these (a view's commits).
    pub(crate) view: Option<Arc<HashSet<u64>>>,
}

/// What a ranking is asked: the query, its filters, and the commits not indexed yet.
pub(crate) struct Ask<'a> {
    pub(crate) parsed: &'a Parsed,
    pub(crate) filters: Filters<'a>,
    /// Every commit not indexed yet that the walk found (the statistics count them).
    pub(crate) pending: &'a [Doc],
    /// Those of them that pass the filters, with where the query's words are in each.
    pub(crate) walked: &'a [(&'a Doc, Positions)],
    /// The query's words, those it excludes too.
    pub(crate) words: &'a HashSet<String>,
    /// At most this many of the index's documents (`usize::MAX`: all that match).
    pub(crate) n: usize,
}

/// Where a ranked hit is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Hit {
    /// A document the reading names by number ([`Reading::hit`] reads its commit).
    Document(u64),
    /// A commit and its place.
    Commit(CommitId, Place),
}

/// A ranked hit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    pub(crate) score: f32,
    pub(crate) hit: Hit,
}

/// What a ranking found: the index's best documents and the matching commits not indexed yet,
/// scored alike, in no order; and the words' weights a passage is picked by.
pub(crate) struct Ranking {
    pub(crate) found: Vec<Found>,
    pub(crate) weights: Weights,
}

/// An index as one search (or `fsck`) reads it, with the snapshot it was read with.
pub(crate) trait Reading {
    /// The state its documents go with (the default when it has none).
    fn state(&self) -> &State;

    /// Whether its documents may be read (not those of another layout, or of no index).
    fn usable(&self) -> bool;

    /// Whether it holds another layout's documents: the next catch-up builds it anew.
    fn stale(&self) -> bool;

    /// The place of commit `id`, if it holds it.
    fn locate(&self, snap: &Snapshot, id: &CommitId) -> Result<Option<Place>>;

    /// Ranks its documents and the commits not indexed yet for `ask`.
    fn rank(&self, snap: &Snapshot, ask: &Ask<'_>) -> Result<Ranking>;

    /// The commit and place of a document [`Reading::rank`] found.
    fn hit(&self, snap: &Snapshot, document: u64) -> Result<(CommitId, Option<Place>)>;

    /// The commit of every document it holds (for `fsck`).
    fn ids(&self, snap: &Snapshot) -> Result<Vec<CommitId>>;

    /// How many documents it holds.
    fn documents(&self, snap: &Snapshot) -> Result<u64>;

    /// Bytes of its files, or of its tables and their indexes (0 in memory).
    fn bytes(&self, snap: &Snapshot) -> Result<u64>;
}
