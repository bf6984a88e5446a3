//! How object bytes are laid out in the store's tables (not part of any id).
//!
//! A record is a tag byte, then for blobs the payload's token count, then the payload: the
//! object bytes as they are, LZ4-compressed, or a list of content-addressed chunks. Ids are
//! always BLAKE3 over the uncompressed object bytes, so compression can change without
//! changing an id; `fsck` decodes the record and re-hashes the object bytes.

use crate::error::{Error, Result};
use crate::id::ChunkId;

const TAG_RAW: u8 = 0;
const TAG_LZ4: u8 = 1;
const TAG_CHUNKED: u8 = 2;
/// A redacted blob: its payload removed, a tombstone in its place (see [`tombstone`]).
const TAG_REDACTED: u8 = 3;
/// Never written: what a backend hands up for a record it holds but cannot read back (a
/// damaged pack), with the reason, so the record fails as any damaged record does, naming
/// its id (see [`unreadable`]).
const TAG_UNREADABLE: u8 = 0xff;

/// Objects larger than this are split into chunks of this size, each stored once (chunks of
/// equal content deduplicate). Kept under 1 MiB so a chunk with its page overhead does not
/// spill into the next power-of-two allocation.
#[cfg(not(fuzzing))]
pub(crate) const CHUNK_SIZE: usize = 1024 * 1024 - 4096;
/// In the fuzz targets' build (cargo-fuzz's `--cfg fuzzing`) chunks are 4 KiB: the same code,
/// but a store file reaches the chunked path with a few kilobytes rather than a megabyte that
/// every mutated input would decompress and hash again. Files of that build are not stores of
/// this one (their chunk lists do not match the size), which is why it is a cfg of the fuzz
/// build and not a feature another crate could turn on.
#[cfg(fuzzing)]
pub(crate) const CHUNK_SIZE: usize = 4096;

/// The most bytes one byte of an LZ4 block decompresses to (a match length byte of 255).
const LZ4_MAX_RATIO: usize = 255;

/// Payloads shorter than this are stored raw: compression would not pay for its header.
const COMPRESS_MIN: usize = 96;

/// A record ready to insert, and the chunks it refers to.
pub(crate) struct Encoded {
    pub record: Vec<u8>,
    pub chunks: Vec<(ChunkId, Vec<u8>)>,
}

/// Encodes object bytes into a record; `tokens` is written for blobs only.
pub(crate) fn encode(bytes: &[u8], tokens: Option<u32>) -> Encoded {
    let mut record = Vec::new();
    let mut chunks = Vec::new();
    if bytes.len() > CHUNK_SIZE {
        record.push(TAG_CHUNKED);
        push_tokens(&mut record, tokens);
        record.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        for piece in bytes.chunks(CHUNK_SIZE) {
            let id = ChunkId::of(piece);
            record.extend_from_slice(id.as_bytes());
            let mut chunk = Vec::new();
            push_payload(&mut chunk, piece);
            chunks.push((id, chunk));
        }
    } else {
        let mut payload = Vec::new();
        push_payload(&mut payload, bytes);
        record.push(payload[0]);
        push_tokens(&mut record, tokens);
        record.extend_from_slice(&payload[1..]);
    }
    Encoded { record, chunks }
}

fn push_tokens(out: &mut Vec<u8>, tokens: Option<u32>) {
    if let Some(t) = tokens {
        out.extend_from_slice(&t.to_le_bytes());
    }
}

/// Tag byte and payload, compressed when that makes it smaller.
fn push_payload(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() >= COMPRESS_MIN {
        let packed = lz4_flex::compress_prepend_size(bytes);
        if packed.len() < bytes.len() {
            out.push(TAG_LZ4);
            out.extend_from_slice(&packed);
            return;
        }
    }
    out.push(TAG_RAW);
    out.extend_from_slice(bytes);
}

/// A record that stands for one a backend holds but could not read back, and why: decoding
/// it is an error with that reason.
pub(crate) fn unreadable(reason: &str) -> Vec<u8> {
    let mut record = vec![TAG_UNREADABLE];
    record.extend_from_slice(reason.as_bytes());
    record
}

/// A tombstone record: what replaces a redacted blob's record. `tokens` are the placeholder's;
/// `body` says when, why and what stands in the view (the caller's encoding).
pub(crate) fn tombstone(tokens: u32, body: &[u8]) -> Vec<u8> {
    let mut record = vec![TAG_REDACTED];
    record.extend_from_slice(&tokens.to_le_bytes());
    record.extend_from_slice(body);
    record
}

/// The body of a tombstone record, `None` for any other record.
pub(crate) fn tombstone_body(record: &[u8]) -> Option<&[u8]> {
    match record.first() {
        Some(&TAG_REDACTED) => record.get(5..),
        _ => None,
    }
}

/// The token count of a blob record, read without decompressing anything.
pub(crate) fn tokens(record: &[u8]) -> Result<u32> {
    if let Some((&TAG_UNREADABLE, why)) = record.split_first() {
        return Err(Error::corrupt(String::from_utf8_lossy(why)));
    }
    record
        .get(1..5)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| Error::corrupt("blob record too short"))
}

/// Decodes a record back into object bytes; `has_tokens` for blob records; `chunk` fetches a
/// chunk record by id.
pub(crate) fn decode(
    record: &[u8],
    has_tokens: bool,
    mut chunk: impl FnMut(&ChunkId) -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    let (&tag, rest) = record
        .split_first()
        .ok_or_else(|| Error::corrupt("empty record"))?;
    if tag == TAG_UNREADABLE {
        return Err(Error::corrupt(String::from_utf8_lossy(rest)));
    }
    let body = if has_tokens {
        rest.get(4..)
            .ok_or_else(|| Error::corrupt("blob record too short"))?
    } else {
        rest
    };
    match tag {
        TAG_RAW | TAG_LZ4 => payload(tag, body),
        TAG_CHUNKED => {
            let len_bytes: [u8; 8] = body
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| Error::corrupt("chunk list too short"))?;
            let total = usize::try_from(u64::from_le_bytes(len_bytes))
                .map_err(|_| Error::corrupt("chunked object too large"))?;
            let ids = &body[8..];
            if ids.len() % 32 != 0 {
                return Err(Error::corrupt("chunk list not a whole number of ids"));
            }
            if total.div_ceil(CHUNK_SIZE) != ids.len() / 32 {
                return Err(Error::corrupt(
                    "chunk list does not match the object's length",
                ));
            }
            // Grows as verified chunks arrive: a damaged length must not reserve memory that
            // no chunk fills.
            let mut out = Vec::with_capacity(total.min(CHUNK_SIZE));
            for raw in ids.chunks_exact(32) {
                let mut id = [0u8; 32];
                id.copy_from_slice(raw);
                let id = ChunkId::from_bytes(id);
                out.extend_from_slice(&chunk_bytes(&id, &chunk(&id)?)?);
            }
            if out.len() != total {
                return Err(Error::corrupt("chunked object has the wrong length"));
            }
            Ok(out)
        }
        other => Err(Error::corrupt(format!("unknown record tag {other}"))),
    }
}

/// The same record with an LZ4 payload stored as it is (`TAG_RAW`), any other record unchanged:
/// what a pack compresses again, whole, with the store's dictionary (which finds far more in
/// the plain bytes than in LZ4's). `has_tokens` for blob records, as for [`decode`].
pub(crate) fn expanded(record: &[u8], has_tokens: bool) -> Result<std::borrow::Cow<'_, [u8]>> {
    let head = 1 + if has_tokens { 4 } else { 0 };
    match record.first() {
        Some(&TAG_LZ4) => {
            let body = record
                .get(head..)
                .ok_or_else(|| Error::corrupt("blob record too short"))?;
            let mut out = Vec::with_capacity(head + body.len() * 2);
            out.push(TAG_RAW);
            out.extend_from_slice(&record[1..head]);
            out.extend_from_slice(&payload(TAG_LZ4, body)?);
            Ok(std::borrow::Cow::Owned(out))
        }
        _ => Ok(std::borrow::Cow::Borrowed(record)),
    }
}

/// The chunks a record refers to, in order (none unless it is chunked).
pub(crate) fn chunk_ids(record: &[u8], has_tokens: bool) -> Result<Vec<ChunkId>> {
    let (&tag, rest) = record
        .split_first()
        .ok_or_else(|| Error::corrupt("empty record"))?;
    if tag != TAG_CHUNKED {
        return Ok(Vec::new());
    }
    let body = if has_tokens {
        rest.get(4..)
    } else {
        Some(rest)
    };
    let ids = body
        .and_then(|b| b.get(8..))
        .ok_or_else(|| Error::corrupt("chunk list too short"))?;
    if ids.len() % 32 != 0 {
        return Err(Error::corrupt("chunk list not a whole number of ids"));
    }
    Ok(ids
        .chunks_exact(32)
        .map(|raw| {
            let mut id = [0u8; 32];
            id.copy_from_slice(raw);
            ChunkId::from_bytes(id)
        })
        .collect())
}

/// The bytes of a chunk record, checked against the chunk's id.
pub(crate) fn chunk_bytes(id: &ChunkId, record: &[u8]) -> Result<Vec<u8>> {
    let (&tag, body) = record
        .split_first()
        .ok_or_else(|| Error::corrupt("empty chunk record"))?;
    let piece = payload(tag, body)?;
    if ChunkId::of(&piece) != *id {
        return Err(Error::corrupt(format!(
            "chunk {} does not match its id",
            id.short()
        )));
    }
    Ok(piece)
}

fn payload(tag: u8, body: &[u8]) -> Result<Vec<u8>> {
    match tag {
        TAG_RAW => Ok(body.to_vec()),
        TAG_LZ4 => {
            let size: [u8; 4] = body
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| Error::corrupt("compressed record too short"))?;
            let size = u32::from_le_bytes(size) as usize;
            let stream = &body[4..];
            // Decompressing reserves the recorded size first, so a damaged size is refused
            // before that: no payload is larger than a chunk (larger objects are chunked), nor
            // than LZ4 can expand its stream to (each byte of it makes at most 255).
            if size > CHUNK_SIZE {
                return Err(Error::corrupt("compressed record larger than a chunk"));
            }
            if size > stream.len().saturating_mul(LZ4_MAX_RATIO) {
                return Err(Error::corrupt("compressed record too short for its size"));
            }
            let out = lz4_flex::decompress(stream, size)
                .map_err(|e| Error::corrupt(format!("compressed record does not decode: {e}")))?;
            // A truncated stream can decode "successfully" into fewer bytes than recorded.
            if out.len() != size {
                return Err(Error::corrupt("compressed record has the wrong length"));
            }
            Ok(out)
        }
        other => Err(Error::corrupt(format!("unknown payload tag {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn round_trip(bytes: &[u8], tokens: Option<u32>) -> Vec<u8> {
        let enc = encode(bytes, tokens);
        let chunks: HashMap<ChunkId, Vec<u8>> = enc.chunks.into_iter().collect();
        decode(&enc.record, tokens.is_some(), |id| {
            chunks
                .get(id)
                .cloned()
                .ok_or_else(|| Error::corrupt("missing"))
        })
        .unwrap()
    }

    #[test]
    fn small_compressible_and_chunked_round_trip() {
        assert_eq!(round_trip(b"tiny", Some(1)), b"tiny");
        let text = "error: file not found\n".repeat(200).into_bytes();
        let enc = encode(&text, Some(7));
        assert!(
            enc.record.len() < text.len() / 4,
            "compresses repetitive text"
        );
        assert_eq!(tokens(&enc.record).unwrap(), 7);
        assert_eq!(round_trip(&text, Some(7)), text);
        let big: Vec<u8> = (0..(CHUNK_SIZE * 2 + 10))
            .map(|i| (i % 251) as u8)
            .collect();
        let enc = encode(&big, None);
        assert_eq!(enc.chunks.len(), 3);
        assert_eq!(round_trip(&big, None), big);
    }

    #[test]
    fn an_expanded_record_decodes_to_the_same_bytes() {
        let text = b"the same words again and again, the same words again and again. ".repeat(8);
        for tokens in [None, Some(7)] {
            let record = encode(&text, tokens).record;
            assert_eq!(record[0], TAG_LZ4);
            let plain = expanded(&record, tokens.is_some()).unwrap();
            assert_eq!(plain[0], TAG_RAW);
            assert_eq!(
                decode(&plain, tokens.is_some(), |_| unreachable!()).unwrap(),
                text
            );
            if tokens.is_some() {
                assert_eq!(super::tokens(&plain).unwrap(), 7);
            }
        }
        let small = encode(b"short", Some(1)).record;
        assert!(matches!(
            expanded(&small, true).unwrap(),
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(expanded(&[TAG_LZ4, 1, 0], true).is_err());
    }

    #[test]
    fn repeated_chunks_share_an_id() {
        let big = vec![b'x'; CHUNK_SIZE * 3];
        let enc = encode(&big, None);
        assert_eq!(enc.chunks[0].0, enc.chunks[1].0);
    }

    #[test]
    fn damaged_records_are_errors() {
        assert!(decode(&[], false, |_| unreachable!()).is_err());
        assert!(decode(&[9, 1, 2], false, |_| unreachable!()).is_err());
        assert!(decode(&[TAG_LZ4, 200, 0, 0, 0, 1], false, |_| unreachable!()).is_err());
        assert!(tokens(&[0, 1]).is_err());
    }

    fn corrupt_message(result: Result<Vec<u8>>) -> String {
        match result {
            Err(Error::Corrupt { message }) => message,
            other => panic!("expected a corrupt record, got {other:?}"),
        }
    }

    /// Found by fuzzing (record_decode): the recorded size of a compressed payload was
    /// allocated before decompressing, so four bytes could ask for 4 GiB.
    #[test]
    fn a_compressed_size_over_a_chunk_is_refused_before_allocating() {
        let record = [TAG_LZ4, 0xff, 0xff, 0xff, 0xff, 0x10, b'x'];
        let message = corrupt_message(decode(&record, false, |_| unreachable!()));
        assert!(message.contains("larger than a chunk"), "{message}");
        let size = u32::try_from(CHUNK_SIZE + 1).unwrap().to_le_bytes();
        let record = [&[TAG_LZ4][..], &size, &[0x10, b'x']].concat();
        assert!(decode(&record, false, |_| unreachable!()).is_err());
        // Two bytes of stream cannot make a 1000-byte payload.
        let record = [TAG_LZ4, 0xe8, 0x03, 0, 0, 0x10, b'x'];
        let message = corrupt_message(decode(&record, false, |_| unreachable!()));
        assert!(message.contains("too short for its size"), "{message}");
        // The most compressible payload of a chunk's size still decodes.
        let zeros = vec![0u8; CHUNK_SIZE];
        assert_eq!(round_trip(&zeros, None), zeros);
    }

    /// Found with the record_decode fuzz target (by reading the code it runs): a chunked
    /// record's total length was reserved as recorded (`u64::MAX` panicked with a capacity
    /// overflow).
    #[test]
    fn a_chunked_length_that_its_chunks_cannot_fill_is_refused() {
        for total in [u64::MAX, 1 << 40, (CHUNK_SIZE * 2) as u64] {
            let mut record = vec![TAG_CHUNKED];
            record.extend_from_slice(&total.to_le_bytes());
            record.extend_from_slice(&[7; 32]);
            let message = corrupt_message(decode(&record, false, |_| unreachable!()));
            assert!(message.contains("does not match"), "{total}: {message}");
        }
        let mut empty = vec![TAG_CHUNKED];
        empty.extend_from_slice(&0u64.to_le_bytes());
        assert_eq!(decode(&empty, false, |_| unreachable!()).unwrap(), b"");
    }

    /// The record_decode fuzz corpus replays as the target runs it (fuzz/fuzz_targets): a
    /// flag byte, then u16-length-prefixed pieces, the record first and chunk records after.
    #[test]
    fn fuzz_corpus_replays() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/record_decode");
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let data = std::fs::read(entry.unwrap().path()).unwrap();
            let Some((&flags, mut rest)) = data.split_first() else {
                continue;
            };
            let mut pieces = Vec::new();
            while let [lo, hi, more @ ..] = rest {
                let len = usize::from(u16::from_le_bytes([*lo, *hi])).min(more.len());
                pieces.push(&more[..len]);
                rest = &more[len..];
            }
            let has_tokens = flags & 1 == 1;
            if flags & 2 == 2 {
                let whole = &data[1..];
                assert_eq!(round_trip(whole, has_tokens.then_some(3)), whole);
                continue;
            }
            let Some((record, chunks)) = pieces.split_first() else {
                continue;
            };
            let _ = tokens(record);
            let mut chunks = chunks.iter();
            let _ = decode(record, has_tokens, |_| {
                chunks
                    .next()
                    .map(|c| c.to_vec())
                    .ok_or_else(|| Error::corrupt("no more chunks"))
            });
        }
    }
}
