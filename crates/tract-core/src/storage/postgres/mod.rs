//! The PostgreSQL backend (`postgres` feature): connecting as libpq does, the writes a
//! transaction holds back until it needs an answer, the backend itself, and its search index
//! (the database's own full-text search).

pub(crate) mod backend;
pub(crate) mod connect;
pub(crate) mod search;
pub(crate) mod writes;
