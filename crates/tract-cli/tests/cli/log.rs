//! `tract log`: history newest first, as lines, one-liners or JSON, filtered by role or tool.

use crate::common::{Project, a_session, json, tool_project};
use insta::assert_snapshot;

/// One line a commit, newest first: short id, op, role, tool, tokens and the first line of the
/// content only; `-n` limits the count.
#[test]
fn log_shows_one_line_per_commit_newest_first() {
    let p = a_session();
    let log = p.run(&["log"]);
    assert_snapshot!(log, @r#"
        exit: 0
        --- stdout
        501f6a52ff append tool      grep             20  config.py:1: CFG=1
        0b0f62b55f append assistant grep              9  grep({"p":"cfg"})
        9d6c995d1a append user      -                 8  Where is the config?
        e12e09c5c7 append system    -                 7  You are terse.
        "#);
    let first = log.stdout.lines().next().unwrap();
    assert!(first.contains("config.py:1: CFG=1"), "{first}");
    assert!(!first.contains("X=2"), "first line only: {first}");
    let two = p.run(&["log", "-n", "2"]);
    assert_snapshot!(two, @r#"
        exit: 0
        --- stdout
        501f6a52ff append tool      grep             20  config.py:1: CFG=1
        0b0f62b55f append assistant grep              9  grep({"p":"cfg"})
        "#);
    assert_eq!(two.stdout.lines().count(), 2);
    assert_snapshot!(p.run(&["log", "--oneline", "HEAD~2"]), @"
        exit: 0
        --- stdout
        9d6c995d1a Where is the config?
        e12e09c5c7 You are terse.
        ");
}

/// `tract log` at a terminal (a real one: `script` runs it in a pseudo-terminal) has a header
/// row naming its columns; piped, as scripts read it, the same lines without it. `--oneline`
/// and `--json` have none either way.
#[test]
fn log_at_a_terminal_has_a_header_row() {
    let p = a_session();
    let at_terminal = |args: &str| crate::common::at_terminal(p.path(), args);
    let log = at_terminal("log");
    assert_snapshot!(log, @r#"
        commit     op     role      tools        tokens  message
        501f6a52ff append tool      grep             20  config.py:1: CFG=1
        0b0f62b55f append assistant grep              9  grep({"p":"cfg"})
        9d6c995d1a append user      -                 8  Where is the config?
        e12e09c5c7 append system    -                 7  You are terse.
        "#);
    assert_eq!(
        log.split_once('\n').unwrap().1,
        p.ok(&["log"]),
        "the lines are the same"
    );
    assert_eq!(at_terminal("log --oneline"), p.ok(&["log", "--oneline"]));
}

/// An empty store has an empty log.
#[test]
fn an_empty_log_prints_nothing() {
    let p = Project::new();
    assert_snapshot!(p.run(&["log"]), @"exit: 0");
    assert_snapshot!(p.run(&["log", "--json"]), @"
        exit: 0
        --- stdout
        []
        ");
}

/// `--json` lists every commit, edits included, each naming what it edits.
#[test]
fn log_json_lists_every_commit() {
    let p = a_session();
    let id = p.ok(&["log", "--oneline", "-n", "1"])[..10].to_string();
    p.ok(&["edit", &id, "config.py:1"]);
    let entries = json(&p.ok(&["log", "--json"]));
    assert_eq!(entries.as_array().unwrap().len(), 5);
    assert_eq!(entries[0]["edit_target"].as_str().unwrap()[..10], *id);
    assert_snapshot!(p.run(&["log", "--json", "-n", "1"]), @r#"
        exit: 0
        --- stdout
        [
          {
            "commit_hash": "f8a23b35d569cc35f22b4e0024ca55c6644d98b0c4df4e699fa60bf36a7d0f85",
            "op": "edit",
            "parents": [
              "501f6a52ffe0a11242de7104f848704a9938fd69d234e5aca7d636c87f0c3001"
            ],
            "edit_target": "501f6a52ffe0a11242de7104f848704a9938fd69d234e5aca7d636c87f0c3001",
            "sources": [],
            "summarizer": null,
            "created_at": "2026-01-01T00:00:00.000004Z",
            "timestamp_us": 1767225600000004,
            "note": null,
            "blob_hash": "9fafef77bdc79082e00fdfa1340c3f92dc8497580a24169ce8f059e690be7526",
            "role": "tool",
            "content_type": "tool_result",
            "name": "grep",
            "tool_call_id": "c1",
            "is_error": false,
            "tool_calls": [],
            "tool_names": [
              "grep"
            ],
            "token_count": 7,
            "content": "config.py:1",
            "message": {
              "role": "tool",
              "content": "config.py:1",
              "name": "grep",
              "tool_call_id": "c1"
            },
            "current_hash": "f8a23b35d569cc35f22b4e0024ca55c6644d98b0c4df4e699fa60bf36a7d0f85"
          }
        ]
        "#);
}

/// `--tool` keeps the results of a tool and the messages that call it, `--role` one role; `-n`
/// counts what the filters keep; an unknown role is an error.
#[test]
fn log_filters_by_role_and_tool() {
    let p = tool_project();
    let bash = p.run(&["log", "--tool", "bash", "--oneline"]);
    assert_snapshot!(bash, @r#"
        exit: 0
        --- stdout
        3b8efa5893 1 failed
        7365ba8be3 bash({"cmd":"pytest"})
        "#);
    assert_eq!(bash.stdout.lines().count(), 2);
    let user = p.run(&["log", "--role", "user", "--oneline"]);
    assert_snapshot!(user, @"
        exit: 0
        --- stdout
        4453550985 find DATABASE_URL
        ");
    assert_eq!(user.stdout.lines().count(), 1);
    let tool = p.run(&["log", "--role", "tool", "-n", "2"]);
    assert_snapshot!(tool, @"
        exit: 0
        --- stdout
        3b8efa5893 append tool      bash              5  [error] 1 failed
        4994bf4ee3 append tool      grep             20  cfg.py:1: DATABASE_URL = env()
        ");
    assert_eq!(tool.stdout.lines().count(), 2);
    assert_snapshot!(p.fails(&["log", "--role", "robot"]), @"
        exit: 4
        --- stderr
        error: invalid input: unknown role 'robot' (expected system, user, assistant or tool)
        ");
}
