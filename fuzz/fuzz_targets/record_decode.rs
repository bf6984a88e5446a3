//! Store records (tag, token count, raw / LZ4 / chunked payload): decoding never panics nor
//! allocates without bound, and encoding then decoding gives back any bytes.
//!
//! Input: one flag byte (bit 0: a blob record with a token count; bit 1: round-trip mode),
//! then in decode mode a little-endian u16 record length, the record, and the chunk records the
//! decoder fetches, each behind its own u16 length, handed out in order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tract_core::Error;
use tract_core::fuzzing::{decode_record, encode_record, record_tokens};

fn corrupt(message: &str) -> Error {
    Error::Corrupt {
        message: message.into(),
    }
}

/// Splits off a u16-length-prefixed piece.
fn take(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = usize::from(u16::from_le_bytes([*data.first()?, *data.get(1)?]));
    let rest = &data[2..];
    let len = len.min(rest.len());
    Some(rest.split_at(len))
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let has_tokens = flags & 1 == 1;
    if flags & 2 == 2 {
        // Round trip: any bytes come back as they went in.
        let tokens = has_tokens.then_some(rest.len() as u32);
        let (record, chunks) = encode_record(rest, tokens);
        if has_tokens {
            assert_eq!(record_tokens(&record).ok(), tokens);
        }
        let back = decode_record(&record, has_tokens, |id| {
            chunks
                .iter()
                .find(|(c, _)| c == id)
                .map(|(_, r)| r.clone())
                .ok_or_else(|| corrupt("missing chunk"))
        })
        .expect("an encoded record decodes");
        assert_eq!(back, rest);
        return;
    }
    let Some((record, mut chunk_data)) = take(rest) else {
        return;
    };
    let _ = record_tokens(record);
    let _ = decode_record(record, has_tokens, |_| match take(chunk_data) {
        Some((chunk, more)) => {
            chunk_data = more;
            Ok(chunk.to_vec())
        }
        None => Err(corrupt("no more chunks")),
    });
});
