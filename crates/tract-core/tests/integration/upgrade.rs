//! Store format versions: a store an older build wrote is brought to this build's format when
//! it is opened, in place, keeping every id; a store of a newer format is refused (`store.rs`).

use crate::support::{file_store, temp_store, texts};
use tract_core::{FORMAT_VERSION, LogQuery, Rev, Tract, UpgradeReport};

/// Written by `tract demo` and `tract --branch agent add "on the fork"` at e928b67, the last
/// build of format 1 (tests/fixtures/store-format-1.redb).
const FORMAT_1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/store-format-1.redb"
);
/// Written by `tract demo`, `tract branch agent` and `tract --branch agent add "on the fork"`
/// at 58f1310, the last build of format 2 (tests/fixtures/store-format-2.redb).
const FORMAT_2: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/store-format-2.redb"
);

/// Written the same way at 84eb119, the last build of format 3: the store file and its journal,
/// whose one segment (journal format 1) holds the 13 frames of those commands, none folded
/// (tests/fixtures/store-format-3/).
const FORMAT_3: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/store-format-3/store.redb"
);

/// Written at ed1e4d2, the last build of format 4, by `tract demo`, `tract checkpoint` (the
/// demo's commits folded into the store file's tables), `tract branch agent` and `tract --branch
/// agent add "on the fork"` (two frames in the journal's segment, journal format 2)
/// (tests/fixtures/store-format-4/).
const FORMAT_4: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/store-format-4/store.redb"
);

const STEP_2: &str =
    "1 to 2: a store id (16 random bytes), which the store's other files will name";
const STEP_3: &str = "2 to 3: a journal beside a store file (<file>-journal/): a durable write is \
                      one frame in it, folded into the file in batches";
const STEP_4: &str = "3 to 4: journal frames made durable after the writer lock is let go, so \
                      several processes' frames share one fdatasync (journal format 2, from a \
                      new segment)";
const STEP_5: &str = "4 to 5: a store file's objects in packs beside it (<file>-journal/pack-*): \
                      compressed with a dictionary trained on the store's own records, each \
                      pack indexed once, written whole by each fold (journal format 3, from a \
                      new segment)";

fn upgrade_from(from: u32) -> UpgradeReport {
    UpgradeReport {
        from,
        to: 5,
        steps: [STEP_2, STEP_3, STEP_4, STEP_5][from as usize - 1..]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    }
}

/// Opens a copy of `fixture`, written at format `from`, with its main and agent tips: the
/// open upgrades it, every id stays, and it is written on at the new format.
fn upgraded_when_opened(fixture: &str, from: u32, main_tip: &str, agent_tip: &str) {
    let (_d, path) = copy_fixture(fixture);
    let t = Tract::open(&path).unwrap();
    // The open made the upgrade, and says so once more when asked.
    assert_eq!(t.store().upgrade().unwrap(), upgrade_from(from));
    assert_eq!(t.store().id().unwrap().len(), 32);
    // Every commit and branch as the older format wrote them.
    let main = t.log(&LogQuery::default()).unwrap();
    assert_eq!(main.len(), 11);
    assert!(main[0].id.to_hex().starts_with(main_tip));
    let agent = t
        .log(&LogQuery {
            start: Some(Rev::parse("agent").unwrap()),
            ..LogQuery::default()
        })
        .unwrap();
    assert!(agent[0].id.to_hex().starts_with(agent_tip));
    assert_eq!(agent[1].id, main[0].id);
    // Ten messages, and the marked result compile gives the call the demo leaves crashed.
    let view = texts(&t);
    assert_eq!(view.len(), 11);
    assert!(
        view[0].starts_with("You are a careful coding agent"),
        "{view:?}"
    );
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    // Written on at the new format (through the journal the upgrade made), and opened again:
    // nothing more to do.
    t.user("after the upgrade").unwrap();
    let id = t.store().id().unwrap();
    drop(t);
    assert!(path.with_file_name("store.redb-journal").is_dir());
    let again = Tract::open(&path).unwrap();
    let nothing = again.store().upgrade().unwrap();
    assert_eq!((nothing.from, nothing.to), (5, 5));
    assert!(nothing.steps.is_empty());
    assert_eq!(again.store().id().unwrap(), id, "the id is made once");
    assert_eq!(texts(&again).last().unwrap(), "after the upgrade");
}

#[test]
fn stores_written_at_formats_1_to_4_are_upgraded_when_opened_and_keep_every_id() {
    assert_eq!(
        FORMAT_VERSION, 5,
        "a new format needs a fixture of the one before"
    );
    upgraded_when_opened(FORMAT_1, 1, "9d5481c641", "215d8d1587");
    upgraded_when_opened(FORMAT_2, 2, "d8f27c58b1", "7311612b74");
    // Its commits are in the journal's frames of format 1, read as they were written.
    upgraded_when_opened(FORMAT_3, 3, "e50a6d8aee", "c03a881f05");
    // Its commits are in the store file's tables (moved into a pack) and in frames of
    // journal format 2.
    upgraded_when_opened(FORMAT_4, 4, "0251b0d2c5", "8878f10027");
}

/// Copies `fixture` (a store file) and its journal directory, when it has one (from format 3),
/// into a new temporary directory.
pub(crate) fn copy_fixture(fixture: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let (d, path) = file_store();
    std::fs::copy(fixture, &path).unwrap();
    let journal = std::path::PathBuf::from(format!("{fixture}-journal"));
    if journal.is_dir() {
        let copied = path.with_file_name("store.redb-journal");
        std::fs::create_dir(&copied).unwrap();
        for entry in std::fs::read_dir(&journal).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), copied.join(entry.file_name())).unwrap();
        }
    }
    (d, path)
}

#[test]
fn the_upgrade_from_4_moves_the_objects_into_a_pack_and_leaves_none_in_the_file() {
    let (_d, path) = copy_fixture(FORMAT_4);
    let before = std::fs::read(&path).unwrap();
    assert!(
        before.windows(12).any(|w| w == b"careful codi"),
        "format 4 keeps messages in the store file"
    );
    let t = Tract::open(&path).unwrap();
    let journal = path.with_file_name("store.redb-journal");
    let packs: Vec<_> = std::fs::read_dir(&journal)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("pack-"))
        .collect();
    assert_eq!(packs, ["pack-0000000000000001"]);
    // The old segment keeps its frames; the next, journal format 3, takes new ones.
    let segment = |g: u64| std::fs::read(journal.join(format!("{g:016}"))).unwrap();
    let newest = std::fs::read_dir(&journal)
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .into_string()
                .unwrap()
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap();
    assert_eq!(segment(newest)[16..20], 3u32.to_le_bytes());
    assert_eq!(segment(newest - 1)[16..20], 2u32.to_le_bytes());
    // Compacted (the space the moved records left is given back): the store file holds no
    // message, every record is in a pack, and the store reads as before.
    t.into_store().compact().unwrap();
    let after = std::fs::read(&path).unwrap();
    assert!(!after.windows(12).any(|w| w == b"careful codi"));
    let t = Tract::open(&path).unwrap();
    assert_eq!(texts(&t).len(), 11);
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn the_upgrade_from_3_starts_a_segment_of_the_new_journal_format_after_the_old_frames() {
    let (_d, path) = copy_fixture(FORMAT_3);
    let journal = path.with_file_name("store.redb-journal");
    let t = Tract::open(&path).unwrap();
    // The old segment keeps its 13 frames; the new one, of the newest journal format (3) at
    // byte 16, takes the next.
    let segment = |g: u64| std::fs::read(journal.join(format!("{g:016}"))).unwrap();
    assert_eq!(segment(1)[16..20], 1u32.to_le_bytes());
    assert_eq!(segment(2)[16..20], 3u32.to_le_bytes());
    assert_eq!(tract_core::fsck(t.store()).unwrap().journal_frames, 13);
    t.user("the first frame of format 3").unwrap();
    assert_eq!(tract_core::fsck(t.store()).unwrap().journal_frames, 14);
    assert!(
        segment(2).windows(11).any(|w| w == b"first frame"),
        "the new frame is in the new segment"
    );
}

#[test]
fn a_format_1_store_on_either_backend_is_upgraded_in_one_transaction() {
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.user("kept").unwrap();
    let before = t.head().unwrap().commit;
    // What format 1 held: the same records, version 1 and no store id (a store file keeps its
    // id: its packs name it, and a real format-1 file, which has none, is the fixture's test).
    let mut d = t.store().damage().unwrap();
    d.set_meta("format", Some(1u32.to_le_bytes().as_slice()))
        .unwrap();
    if t.store().path().is_none() {
        d.set_meta("store_id", None).unwrap();
    }
    d.commit().unwrap();
    drop(t);
    let t = Tract::open(&path).unwrap();
    assert_eq!(t.store().upgrade().unwrap(), upgrade_from(1));
    assert_eq!(t.head().unwrap().commit, before);
    assert_eq!(texts(&t), ["kept"]);
    assert!(
        tract_core::fsck(t.store()).unwrap().problems.is_empty(),
        "fsck clean"
    );
}

#[test]
fn every_store_has_an_id_of_its_own_and_a_clone_gets_a_new_one() {
    let (_d, path) = temp_store();
    let (_e, other) = file_store();
    let t = Tract::open(&path).unwrap();
    t.user("one").unwrap();
    let (copy, _) = Tract::clone_store(&path, &other, tract_core::StoreOptions::default()).unwrap();
    let (a, b) = (t.store().id().unwrap(), copy.store().id().unwrap());
    assert_eq!(a.len(), 32);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
    assert_eq!(texts(&copy), ["one"]);
}
