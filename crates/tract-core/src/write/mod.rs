//! The write path: [`txn`] validates, encodes and counts before the lock, then commits a chain
//! of commits with one ref move; appends, edits and records are written through it.

pub(crate) mod append;
pub(crate) mod edit;
pub mod record;
pub(crate) mod txn;
