//! Journal segments: reading any bytes never panics, and a segment that was written whole and
//! then cut or changed anywhere gives back the frames written before the change and never a
//! frame that was not written, or an error when the change hit the header or frames that
//! check follow it. The frames' payloads (ops) read from any bytes never panic, and what reads
//! is written back byte for byte.
//!
//! Frames may say that frames before them were in flight (written by other processes, not yet
//! durable): a change in one of those may then read as a torn tail instead of an error.
//!
//! Input: one mode byte. Mode 0: the rest is a segment as it is, and also a frame's payload.
//! Otherwise (odd: every frame says up to two frames before it were in flight; even: none):
//! a u16 length to cut
//! the segment to, a u16 offset and a byte to XOR there (0: no change), then payloads behind
//! u16 lengths; the segment is made from the payloads, changed, cut, and read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tract_core::fuzzing::{journal_ops, journal_scan, journal_segment};

/// Splits off a u16-length-prefixed piece.
fn take(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = usize::from(u16::from_le_bytes([*data.first()?, *data.get(1)?]));
    let rest = &data[2..];
    let len = len.min(rest.len());
    Some(rest.split_at(len))
}

fn u16_at(data: &[u8], at: usize) -> Option<usize> {
    Some(usize::from(u16::from_le_bytes([*data.get(at)?, *data.get(at + 1)?])))
}

/// A frame's fixed part and a segment's header, as docs/decisions.md lays them out.
const FRAME_HEAD: usize = 20;
const HEADER: usize = 64;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode == 0 {
        if let Ok((_, frames, _)) = journal_scan(rest) {
            assert!(frames.iter().all(|f| !f.is_empty()));
            for f in &frames {
                if let Err(e) = journal_ops(f) {
                    assert!(!e.contains("differs"), "{e}");
                }
            }
        }
        if let Err(e) = journal_ops(rest) {
            assert!(!e.contains("differs"), "{e}");
        }
        return;
    }
    let (Some(cut), Some(at), Some(&xor)) = (u16_at(rest, 0), u16_at(rest, 2), rest.get(4)) else {
        return;
    };
    let mut payloads = Vec::new();
    let mut more = &rest[5..];
    while let Some((p, tail)) = take(more) {
        if !p.is_empty() {
            payloads.push(p);
        }
        more = tail;
    }
    let in_flight: fn(usize) -> u64 = match mode % 2 {
        1 => |len| len as u64 % 3,
        _ => |_| 0,
    };
    let mut bytes = journal_segment(3, 9, &payloads, FRAME_HEAD, in_flight);
    let whole = bytes.len();
    let changed = xor != 0 && at < whole;
    if changed {
        bytes[at] ^= xor;
    }
    bytes.truncate(cut);
    // The first byte that is not as written (whole: none).
    let first_bad = (if changed { at } else { whole }).min(bytes.len());
    // The frames that end before it are read back as written, and no frame that was not.
    let mut end = HEADER;
    let mut intact = 0;
    for p in &payloads {
        end += FRAME_HEAD + p.len();
        if end > first_bad {
            break;
        }
        intact += 1;
    }
    match journal_scan(&bytes) {
        Ok((generation, frames, _)) => {
            assert!(first_bad >= HEADER, "a damaged or cut header was read");
            assert_eq!(generation, 9);
            assert!(frames.len() >= intact, "{} frames of {intact}", frames.len());
            assert!(frames.len() <= payloads.len());
            for (got, want) in frames.iter().zip(&payloads) {
                assert_eq!(got.as_slice(), *want, "a frame that was not written");
            }
        }
        Err(e) => {
            assert!(first_bad < whole, "a whole segment is refused: {e}");
            assert!(first_bad < HEADER || (changed && e.contains("damaged")), "{e}");
        }
    }
});
