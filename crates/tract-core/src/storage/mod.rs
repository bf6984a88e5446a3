//! Storage: what a backend keeps (raw bytes by id, branch tips, the reflog, settings, counts),
//! the backends (a store file: redb with its journal and pack files in the directory beside it;
//! ordered maps in memory; a PostgreSQL schema with the `postgres` feature), each with its search
//! index (`search`), the record layout they store, group commit, opening a store (`open`), and
//! [`store::Store`]: tract's model on a backend.

pub(crate) mod backend;
pub(crate) mod codec;
pub(crate) mod group;
pub(crate) mod journal;
pub(crate) mod journaled;
pub(crate) mod memory;
pub(crate) mod open;
pub(crate) mod pack;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod redb_backend;
pub(crate) mod search;
pub mod store;
