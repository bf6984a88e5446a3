//! The PostgreSQL backend (`postgres` feature): connecting as libpq does, the writes a
//! transaction holds back until it needs an answer, and the backend itself.

pub(crate) mod backend;
pub(crate) mod connect;
pub(crate) mod writes;
