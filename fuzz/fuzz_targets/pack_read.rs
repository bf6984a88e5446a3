//! Packs: opening and reading any bytes as a pack never panics, and a pack that was written
//! whole and then cut or changed anywhere is refused (by the open or by fsck's check of every
//! byte), never read as other records.
//!
//! Input: one mode byte. Mode 0: the rest is a pack file as it is. Otherwise: a u16 length to
//! cut the pack to (0xffff: no cut), a u16 offset and a byte to XOR there (0: no change), then
//! objects behind u16 lengths; the pack is written from the objects, changed, cut, and read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;
use tract_core::fuzzing::{pack_read, pack_write};

/// One directory for the process's runs (a pack is a file; tmpfs keeps it cheap).
static DIR: LazyLock<tempfile::TempDir> = LazyLock::new(|| {
    let base = std::path::Path::new("/dev/shm");
    match base.is_dir() {
        true => tempfile::tempdir_in(base),
        false => tempfile::tempdir(),
    }
    .expect("a temporary directory")
});

fn take(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = usize::from(u16::from_le_bytes([*data.first()?, *data.get(1)?]));
    let rest = &data[2..];
    Some(rest.split_at(len.min(rest.len())))
}

fn u16_at(data: &[u8], at: usize) -> Option<usize> {
    Some(usize::from(u16::from_le_bytes([*data.get(at)?, *data.get(at + 1)?])))
}

fuzz_target!(|data: &[u8]| {
    let dir = DIR.path();
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode == 0 {
        let _ = pack_read(dir, rest);
        return;
    }
    let (Some(cut), Some(at), Some(&xor)) = (u16_at(rest, 0), u16_at(rest, 2), rest.get(4)) else {
        return;
    };
    let mut objects = Vec::new();
    let mut more = &rest[5..];
    while let Some((o, tail)) = take(more) {
        objects.push(o);
        more = tail;
    }
    let mut bytes = pack_write(dir, &objects).expect("a pack is written");
    let whole = bytes.len();
    let changed = xor != 0 && at < whole;
    if changed {
        bytes[at] ^= xor;
    }
    if cut != 0xffff {
        bytes.truncate(cut);
    }
    match pack_read(dir, &bytes) {
        Ok(read) => {
            assert!(!changed && bytes.len() == whole, "a changed or cut pack was read");
            // Each object once, by its id, with its bytes (the last of equal ones).
            let mut want: Vec<(u8, [u8; 32], &[u8])> = Vec::new();
            for (i, o) in objects.iter().enumerate() {
                let t = (i % 3) as u8;
                let id = *blake3::hash(o).as_bytes();
                want.retain(|(wt, wid, _)| (*wt, *wid) != (t, id));
                want.push((t, id, o));
            }
            want.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            assert_eq!(read.len(), want.len());
            for ((t, id, got), (wt, wid, w)) in read.iter().zip(&want) {
                assert_eq!((t, id, got.as_slice()), (wt, wid, *w));
            }
        }
        Err(e) => assert!(changed || bytes.len() < whole, "a whole pack is refused: {e}"),
    }
});
