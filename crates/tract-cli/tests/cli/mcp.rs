//! `tract mcp`: the real server over stdio, spoken to in JSON-RPC lines. The Python suite
//! (tests/python/test_mcp.py) drives it with the MCP client library; here: the errors it
//! answers, exactly.

use crate::common::{Project, json};
use crate::search::{deploy_session_and_a_retry, marked};
use insta::assert_snapshot;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

/// A running `tract mcp`, initialized; stopped when dropped.
pub(crate) struct Mcp {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Mcp {
    /// Starts `tract mcp` on `p` with `extra` arguments and initializes the session.
    pub(crate) fn start(p: &Project, extra: &[&str]) -> Mcp {
        let mut args = vec!["mcp"];
        args.extend_from_slice(extra);
        let mut child = p
            .cmd(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut m = Mcp {
            input: child.stdin.take().unwrap(),
            output: BufReader::new(child.stdout.take().unwrap()),
            child,
            next_id: 0,
        };
        m.request(
            "initialize",
            json!({
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "tract-tests", "version": "0"},
            }),
        );
        m.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// One request; its result (a JSON-RPC error fails the test).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert_ne!(
                self.output.read_line(&mut line).unwrap(),
                0,
                "the server hung up"
            );
            let reply = json(&line);
            if reply["id"] == id {
                assert!(reply.get("error").is_none(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// Calls `tool`: whether it failed, and its text.
    pub(crate) fn call(&mut self, tool: &str, arguments: Value) -> (bool, String) {
        let r = self.call_result(tool, arguments);
        let text = r["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["text"].as_str())
            .collect();
        (r["isError"] == true, text)
    }

    /// Calls `tool`: the whole result.
    fn call_result(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }
}

/// Every tool that takes a branch answers a tool error for one that does not exist, in the
/// words of the CLI (the closest branches there are), and the server goes on; a branch is read
/// once it exists, and the current branch of a new store is empty, not an error.
#[test]
fn a_branch_that_does_not_exist_is_a_tool_error_naming_the_close_ones() {
    let p = Project::new();
    p.ok(&["add", "on main"]);
    for b in ["session-1", "session-2", "session-10"] {
        p.ok(&["--branch", b, "add", "hello"]);
    }
    let before = p.state();
    let mut m = Mcp::start(&p, &["--allow-writes"]);
    let missing = "error: branch 'sesion-1' not found; did you mean 'session-1', 'session-10' or \
                   'session-2'?";
    let calls = [
        (
            "search_history",
            json!({"query": "hello", "branch": "sesion-1"}),
        ),
        ("log", json!({"branch": "sesion-1"})),
        ("show", json!({"id": "HEAD", "branch": "sesion-1"})),
        ("find_tool_results", json!({"branch": "sesion-1"})),
        ("find_tool_turns", json!({"branch": "sesion-1"})),
        ("status", json!({"branch": "sesion-1"})),
        ("usage", json!({"branch": "sesion-1"})),
        (
            "edit",
            json!({"id": "HEAD", "content": "x", "branch": "sesion-1"}),
        ),
        (
            "compress",
            json!({"commits": ["HEAD"], "summary": "x", "branch": "sesion-1"}),
        ),
    ];
    for (tool, arguments) in calls {
        assert_eq!(
            m.call(tool, arguments),
            (true, missing.to_string()),
            "{tool}"
        );
    }
    assert_eq!(
        m.call("log", json!({"branch": "nope"})),
        (true, "error: branch 'nope' not found".to_string())
    );
    let (failed, text) = m.call("status", json!({"branch": "session-1"}));
    assert!(!failed, "{text}");
    assert_eq!(json(&text)["messages"], 1);
    let (failed, text) = m.call("usage", json!({"branch": "session-1"}));
    assert!(!failed, "{text}");
    assert_eq!(json(&text)["request_count"], 0);
    assert_eq!(json(&text)["totals"]["cache_read_input_tokens"], 0);
    assert_eq!(p.state(), before, "failed calls change nothing");

    let new = Project::new();
    let mut m = Mcp::start(&new, &[]);
    let (failed, text) = m.call("log", json!({"branch": "main"}));
    assert_eq!((failed, text.as_str()), (false, "[]"));
    assert_eq!(
        m.call("log", json!({"branch": "mian"})),
        (true, "error: branch 'mian' not found".to_string())
    );
}

/// A tool error carries the error's category and message as structured content, beside the
/// text the agent reads; a tool's answer has none.
#[test]
fn a_tool_error_names_its_category() {
    let p = Project::new();
    p.ok(&["add", "on main"]);
    let mut m = Mcp::start(&p, &["--allow-writes"]);
    let error = |r: &Value| {
        assert_eq!(r["isError"], true, "{r}");
        (
            r["structuredContent"]["error"]["category"].clone(),
            r["content"][0]["text"].clone(),
            r["structuredContent"]["error"]["message"].clone(),
        )
    };
    let missing = m.call_result("log", json!({"branch": "nope"}));
    assert_eq!(
        error(&missing),
        (
            json!("not_found"),
            json!("error: branch 'nope' not found"),
            json!("branch 'nope' not found")
        )
    );
    let bad_role = m.call_result("search_history", json!({"query": "x", "role": "robot"}));
    assert_eq!(error(&bad_role).0, "invalid_input");
    let bad_rev = m.call_result("show", json!({"id": "HEAD~x"}));
    assert_eq!(error(&bad_rev).0, "invalid_input");
    let unknown = m.call_result("show", json!({"id": "dead"}));
    assert_eq!(error(&unknown).0, "not_found");
    let exists = m.call_result("status", json!({}));
    assert_eq!(exists["isError"], false);
    assert!(exists.get("structuredContent").is_none(), "{exists}");
}

/// `search_history` ranks (best first, with a score), pages (`offset`), searches every branch
/// (`all_branches`: each hit names the branches that hold it), filters by operation, errors
/// and time, and still scans with `regex`; its description tells an agent the query syntax.
/// Input it cannot use is a tool error naming what is wrong.
#[test]
fn search_history_ranks_pages_and_searches_every_branch() {
    let p = deploy_session_and_a_retry();
    let mut m = Mcp::start(&p, &[]);
    let tools = m.request("tools/list", json!({}));
    let search = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_history")
        .unwrap()
        .clone();
    let description = search["description"].as_str().unwrap();
    for part in [
        "\"quoted phrases\"",
        "-word",
        "a OR b",
        "all_branches",
        "offset",
    ] {
        assert!(description.contains(part), "{part}: {description}");
    }
    let properties: Vec<&String> = search["inputSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    for p in [
        "all_branches",
        "branch",
        "op",
        "errors",
        "since",
        "until",
        "offset",
        "regex",
    ] {
        assert!(properties.iter().any(|k| *k == p), "{p}: {properties:?}");
    }
    let mut hits = |arguments: Value| -> String {
        let (failed, text) = m.call("search_history", arguments.clone());
        assert!(!failed, "{arguments}: {text}");
        let lines: Vec<String> = json(&text)
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let marked = marked(h);
                format!(
                    "{} {:<9} score={} branches={} marked={marked:?}",
                    &h["commit_hash"].as_str().unwrap()[..10],
                    h["role"].as_str().unwrap(),
                    if h["score"].is_f64() { "yes" } else { "null" },
                    h["branches"],
                )
            })
            .collect();
        format!("{arguments}\n{}\n", lines.join("\n"))
    };
    let all = [
        json!({"query": "deploy"}),
        json!({"query": "deploy", "all_branches": true}),
        json!({"query": "deploy", "all_branches": true, "offset": 3, "limit": 1}),
        json!({"query": "deploy", "branch": "retry"}),
        json!({"query": "connection", "errors": true}),
        json!({"query": "deploy OR connection", "op": "append", "since": "2026-01-01T00:00:00.000002Z", "until": "2026-01-01T00:00:00.000004Z"}),
        json!({"query": "deploy", "regex": true}),
    ]
    .map(&mut hits)
    .join("\n");
    assert_snapshot!(all, @r#"
        {"query":"deploy"}
        d9a60c89c2 tool      score=yes branches=["main"] marked=["deploy", "deploy", "deploy"]
        651e92b005 assistant score=yes branches=["main"] marked=["deploy"]
        65235cfb84 system    score=yes branches=["main","retry"] marked=["deploy"]
        23bacaa138 user      score=yes branches=["main","retry"] marked=["deploy"]

        {"query":"deploy","all_branches":true}
        d9a60c89c2 tool      score=yes branches=["main"] marked=["deploy", "deploy", "deploy"]
        651e92b005 assistant score=yes branches=["main"] marked=["deploy"]
        65235cfb84 system    score=yes branches=["main","retry"] marked=["deploy"]
        1426834272 user      score=yes branches=["retry"] marked=["deploy"]
        23bacaa138 user      score=yes branches=["main","retry"] marked=["deploy"]

        {"query":"deploy","all_branches":true,"offset":3,"limit":1}
        1426834272 user      score=yes branches=["retry"] marked=["deploy"]

        {"query":"deploy","branch":"retry"}
        65235cfb84 system    score=yes branches=["main","retry"] marked=["deploy"]
        1426834272 user      score=yes branches=["retry"] marked=["deploy"]
        23bacaa138 user      score=yes branches=["main","retry"] marked=["deploy"]

        {"query":"connection","errors":true}
        d9a60c89c2 tool      score=yes branches=["main"] marked=["connection"]

        {"query":"deploy OR connection","op":"append","since":"2026-01-01T00:00:00.000002Z","until":"2026-01-01T00:00:00.000004Z"}
        d9a60c89c2 tool      score=yes branches=["main"] marked=["deploy", "deploy", "connection", "deploy"]
        651e92b005 assistant score=yes branches=["main"] marked=["deploy"]

        {"query":"deploy","regex":true}
        65235cfb84 system    score=null branches=["main","retry"] marked=["deploy"]
        23bacaa138 user      score=null branches=["main","retry"] marked=["deploy"]
        651e92b005 assistant score=null branches=["main"] marked=["deploy"]
        d9a60c89c2 tool      score=null branches=["main"] marked=["deploy"]
    "#);

    let mut error = |arguments: Value| -> String {
        let r = m.call_result("search_history", arguments.clone());
        assert_eq!(r["isError"], true, "{r}");
        format!(
            "{arguments}\n{} {}\n",
            r["structuredContent"]["error"]["category"]
                .as_str()
                .unwrap(),
            r["content"][0]["text"].as_str().unwrap()
        )
    };
    let errors = [
        json!({"query": ""}),
        json!({"query": "deploy", "all_branches": true, "branch": "retry"}),
        json!({"query": "deploy", "all_branches": true, "regex": true}),
        json!({"query": "deploy", "since": "yesterday"}),
        json!({"query": "deploy", "op": "rebase"}),
        json!({"query": "deploy", "branch": "retyr"}),
    ]
    .map(&mut error)
    .join("\n");
    assert_snapshot!(errors, @r#"
        {"query":""}
        invalid_input error: invalid input: an empty search query

        {"query":"deploy","all_branches":true,"branch":"retry"}
        invalid_input error: invalid input: all_branches searches every branch and branch names one: give one of them

        {"query":"deploy","all_branches":true,"regex":true}
        invalid_input error: invalid input: a regular expression scans one branch: leave out all_branches, or search by words

        {"query":"deploy","since":"yesterday"}
        invalid_input error: invalid input: since 'yesterday' is not a time: give an RFC 3339 time (2026-01-31T09:00:00Z) or a duration ago (7d, 2h, 30min)

        {"query":"deploy","op":"rebase"}
        invalid_input error: invalid input: unknown operation 'rebase' to search (one of: append, edit, compress, merge)

        {"query":"deploy","branch":"retyr"}
        not_found error: branch 'retyr' not found; did you mean 'retry'?
    "#);
}
