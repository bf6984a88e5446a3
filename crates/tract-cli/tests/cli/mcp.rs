//! `tract mcp`: the real server over stdio, spoken to in JSON-RPC lines. The Python suite
//! (tests/python/test_mcp.py) drives it with the MCP client library; here: the errors it
//! answers, exactly.

use crate::common::{Project, json};
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
