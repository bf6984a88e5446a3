//! `tract push`, `tract pull` and `tract clone` between store files (the same commands on
//! PostgreSQL run in the core's suite and the Python tests).

use crate::common::{Project, at_terminal};
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
        sent 3 commits and 3 blobs, and the settings
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
        sent 1 commit and 1 blob
        ");
    assert_snapshot!(p.run(&["push", "copy.redb", "main", "--json"]), @r#"
        exit: 0
        --- stdout
        {
          "branches": [
            {
              "name": "main",
              "source": "main",
              "old": "d3fb6a5e9626479e0daec8e7178f40b3f356f2a62e8e431479cc6357d29e6d53",
              "new": "d3fb6a5e9626479e0daec8e7178f40b3f356f2a62e8e431479cc6357d29e6d53",
              "up_to_date": true,
              "forced": false,
              "ahead_of": null
            }
          ],
          "refused": [],
          "commits": 0,
          "blobs": 0,
          "settings": false
        }
        "#);
    // The copy counted each branch it received and checkpointed its view, and both check out.
    assert_snapshot!(p.run(&["--store", "copy.redb", "fsck"]), @"
        exit: 0
        --- stdout
        checked 4 commits, 4 blobs, 0 chunks (382 bytes), 2 branches, 4 reflog entries; counts of 2 branches replayed
        2 checkpoints of views read back and compared with a replay
        the journal holds 1 frame not yet folded into the store file, each checked
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
        --- stdout
        side: up to date at c19262df75
        main: refused, diverged (the receiver is at 0afeb39348, the sender at 81cfa4df31)
        sent 0 commits and 0 blobs
        --- stderr
        error: branch 'main' has diverged: the receiver is at 0afeb39348 and the sender at 81cfa4df31; neither contains the other
        hint: bring it in under another name and merge it: `tract pull copy.redb main:theirs/main`, then `tract merge theirs/main`, then `tract push copy.redb main`; or pass --force to move it anyway (the receiver's old tip stays in its reflog)
        ");
    assert_eq!(p.ok(&["--store", "copy.redb", "log", "--json"]), before);
    assert_snapshot!(p.run(&["push", "copy.redb", "--force"]), @"
        exit: 0
        --- stdout
        main: 0afeb39348 -> 81cfa4df31 (forced; 0afeb39348 stays in the reflog)
        side: up to date at c19262df75
        sent 1 commit and 1 blob
        ");
    assert_snapshot!(p.run(&["--store", "copy.redb", "reflog", "main"]), @"
        exit: 0
        --- stdout
        81cfa4df31 main@{0}: push from [DIR]/.tract/store.redb (was 0afeb39348)
        0afeb39348 main@{1}: append (was 5e8c0f8a1e)
        5e8c0f8a1e main@{2}: clone from .tract/store.redb (was (none))
        ");
}

/// The origin and a copy where main has diverged (a message on each side) and side moved on
/// only in the origin.
fn diverged() -> Project {
    let p = origin();
    p.ok(&["clone", ".tract/store.redb", "copy.redb"]);
    p.ok(&["--store", "copy.redb", "add", "only in the copy"]);
    p.ok(&["add", "only in the origin"]);
    p.ok(&["--branch", "side", "add", "more on side"]);
    p
}

/// One diverged branch does not hold the others back: side moves, main is refused by name
/// (exit 5, the report printed first), and the hint's commands, run as written, merge it;
/// then the push goes through.
#[test]
fn a_push_moves_what_fast_forwards_and_the_hint_merges_the_diverged_branch() {
    let p = diverged();
    assert_snapshot!(p.run(&["push", "copy.redb"]), @"
        exit: 5
        --- stdout
        side: c19262df75 -> 8ffe5093ad
        main: refused, diverged (the receiver is at 0afeb39348, the sender at 81cfa4df31)
        sent 1 commit and 1 blob
        --- stderr
        error: branch 'main' has diverged: the receiver is at 0afeb39348 and the sender at 81cfa4df31; neither contains the other (1 other branch moved)
        hint: bring it in under another name and merge it: `tract pull copy.redb main:theirs/main`, then `tract merge theirs/main`, then `tract push copy.redb main`; or pass --force to move it anyway (the receiver's old tip stays in its reflog)
        ");
    assert_snapshot!(p.run(&["--store", "copy.redb", "branch"]), @"
        exit: 0
        --- stdout
        * main 0afeb39348      3 msgs       19 tok  2026-01-01T00:00:00Z
          side 8ffe5093ad      4 msgs       23 tok  2026-01-01T00:00:00Z
        ");
    assert_snapshot!(p.run(&["push", "copy.redb", "--json"]), @r#"
        exit: 5
        --- stdout
        {
          "branches": [
            {
              "name": "side",
              "source": "side",
              "old": "8ffe5093adcbb58ecc94b5a487f8d2b502b00ba8db9224b1f2634c5ea8856e5b",
              "new": "8ffe5093adcbb58ecc94b5a487f8d2b502b00ba8db9224b1f2634c5ea8856e5b",
              "up_to_date": true,
              "forced": false,
              "ahead_of": null
            }
          ],
          "refused": [
            {
              "name": "main",
              "source": "main",
              "receiver": "0afeb3934887f504b6299c9b6059106ceef5dab985fe6b444e601dbac3ef59d9",
              "sender": "81cfa4df3119214e30a467c45f8b042e810170f1d187e43a7da75528736a76d4",
              "reason": "diverged"
            }
          ],
          "commits": 0,
          "blobs": 0,
          "settings": false
        }
        --- stderr
        error: branch 'main' has diverged: the receiver is at 0afeb39348 and the sender at 81cfa4df31; neither contains the other
        hint: bring it in under another name and merge it: `tract pull copy.redb main:theirs/main`, then `tract merge theirs/main`, then `tract push copy.redb main`; or pass --force to move it anyway (the receiver's old tip stays in its reflog)
        "#);
    // The hint, as written.
    assert_snapshot!(p.run(&["pull", "copy.redb", "main:theirs/main"]), @"
        exit: 0
        --- stdout
        main as theirs/main: new branch at 0afeb39348
        sent 1 commit and 1 blob
        ");
    assert_snapshot!(p.run(&["merge", "theirs/main"]), @"
        exit: 0
        --- stdout
        merged theirs/main (0afeb39348) into main as 8accc8d7c7: 1 message appended, 26 tokens in view
        ");
    // Pulling now: main contains the copy's tip, so it stays where it is, and that is no
    // refusal.
    assert_snapshot!(p.run(&["pull", "copy.redb"]), @"
        exit: 0
        --- stdout
        main: ahead at 8accc8d7c7 (it contains the sender's 0afeb39348)
        side: up to date at 8ffe5093ad
        sent 0 commits and 0 blobs
        ");
    assert_snapshot!(p.run(&["push", "copy.redb", "main"]), @"
        exit: 0
        --- stdout
        main: 0afeb39348 -> 8accc8d7c7
        sent 2 commits and 1 blob
        ");
}

/// The same from the other side: a pull moves side, refuses main, and `tract pull SRC
/// main:theirs/main` brings it in under another name for `tract merge`; on another branch the
/// hint's merge names the branch. `tract push DST B:theirs/B` sends a branch under another
/// name.
#[test]
fn a_pull_brings_a_diverged_branch_in_under_another_name() {
    let p = diverged();
    assert_snapshot!(p.run(&["--store", "copy.redb", "pull", ".tract/store.redb"]), @"
        exit: 5
        --- stdout
        side: c19262df75 -> 8ffe5093ad
        main: refused, diverged (the receiver is at 0afeb39348, the sender at 81cfa4df31)
        sent 1 commit and 1 blob
        --- stderr
        error: branch 'main' has diverged: the receiver is at 0afeb39348 and the sender at 81cfa4df31; neither contains the other (1 other branch moved)
        hint: bring it in under another name and merge it: `tract --store copy.redb pull .tract/store.redb main:theirs/main`, then `tract --store copy.redb merge theirs/main`; or pass --force to move it anyway (this store's old tip stays in its reflog)
        ");
    // The hint, as written.
    let pull = [
        "--store",
        "copy.redb",
        "pull",
        ".tract/store.redb",
        "main:theirs/main",
    ];
    assert_snapshot!(p.run(&pull), @"
        exit: 0
        --- stdout
        main as theirs/main: new branch at 81cfa4df31
        sent 1 commit and 1 blob
        ");
    assert_snapshot!(p.run(&["--store", "copy.redb", "merge", "theirs/main"]), @"
        exit: 0
        --- stdout
        merged theirs/main (81cfa4df31) into main as ed9bb06e9a: 1 message appended, 26 tokens in view
        ");
    assert_snapshot!(p.run(&["--store", "copy.redb", "push", ".tract/store.redb", "main"]), @"
        exit: 0
        --- stdout
        main: 81cfa4df31 -> ed9bb06e9a
        sent 2 commits and 1 blob
        ");
    // Refused on a branch that is not the current one: the merge names it.
    p.ok(&[
        "--store",
        "copy.redb",
        "--branch",
        "side",
        "add",
        "side in the copy",
    ]);
    p.ok(&["--branch", "side", "add", "side in the origin"]);
    let pull = ["--store", "copy.redb", "pull", ".tract/store.redb", "side"];
    assert_snapshot!(p.run(&pull), @"
        exit: 5
        --- stdout
        side: refused, diverged (the receiver is at b2a70b6612, the sender at e20be67607)
        sent 0 commits and 0 blobs
        --- stderr
        error: branch 'side' has diverged: the receiver is at b2a70b6612 and the sender at e20be67607; neither contains the other
        hint: bring it in under another name and merge it: `tract --store copy.redb pull .tract/store.redb side:theirs/side`, then `tract --store copy.redb --branch side merge theirs/side`; or pass --force to move it anyway (this store's old tip stays in its reflog)
        ");
    // Or the other side pushes it under another name.
    assert_snapshot!(p.run(&["push", "copy.redb", "side:theirs/side"]), @"
        exit: 0
        --- stdout
        side as theirs/side: new branch at e20be67607
        sent 1 commit and 1 blob
        ");
    let merge = [
        "--store",
        "copy.redb",
        "--branch",
        "side",
        "merge",
        "theirs/side",
    ];
    assert_snapshot!(p.run(&merge), @"
        exit: 0
        --- stdout
        merged theirs/side (e20be67607) into side as cf38e1dc2e: 1 message appended, 37 tokens in view
        ");
    // What SRC:DST cannot mean.
    assert_snapshot!(p.fails(&["push", "copy.redb", "+side:theirs/side"]), @"
        exit: 4
        --- stderr
        error: invalid input: '+side:theirs/side': a leading '+' (a forced refspec) is not supported; force the whole transfer instead
        ");
    assert_snapshot!(p.fails(&["push", "copy.redb", "main:x", "side:x"]), @"
        exit: 4
        --- stderr
        error: invalid input: two branches sent as 'x': 'main' and 'side'
        ");
}

/// A store that is not there or not a store, on either end, is named as the destination or
/// the source; a destination's hint is the `tract clone` that makes it, and a pull with no
/// store here is pointed at the `tract clone` that makes one.
#[test]
fn the_other_store_is_named_and_clone_is_suggested_where_it_helps() {
    let p = origin();
    std::fs::write(p.path().join("notes.txt"), "hello").unwrap();
    assert_snapshot!(p.fails(&["push", "missing.redb"]), @"
        exit: 3
        --- stderr
        error: the destination missing.redb is not a tract store: nothing is there
        hint: push sends to an existing store; `tract clone .tract/store.redb missing.redb` copies this one there
        ");
    assert_snapshot!(p.fails(&["push", "notes.txt"]), @"
        exit: 4
        --- stderr
        error: the destination notes.txt is not a tract store: the file does not start with a redb header
        hint: push sends to an existing store; `tract clone .tract/store.redb NEW.redb` copies this one into a new file
        ");
    assert_snapshot!(p.fails(&["pull", "missing.redb"]), @"
        exit: 3
        --- stderr
        error: the source missing.redb is not a tract store: nothing is there
        ");
    assert_snapshot!(p.fails(&["pull", "notes.txt"]), @"
        exit: 4
        --- stderr
        error: the source notes.txt is not a tract store: the file does not start with a redb header
        ");
    assert_snapshot!(p.fails(&["clone", "missing.redb", "new.redb"]), @"
        exit: 3
        --- stderr
        error: the source missing.redb is not a tract store: nothing is there
        ");
    assert!(!p.path().join("missing.redb").exists());
    assert!(!p.path().join("new.redb").exists());
    // The suggested clone, as written, makes the store the push wanted.
    assert_snapshot!(p.run(&["clone", ".tract/store.redb", "missing.redb"]), @"
        exit: 0
        --- stdout
        main: new branch at 5e8c0f8a1e
        side: new branch at c19262df75
        sent 3 commits and 3 blobs, and the settings
        ");
    let elsewhere = Project::empty();
    let from = p.store();
    let from = from.to_str().unwrap();
    assert_snapshot!(elsewhere.fails(&["pull", from]), @"
        exit: 3
        --- stderr
        error: no tract store found: none named (--store, TRACT_STORE), no .tract/store.redb in [DIR] or any parent directory, and no per-user store (neither XDG_DATA_HOME nor HOME is set)
        hint: `tract clone [DIR]/.tract/store.redb .tract/store.redb` copies it here (or `tract init`, then pull)
        ");
    assert_snapshot!(elsewhere.run(&["clone", from, ".tract/store.redb"]), @"
        exit: 0
        --- stdout
        main: new branch at 5e8c0f8a1e
        side: new branch at c19262df75
        sent 3 commits and 3 blobs, and the settings
        ");
    assert_snapshot!(elsewhere.run(&["pull", from]), @"
        exit: 0
        --- stdout
        main: up to date at 5e8c0f8a1e
        side: up to date at c19262df75
        sent 0 commits and 0 blobs
        ");
}

/// Commits enough for a push to take longer than the moment after which progress is drawn.
const MANY: usize = 24_000;

/// A push of many commits shows a progress bar on a terminal (standard error a tty), and
/// clears it; piped, nothing but the report.
#[test]
fn a_long_push_shows_progress_on_a_terminal_only() {
    let p = Project::new();
    // Enough to take longer than the moment after which progress is drawn.
    // 8,000 took under the 300 ms on a quiet fast machine; three times that does not.
    let messages: String = (0..MANY)
        .map(|i| format!("{{\"role\":\"user\",\"content\":\"message {i}\"}}\n"))
        .collect();
    p.ok_in(&["add", "--json", "-"], &messages);
    p.ok(&["--store", "copy.redb", "init"]);
    let piped = p.run(&["push", "copy.redb"]);
    assert_eq!((piped.code, piped.stderr.as_str()), (Some(0), ""));
    let tty = at_terminal(p.path(), "push copy.redb --force");
    assert!(tty.contains("main: up to date"), "{tty}");
    let tty = at_terminal(p.path(), "--store copy.redb pull .tract/store.redb");
    assert!(tty.contains("main: up to date"), "{tty}");
    // A new receiver: every commit to find and send.
    p.ok(&["--store", "fresh.redb", "init"]);
    let tty = at_terminal(p.path(), "push fresh.redb");
    assert!(tty.contains("sending "), "{tty}");
    assert!(tty.contains(&format!("/{MANY} commits")), "{tty}");
    assert!(tty.contains("main: new branch at"), "{tty}");
    // Cleared: after the last bar comes the erase of its line, then the report.
    let last_bar = tty.rfind(&format!("/{MANY} commits")).unwrap();
    assert!(tty[last_bar..].contains("\x1b[2K"), "{tty:?}");
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
        sent 3 commits and 3 blobs, and the settings
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
    // (What they say: the_other_store_is_named_and_clone_is_suggested_where_it_helps.)
    p.fails(&["push", "notes.txt"]);
    assert_eq!(
        std::fs::read_to_string(p.path().join("notes.txt")).unwrap(),
        "hello"
    );
    p.fails(&["push", "missing.redb"]);
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
      [BRANCH]...  The branches to receive (default: every branch); SRC:DST takes the sending store's
                   branch SRC as this store's DST (`main:theirs/main`, to merge it here)

    Options:
          --force             Move a branch of this store that has diverged; its old tip stays in the
                              reflog
          --store <PATH|URL>  The store: a file, or a
                              postgresql://user:password@host:port/db[?schema=NAME] URL. Without it (and
                              TRACT_STORE): .tract/store.redb here or in the nearest parent directory,
                              else the per-user store $XDG_DATA_HOME/tract/store.redb
                              (~/.local/share/tract/store.redb) when it exists [env: TRACT_STORE=]
          --branch <NAME>     Work on this branch instead of the current one (HEAD), which stays where
                              it is; the branch is created by its first message (said on standard
                              error). Refused by the commands that work on no branch (init, capture,
                              push, ...), which ignore TRACT_BRANCH [env: TRACT_BRANCH=]
          --settings          Take the sending store's settings (the tool-summarization, retention and
                              secrets policies) in place of this store's
          --json              The report as JSON
      -h, --help              Print help
    ");
    assert!(!help.contains("send the store"), "{help}");
}
