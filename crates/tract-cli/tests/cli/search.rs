//! `tract search`: ranked by relevance (the search index), or scanned with a regular
//! expression; in the view, in history, on one branch or all of them; filtered and paged.

use crate::common::{Project, Run, Template, assert_run_snapshot, exit, json, len, tool_project};
use insta::assert_snapshot;
use std::sync::OnceLock;

/// A failed deploy: a system prompt, the user's report, a bash call and its failed result, a
/// file read and what it read, and the assistant's answer (commits at 00:00:00.000000 to
/// .000006 of the fixed clock's day, one a microsecond).
pub(crate) fn deploy_session() -> Project {
    static TEMPLATE: Template = OnceLock::new();
    Project::with_messages(&TEMPLATE, || {
        [
            r#"{"role":"system","content":"You are a careful deploy agent."}"#,
            r#"{"role":"user","content":"The deploy failed again: connection refused by the database host."}"#,
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"b1","name":"bash","arguments":{"cmd":"./deploy.sh --verbose"}}]}"#,
            r#"{"role":"tool","tool_call_id":"b1","name":"bash","content":"deploy: connecting to db\ndeploy: connection was refused\ndeploy: failed after 3 retries","is_error":true}"#,
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"r1","name":"read_file","arguments":{"path":"src/config/database.py"}}]}"#,
            r#"{"role":"tool","tool_call_id":"r1","name":"read_file","content":"def get_user_name():\n    return os.environ['DATABASE_URL']  # timeout=30"}"#,
            r#"{"role":"assistant","content":"The connection times out: getUserName reads DATABASE_URL, which points at the old host."}"#,
        ]
        .join("\n")
    })
}

/// [`deploy_session`] with a branch `retry` forked at the user's report, where the user asks
/// for a retry: the commits before the fork are in both branches.
pub(crate) fn deploy_session_and_a_retry() -> Project {
    let p = deploy_session();
    let user = json(&p.ok(&["search", "refused", "--role", "user", "--json"]));
    let at = user[0]["commit_hash"].as_str().unwrap()[..10].to_string();
    p.ok(&["branch", "retry", &at]);
    p.ok(&[
        "--branch",
        "retry",
        "add",
        "Retry the deploy with a longer timeout.",
    ]);
    p
}

/// The parts of a JSON hit's snippet that its highlights mark (byte ranges).
pub(crate) fn marked(hit: &serde_json::Value) -> Vec<&str> {
    let snippet = hit["snippet"].as_str().unwrap();
    hit["highlights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &snippet[r[0].as_u64().unwrap() as usize..r[1].as_u64().unwrap() as usize])
        .collect()
}

/// Each command's line, then what it did: several runs in one snapshot.
fn runs(p: &Project, commands: &[&[&str]]) -> String {
    commands
        .iter()
        .map(|args| {
            let run = p.run(args);
            format!("$ {}\n{run}", run.command_line())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The hits of a `--json` search: short id and score.
fn scored(run: &Run) -> Vec<(String, Option<f64>)> {
    json(&run.stdout)
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["commit_hash"].as_str().unwrap()[..10].to_string(),
                h["score"].as_f64(),
            )
        })
        .collect()
}

/// A query matches content, calls' arguments and results, whatever the case; each hit shows
/// the id, role, tool and the best passage of its text.
#[test]
fn search_finds_text_calls_and_results() {
    let p = tool_project();
    let hits = p.run(&["search", "database_url"]);
    assert_snapshot!(hits, @r#"
        exit: 0
        --- stdout
        4453550985 user      -            find DATABASE_URL
        f89782dba3 tool      read_file    DATABASE_URL = env()
        4994bf4ee3 tool      grep         cfg.py:1: DATABASE_URL = env() old.py:9: DATABASE_URL
        f40cd54f56 assistant grep,read_f… grep({"p":"DATABASE_URL"}) read_file({"path":"cfg.py"})
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
    for h in grep_hits.as_array().unwrap() {
        let snippet = h["snippet"].as_str().unwrap();
        for r in h["highlights"].as_array().unwrap() {
            let (a, b) = (r[0].as_u64().unwrap(), r[1].as_u64().unwrap());
            // Each word of the identifier is marked.
            let marked = snippet[a as usize..b as usize].to_lowercase();
            assert!(["database", "url"].contains(&marked.as_str()), "{h}");
        }
    }
}

/// A text edited away is not found in the view, but is with `--history`, where the hit is the
/// original.
#[test]
fn search_history_finds_edited_text() {
    let p = tool_project();
    let grep_hits = json(&p.ok(&[
        "search",
        "DATABASE_URL",
        "--tool",
        "grep",
        "--role",
        "tool",
        "--json",
    ]));
    let grep_id = grep_hits[0]["commit_hash"].as_str().unwrap()[..12].to_string();
    p.ok(&["edit", &grep_id, "trimmed"]);
    assert_snapshot!(p.run(&["search", "old.py"]), @"exit: 0");
    assert_eq!(len(&p.ok(&["search", "old.py", "--json"])), 0);
    assert_snapshot!(p.run(&["search", "old.py", "--history"]), @"
        exit: 0
        --- stdout
        4994bf4ee3 tool      grep         cfg.py:1: DATABASE_URL = env() old.py:9: DATABASE_URL
    ");
    assert_eq!(len(&p.ok(&["search", "old.py", "--history", "--json"])), 1);
    // The edit itself is what the view holds.
    assert_snapshot!(p.run(&["search", "trimmed", "--op", "edit"]), @"
        exit: 0
        --- stdout
        fef07a260f tool      grep         trimmed
    ");
}

/// The best match comes first (BM25: the word often in a short text), and the scores say so;
/// the index `tract index` writes ranks the same as a search that indexed in memory.
#[test]
fn ranked_search_puts_the_best_match_first() {
    let p = deploy_session();
    let hits = p.run(&["search", "deploy"]);
    assert_snapshot!(hits, @r#"
        exit: 0
        --- stdout
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries
        651e92b005 assistant bash         bash({"cmd":"./deploy.sh --verbose"})
        65235cfb84 system    -            You are a careful deploy agent.
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.
    "#);
    let before = p.run(&["search", "deploy", "--json"]);
    let scores = scored(&before);
    assert_eq!(scores.len(), 4);
    assert!(
        scores
            .windows(2)
            .all(|w| w[0].1.unwrap() >= w[1].1.unwrap()),
        "best first: {scores:?}"
    );
    p.ok(&["index"]);
    // The same order, and the same scores but for the last digit of a float: the index's
    // BM25 and the one of commits not indexed yet add up the same terms in another order.
    let after = scored(&p.run(&["search", "deploy", "--json"]));
    assert_eq!(after.len(), scores.len());
    for (a, b) in after.iter().zip(&scores) {
        assert_eq!(a.0, b.0);
        assert!(
            (a.1.unwrap() - b.1.unwrap()).abs() < 1e-4,
            "{after:?} {scores:?}"
        );
    }
    assert_eq!(p.run(&["search", "deploy"]).stdout, hits.stdout);
}

/// Every word must appear; "a phrase" in its order; -word must not; a OR b either;
/// identifiers and paths are phrases of their parts, however they are written.
#[test]
fn phrases_exclusions_alternatives_and_identifiers() {
    let p = deploy_session();
    assert_snapshot!(runs(&p, &[
        &["search", "connection refused"],
        &["search", "\"connection refused\""],
        &["search", "connection -host"],
        &["search", "timeout OR refused"],
        &["search", "getUserName"],
        &["search", "get_user_name"],
        &["search", "src/config"],
    ]), @r#"
        $ tract search 'connection refused'
        exit: 0
        --- stdout
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries

        $ tract search '"connection refused"'
        exit: 0
        --- stdout
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.

        $ tract search 'connection -host'
        exit: 0
        --- stdout
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries

        $ tract search 'timeout OR refused'
        exit: 0
        --- stdout
        169bf5251c tool      read_file    def get_user_name(): return os.environ['DATABASE_URL'] # timeout=30
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries

        $ tract search getUserName
        exit: 0
        --- stdout
        169bf5251c tool      read_file    def get_user_name(): return os.environ['DATABASE_URL'] # timeout=30
        cd99b58118 assistant -            The connection times out: getUserName reads DATABASE_URL, which points at the old host.

        $ tract search get_user_name
        exit: 0
        --- stdout
        169bf5251c tool      read_file    def get_user_name(): return os.environ['DATABASE_URL'] # timeout=30
        cd99b58118 assistant -            The connection times out: getUserName reads DATABASE_URL, which points at the old host.

        $ tract search src/config
        exit: 0
        --- stdout
        d0e3f89789 assistant read_file    read_file({"path":"src/config/database.py"})
    "#);
}

/// --role, --tool, --errors, --op, --since and --until narrow the hits; a duration counts
/// back from the fixed clock.
#[test]
fn filters_narrow_the_hits() {
    let p = deploy_session();
    let answer = json(&p.ok(&["search", "getUserName", "--role", "assistant", "--json"]));
    let id = answer[0]["commit_hash"].as_str().unwrap()[..10].to_string();
    p.ok(&[
        "edit",
        &id,
        "The connection times out: the old host is in DATABASE_URL.",
    ]);
    assert_snapshot!(runs(&p, &[
        &["search", "connection", "--role", "user"],
        &["search", "deploy", "--tool", "bash"],
        &["search", "deploy", "--errors"],
        &["search", "connection", "--op", "edit"],
        &["search", "connection", "--op", "append"],
        &["search", "deploy OR connection", "--since", "2026-01-01T00:00:00.000002Z", "--until", "2026-01-01T00:00:00.000004Z"],
        &["search", "connection", "--since", "2026-01-01T01:00:00.000006+01:00"],
        &["search", "connection", "--since", "1h"],
        &["search", "connection", "--until", "1h"],
    ]), @r#"
        $ tract search connection --role user
        exit: 0
        --- stdout
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.

        $ tract search deploy --tool bash
        exit: 0
        --- stdout
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries
        651e92b005 assistant bash         bash({"cmd":"./deploy.sh --verbose"})

        $ tract search deploy --errors
        exit: 0
        --- stdout
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries

        $ tract search connection --op edit
        exit: 0
        --- stdout
        2c6c0324c8 assistant -            The connection times out: the old host is in DATABASE_URL.

        $ tract search connection --op append
        exit: 0
        --- stdout
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries

        $ tract search 'deploy OR connection' --since 2026-01-01T00:00:00.000002Z --until 2026-01-01T00:00:00.000004Z
        exit: 0
        --- stdout
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries
        651e92b005 assistant bash         bash({"cmd":"./deploy.sh --verbose"})

        $ tract search connection --since '2026-01-01T01:00:00.000006+01:00'
        exit: 0
        --- stdout
        2c6c0324c8 assistant -            The connection times out: the old host is in DATABASE_URL.

        $ tract search connection --since 1h
        exit: 0
        --- stdout
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.
        2c6c0324c8 assistant -            The connection times out: the old host is in DATABASE_URL.
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries

        $ tract search connection --until 1h
        exit: 0
    "#);
}

/// `--all` searches every branch: a commit two branches share is one hit naming both, and a
/// commit only a fork holds is found; without it, a branch's own history only. `--branch`
/// searches another branch.
#[test]
fn all_searches_every_branch_and_names_them() {
    let p = deploy_session_and_a_retry();
    assert_snapshot!(runs(&p, &[
        &["search", "deploy"],
        &["search", "deploy", "--all"],
        &["--branch", "retry", "search", "deploy"],
        &["search", "deploy", "--branch", "retry"],
    ]), @r#"
        $ tract search deploy
        exit: 0
        --- stdout
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries  (main)
        651e92b005 assistant bash         bash({"cmd":"./deploy.sh --verbose"})  (main)
        65235cfb84 system    -            You are a careful deploy agent.  (main, retry)
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.  (main, retry)

        $ tract search deploy --all
        exit: 0
        --- stdout
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries  (main)
        651e92b005 assistant bash         bash({"cmd":"./deploy.sh --verbose"})  (main)
        65235cfb84 system    -            You are a careful deploy agent.  (main, retry)
        1426834272 user      -            Retry the deploy with a longer timeout.  (retry)
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.  (main, retry)

        $ tract --branch retry search deploy
        exit: 0
        --- stdout
        65235cfb84 system    -            You are a careful deploy agent.  (main, retry)
        1426834272 user      -            Retry the deploy with a longer timeout.  (retry)
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.  (main, retry)

        $ tract search deploy --branch retry
        exit: 0
        --- stdout
        65235cfb84 system    -            You are a careful deploy agent.  (main, retry)
        1426834272 user      -            Retry the deploy with a longer timeout.  (retry)
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.  (main, retry)
    "#);
    let all = json(&p.ok(&["search", "deploy", "--all", "--json"]));
    let branches: Vec<String> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["branches"].to_string())
        .collect();
    assert!(
        branches.contains(&r#"["main","retry"]"#.to_string()),
        "{branches:?}"
    );
    assert!(
        branches.contains(&r#"["retry"]"#.to_string()),
        "{branches:?}"
    );
    assert!(
        branches.contains(&r#"["main"]"#.to_string()),
        "{branches:?}"
    );
    // TRACT_BRANCH is where a session works (maybe before its first message): --all still
    // searches every branch.
    for session in ["retry", "not-born-yet"] {
        let args = ["search", "deploy", "--all"];
        let from_env = p.run_env(&args, None, &[("TRACT_BRANCH", session)]);
        assert_eq!(from_env.stdout, p.ok(&args), "{from_env}");
    }
}

/// `-n` caps a page (20 by default), `--offset` skips to the next; a note on standard error
/// says when more follow. The pages put together are the whole list, in order.
#[test]
fn hits_come_in_pages() {
    let p = deploy_session();
    assert_snapshot!(runs(&p, &[
        &["search", "deploy", "-n", "2"],
        &["search", "deploy", "-n", "2", "--offset", "2"],
        &["search", "deploy", "-n", "2", "--offset", "4"],
        &["search", "deploy", "-n", "0"],
    ]), @r#"
        $ tract search deploy -n 2
        exit: 0
        --- stdout
        d9a60c89c2 tool      bash         deploy: connecting to db deploy: connection was refused deploy: failed after 3 retries
        651e92b005 assistant bash         bash({"cmd":"./deploy.sh --verbose"})
        --- stderr
        note: more hits follow: --offset 2 -n 2 shows the next page

        $ tract search deploy -n 2 --offset 2
        exit: 0
        --- stdout
        65235cfb84 system    -            You are a careful deploy agent.
        23bacaa138 user      -            The deploy failed again: connection refused by the database host.

        $ tract search deploy -n 2 --offset 4
        exit: 0

        $ tract search deploy -n 0
        exit: 0
    "#);
    let whole = scored(&p.run(&["search", "deploy", "--json"]));
    let mut pages = Vec::new();
    for offset in ["0", "1", "2", "3"] {
        pages.extend(scored(
            &p.run(&["search", "deploy", "-n", "1", "--offset", offset, "--json"]),
        ));
    }
    assert_eq!(pages, whole);
    // 20 hits by default.
    let many = Project::new();
    let lines: Vec<String> = (0..25)
        .map(|i| format!(r#"{{"role":"user","content":"needle number {i}"}}"#))
        .collect();
    many.ok_in(&["add", "--json", "-"], &lines.join("\n"));
    let first = many.run(&["search", "needle"]);
    assert_eq!(first.stdout.lines().count(), 20, "{first}");
    assert_eq!(
        first.stderr,
        "note: more hits follow: --offset 20 shows the next page\n"
    );
    let rest = many.run(&["search", "needle", "--offset", "20"]);
    assert_eq!((rest.stdout.lines().count(), rest.stderr.as_str()), (5, ""));
}

/// `--regex` still scans: punctuation is searched, hits come in conversation order, with no
/// score; a bad expression is a one-line error. `--role` keeps one role.
#[test]
fn regex_still_scans() {
    let p = tool_project();
    let hits = p.run(&["search", "fail(ed)?", "--regex", "--role", "tool"]);
    assert_snapshot!(hits, @"
        exit: 0
        --- stdout
        3b8efa5893 tool      bash         1 failed
        ");
    assert_eq!(hits.stdout.lines().count(), 1);
    let deploy = deploy_session();
    assert_snapshot!(deploy.run(&["search", r"env\w*\[", "--regex"]), @"
        exit: 0
        --- stdout
        169bf5251c tool      read_file    return os.environ['DATABASE_URL'] # timeout=30
    ");
    let hits = json(&deploy.ok(&["search", "deploy", "--regex", "--json"]));
    let order: Vec<&str> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        ["system", "user", "assistant", "tool"],
        "store order"
    );
    assert!(hits[0]["score"].is_null());
    assert_eq!(hits[0]["highlights"], serde_json::json!([[18, 24]]));
    let err = p.fails(&["search", "(", "--regex"]);
    assert_snapshot!(err, @"
        exit: 4
        --- stderr
        error: invalid input: invalid regular expression '(': unclosed group
    ");
    assert_eq!(err.stderr.lines().count(), 1, "{err}");
}

/// Input that cannot be searched is one error line with the code of its kind, and nothing is
/// written.
#[test]
fn bad_search_input_is_one_error_and_changes_nothing() {
    let p = deploy_session();
    p.ok(&["branch", "side"]);
    let before = p.state();
    let cases: &[(&[&str], i32)] = &[
        (&["search", ""], exit::INVALID_INPUT),
        (&["search", "--", "-deploy"], exit::INVALID_INPUT),
        (&["search", "\"open quote"], exit::INVALID_INPUT),
        (&["search", "deploy", "--op", "rebase"], exit::INVALID_INPUT),
        (
            &["search", "deploy", "--since", "yesterday"],
            exit::INVALID_INPUT,
        ),
        (
            &["search", "deploy", "--until", "2026-02-30"],
            exit::INVALID_INPUT,
        ),
        (
            &["search", "deploy", "--since", "1h", "--until", "2h"],
            exit::INVALID_INPUT,
        ),
        (
            &["search", "deploy", "--role", "robot"],
            exit::INVALID_INPUT,
        ),
        (
            &["search", "deploy", "--all", "--branch", "side"],
            exit::INVALID_INPUT,
        ),
        (
            &["search", "deploy", "--all", "--regex"],
            exit::INVALID_INPUT,
        ),
        (&["search", "deploy", "--branch", "sid"], exit::NOT_FOUND),
        (&["search", "deploy", "-n", "many"], exit::USAGE),
    ];
    let mut out = Vec::new();
    for (args, code) in cases {
        let run = p.run(args);
        assert_eq!(run.code, Some(*code), "{run}");
        assert!(run.stdout.is_empty(), "{run}");
        out.push(format!("$ {}\n{run}", run.command_line()));
    }
    assert_snapshot!(out.join("\n"), @r#"
        $ tract search ''
        exit: 4
        --- stderr
        error: invalid input: an empty search query

        $ tract search -- -deploy
        exit: 4
        --- stderr
        error: invalid input: the search '-deploy' has no word to look for (punctuation is not searched; a regular expression searches it)

        $ tract search '"open quote'
        exit: 4
        --- stderr
        error: invalid input: the search '"open quote' opens a quote it does not close

        $ tract search deploy --op rebase
        exit: 4
        --- stderr
        error: invalid input: unknown operation 'rebase' to search (one of: append, edit, compress, merge)

        $ tract search deploy --since yesterday
        exit: 4
        --- stderr
        error: invalid input: --since 'yesterday' is not a time: give an RFC 3339 time (2026-01-31T09:00:00Z) or a duration ago (7d, 2h, 30min)

        $ tract search deploy --until 2026-02-30
        exit: 4
        --- stderr
        error: invalid input: --until '2026-02-30' is not a time: give an RFC 3339 time (2026-01-31T09:00:00Z) or a duration ago (7d, 2h, 30min)

        $ tract search deploy --since 1h --until 2h
        exit: 4
        --- stderr
        error: invalid input: a search's time range ends before it starts

        $ tract search deploy --role robot
        exit: 4
        --- stderr
        error: invalid input: unknown role 'robot' (expected system, user, assistant or tool)

        $ tract search deploy --all --branch side
        exit: 4
        --- stderr
        error: invalid input: --all searches every branch and --branch names one: give one of them

        $ tract search deploy --all --regex
        exit: 4
        --- stderr
        error: invalid input: a regular expression scans one branch: search one branch, or search by words

        $ tract search deploy --branch sid
        exit: 3
        --- stderr
        error: branch 'sid' not found; did you mean 'side'?
        hint: `tract branch` lists branches

        $ tract search deploy -n many
        exit: 2
        --- stderr
        error: invalid value 'many' for '--max-count <N>': invalid digit found in string

        For more information, try '--help'.
    "#);
    assert_eq!(p.state(), before, "nothing changed");
}

/// Colour is for terminals: piped output holds no escape.
#[test]
fn piped_output_is_plain() {
    let p = deploy_session();
    let hits = p.run_env(&["search", "deploy"], None, &[("TERM", "xterm-256color")]);
    assert!(!hits.stdout.contains('\x1b'), "{hits}");
}

/// cli.md said that `modulenotfounderror` typed in small letters does not find
/// `ModuleNotFoundError`. It does: an identifier is also kept whole, and case never matters;
/// its parts find it as a phrase. A piece typed without its boundary (`notfound`) does not.
#[test]
fn an_identifier_is_found_in_any_case_whole_or_by_its_parts() {
    let p = Project::new();
    p.ok(&[
        "add",
        "Traceback: ModuleNotFoundError: No module named 'requests'",
    ]);
    p.ok(&["add", "the tests pass"]);
    assert_snapshot!(p.run(&["search", "modulenotfounderror"]), @"
    exit: 0
    --- stdout
    82c4f80dc8 user      -            Traceback: ModuleNotFoundError: No module named 'requests'
    ");
    for query in [
        "ModuleNotFoundError",
        "MODULENOTFOUNDERROR",
        "module not found error",
        "\"module not found error\"",
    ] {
        let hits = p.ok(&["search", query]);
        assert_eq!(hits.lines().count(), 1, "{query}: {hits}");
    }
    assert_eq!(p.ok(&["search", "notfound"]), "");
}
