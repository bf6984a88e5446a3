//! `tract redact` and `tract gc`: removing content for good, and what nothing reaches.

use crate::common::Project;
use insta::assert_snapshot;

/// A secret in a tool result: redacted, the placeholder in its place, ids unchanged, the file
/// compacted so no freed page keeps it; bad input changes nothing.
#[test]
fn a_redacted_secret_is_gone_from_the_file_and_ids_stay() {
    let p = Project::new();
    // What scrubbing missed (here: it is off) is what a person redacts.
    p.ok(&["config", "secrets", "--off"]);
    p.ok(&["add", "read the deploy config"]);
    p.ok(&[
        "add",
        "--json",
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"cat","arguments":"{}"}]}"#,
    ]);
    let leaked = p.ok(&[
        "add",
        "--role",
        "tool",
        "--name",
        "cat",
        "--tool-call-id",
        "c1",
        "TOKEN=ghp_PLANTED0123456789",
    ]);
    let leaked = leaked.trim();
    p.ok(&["add", "--role", "assistant", "Configured."]);
    let ids = p.ok(&["log", "--oneline"]);
    assert_snapshot!(p.run(&["redact", leaked, "--reason", "a GitHub token"]), @"
        exit: 0
        --- stdout
        redacted the message of ba8ed54d6e (blob 981d23e81e); ids are unchanged, views show a placeholder
        ");
    assert_snapshot!(p.run(&["show", leaked]), @"
        exit: 0
        --- stdout
        redacted 2026-01-01T00:00:00.000000Z: a GitHub token
        commit  ba8ed54d6efd775470a2622df4b7a39c73956238fd56fe60d2b918dfbdcfcbb0
        op      append
        parent  c550a3f912
        date    2026-01-01T00:00:00.000002Z
        role    tool  name cat  tool_call_id c1
        tokens  12

        [tract] This content was redacted.
        ");
    assert_eq!(
        p.ok(&["log", "--oneline"]).lines().count(),
        ids.lines().count()
    );
    assert!(!String::from_utf8_lossy(&std::fs::read(p.store()).unwrap()).contains("ghp_PLANTED"));
    assert_snapshot!(p.run(&["fsck"]), @"
        exit: 0
        --- stdout
        checked 4 commits, 4 blobs, 0 chunks (463 bytes), 1 branch, 4 reflog entries; counts of 0 branches replayed
        redacted (payload removed for good, ids kept): 981d23e81e
        ");
    let report = crate::common::json(&p.ok(&["fsck", "--json"]));
    let redacted = report["redacted"].as_array().unwrap();
    assert_eq!(redacted.len(), 1);
    assert!(redacted[0].as_str().unwrap().starts_with("981d23e81e"));
    assert_snapshot!(p.fails(&["redact", leaked, "--reason", "again"]), @"
        exit: 5
        --- stderr
        error: invalid operation: the message of ba8ed54d6e was redacted already (a GitHub token)
        ");
    assert_snapshot!(p.fails(&["redact", leaked, "--reason", " "]), @"
        exit: 4
        --- stderr
        error: invalid input: a redaction needs a reason (it is kept with the tombstone)
        ");
}

/// gc keeps what the reflog still names within the grace period, and with --prune-now
/// removes a deleted branch's commits; fsck stays clean.
#[test]
fn gc_removes_a_deleted_branch_after_its_grace_period() {
    let p = Project::new();
    p.ok(&["add", "shared"]);
    p.ok(&["branch", "doomed"]);
    p.ok(&["--branch", "doomed", "add", "only on the doomed branch"]);
    p.ok(&["branch", "-d", "doomed"]);
    assert_snapshot!(p.run(&["gc"]), @"
        exit: 0
        --- stdout
        removed 0 commits, 0 blobs, 0 chunks (0 bytes), 0 view checkpoints; expired 0 reflog entries
        ");
    assert_snapshot!(p.run(&["gc", "--prune-now", "--compact"]), @"
        exit: 0
        --- stdout
        removed 1 commit, 1 blob, 0 chunks (123 bytes), 0 view checkpoints; expired 4 reflog entries
        compacted the store
        ");
    assert_snapshot!(p.run(&["fsck"]), @"
        exit: 0
        --- stdout
        checked 1 commit, 1 blob, 0 chunks (72 bytes), 1 branch, 1 reflog entry; counts of 1 branch replayed
        ");
    // What is left of the branch: its deletion, so that it stays deleted (`tract capture`).
    assert_snapshot!(p.run(&["reflog", "doomed"]), @"
        exit: 0
        --- stdout
        (none) doomed@{0}: branch: deleted (its commits expired)
        ");
    assert_snapshot!(p.run(&["log", "--oneline"]), @"
        exit: 0
        --- stdout
        1236fd4b58 shared
        ");
}

/// A project whose second message holds a token, compressed with the first into a summary
/// that repeats it: the project, the message's id and the summary's.
fn secret_and_its_summary() -> (Project, String, String) {
    let p = Project::new();
    p.ok(&["add", "read the deploy config"]);
    let leaked = p.ok(&[
        "add",
        "--role",
        "assistant",
        "the token is ghp_PLANTED0123456789",
    ]);
    let leaked = leaked.trim().to_string();
    p.ok(&["add", "thanks"]);
    let first = p.hash("HEAD~2");
    p.ok(&[
        "compress",
        "--commits",
        &first,
        &leaked,
        "--content",
        "the user read a config holding ghp_PLANTED0123456789",
    ]);
    let summary = p.hash("HEAD");
    (p, leaked, summary)
}

/// A compression that summarized a secret is named when the secret is redacted, listed by
/// fsck, and redacted with it by `--follow`.
#[test]
fn redact_names_the_summaries_made_from_a_secret_and_follow_removes_them() {
    let (p, leaked, summary) = secret_and_its_summary();
    let out = p
        .run(&[
            "redact",
            &leaked,
            "--reason",
            "a GitHub token",
            "--no-compact",
        ])
        .to_string();
    assert!(out.contains(&summary[..10]), "{out}");
    assert!(out.contains("--follow"), "{out}");
    let report = crate::common::json(&p.ok(&["fsck", "--json"]));
    assert_eq!(
        report["derived_from_redacted"],
        serde_json::json!([summary])
    );
    assert!(p.ok(&["fsck"]).contains("made from redacted content"));
    // The summary still holds the token until it is redacted in turn.
    assert!(p.ok(&["compile"]).contains("ghp_PLANTED"));
    p.ok(&[
        "redact",
        &summary,
        "--reason",
        "holds the token",
        "--no-compact",
    ]);
    assert!(!p.ok(&["compile"]).contains("ghp_PLANTED"));
    let report = crate::common::json(&p.ok(&["fsck", "--json"]));
    assert_eq!(report["derived_from_redacted"], serde_json::json!([]));

    // With --follow, both go in one redaction.
    let (p, leaked, summary) = secret_and_its_summary();
    let out = p.ok(&["redact", &leaked, "--reason", "a GitHub token", "--follow"]);
    assert!(out.contains("redacted with it"), "{out}");
    assert!(out.contains(&summary[..10]), "{out}");
    assert!(!p.ok(&["compile"]).contains("ghp_PLANTED"));
    assert!(!String::from_utf8_lossy(&std::fs::read(p.store()).unwrap()).contains("ghp_PLANTED"));
}

/// `redact --json` is the report (Python's `redact()` returns the same): the commit, its blob,
/// when and why, and the commits made from the removed content.
#[test]
fn redact_json_is_the_report() {
    let (p, leaked, summary) = secret_and_its_summary();
    let report = crate::common::json(&p.ok(&[
        "redact",
        &leaked,
        "--reason",
        "a GitHub token",
        "--no-compact",
        "--json",
    ]));
    let keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "commit",
            "blob",
            "redacted_at",
            "redacted_at_us",
            "reason",
            "chunks_removed",
            "derived",
            "followed"
        ]
    );
    // `add` printed the short id.
    assert!(report["commit"].as_str().unwrap().starts_with(&leaked));
    assert_eq!(report["reason"], "a GitHub token");
    assert!(
        report["redacted_at"]
            .as_str()
            .unwrap()
            .starts_with("2026-01-01T00:00:00.")
    );
    assert_eq!(report["derived"], serde_json::json!([summary]));
    assert_eq!(report["followed"], serde_json::json!([]));
}
