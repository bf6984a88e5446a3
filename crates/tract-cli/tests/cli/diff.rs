//! `tract diff`: two contexts compared as the model saw them, what one commit did to its view,
//! two histories; bad revisions.

use crate::common::Project;
use insta::assert_snapshot;

/// main and a fork of it that edited a shared message and went on its own way.
fn forked() -> Project {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "You are terse."]);
    p.ok(&["add", "Where is the config?"]);
    let answer = p.ok(&["add", "--role", "assistant", "In ./etc.\nUnder app/."]);
    p.ok(&["add", "And the logs?"]);
    p.ok(&["branch", "side"]);
    p.ok(&["add", "--role", "assistant", "In ./var/log."]);
    p.ok(&[
        "--branch",
        "side",
        "edit",
        answer.trim(),
        "In ./etc.\nUnder app/conf.",
    ]);
    p.ok(&[
        "--branch",
        "side",
        "add",
        "--role",
        "assistant",
        "Ask the admin.",
    ]);
    p
}

#[test]
fn diff_shows_what_differs_and_never_what_both_share() {
    let p = forked();
    assert_snapshot!(p.ok(&["diff", "main", "side"]), @"
        --- main (5 messages, 43 tokens)
        +++ side (5 messages, 43 tokens) (+0 tokens)
        they part after 2 messages; 1 only in main, 1 only in side, 1 changed
        - message 5 of main: fc203a4954 assistant (8 tokens)
        -   In ./var/log.
        + message 5 of side: b8a0dcee4e assistant (7 tokens)
        +   Ask the admin.
        ~ message 3 of main (03bd66e424, 10 tokens) is message 3 of side (e74419e6e5, 11 tokens)
         In ./etc.
        -Under app/.
        +Under app/conf.
    ");
    assert_snapshot!(p.ok(&["diff", "main", "side", "--stat"]), @"
        --- main (5 messages, 43 tokens)
        +++ side (5 messages, 43 tokens) (+0 tokens)
        they part after 2 messages; 1 only in main, 1 only in side, 1 changed
        - message 5 of main: fc203a4954 assistant (8 tokens)
        + message 5 of side: b8a0dcee4e assistant (7 tokens)
        ~ message 3 of main (03bd66e424, 10 tokens) is message 3 of side (e74419e6e5, 11 tokens)
    ");
    assert_snapshot!(p.ok(&["diff", "main", "side", "--history", "--stat"]), @"
        merge base ba9c3d1ea59481240129872225d4c15d33748b0b4950dbfc2d447bb3221b41af
        1 commit only in main
        2 commits only in side
    ");
    let json = crate::common::json(&p.ok(&["diff", "main", "side", "--json"]));
    assert_eq!(json["shared_prefix_count"], 2);
    assert_eq!(json["only_a"][0]["content"], "In ./var/log.");
    assert_eq!(json["only_b"][0]["content"], "Ask the admin.");
    assert_eq!(
        json["changed"][0]["b"]["content"],
        "In ./etc.\nUnder app/conf."
    );
    assert_eq!(json["a"]["message_count"], 5);
    assert!(json.get("commit").is_none());
}

#[test]
fn diff_of_one_commit_shows_what_a_compaction_dropped() {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "You are terse."]);
    let first = p.ok(&["add", "Where is the config?"]);
    let last = p.ok(&["add", "--role", "assistant", "In ./etc."]);
    p.ok(&["add", "Thanks."]);
    let range = format!("{}..{}", first.trim(), last.trim());
    p.ok(&[
        "compress",
        "--range",
        &range,
        "--content",
        "The config is in ./etc.",
    ]);
    assert_snapshot!(p.ok(&["diff", "HEAD"]), @"
        commit b6ab01ad0d5e2e1771b87fc32b35271bb2aa31190118013af7830b20a4da670e (compress)
        --- HEAD~1 (4 messages, 30 tokens)
        +++ HEAD (3 messages, 25 tokens) (-5 tokens)
        they part after 1 message; 2 only in HEAD~1, 1 only in HEAD, 0 changed
        - message 2 of HEAD~1: 9d6c995d1a user (8 tokens)
        -   Where is the config?
        - message 3 of HEAD~1: 97b09006d3 assistant (7 tokens)
        -   In ./etc.
        + message 2 of HEAD: b6ab01ad0d user (10 tokens)
        +   The config is in ./etc.
    ");
    let json = crate::common::json(&p.ok(&["diff", "HEAD", "--json"]));
    assert_eq!(json["commit"]["op"], "compress");
    assert_eq!(json["only_a"].as_array().unwrap().len(), 2);
}

#[test]
fn diff_of_bad_revisions_is_one_clear_line() {
    let p = forked();
    let before = p.state();
    assert_snapshot!(p.fails(&["diff", "main", "sied"]), @"
        exit: 3
        --- stderr
        error: branch 'sied' not found; did you mean 'side'?
        hint: `tract branch` lists branches
    ");
    assert_snapshot!(p.fails(&["diff", "main@{9}", "side"]), @"
        exit: 3
        --- stderr
        error: 'main@{9}' not found: the reflog of main has 5 entries (NAME@{0} to NAME@{4})
        hint: `tract reflog NAME` lists a ref's moves, newest first
    ");
    assert_snapshot!(p.fails(&["diff", "main@{x}"]), @"
        exit: 4
        --- stderr
        error: invalid input: 'main@{x}': @{N} takes a number of moves back
    ");
    assert_snapshot!(p.run(&["diff", "main", "--history"]), @"
        exit: 2
        --- stderr
        error: the following required arguments were not provided:
          <B>
        
        Usage: tract diff --history <A> <B>
        
        For more information, try '--help'.
    ");
    assert!(p.state() == before, "a diff changes nothing");
}
