//! Entry points for the fuzz targets in `fuzz/` (built with the `fuzzing` feature only): thin
//! wrappers over internals that are not public API, so the fuzzers reach the exact code the
//! store runs. Nothing here is stable.

use crate::error::Result;
use crate::id::{ChunkId, HexPrefix};
use crate::storage::codec;

/// Objects larger than this are stored as chunks of this size.
pub const CHUNK_SIZE: usize = codec::CHUNK_SIZE;

/// Encodes object bytes into a store record (`tokens` for blobs); returns the record and the
/// chunk records it refers to.
pub fn encode_record(bytes: &[u8], tokens: Option<u32>) -> (Vec<u8>, Vec<(ChunkId, Vec<u8>)>) {
    let enc = codec::encode(bytes, tokens);
    (enc.record, enc.chunks)
}

/// Decodes a store record back into object bytes, as reading a commit (`has_tokens` false)
/// or a blob (`has_tokens` true) does; `chunk` fetches a chunk record by id.
pub fn decode_record(
    record: &[u8],
    has_tokens: bool,
    chunk: impl FnMut(&ChunkId) -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    codec::decode(record, has_tokens, chunk)
}

/// The token count of a blob record.
pub fn record_tokens(record: &[u8]) -> Result<u32> {
    codec::tokens(record)
}

/// The inclusive range of 32-byte keys a hex prefix covers.
pub fn prefix_range(prefix: &HexPrefix) -> ([u8; 32], [u8; 32]) {
    prefix.range()
}
