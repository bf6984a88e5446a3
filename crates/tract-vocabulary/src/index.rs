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
    /// Bytes of its files, or of its tables and their indexes in a database (0 for an index
    /// in memory).
    bytes: u64,
    /// Its directory (beside the store file, in the journal directory); `null` for a store in
    /// memory or in a database.
    path: Option<String>,
    /// Whether it is in the database, beside the tables of a store in PostgreSQL.
    in_database: bool,
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
            in_database: r.in_database,
        }
    }
}
