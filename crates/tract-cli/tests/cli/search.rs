//! `tract search`: message text, tool calls and tool results, case-insensitive.

use crate::common::{assert_run_snapshot, json, len, tool_project};
use insta::assert_snapshot;

/// A query matches content, calls' arguments and results, whatever the case; each hit shows
/// the id, role, tool and the matching line.
#[test]
fn search_finds_text_calls_and_results() {
    let p = tool_project();
    let hits = p.run(&["search", "database_url"]);
    assert_snapshot!(hits, @r#"
        exit: 0
        --- stdout
        4453550985 user      -            find DATABASE_URL
        f40cd54f56 assistant grep,read_f… grep({"p":"DATABASE_URL"})
        f89782dba3 tool      read_file    DATABASE_URL = env()
        4994bf4ee3 tool      grep         cfg.py:1: DATABASE_URL = env()
        "#);
    assert_eq!(hits.stdout.lines().count(), 4, "{hits}");
    let grep_hits = p.run(&["search", "DATABASE_URL", "--tool", "grep", "--json"]);
    assert_run_snapshot!("grep_hits_json", grep_hits);
    let grep_hits = json(&grep_hits.stdout);
    assert_eq!(
        grep_hits.as_array().unwrap().len(),
        2,
        "the call and its result"
    );
    assert!(
        grep_hits[1]["snippet"]
            .as_str()
            .unwrap()
            .contains("DATABASE_URL")
    );
}

/// A text edited away is not found in the view, but is with `--history`.
#[test]
fn search_history_finds_edited_text() {
    let p = tool_project();
    let grep_hits = json(&p.ok(&["search", "DATABASE_URL", "--tool", "grep", "--json"]));
    let grep_id = grep_hits[1]["commit_hash"].as_str().unwrap()[..12].to_string();
    p.ok(&["edit", &grep_id, "trimmed"]);
    assert_snapshot!(p.run(&["search", "old.py"]), @"exit: 0");
    assert_eq!(len(&p.ok(&["search", "old.py", "--json"])), 0);
    assert_snapshot!(p.run(&["search", "old.py", "--history"]), @"
        exit: 0
        --- stdout
        4994bf4ee3 tool      grep         old.py:9: DATABASE_URL
        ");
    assert_eq!(len(&p.ok(&["search", "old.py", "--history", "--json"])), 1);
}

/// `--regex` takes a regular expression (a bad one is a one-line error); `--role` keeps one
/// role.
#[test]
fn search_by_regex_and_role() {
    let p = tool_project();
    let hits = p.run(&["search", "fail(ed)?", "--regex", "--role", "tool"]);
    assert_snapshot!(hits, @"
        exit: 0
        --- stdout
        3b8efa5893 tool      bash         1 failed
        ");
    assert_eq!(hits.stdout.lines().count(), 1);
    let err = p.fails(&["search", "(", "--regex"]);
    assert_snapshot!(err, @"
        exit: 4
        --- stderr
        error: invalid input: invalid regular expression '(': unclosed group
        ");
    assert_eq!(err.stderr.lines().count(), 1, "{err}");
}
