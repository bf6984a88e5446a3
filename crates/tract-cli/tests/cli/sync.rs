//! `tract push`, `tract pull` and `tract clone` between store files (the same commands on
//! PostgreSQL run in the core's suite and the Python tests).

use crate::common::Project;
use insta::assert_snapshot;

/// A project with two messages on main and a branch `side` with one more.
fn origin() -> Project {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "be brief"]);
    p.ok(&["add", "hello"]);
    p.ok(&["branch", "side"]);
    p.ok(&["--branch", "side", "add", "on side"]);
    p
}

/// A clone has every branch and id; a push sends only what is new and fast-forwards; nothing
/// new sends nothing.
#[test]
fn clone_then_push_sends_only_what_is_new() {
    let p = origin();
    assert_snapshot!(p.run(&["clone", ".tract/store.redb", "copy.redb"]), @"
        exit: 0
        --- stdout
        main: new branch at 5e8c0f8a1e
        side: new branch at c19262df75
        sent 3 commit(s) and 3 blob(s), and the settings
        ");
    assert_eq!(
        p.ok(&["--store", "copy.redb", "log", "--json"]),
        p.ok(&["log", "--json"])
    );
    p.ok(&["add", "--role", "assistant", "hi"]);
    assert_snapshot!(p.run(&["push", "copy.redb"]), @"
        exit: 0
        --- stdout
        main: 5e8c0f8a1e -> d3fb6a5e96
        side: up to date at c19262df75
        sent 1 commit(s) and 1 blob(s)
        ");
    assert_snapshot!(p.run(&["push", "copy.redb", "main", "--json"]), @r#"
        exit: 0
        --- stdout
        {
          "branches": [
            {
              "name": "main",
              "old": "d3fb6a5e9626479e0daec8e7178f40b3f356f2a62e8e431479cc6357d29e6d53",
              "new": "d3fb6a5e9626479e0daec8e7178f40b3f356f2a62e8e431479cc6357d29e6d53",
              "up_to_date": true,
              "forced": false
            }
          ],
          "commits": 0,
          "blobs": 0,
          "settings": false
        }
        "#);
    // The copy kept the counts the sender keeps for its tips, and they check out.
    assert_snapshot!(p.run(&["--store", "copy.redb", "fsck"]), @"
        exit: 0
        --- stdout
        checked 4 commits, 4 blobs, 0 chunks (382 bytes), 2 branches, 4 reflog entries; counts of 1 branch replayed
        ");
}

/// Both sides moved: refused with both tips named, nothing moved; --force moves it and the
/// old tip stays in the receiver's reflog.
#[test]
fn a_diverged_branch_is_refused_until_forced() {
    let p = origin();
    p.ok(&["clone", ".tract/store.redb", "copy.redb"]);
    p.ok(&["--store", "copy.redb", "add", "only in the copy"]);
    p.ok(&["add", "only in the origin"]);
    let before = p.ok(&["--store", "copy.redb", "log", "--json"]);
    assert_snapshot!(p.run(&["push", "copy.redb"]), @"
        exit: 5
        --- stderr
        error: branch 'main' has diverged: the receiver is at 0afeb39348 and the sender at 81cfa4df31; neither contains the other (force to move it, the old tip stays in the reflog)
        hint: nothing was moved: merge the two first, or pass --force (the receiver's old tip stays in its reflog)
        ");
    assert_eq!(p.ok(&["--store", "copy.redb", "log", "--json"]), before);
    assert_snapshot!(p.run(&["push", "copy.redb", "--force"]), @"
        exit: 0
        --- stdout
        main: 0afeb39348 -> 81cfa4df31 (forced; 0afeb39348 stays in the reflog)
        side: up to date at c19262df75
        sent 1 commit(s) and 1 blob(s)
        ");
    assert_snapshot!(p.run(&["--store", "copy.redb", "reflog", "main"]), @"
        exit: 0
        --- stdout
        81cfa4df31 main@{0}: push from [DIR]/.tract/store.redb (was 0afeb39348)
        0afeb39348 main@{1}: append (was 5e8c0f8a1e)
        5e8c0f8a1e main@{2}: clone from .tract/store.redb (was (none))
        ");
}

/// Pull brings chosen branches (and the policy with --settings) into this store.
#[test]
fn pull_brings_a_chosen_branch_and_the_settings() {
    let p = origin();
    p.ok(&["config", "tool-summarization", "--auto-threshold", "500"]);
    let other = Project::new();
    let from = p.store();
    let from = from.to_str().unwrap();
    assert_snapshot!(other.run(&["pull", from, "side", "--settings"]), @"
        exit: 0
        --- stdout
        side: new branch at c19262df75
        sent 3 commit(s) and 3 blob(s), and the settings
        ");
    assert_snapshot!(other.run(&["branch"]), @"
        exit: 0
        --- stdout
          side c19262df75      3 msgs       17 tok  2026-01-01T00:00:00Z
        ");
    assert_eq!(
        other.ok(&["config", "tool-summarization"]),
        p.ok(&["config", "tool-summarization"])
    );
}

/// Bad input: a branch the sender does not have, a receiver that is not a store or not there,
/// a clone onto an existing file, a URL scheme tract does not know.
#[test]
fn bad_sync_input_is_one_error_line_and_changes_nothing() {
    let p = origin();
    std::fs::write(p.path().join("notes.txt"), "hello").unwrap();
    assert_snapshot!(p.fails(&["pull", ".tract/store.redb", "nope"]), @"
        exit: 3
        --- stderr
        error: branch 'nope' not found
        hint: `tract branch` lists branches
        ");
    assert_snapshot!(p.fails(&["push", "notes.txt"]), @"
        exit: 4
        --- stderr
        error: notes.txt is not a tract store: the file does not start with a redb header
        hint: pass --store with a tract store (a file or a postgresql:// URL), or run `tract init`
        ");
    assert_eq!(
        std::fs::read_to_string(p.path().join("notes.txt")).unwrap(),
        "hello"
    );
    assert_snapshot!(p.fails(&["push", "missing.redb"]), @"
        exit: 3
        --- stderr
        error: missing.redb: no tract store here
        ");
    assert!(!p.path().join("missing.redb").exists());
    assert_snapshot!(p.fails(&["clone", ".tract/store.redb", "notes.txt"]), @"
        exit: 4
        --- stderr
        error: invalid input: notes.txt exists; clone into a new file
        ");
    assert_snapshot!(p.fails(&["push", "redis://localhost/0"]), @"
        exit: 4
        --- stderr
        error: invalid input: unknown store scheme 'redis://': a store is a file path or a postgresql:// URL
        ");
}

/// `tract pull --help` spoke of push: "the branches to send", "send the store's settings".
/// Each option is said from the receiving side.
#[test]
fn pull_help_speaks_of_receiving() {
    let p = Project::new();
    let help = p.ok(&["pull", "--help"]);
    let options = &help[help.find("Arguments:").unwrap()..];
    assert_snapshot!(options, @"
    Arguments:
      <SRC>        The sending store: a file or a postgresql:// URL
      [BRANCH]...  The branches to receive (default: every branch)

    Options:
          --force             Move a branch of this store that has diverged; its old tip stays in the
                              reflog
          --store <PATH|URL>  The store: a file, or a
                              postgresql://user:password@host:port/db[?schema=NAME] URL (default:
                              .tract/store.redb here or in a parent directory) [env: TRACT_STORE=]
          --branch <NAME>     Work on this branch instead of the current one (HEAD), which stays where
                              it is; the branch is created by its first message [env: TRACT_BRANCH=]
          --settings          Take the sending store's settings (the tool-summarization and retention
                              policies) in place of this store's
          --json              The report as JSON
      -h, --help              Print help
    ");
    assert!(!help.contains("send the store"), "{help}");
}
