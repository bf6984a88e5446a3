//! A store file's journal, as the files on disk: a write torn or garbled anywhere in the last
//! frame is dropped whole, damage before the last frame is an error naming its offset (and a
//! salvage keeps what comes before it), a store
//! file without its journal (or with another store's) is an error, full segments are folded
//! into the file and removed, and a redacted payload leaves the journal.

use crate::support::{file_store, texts};
use std::path::{Path, PathBuf};
use tract_core::{Error, Tract};

const HEADER: usize = 64;
const FRAME_HEAD: usize = 20;

fn journal_of(store: &Path) -> PathBuf {
    store.with_file_name("store.redb-journal")
}

/// The segment files, oldest first.
fn segments(store: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(journal_of(store))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().len() == 16)
        .collect();
    out.sort();
    out
}

/// Where each frame of a segment starts and ends.
fn frames(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = HEADER;
    while at + FRAME_HEAD <= bytes.len() && bytes[at..at + FRAME_HEAD].iter().any(|&b| b != 0) {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        out.push((at, at + FRAME_HEAD + len));
        at += FRAME_HEAD + len;
    }
    out
}

/// Writes where the last durable frame ends, as a writer publishes it for readers.
fn publish(store: &Path, generation: u64, end: usize, seq: u64) {
    let mut bytes = generation.to_le_bytes().to_vec();
    bytes.extend_from_slice(&(end as u64).to_le_bytes());
    bytes.extend_from_slice(&seq.to_le_bytes());
    let check = blake3::hash(&bytes);
    bytes.extend_from_slice(&check.as_bytes()[..8]);
    std::fs::write(journal_of(store).join("published"), bytes).unwrap();
}

/// A store of `n` messages, one frame each, with its files copied to `into` for each case.
fn store_of(n: usize) -> (tempfile::TempDir, PathBuf, Vec<String>) {
    let (dir, path) = file_store();
    let t = Tract::open(&path).unwrap();
    for i in 0..n {
        t.user(format!("message {i}")).unwrap();
    }
    let all = texts(&t);
    drop(t);
    (dir, path, all)
}

/// A copy of the store file and its journal in a new directory.
fn copy(store: &Path) -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = file_store();
    std::fs::copy(store, &path).unwrap();
    std::fs::create_dir(journal_of(&path)).unwrap();
    for e in std::fs::read_dir(journal_of(store)).unwrap() {
        let from = e.unwrap().path();
        std::fs::copy(&from, journal_of(&path).join(from.file_name().unwrap())).unwrap();
    }
    (dir, path)
}

#[test]
fn a_last_frame_cut_or_garbled_at_any_byte_is_dropped_whole_and_written_over() {
    let (_dir, path, all) = store_of(4);
    let seg = segments(&path).pop().unwrap();
    let bytes = std::fs::read(&seg).unwrap();
    let (start, end) = *frames(&bytes).last().unwrap();
    let (_d, copy) = copy(&path);
    let seg = segments(&copy).pop().unwrap();
    let generation: u64 = seg.file_name().unwrap().to_str().unwrap().parse().unwrap();
    for at in start..end {
        for garble in [false, true] {
            let mut damaged = bytes.clone();
            if garble {
                damaged[at] ^= 0x41;
            } else {
                // What kill -9 in the middle of the write leaves: a prefix, then what the file
                // held before (zeros).
                damaged[at..end].fill(0);
            }
            if damaged == bytes {
                continue;
            }
            std::fs::write(&seg, &damaged).unwrap();
            // The writer died before its fdatasync returned: it published the frame before.
            publish(&copy, generation, start, frames(&bytes).len() as u64 - 1);
            let t = Tract::open(&copy).unwrap();
            let seen = texts(&t);
            assert_eq!(seen, all[..all.len() - 1], "byte {at}, garbled {garble}");
            if at % 16 == 0 {
                // The next write takes the torn frame's place; it reads back after a reopen.
                t.user("after").unwrap();
                drop(t);
                let again = texts(&Tract::open(&copy).unwrap());
                assert_eq!(
                    again.last().unwrap(),
                    "after",
                    "byte {at}, garbled {garble}"
                );
                assert_eq!(again.len(), all.len(), "byte {at}, garbled {garble}");
            }
        }
    }
}

#[test]
fn damage_before_the_last_frame_is_an_error_naming_the_offset_and_changes_nothing() {
    let (_dir, path, _) = store_of(5);
    let seg = segments(&path).pop().unwrap();
    let bytes = std::fs::read(&seg).unwrap();
    let (start, end) = frames(&bytes)[2];
    let mut damaged = bytes.clone();
    damaged[(start + end) / 2] ^= 0x41;
    std::fs::write(&seg, &damaged).unwrap();
    for _ in 0..2 {
        match Tract::open(&path) {
            Err(Error::CorruptJournal { path: p, reason }) => {
                assert_eq!(p, seg);
                assert!(reason.contains(&format!("offset {start}")), "{reason}");
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
    assert_eq!(std::fs::read(&seg).unwrap(), damaged, "nothing was written");
}

#[test]
fn a_salvage_keeps_every_frame_before_the_damage_and_sets_the_rest_aside() {
    use tract_core::Store;
    let (_dir, path, all) = store_of(6);
    // A whole journal: nothing to salvage, nothing changed.
    let before = std::fs::read(segments(&path).pop().unwrap()).unwrap();
    assert_eq!(Store::salvage_journal(&path).unwrap(), None);
    assert_eq!(
        std::fs::read(segments(&path).pop().unwrap()).unwrap(),
        before
    );
    let seg = segments(&path).pop().unwrap();
    let bytes = std::fs::read(&seg).unwrap();
    let spans = frames(&bytes);
    let (start, end) = spans[3];
    let mut damaged = bytes.clone();
    damaged[(start + end) / 2] ^= 0x41;
    std::fs::write(&seg, &damaged).unwrap();
    assert!(matches!(
        Tract::open(&path),
        Err(Error::CorruptJournal { .. })
    ));

    let done = Store::salvage_journal(&path).unwrap().unwrap();
    assert_eq!(done.kept_frames, 3);
    assert_eq!(
        (done.damaged_segment.clone(), done.damaged_offset),
        (seg.clone(), start as u64)
    );
    assert_eq!(done.segments_set_aside, 1);
    // The damaged segment is kept, byte for byte, where the report says.
    let kept = done.set_aside.join(seg.file_name().unwrap());
    assert_eq!(std::fs::read(kept).unwrap(), damaged);
    // The store is as it was after the frames before the damage, whole, and goes on.
    let t = Tract::open(&path).unwrap();
    let now = texts(&t);
    assert!(
        now.len() < all.len() && all.starts_with(&now),
        "{now:?} of {all:?}"
    );
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
    t.user("after the salvage").unwrap();
    drop(t);
    let t = Tract::open(&path).unwrap();
    assert_eq!(
        texts(&t).last().map(String::as_str),
        Some("after the salvage")
    );
    assert_eq!(Store::salvage_journal(&path).unwrap(), None);
    // What is not damage is not salvaged: a journal missing, a path with no store.
    let (_d, alone) = file_store();
    std::fs::copy(&path, &alone).unwrap();
    assert!(matches!(
        Store::salvage_journal(&alone),
        Err(Error::CorruptJournal { .. })
    ));
    assert!(Store::salvage_journal(alone.with_file_name("none.redb")).is_err());
}

#[test]
fn a_store_file_without_its_journal_or_with_another_stores_is_an_error() {
    let (_dir, path, _) = store_of(3);
    // A backup done wrong: the file alone.
    let (_d, alone) = file_store();
    std::fs::copy(&path, &alone).unwrap();
    let err = Tract::open(&alone).map(|_| ()).unwrap_err();
    assert!(
        matches!(&err, Error::CorruptJournal { reason, .. } if reason.contains("without its journal")),
        "{err}"
    );
    assert!(!journal_of(&alone).exists(), "nothing was made");
    // The file with another store's journal.
    let (_o, other, _) = store_of(1);
    let (_e, mixed) = copy(&path);
    std::fs::remove_dir_all(journal_of(&mixed)).unwrap();
    let (_f, theirs) = copy(&other);
    std::fs::rename(journal_of(&theirs), journal_of(&mixed)).unwrap();
    let err = Tract::open(&mixed).map(|_| ()).unwrap_err();
    assert!(
        matches!(&err, Error::CorruptJournal { reason, .. } if reason.contains("another store")),
        "{err}"
    );
    // Both files together open with every commit.
    let (_g, whole) = copy(&path);
    assert_eq!(texts(&Tract::open(&whole).unwrap()).len(), 3);
}

#[test]
fn full_segments_are_folded_into_the_file_and_removed_while_sessions_append() {
    tract_core::storage::store::faults::set_journal_segment_limit(32 << 10);
    let (_dir, path) = file_store();
    Tract::open(&path).unwrap().user("root").unwrap();
    // Four sessions of 150 messages of about 1 KB each: 600 KB, twenty segments or so, each
    // folded by a thread while the sessions go on appending and reading.
    let threads: Vec<_> = (0..4)
        .map(|k| {
            let path = path.clone();
            std::thread::spawn(move || {
                let t = crate::support::open_bound(
                    &path,
                    tract_core::Bind::Branch(crate::support::branch(&format!("s{k}"))),
                );
                for i in 0..150 {
                    t.user(format!("s{k} {i} {}", "x".repeat(1000))).unwrap();
                    assert_eq!(texts(&t).len(), i + 1, "s{k} sees its own appends");
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    // Closing waited for the fold; what is left is at most the segment being written and one
    // full one.
    let left = segments(&path);
    assert!(left.len() <= 2, "{left:?}");
    assert!(!left[0].ends_with("0000000000000001"), "{left:?}");
    let t = Tract::open(&path).unwrap();
    for k in 0..4 {
        let s = crate::support::open_bound(
            &path,
            tract_core::Bind::Branch(crate::support::branch(&format!("s{k}"))),
        );
        let seen = texts(&s);
        assert_eq!(seen.len(), 150);
        for (i, m) in seen.iter().enumerate() {
            assert!(m.starts_with(&format!("s{k} {i} ")), "{m}");
        }
    }
    // Folded: the journal's segments gone but the newest, the objects in packs that merges
    // keep few (twenty folds or so, each a pack, merged while the next older pack is under
    // twice the newer ones' total).
    t.store().fold_journal().unwrap();
    assert_eq!(segments(&path).len(), 1);
    assert!((1..=6).contains(&packs(&path).len()), "{:?}", packs(&path));
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
    // Compacted: one pack, and every message read from it.
    t.into_store().compact().unwrap();
    assert_eq!(packs(&path).len(), 1);
    let t = Tract::open(&path).unwrap();
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
    assert_eq!(tract_core::fsck(t.store()).unwrap().commits, 601);
}

#[test]
fn a_redacted_payload_leaves_the_journal() {
    let (_dir, path) = file_store();
    let t = Tract::open(&path).unwrap();
    // Scrubbing off: this is what a person redacts when scrubbing missed it.
    t.set_secrets_policy(&tract_core::SecretsPolicy {
        enabled: false,
        ..Default::default()
    })
    .unwrap();
    t.user("before").unwrap();
    let secret = "AWS_SECRET=AKIA-PLANTED-7d02e";
    let m = t.user(format!("here: {secret}")).unwrap();
    t.user("after").unwrap();
    let in_journal = |path: &Path| {
        segments(path).iter().any(|s| {
            std::fs::read(s)
                .unwrap()
                .windows(secret.len())
                .any(|w| w == secret.as_bytes())
        })
    };
    assert!(in_journal(&path), "written to the journal first");
    t.redact(m.id, "a key").unwrap();
    assert!(!in_journal(&path));
    assert_eq!(texts(&t)[0], "before");
    drop(t);
    let t = Tract::open(&path).unwrap();
    assert_eq!(texts(&t).len(), 3);
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
}

/// Every file beside the store file (segments and packs) and the store file itself.
fn store_files(path: &Path) -> Vec<std::path::PathBuf> {
    let journal = path.with_file_name(format!(
        "{}-journal",
        path.file_name().unwrap().to_string_lossy()
    ));
    let mut files: Vec<_> = std::fs::read_dir(journal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.push(path.to_path_buf());
    files
}

/// The pack files beside the store file at `path`.
fn packs(path: &Path) -> Vec<std::path::PathBuf> {
    store_files(path)
        .into_iter()
        .filter(|f| {
            f.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pack-")
        })
        .collect()
}

#[test]
fn a_redacted_payload_leaves_the_packs_and_the_pack_that_held_it_is_removed() {
    let (_dir, path) = file_store();
    let t = Tract::open(&path).unwrap();
    t.user("before").unwrap();
    // Short: a record compression does not shrink is stored as it is, so the bytes show.
    let secret = "PW-PLANTED-4c1";
    let m = t.user(secret).unwrap();
    t.user("after").unwrap();
    t.store().fold_journal().unwrap();
    let holding = |path: &Path| -> Vec<std::path::PathBuf> {
        store_files(path)
            .into_iter()
            .filter(|f| {
                std::fs::read(f)
                    .unwrap()
                    .windows(secret.len())
                    .any(|w| w == secret.as_bytes())
            })
            .collect()
    };
    let before = packs(&path);
    assert_eq!(
        holding(&path),
        before,
        "folded into the one pack, and only there"
    );
    t.redact(m.id, "a password").unwrap();
    assert!(holding(&path).is_empty(), "{:?}", holding(&path));
    assert!(
        packs(&path).iter().all(|p| !before.contains(p)),
        "the pack that held it was written again without it and removed"
    );
    drop(t);
    let t = Tract::open(&path).unwrap();
    assert_eq!(texts(&t).len(), 3);
    assert_eq!(texts(&t)[0], "before");
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
}

#[test]
fn packs_that_direct_writes_make_are_merged_too() {
    let (_dir, path) = file_store();
    // Each checkpoint folds what was appended since into a pack of its own (a direct write, as
    // store-wide work and closing processes make): a hundred of them.
    for i in 0..100 {
        let t = Tract::open(&path).unwrap();
        t.user(format!("message {i}")).unwrap();
        t.store().fold_journal().unwrap();
    }
    assert!(packs(&path).len() <= 8, "{:?}", packs(&path));
    let t = Tract::open(&path).unwrap();
    assert_eq!(texts(&t).len(), 100);
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
}

#[test]
fn a_pack_the_store_lists_and_that_is_missing_is_an_error_naming_it() {
    let (_dir, path) = file_store();
    let t = Tract::open(&path).unwrap();
    t.user("in a pack").unwrap();
    t.store().fold_journal().unwrap();
    drop(t);
    let pack = packs(&path).pop().unwrap();
    let bytes = std::fs::read(&pack).unwrap();
    std::fs::remove_file(&pack).unwrap();
    let err = Tract::open(&path).map(|_| ()).unwrap_err();
    assert!(
        matches!(&err, Error::CorruptJournal { path: p, reason } if *p == pack && reason.contains("missing")),
        "{err}"
    );
    // Put back, the store opens as it was.
    std::fs::write(&pack, bytes).unwrap();
    assert_eq!(texts(&Tract::open(&path).unwrap()), ["in a pack"]);
}

#[test]
fn a_frame_not_yet_published_is_seen_only_once_no_writer_holds_the_lock() {
    let (_dir, path, all) = store_of(3);
    for lock in ["lock", "syncing"] {
        let (_d, copy) = copy(&path);
        let seg = segments(&copy).pop().unwrap();
        let generation: u64 = seg.file_name().unwrap().to_str().unwrap().parse().unwrap();
        let written = frames(&std::fs::read(&seg).unwrap());
        let (start, _) = *written.last().unwrap();
        // A writer has written its frame and not yet returned from fdatasync: it holds the
        // writer lock, or it has let that go to the next writer and holds the syncing lock
        // (shared, beside other writers' fdatasyncs); the durable end it published is before
        // the frame.
        publish(&copy, generation, start, written.len() as u64 - 1);
        let held = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(journal_of(&copy).join(lock))
            .unwrap();
        match lock {
            "lock" => held.lock().unwrap(),
            _ => held.lock_shared().unwrap(),
        }
        let t = Tract::open(&copy).unwrap();
        assert_eq!(
            texts(&t),
            all[..2],
            "{lock} held: not durable yet, not seen"
        );
        // The writer is gone (a crash after its write): what it wrote whole is taken.
        drop(held);
        assert_eq!(texts(&t), all, "{lock}");
        drop(t);
        assert_eq!(texts(&Tract::open(&copy).unwrap()), all);
    }
}

#[test]
fn a_failed_fdatasync_fails_the_write_and_the_process_writes_no_more() {
    let (_dir, path) = file_store();
    let t = Tract::open(&path).unwrap();
    t.user("durable").unwrap();
    tract_core::storage::store::faults::fail_next_journal_sync(&journal_of(&path));
    let failed = t.user("its fdatasync fails").unwrap_err();
    assert!(matches!(failed, Error::Io { .. }), "{failed}");
    // Whether that frame reached the disk is unknown: nothing more is written on top of it.
    let after = t.user("refused").unwrap_err().to_string();
    assert!(after.contains("an earlier fdatasync"), "{after}");
    assert!(after.contains("tract fsck"), "{after}");
    drop(t);
    // A process that opens the store again (here: this one, once every handle closed) reads
    // the frame the failed call wrote, as the disk has it, and writes on.
    let t = Tract::open(&path).unwrap();
    assert_eq!(texts(&t), ["durable", "its fdatasync fails"]);
    t.user("after a reopen").unwrap();
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
}
