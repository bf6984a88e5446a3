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

/// A journal segment's bytes with a frame for each of `payloads`, of a store whose id is all
/// `store` bytes, at `generation`; then `spare` zeros. Each frame says that `in_flight` of its
/// payload's length (at most every frame before it) were not known durable when it was
/// written.
pub fn journal_segment(
    store: u8,
    generation: u64,
    payloads: &[&[u8]],
    spare: usize,
    in_flight: fn(usize) -> u64,
) -> Vec<u8> {
    let id = [store; 16];
    let mut out = crate::storage::journal::segment::header(&id, generation).to_vec();
    for (i, p) in payloads.iter().enumerate() {
        let seq = i as u64 + 1;
        let frame = crate::storage::journal::segment::frame(
            &id,
            generation,
            seq,
            in_flight(p.len()).min(seq - 1),
            p,
        );
        if let Ok(frame) = frame {
            out.extend(frame);
        }
    }
    out.extend(vec![0u8; spare]);
    out
}

/// What reading a segment's bytes gives: its generation and the frames' payloads, in order,
/// and where a torn frame starts; or why it cannot be read (damaged in the middle included).
pub fn journal_scan(bytes: &[u8]) -> std::result::Result<(u64, Vec<Vec<u8>>, Option<u64>), String> {
    crate::storage::journal::segment::scan(bytes, None)
        .map(|s| {
            let frames = s.frames.iter().map(|f| f.payload.to_vec()).collect();
            (s.generation, frames, s.torn)
        })
        .map_err(|e| e.to_string())
}

/// What reading a journal frame's payload gives: how many ops it holds; or why it cannot be
/// read. A payload that reads is written back byte for byte (the layout has one form).
pub fn journal_ops(payload: &[u8]) -> std::result::Result<usize, String> {
    use crate::storage::journal::ops;
    let read = ops::decode(payload).map_err(|e| e.to_string())?;
    let again = ops::encode(&read).map_err(|e| e.to_string())?;
    if again != payload {
        return Err("a payload read back differs when written again".into());
    }
    Ok(read.len())
}

/// A text's tokens as tract counts them once a process has counted enough to split texts
/// with regex-automata, and as tiktoken-rs's `encode_ordinary` (fancy-regex, backtracking)
/// does: the two must always agree.
pub fn token_counts(text: &str) -> (usize, usize) {
    let reference = tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len();
    (crate::tokens::count_split(text), reference)
}

/// The store id the pack entry points use.
const PACK_STORE: [u8; 16] = [5; 16];

/// Writes `objects` (each as a record of the table its index picks: commits, blobs with a
/// token count, chunks; its id the BLAKE3 of its bytes) into pack 1 in `dir`, with no
/// dictionary; returns the pack file's bytes.
pub fn pack_write(
    dir: &std::path::Path,
    objects: &[&[u8]],
) -> std::result::Result<Vec<u8>, String> {
    use crate::storage::pack::PackWriter;
    let mut w = PackWriter::create(dir, &PACK_STORE, 1, None).map_err(|e| e.to_string())?;
    for (i, bytes) in objects.iter().enumerate() {
        let (table, tokens) = pack_table(i);
        let record = codec::encode(bytes, tokens).record;
        w.add(table, blake3::hash(bytes).as_bytes(), &record)
            .map_err(|e| e.to_string())?;
    }
    w.finish().map_err(|e| e.to_string())?;
    std::fs::read(crate::storage::pack::pack_path(dir, 1)).map_err(|e| e.to_string())
}

fn pack_table(i: usize) -> (crate::storage::backend::ObjectTable, Option<u32>) {
    use crate::storage::backend::ObjectTable;
    match i % 3 {
        0 => (ObjectTable::Commits, None),
        1 => (ObjectTable::Blobs, Some(i as u32)),
        _ => (ObjectTable::Chunks, None),
    }
}

/// Opens `bytes` as pack 1 (written to `dir`), checks it whole as fsck does and reads every
/// record through the index: each object's table number (0 commits, 1 blobs, 2 chunks), id and
/// decoded bytes, in index order; or what was wrong, the first thing found.
#[allow(clippy::type_complexity)]
pub fn pack_read(
    dir: &std::path::Path,
    bytes: &[u8],
) -> std::result::Result<Vec<(u8, [u8; 32], Vec<u8>)>, String> {
    use crate::storage::backend::ObjectTable;
    use crate::storage::pack::Pack;
    std::fs::write(crate::storage::pack::pack_path(dir, 1), bytes).map_err(|e| e.to_string())?;
    let pack = Pack::open(dir, &PACK_STORE, 1, |_| Ok(None)).map_err(|e| e.to_string())?;
    let checked = pack.check().map_err(|e| e.to_string());
    let mut out = Vec::new();
    for i in 0..pack.len() {
        let e = pack.entry(i).ok_or("an entry names no table")?;
        // Found again by its id, as a read finds it.
        if pack.find(e.table, &e.key) != Some(i) {
            return Err("an entry is not found by its id".into());
        }
        let record = pack.read(&e).map_err(|e| e.to_string())?;
        let t = match e.table {
            ObjectTable::Commits => 0,
            ObjectTable::Blobs => 1,
            ObjectTable::Chunks => 2,
        };
        let bytes = codec::decode(&record, t == 1, |_| {
            Err(crate::error::Error::corrupt("no chunks"))
        })
        .map_err(|e| e.to_string())?;
        out.push((t, e.key, bytes));
    }
    checked.map(|()| out)
}
