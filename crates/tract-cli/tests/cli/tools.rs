//! `tract tools calls|results|turns`: the tool activity of the current view.

use crate::common::{Project, assert_run_snapshot, json, len, tool_project};
use insta::assert_snapshot;

/// Results are listed in view order, filtered by tool name or by position (`--after`); a
/// filter that matches nothing gives an empty list.
#[test]
fn tools_results_in_view_order() {
    let p = tool_project();
    let all = p.run(&["tools", "results"]);
    assert_snapshot!(all, @"
        exit: 0
        --- stdout
        f89782dba3 append tool      read_file         8  DATABASE_URL = env()
        4994bf4ee3 append tool      grep             20  cfg.py:1: DATABASE_URL = env()
        3b8efa5893 append tool      bash              5  [error] 1 failed
        ");
    assert_eq!(all.stdout.lines().count(), 3);
    assert_eq!(len(&p.ok(&["tools", "results", "--json"])), 3);
    let grep = json(&p.ok(&["tools", "results", "--name", "grep", "--json"]));
    assert_eq!(grep.as_array().unwrap().len(), 1);
    assert_eq!(grep[0]["message"]["tool_call_id"], "g1");
    let grep_id = grep[0]["commit_hash"].as_str().unwrap()[..12].to_string();
    let after = p.run(&["tools", "results", "--after", &grep_id]);
    assert_snapshot!(after, @"
        exit: 0
        --- stdout
        3b8efa5893 append tool      bash              5  [error] 1 failed
        ");
    assert_eq!(
        after.stdout.lines().count(),
        1,
        "only the bash result follows"
    );
    assert_snapshot!(p.run(&["tools", "results", "--name", "nope", "--json"]), @"
        exit: 0
        --- stdout
        []
        ");
}

/// Calls are the assistant commits that call tools; turns pair each call with its result and
/// state (`ok`, `error`, `pending`), duration, result tokens and bytes.
#[test]
fn tools_calls_and_turns() {
    let p = tool_project();
    let calls = p.run(&["tools", "calls"]);
    assert_snapshot!(calls, @r#"
        exit: 0
        --- stdout
        f40cd54f56 append assistant grep,read_f…     18  grep({"p":"DATABASE_URL"})
        7365ba8be3 append assistant bash              9  bash({"cmd":"pytest"})
        a029acc7b0 append assistant edit_file         6  edit_file({})
        "#);
    assert_eq!(calls.stdout.lines().count(), 3);
    let table = p.run(&["tools", "turns"]);
    assert_snapshot!(table, @r#"
        exit: 0
        --- stdout
        f40cd54f56 grep         ok          0.0 ms      20 tok       53 B  {"p":"DATABASE_URL"}
                   read_file    ok          0.0 ms       8 tok       20 B  {"path":"cfg.py"}
        7365ba8be3 bash         error       0.0 ms       5 tok        8 B  {"cmd":"pytest"}
        a029acc7b0 edit_file    pending          -       - tok        - B  {}
        "#);
    assert!(
        table.stdout.contains("pending") && table.stdout.contains("error"),
        "{table}"
    );
    let turns = json(&p.ok(&["tools", "turns", "--json"]));
    let states: Vec<&str> = turns
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| {
            t["calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["state"].as_str().unwrap())
        })
        .collect();
    assert_eq!(states, ["ok", "ok", "error", "pending"]);
    assert_eq!(
        turns[0]["tool_names"],
        serde_json::json!(["grep", "read_file"])
    );
    assert!(turns[0]["calls"][0]["duration_ms"].is_number());
    assert_run_snapshot!(
        "turns_json",
        p.run(&["tools", "turns", "--json", "--name", "bash"])
    );
}

/// A call's duration reads in milliseconds under a second, in seconds from one (`1.5 s`, not
/// `1500.0 ms`), then in minutes and seconds.
#[test]
fn tool_durations_read_in_the_unit_that_fits() {
    let p = Project::new();
    for (id, called, answered) in [
        ("c1", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.350Z"),
        ("c2", "2026-01-01T00:01:00Z", "2026-01-01T00:01:01.5Z"),
        ("c3", "2026-01-01T00:02:00Z", "2026-01-01T00:04:05Z"),
    ] {
        let calls = format!(r#"[{{"id":"{id}","name":"grep","arguments":{{}}}}]"#);
        let call = ["add", "--role", "assistant", "--tool-calls", &calls, ""];
        let result = [
            "add",
            "--role",
            "tool",
            "--tool-call-id",
            id,
            "--name",
            "grep",
            "x",
        ];
        for (args, at) in [(&call[..], called), (&result[..], answered)] {
            let run = p.run_env(args, None, &[("TRACT_TIMESTAMP", at)]);
            assert_eq!(run.code, Some(0), "{run}");
        }
    }
    assert_snapshot!(p.run(&["tools", "turns"]), @"
        exit: 0
        --- stdout
        3d8d624ecb grep         ok        350.0 ms       4 tok        1 B  {}
        c8688184cc grep         ok           1.5 s       4 tok        1 B  {}
        3715f99040 grep         ok       2 min 5 s       4 tok        1 B  {}
        ");
}

/// An edited result is listed once, at its position, with the content in view and the edit's
/// id; `show --history` has both versions.
#[test]
fn an_edited_result_is_listed_once() {
    let p = tool_project();
    let grep = json(&p.ok(&["tools", "results", "--name", "grep", "--json"]));
    let grep_id = grep[0]["commit_hash"].as_str().unwrap()[..12].to_string();
    p.ok(&["edit", &grep_id, "--content", "cfg.py:1"]);
    let line = p.run(&["tools", "results", "--name", "grep"]);
    assert_snapshot!(line, @"
        exit: 0
        --- stdout
        4994bf4ee3 append tool      grep              7  cfg.py:1  (edited: c15c9037d8)
        ");
    assert_eq!(line.stdout.lines().count(), 1);
    assert!(
        line.stdout.contains("cfg.py:1") && line.stdout.contains("(edited:"),
        "{line}"
    );
    assert_eq!(len(&p.ok(&["show", "--history", "--json", &grep_id])), 2);
}

/// A position that does not exist, or `--after` where it does not apply, is an error.
#[test]
fn bad_tool_queries_are_errors() {
    let p = tool_project();
    assert_snapshot!(p.fails(&["tools", "results", "--after", "ffffffffff"]), @"
        exit: 3
        --- stderr
        error: commit or branch 'ffffffffff' not found
        hint: `tract log` lists commits; `tract branch` lists branches
        ");
    assert_snapshot!(p.fails(&["tools", "calls", "--after", "HEAD"]), @"
        exit: 4
        --- stderr
        error: invalid input: --after and --before apply to `tract tools results`
        ");
}
