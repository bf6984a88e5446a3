//! `tract fsck`, and what every command says when a stored object was changed.

use crate::common::Project;
use insta::assert_snapshot;

/// Changes every copy of `from` in the store's files to `to` (same length), as a damaged disk
/// or a hand edit would (the journal folded first, so its pack holds them all: a record too
/// short to compress is stored as it is).
fn damage(p: &Project, from: &str, to: &str) {
    p.ok(&["fold"]);
    let journal = p.store().with_file_name("store.redb-journal");
    let mut files = vec![p.store()];
    files.extend(
        std::fs::read_dir(&journal)
            .unwrap()
            .map(|e| e.unwrap().path()),
    );
    let mut found = 0;
    for file in files {
        let mut bytes = std::fs::read(&file).unwrap();
        for i in 0..bytes.len().saturating_sub(from.len()) {
            if &bytes[i..i + from.len()] == from.as_bytes() {
                bytes[i..i + to.len()].copy_from_slice(to.as_bytes());
                found += 1;
            }
        }
        std::fs::write(&file, bytes).unwrap();
    }
    assert!(found > 0, "'{from}' is not in the store");
}

/// `fsck --json` finds the store sound, and every branch at most `k` commits past its view
/// checkpoint.
pub fn within_checkpoints(p: &Project, k: u64) {
    let report: serde_json::Value = serde_json::from_str(&p.ok(&["fsck", "--json"])).unwrap();
    assert_eq!(report["clean"], true, "{report}");
    let past = report["past_checkpoint"].as_object().unwrap();
    assert!(!past.is_empty());
    for (branch, n) in past {
        assert!(
            n.as_u64().unwrap() <= k,
            "{branch}: {n} commits past its checkpoint"
        );
    }
}

/// `tract add`, one process a message, never compiles a view; the branch is checkpointed as
/// it grows all the same, every sixteenth of its length (at least every 16 commits) for a view
/// this small, and a batch of JSONL past that is checkpointed at its end.
#[test]
fn messages_added_one_process_each_leave_checkpoints() {
    let p = Project::new();
    for i in 0..20 {
        p.ok(&["add", &format!("message {i}")]);
    }
    within_checkpoints(&p, 4);
    let lines: String = (0..30)
        .map(|i| format!("{{\"role\": \"user\", \"content\": \"line {i}\"}}\n"))
        .collect();
    p.ok_in(&["add", "--json", "-"], &lines);
    within_checkpoints(&p, 0);
}

fn session() -> Project {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "be brief"]);
    p.ok(&["add", "msg 1003"]);
    p.ok(&["branch", "side"]);
    p.ok(&["--branch", "side", "add", "on the side"]);
    p.ok(&["merge", "side"]);
    p
}

/// A sound store: a one-line report, exit 0; `--json` for tools.
#[test]
fn a_sound_store_passes() {
    let p = session();
    assert_snapshot!(p.run(&["fsck"]), @"
    exit: 0
    --- stdout
    checked 4 commits, 3 blobs, 0 chunks (388 bytes), 2 branches, 5 reflog entries; counts of 2 branches replayed
    1 checkpoint of views read back and compared with a replay
    the journal holds 5 frames not yet folded into the store file, each checked
    ");
    assert_snapshot!(p.run(&["fsck", "--json"]), @r#"
    exit: 0
    --- stdout
    {
      "clean": true,
      "commits": 4,
      "blobs": 3,
      "chunks": 0,
      "bytes": 388,
      "branches": 2,
      "reflog_entries": 5,
      "counts_replayed": 2,
      "checkpoints_checked": 1,
      "past_checkpoint": {
        "main": 0,
        "side": 3
      },
      "journal_frames": 5,
      "index_documents": 0,
      "problems": [],
      "redacted": [],
      "derived_from_redacted": [],
      "reused_call_ids": {},
      "secrets_in_view": {},
      "unreachable": {
        "commits": [],
        "blobs": [],
        "chunks": []
      }
    }
    "#);
}

/// One changed byte in a stored message: fsck names the object and exits 1 with its report;
/// every command that reads it refuses it and points at fsck.
#[test]
fn a_changed_message_is_found_and_never_served() {
    let p = session();
    damage(&p, "msg 1003", "msg 1103");
    assert_snapshot!(p.run(&["fsck"]), @"
    exit: 1
    --- stdout
    checked 4 commits, 3 blobs, 0 chunks (409 bytes), 2 branches, 5 reflog entries; counts of 0 branches replayed
    corrupt     pack pack-0000000000000001: the records do not match the footer's check
    corrupt     blob d8be0ac128d1a6e2c90441d1c8c93e62f2da89b415ed222bf3ebd047a15dd081: its bytes do not hash to its id
    --- stderr
    error: fsck found 2 problems
    hint: keep a copy of the store file before changing anything
    ");
    assert_snapshot!(p.run(&["compile"]), @"
        exit: 6
        --- stderr
        error: corrupt store: blob d8be0ac128 is damaged: its bytes do not hash to its id
        hint: `tract fsck` lists every damaged object; keep a copy of the file before anything else
        ");
    assert_snapshot!(p.run(&["search", "msg", "--history"]), @"
        exit: 6
        --- stderr
        error: corrupt store: blob d8be0ac128 is damaged: its bytes do not hash to its id
        hint: `tract fsck` lists every damaged object; keep a copy of the file before anything else
        ");
    // What does not read the damaged message still works.
    assert_snapshot!(p.run(&["--branch", "side", "log", "-n", "1", "--oneline"]), @"
        exit: 0
        --- stdout
        fdcb4541d7 on the side
        ");
}
