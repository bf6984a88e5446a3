//! `tract upgrade`: a store an older tract wrote, brought to this build's format.

use crate::common::Project;
use insta::assert_snapshot;

/// A project whose store is tests/fixtures/store-format-1.redb (written at format 1).
fn format_1() -> Project {
    Project::with_store(include_bytes!(
        "../../../../tests/fixtures/store-format-1.redb"
    ))
}

#[test]
fn upgrade_says_what_it_changed_then_that_there_is_nothing_to_do() {
    let p = format_1();
    assert_snapshot!(p.run(&["upgrade"]), @"
    exit: 0
    --- stdout
    upgraded the store from format 1 to 5
      1 to 2: a store id (16 random bytes), which the store's other files will name
      2 to 3: a journal beside a store file (<file>-journal/): a durable write is one frame in it, folded into the file in batches
      3 to 4: journal frames made durable after the writer lock is let go, so several processes' frames share one fdatasync (journal format 2, from a new segment)
      4 to 5: a store file's objects in packs beside it (<file>-journal/pack-*): compressed with a dictionary trained on the store's own records, each pack indexed once, written whole by each fold (journal format 3, from a new segment)
    checkpointed the views of 2 branches at their tips (new handles start from there)
    turned on secret scrubbing: every write now replaces what looks like a credential with a marker (tract config secrets --off turns it off); what the store holds already is listed by tract secrets scan --all --history
    ");
    assert_snapshot!(p.run(&["upgrade"]), @"
    exit: 0
    --- stdout
    the store is at format 5, the newest this tract writes
    ");
    assert_snapshot!(p.run(&["upgrade", "--json"]), @r#"
    exit: 0
    --- stdout
    {
      "from_version": 5,
      "to_version": 5,
      "steps": [],
      "views_checkpointed": 0,
      "secrets_policy_added": false
    }
    "#);
    assert_snapshot!(p.run(&["log", "-n", "1"]), @r#"
    exit: 0
    --- stdout
    9d5481c641 append assistant edit_file        14  edit_file({"path":"src/db/pool.rs"})
    "#);
}

#[test]
fn a_read_reads_an_older_store_as_it_is_and_a_write_upgrades_it() {
    let p = format_1();
    let before = std::fs::read(p.store()).unwrap();
    assert_snapshot!(p.run(&["--branch", "agent", "log", "-n", "2"]), @r#"
    exit: 0
    --- stdout
    215d8d1587 append user      -                 6  on the fork
    9d5481c641 append assistant edit_file        14  edit_file({"path":"src/db/pool.rs"})
    "#);
    // Read at format 1, not a byte changed: the upgrade is still to do.
    assert_eq!(std::fs::read(p.store()).unwrap(), before);
    assert_snapshot!(p.run(&["upgrade", "--json"]), @r#"
    exit: 0
    --- stdout
    {
      "from_version": 1,
      "to_version": 5,
      "steps": [
        "1 to 2: a store id (16 random bytes), which the store's other files will name",
        "2 to 3: a journal beside a store file (<file>-journal/): a durable write is one frame in it, folded into the file in batches",
        "3 to 4: journal frames made durable after the writer lock is let go, so several processes' frames share one fdatasync (journal format 2, from a new segment)",
        "4 to 5: a store file's objects in packs beside it (<file>-journal/pack-*): compressed with a dictionary trained on the store's own records, each pack indexed once, written whole by each fold (journal format 3, from a new segment)"
      ],
      "views_checkpointed": 2,
      "secrets_policy_added": true
    }
    "#);
    assert_snapshot!(p.run(&["fsck"]), @"
    exit: 0
    --- stdout
    checked 12 commits, 12 blobs, 0 chunks (3041 bytes), 2 branches, 13 reflog entries; counts of 2 branches replayed
    2 checkpoints of views read back and compared with a replay
    ");
}
