//! What a search index has applied, saved with its documents (each kind commits the two
//! together), the ids' keys its documents carry, and its errors.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::storage::search::lanes::{self, Lanes};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The layout of the documents and the state; an index of another is rebuilt.
const LAYOUT: u32 = 2;

/// What the index has applied, saved with its documents (each implementation commits the two
/// together).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct State {
    layout: u32,
    /// The lanes of every indexed commit.
    pub(crate) lanes: Lanes,
    /// Each branch's tip when it was indexed, and its place.
    pub(crate) tips: BTreeMap<String, ([u8; 32], lanes::Place)>,
    /// The store's redaction count the index has applied.
    pub(crate) redactions: u64,
    /// The store's collection count the index has applied.
    pub(crate) collections: u64,
    /// The newest commit time the index holds: nothing newer can be in it.
    pub(crate) newest_us: u64,
}

impl State {
    /// The state as it is saved.
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        let mut state = self.clone();
        state.layout = LAYOUT;
        postcard::to_allocvec(&state).map_err(|e| broken("encoding its state", e.to_string()))
    }

    /// A state [`State::encode`] made; `None` for one of another layout or damaged (the
    /// index is then built anew: it is derived data).
    pub(crate) fn decode(bytes: &[u8]) -> Option<State> {
        postcard::from_bytes::<State>(bytes)
            .ok()
            .filter(|s| s.layout == LAYOUT)
    }
}

/// An index error, with what was being done.
pub(crate) fn failed(doing: &str, e: impl Into<::tantivy::TantivyError>) -> Error {
    Error::SearchIndex {
        doing: doing.to_string(),
        source: Arc::new(e.into()),
    }
}

/// An index error that is not the engine's.
pub(crate) fn broken(doing: &str, reason: String) -> Error {
    failed(doing, ::tantivy::TantivyError::InternalError(reason))
}

/// A commit id from the four numbers of its key.
pub(crate) fn id_of(key: [u64; 4]) -> CommitId {
    let mut b = [0u8; 32];
    for (i, k) in key.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&k.to_be_bytes());
    }
    CommitId::from_bytes(b)
}

/// The four numbers of a commit id's key (the first filters a search to a view).
pub(crate) fn key_of(id: &CommitId) -> [u64; 4] {
    let b = id.as_bytes();
    std::array::from_fn(|i| {
        let mut k = [0u8; 8];
        k.copy_from_slice(&b[i * 8..i * 8 + 8]);
        u64::from_be_bytes(k)
    })
}
