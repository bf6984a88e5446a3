//! [`IndexReport`]: what bringing the search index up to date did (`tract index`).

use serde::Serialize;

/// What `tract index` did, and what the index holds after it.
#[derive(Debug, Clone, Serialize)]
pub struct IndexReport {
    /// Commits added to it.
    added: u64,
    /// Documents dropped or rewritten after redactions and collections.
    removed: u64,
    /// Whether it was built anew from every branch (`--rebuild`).
    rebuilt: bool,
    /// Documents it holds (one per commit).
    documents: u64,
    /// Bytes of its files (0 for an index in memory).
    bytes: u64,
    /// Its directory (beside the store file, in the journal directory); `null` for a store in
    /// a database, whose index each process keeps in its memory.
    path: Option<String>,
}

impl From<&tract_core::IndexReport> for IndexReport {
    fn from(r: &tract_core::IndexReport) -> Self {
        IndexReport {
            added: r.added,
            removed: r.removed,
            rebuilt: r.rebuilt,
            documents: r.documents,
            bytes: r.bytes,
            path: r.path.as_ref().map(|p| p.display().to_string()),
        }
    }
}
