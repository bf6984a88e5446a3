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

fn format_1_upgrade() -> UpgradeReport {
    UpgradeReport {
        from: 1,
        to: 2,
        steps: vec![
            "1 to 2: a store id (16 random bytes), which the store's other files will name".into(),
        ],
    }
}

#[test]
fn a_store_written_at_format_1_is_upgraded_when_opened_and_keeps_every_id() {
    assert_eq!(
        FORMAT_VERSION, 2,
        "a new format needs a fixture of the one before"
    );
    let (_d, path) = file_store();
    std::fs::copy(FORMAT_1, &path).unwrap();
    let t = Tract::open(&path).unwrap();
    // The open made the upgrade, and says so once more when asked.
    assert_eq!(t.store().upgrade().unwrap(), format_1_upgrade());
    assert_eq!(t.store().id().unwrap().len(), 32);
    // Every commit and branch as format 1 wrote them.
    let main = t.log(&LogQuery::default()).unwrap();
    assert_eq!(main.len(), 11);
    assert!(main[0].id.to_hex().starts_with("9d5481c641"));
    let agent = t
        .log(&LogQuery {
            start: Some(Rev::parse("agent").unwrap()),
            ..LogQuery::default()
        })
        .unwrap();
    assert!(agent[0].id.to_hex().starts_with("215d8d1587"));
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
    // Written on at the new format, and opened again: nothing more to do.
    t.user("after the upgrade").unwrap();
    let id = t.store().id().unwrap();
    drop(t);
    let again = Tract::open(&path).unwrap();
    let nothing = again.store().upgrade().unwrap();
    assert_eq!((nothing.from, nothing.to), (2, 2));
    assert!(nothing.steps.is_empty());
    assert_eq!(again.store().id().unwrap(), id, "the id is made once");
    assert_eq!(texts(&again).last().unwrap(), "after the upgrade");
}

#[test]
fn a_format_1_store_on_either_backend_is_upgraded_in_one_transaction() {
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.user("kept").unwrap();
    let before = t.head().unwrap().commit;
    // What format 1 held: the same records, version 1 and no store id.
    let mut d = t.store().damage().unwrap();
    d.set_meta("format", Some(1u32.to_le_bytes().as_slice()))
        .unwrap();
    d.set_meta("store_id", None).unwrap();
    d.commit().unwrap();
    drop(t);
    let t = Tract::open(&path).unwrap();
    assert_eq!(t.store().upgrade().unwrap(), format_1_upgrade());
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
