//! End-to-end tests of the real `tract` binary not yet moved to a module of their command.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_tract");

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let p = Project {
            dir: tempfile::tempdir().unwrap(),
        };
        p.ok(&["init"]);
        p
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn store(&self) -> PathBuf {
        self.path().join(".tract/store.redb")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(self.path())
            .env_remove("TRACT_STORE");
        c
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut c = self.cmd(args);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut pipe = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            pipe.write_all(s.as_bytes()).unwrap();
        }
        drop(pipe);
        child.wait_with_output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        self.ok_in(args, None)
    }

    fn ok_in(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin);
        assert!(
            out.status.success(),
            "tract {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs a command that must fail; returns its stderr.
    fn fails(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin);
        assert_eq!(out.status.code(), Some(1), "tract {args:?} should fail");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("error: "), "{err}");
        err
    }

    /// Everything a user can see of the store: history, refs and their moves. (The file's
    /// bytes are not compared: opening a store in multi-writer mode updates its lock state.)
    fn state(&self) -> String {
        [
            "log --json",
            "branch",
            "reflog HEAD",
            "reflog main",
            "status --json",
        ]
        .iter()
        .map(|c| self.ok(&c.split(' ').collect::<Vec<_>>()))
        .collect()
    }

    fn log_len(&self) -> usize {
        self.ok(&["log", "--oneline"]).lines().count()
    }
}

/// Runs the binary outside any project and returns its output, failing the test on error.
fn tract_ok(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("TRACT_STORE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tract {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

/// A session with parallel calls, an error and a call left without a result.
fn tool_project() -> Project {
    let p = Project::new();
    let stream = [
        r#"{"role":"user","content":"find DATABASE_URL"}"#,
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"g1","name":"grep","arguments":{"p":"DATABASE_URL"}},{"id":"r1","name":"read_file","arguments":{"path":"cfg.py"}}]}"#,
        r#"{"role":"tool","tool_call_id":"r1","name":"read_file","content":"DATABASE_URL = env()"}"#,
        r#"{"role":"tool","tool_call_id":"g1","name":"grep","content":"cfg.py:1: DATABASE_URL = env()\nold.py:9: DATABASE_URL"}"#,
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"b1","name":"bash","arguments":{"cmd":"pytest"}}]}"#,
        r#"{"role":"tool","tool_call_id":"b1","name":"bash","content":"1 failed","is_error":true}"#,
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"x1","name":"edit_file","arguments":{}}]}"#,
    ]
    .join("\n");
    p.ok_in(&["add", "--json", "-"], Some(&stream));
    p
}

#[test]
fn compress_runs_turns_and_ranges() {
    let p = tool_project();
    p.ok(&[
        "add",
        "--role",
        "assistant",
        "DATABASE_URL is read in cfg.py.",
    ]);
    let before = p.state();
    let dry = p.ok(&["compress", "--tool-turns", "--dry-run"]);
    assert!(dry.contains("dry run"), "{dry}");
    assert!(p.state() == before, "a dry run commits nothing");
    let out = p.ok(&[
        "compress",
        "--tool-turns",
        "--name",
        "grep",
        "--target-tokens",
        "80",
    ]);
    assert!(out.contains("compressed 1 run(s): tokens"), "{out}");
    let head = json(&p.ok(&["show", "--json"]));
    assert_eq!(head["op"], "compress");
    assert_eq!(
        head["sources"].as_array().unwrap().len(),
        3,
        "the call and both results"
    );
    assert_eq!(head["summarizer"], "extractive");
    let shown = p.ok(&["show"]);
    assert!(
        shown.contains("summary of 3:") && shown.contains("by      extractive"),
        "{shown}"
    );
    // The link back: a source shows the summary that replaced it; log shows the span.
    let source = head["sources"][1].as_str().unwrap()[..12].to_string();
    let summary_id = head["commit_hash"].as_str().unwrap()[..10].to_string();
    assert!(
        p.ok(&["show", &source])
            .contains(&format!("compressed into {summary_id}"))
    );
    let source_json = json(&p.ok(&["show", "--json", &source]));
    assert_eq!(source_json["compressed_into"], head["commit_hash"]);
    assert!(p.ok(&["log", "-n", "1"]).contains("(summary of 3:"));
    let oai = json(&p.ok(&["compile"]));
    let contents: Vec<&str> = oai
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        contents
            .iter()
            .any(|c| c.starts_with("[Summary of 3 messages]"))
    );
    assert!(
        contents.contains(&"DATABASE_URL is read in cfg.py."),
        "the answer stays"
    );
    // Manual content over an explicit range; bad requests are one-line errors.
    let log = json(&p.ok(&["log", "--json", "-n", "3"]));
    let first = log[2]["commit_hash"].as_str().unwrap()[..12].to_string();
    let last = log[1]["commit_hash"].as_str().unwrap()[..12].to_string();
    let out = p.ok(&[
        "compress",
        "--range",
        &format!("{first}..{last}"),
        "--content",
        "by hand",
    ]);
    assert!(out.contains("compressed 1 run(s)"), "{out}");
    let before = p.state();
    p.fails(&["compress", "--commits", "ffffffffff"], None);
    p.fails(&["compress", "--range", "nope"], None);
    p.fails(&["compress", "--commits", &first], None);
    assert!(p.state() == before);
    assert_eq!(
        p.run(&["compress", "--target-tokens", "0"], None)
            .status
            .code(),
        Some(2)
    );
    let out = p.ok(&["compress", "--strategy", "clear", "--keep", "0"]);
    assert!(out.contains("cleared"), "{out}");
}

#[test]
fn compress_with_an_llm_server() {
    let p = tool_project();
    let stub = tract_stub_llm::serve(vec![tract_stub_llm::ok(
        "grep and read_file found DATABASE_URL in cfg.py",
    )])
    .unwrap();
    let url = stub.url.clone();
    let out = p.ok(&[
        "compress",
        "--tool-turns",
        "--name",
        "grep",
        "--strategy",
        "llm",
        "--llm-base-url",
        &url,
        "--llm-model",
        "stub",
        "--instructions",
        "keep paths",
    ]);
    assert!(out.contains("compressed 1 run(s)"), "{out}");
    let body = json(&stub.bodies.lock().unwrap()[0]);
    assert_eq!(body["model"], "stub");
    assert!(
        body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("keep paths")
    );
    let head = json(&p.ok(&["show", "--json"]));
    assert_eq!(head["summarizer"], format!("openai:stub@{url}"));
    assert_eq!(
        head["message"]["content"],
        "grep and read_file found DATABASE_URL in cfg.py"
    );
    // Unreachable server, or no model: one clear line, nothing committed.
    let before = p.state();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let mut c = p.cmd(&[
        "compress",
        "--tool-turns",
        "--strategy",
        "llm",
        "--llm-base-url",
        &dead,
        "--llm-model",
        "m",
    ]);
    let out = c.env("TRACT_LLM_MODEL", "").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("summarizer error"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = p
        .cmd(&["compress", "--tool-turns", "--strategy", "llm"])
        .env_remove("TRACT_LLM_MODEL")
        .env_remove("OPENAI_MODEL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a model"));
    assert!(p.state() == before);
}

/// `tract add` of a grep call and its (long) result, in an environment without an LLM unless
/// `env` names one; returns (stdout, stderr).
fn add_tool_turn(
    p: &Project,
    id: &str,
    name: &str,
    output: &str,
    env: &[(&str, &str)],
) -> (String, String) {
    let calls = format!(r#"[{{"id":"{id}","name":"{name}","arguments":{{"q":"DATABASE_URL"}}}}]"#);
    p.ok(&["add", "--role", "assistant", "--tool-calls", &calls, ""]);
    let mut c = p.cmd(&[
        "add",
        "--role",
        "tool",
        "--name",
        name,
        "--tool-call-id",
        id,
        "-",
    ]);
    for var in [
        "TRACT_LLM_BASE_URL",
        "TRACT_LLM_MODEL",
        "TRACT_LLM_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "OPENAI_API_KEY",
    ] {
        c.env_remove(var);
    }
    c.envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(output.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn the_stored_policy_applies_to_tool_results_added() {
    let p = Project::new();
    assert!(p.ok(&["config", "show"]).contains("off"));
    let shown = p.ok(&[
        "config",
        "tool-summarization",
        "--tool",
        "grep=only file names and line numbers",
        "--auto-threshold",
        "500",
    ]);
    assert!(
        shown.contains("grep: only file names and line numbers"),
        "{shown}"
    );
    assert!(shown.contains("over 500 tokens"), "{shown}");
    let stored = json(&p.ok(&["config", "show", "--json"]));
    assert_eq!(stored["tool_summarization"]["auto_threshold"], 500);
    let big: String = (0..300)
        .map(|i| format!("src/app/mod{i}.py:{i}: settings.DATABASE_URL\n"))
        .collect();

    // No LLM configured: the extractive summarizer; the id printed is the original's.
    p.ok(&["add", "where is the database configured?"]);
    let (out, err) = add_tool_turn(&p, "g1", "grep", &big, &[]);
    let id = out.trim().to_string();
    assert!(
        err.contains(&format!(
            "the grep result {id} was summarized by extractive"
        )),
        "{err}"
    );
    let original = json(&p.ok(&["show", &id, "--json"]));
    assert_eq!(original["message"]["content"], big.as_str());
    let head = json(&p.ok(&["show", "--json"]));
    assert_eq!(head["op"], "edit");
    assert!(head["edit_target"].as_str().unwrap().starts_with(&id));
    let sent = json(&p.ok(&["compile"]));
    let last = &sent.as_array().unwrap().last().unwrap()["content"];
    assert!(
        last.as_str()
            .unwrap()
            .starts_with("[Summary of 2 messages]"),
        "{last}"
    );

    // An LLM named by the environment summarizes a result over the threshold.
    let stub =
        tract_stub_llm::serve(vec![tract_stub_llm::ok("bash: 3 tests failed in db.py")]).unwrap();
    let env = [
        ("TRACT_LLM_BASE_URL", stub.url.as_str()),
        ("TRACT_LLM_MODEL", "stub"),
    ];
    let (_, err) = add_tool_turn(&p, "b1", "bash", &big, &env);
    assert!(err.contains("summarized by openai:stub@"), "{err}");
    let body = json(&stub.bodies.lock().unwrap()[0]);
    assert_eq!(
        body["messages"][0]["content"],
        tract_core::TOOL_SUMMARIZE_SYSTEM
    );
    assert!(
        body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("call b1 bash")
    );
    let sent = json(&p.ok(&["compile"]));
    assert_eq!(
        sent.as_array().unwrap().last().unwrap()["content"],
        "bash: 3 tests failed in db.py"
    );

    // A short result of a tool without instructions passes through: one commit.
    let before = p.log_len();
    let (_, err) = add_tool_turn(&p, "r1", "read_file", "x = 1", &[]);
    assert!(err.is_empty(), "{err}");
    assert_eq!(p.log_len(), before + 2);

    // The summarizer fails: the result is kept as it is, with a warning.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let env = [
        ("TRACT_LLM_BASE_URL", dead.as_str()),
        ("TRACT_LLM_MODEL", "m"),
    ];
    let (out, err) = add_tool_turn(&p, "g2", "grep", &big, &env);
    assert!(
        err.contains("warning: summarizing the grep result failed"),
        "{err}"
    );
    let head = json(&p.ok(&["show", "--json"]));
    assert!(
        head["commit_hash"]
            .as_str()
            .unwrap()
            .starts_with(out.trim())
    );
    assert_eq!(head["message"]["content"], big.as_str());
}

#[test]
fn bad_policies_are_refused_and_change_nothing() {
    let p = Project::new();
    p.ok(&[
        "config",
        "tool-summarization",
        "--tool",
        "grep=paths",
        "--auto-threshold",
        "100",
    ]);
    let before = p.ok(&["config", "show", "--json"]);
    for (args, says) in [
        (vec!["--auto-threshold", "-1"], "non-negative"),
        (vec!["--tool", "bash="], "'bash' are empty"),
        (vec!["--tool", "bash"], "NAME=INSTRUCTIONS"),
        (
            vec!["--default-instructions", " "],
            "default_instructions is empty",
        ),
    ] {
        let mut all = vec!["config", "tool-summarization"];
        all.extend(args);
        let err = p.fails(&all, None);
        assert!(err.contains(says), "{err}");
    }
    assert_eq!(p.ok(&["config", "show", "--json"]), before);
    let shown = p.ok(&[
        "config",
        "tool-summarization",
        "--remove-tool",
        "grep",
        "--no-auto-threshold",
    ]);
    assert!(shown.contains("off"), "{shown}");
}
