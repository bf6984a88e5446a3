//! `tract status`: where HEAD is and what the model would see.

use crate::common::{Project, a_session, json, tool_project};
use insta::assert_snapshot;

/// A new store: on main, no commits yet, nothing in view.
#[test]
fn status_of_a_new_store() {
    let p = Project::new();
    assert_snapshot!(p.run(&["status"]), @"
        exit: 0
        --- stdout
        On branch main
        head      (no commits yet)
        messages  0
        tokens    3
        store     [DIR]/.tract/store.redb
        ");
}

/// The branch, the head, the messages and tokens in view, and the store's path, as text or
/// JSON.
#[test]
fn status_of_a_session() {
    let p = a_session();
    assert_snapshot!(p.run(&["status"]), @"
        exit: 0
        --- stdout
        On branch main
        head      501f6a52ff
        messages  4
        tokens    47
        store     [DIR]/.tract/store.redb
        ");
    let run = p.run(&["status", "--json"]);
    assert_snapshot!(run, @r#"
        exit: 0
        --- stdout
        {
          "branch": "main",
          "head": "501f6a52ffe0a11242de7104f848704a9938fd69d234e5aca7d636c87f0c3001",
          "detached": false,
          "messages": 4,
          "token_count": 47,
          "unanswered_tool_calls": 0,
          "reused_call_ids": 0,
          "path": "[DIR]/.tract/store.redb"
        }
        "#);
    let status = json(&run.stdout);
    assert_eq!(status["branch"], "main");
    assert_eq!(status["messages"], 4);
    assert!(status["token_count"].as_u64().unwrap() > 10);
}

/// When the current branch has no commits and others have (sessions on branches of their
/// own, as after a capture, an import or a push), the commands whose answer is then empty say
/// why on standard error, and their standard output stays as it was (valid JSON with
/// `--json`); nothing is said when no other branch has commits, nor by `search --all`.
#[test]
fn an_empty_current_branch_says_where_the_sessions_are() {
    let p = Project::new();
    let quiet: &[&[&str]] = &[&["log"], &["search", "deploy"], &["reflog"]];
    for args in quiet {
        assert!(p.run(args).stderr.is_empty(), "tract {}", args.join(" "));
    }
    assert!(p.run(&["status"]).stderr.is_empty());
    p.ok(&["--branch", "session-1", "add", "deploy the app"]);
    p.ok(&["--branch", "session-2", "add", "deploy again"]);
    assert_snapshot!(p.run(&["log"]), @"
        exit: 0
        --- stderr
        note: main has no commits; 2 other branches (`tract branch`), `tract log BRANCH` shows one
        ");
    assert_snapshot!(p.run(&["search", "deploy"]), @"
        exit: 0
        --- stderr
        note: main has no commits; 2 other branches (`tract branch`), `--all` searches them
        ");
    assert_snapshot!(p.run(&["reflog"]), @"
        exit: 0
        --- stderr
        note: main has no commits; 2 other branches (`tract branch`), `tract reflog BRANCH` shows one's moves
        ");
    assert_snapshot!(p.run(&["status"]), @"
        exit: 0
        --- stdout
        On branch main
        head      (no commits yet)
        messages  0
        tokens    3
        store     [DIR]/.tract/store.redb
        --- stderr
        note: main has no commits; 2 other branches (`tract branch`), `tract switch BRANCH` goes to one
        ");
    let run = p.run(&["status", "--json"]);
    assert_snapshot!(run, @r#"
        exit: 0
        --- stdout
        {
          "branch": "main",
          "head": null,
          "detached": false,
          "messages": 0,
          "token_count": 3,
          "unanswered_tool_calls": 0,
          "reused_call_ids": 0,
          "path": "[DIR]/.tract/store.redb"
        }
        --- stderr
        note: main has no commits; 2 other branches (`tract branch`), `tract switch BRANCH` goes to one
        "#);
    assert_eq!(json(&run.stdout)["messages"], 0);
    let run = p.run(&["search", "--json", "deploy"]);
    assert_eq!(json(&run.stdout), json("[]"));
    assert!(!run.stderr.is_empty());
    // --all searches them: nothing to say.
    assert_snapshot!(p.run(&["search", "--all", "deploy"]), @"
        exit: 0
        --- stdout
        d50e20f6e7 user      -            deploy again  (session-2)
        24bb17f59c user      -            deploy the app  (session-1)
        ");
    // A branch with commits says nothing.
    assert!(p.run(&["--branch", "session-1", "log"]).stderr.is_empty());
}

/// A call without a result is counted and warned about.
#[test]
fn status_warns_of_calls_without_results() {
    let p = tool_project();
    assert_snapshot!(p.run(&["status"]), @"
        exit: 0
        --- stdout
        On branch main
        head      a029acc7b0
        messages  7
        tokens    104
        store     [DIR]/.tract/store.redb
        warning: 1 tool call has no result; compile sends a synthetic error result for it
        ");
}

/// The library's `run_with` writes exactly what the binary prints: output goes through one
/// place, so a program (or a test) can run a command and capture it.
#[test]
fn run_with_captures_what_the_binary_prints() {
    let p = a_session();
    let store = p.store();
    let store = store.to_str().unwrap();
    for args in [
        vec!["log"],
        vec!["status", "--json"],
        vec!["show", "HEAD~1"],
    ] {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let all: Vec<&str> = ["tract", "--store", store]
            .into_iter()
            .chain(args.clone())
            .collect();
        assert_eq!(tract_cli::run_with(all, &mut out, &mut err), 0, "{args:?}");
        let binary = p.run(&[&["--store", store][..], &args[..]].concat());
        assert_eq!(String::from_utf8(out).unwrap(), binary.stdout, "{args:?}");
        assert!(err.is_empty());
    }
    // A usage error: exit 2, clap's message without colour on a captured stream.
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(
        tract_cli::run_with(["tract", "log", "--bogus"], &mut out, &mut err),
        2
    );
    let err = String::from_utf8(err).unwrap();
    assert!(
        err.starts_with("error: unexpected argument '--bogus'"),
        "{err}"
    );
    // A failed command: its category's exit code (3: not found), its error and hint, and
    // nothing on standard output.
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tract_cli::run_with(
        ["tract", "--store", store, "show", "nope"],
        &mut out,
        &mut err,
    );
    assert_eq!(code, 3);
    assert!(out.is_empty());
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "error: commit or branch 'nope' not found\nhint: `tract log` lists commits; `tract branch` lists branches\n"
    );
}
