//! The harness: a project in a temporary directory, the real `tract` binary run in it with a
//! fixed clock, and its output formatted for snapshots.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

const BIN: &str = env!("CARGO_BIN_EXE_tract");

/// The time every commit and reflog entry is stamped with, so ids are the same on every run.
pub const TIMESTAMP: &str = "2026-01-01T00:00:00Z";

/// The `tract` binary with `args`, run in `dir` with an environment holding nothing but the
/// fixed clock: no `TRACT_STORE`, no LLM settings, no lock timeout from the caller.
pub fn command(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .current_dir(dir)
        .env_clear()
        .env("TRACT_TIMESTAMP", TIMESTAMP);
    c
}

/// What one run of `tract` did.
pub struct Run {
    /// The arguments `tract` was given.
    pub args: Vec<String>,
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Runs `c`, writing `stdin` (if any) to its standard input, and collects what it did.
    pub fn of(mut c: Command, stdin: Option<&str>) -> Run {
        let args = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut pipe = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            pipe.write_all(s.as_bytes()).unwrap();
        }
        drop(pipe);
        let out = child.wait_with_output().unwrap();
        Run {
            args,
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    /// The command as a shell would take it: `tract compile --format anthropic`.
    pub fn command_line(&self) -> String {
        let mut line = String::from("tract");
        for a in &self.args {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:@~,".contains(c));
            if plain {
                line.push(' ');
                line.push_str(a);
            } else {
                line.push_str(&format!(" '{}'", a.replace('\'', r"'\''")));
            }
        }
        line
    }
}

/// Asserts a file snapshot (under `snapshots/`) of a [`Run`], described by its command line.
macro_rules! assert_run_snapshot {
    ($name:expr, $run:expr) => {{
        let run: &$crate::common::Run = &$run;
        insta::with_settings!({ description => run.command_line(), omit_expression => true }, {
            insta::assert_snapshot!($name, run);
        });
    }};
}
pub(crate) use assert_run_snapshot;

/// The exit code, then standard output and standard error, each only when not empty:
///
/// ```text
/// exit: 1
/// --- stderr
/// error: ...
/// ```
impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => writeln!(f, "exit: {code}")?,
            None => writeln!(f, "exit: killed")?,
        }
        for (name, text) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if text.is_empty() {
                continue;
            }
            writeln!(f, "--- {name}")?;
            f.write_str(text)?;
            if !text.ends_with('\n') {
                writeln!(f, "\n[no newline at end of {name}]")?;
            }
        }
        Ok(())
    }
}

/// Snapshot filters for what cannot be fixed: the temporary directory (as given and as the
/// operating system resolves it) and the ports of local servers.
fn bind_filters(dir: &Path) -> insta::internals::SettingsBindDropGuard {
    let mut settings = insta::Settings::clone_current();
    let mut paths = vec![dir.to_path_buf()];
    if let Ok(real) = dir.canonicalize() {
        paths.insert(0, real);
    }
    for p in paths {
        settings.add_filter(&regex::escape(&p.display().to_string()), "[DIR]");
    }
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    settings.bind_to_scope()
}

/// Shows every id that starts with `id` (a short id or a full hash) as `name` in this scope's
/// snapshots: for commits whose content holds a port, so their ids change from run to run.
#[must_use = "the filter holds until the guard is dropped"]
pub fn redact_id(id: &str, name: &str) -> insta::internals::SettingsBindDropGuard {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&format!(r"\b{}[0-9a-f]*\b", &id[..10]), name);
    settings.bind_to_scope()
}

/// A store's files (relative to `.tract/`) with their bytes, built once per test run.
pub type Template = OnceLock<Vec<(PathBuf, Vec<u8>)>>;

/// A temporary directory to run `tract` in, whose path snapshots show as `[DIR]`.
pub struct Project {
    _filters: insta::internals::SettingsBindDropGuard,
    dir: tempfile::TempDir,
}

impl Project {
    /// A new project after `tract init`.
    pub fn new() -> Self {
        let p = Project::empty();
        p.ok(&["init"]);
        p
    }

    /// A new directory without a store.
    pub fn empty() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Project {
            _filters: bind_filters(dir.path()),
            dir,
        }
    }

    /// A project holding `messages` (JSONL, as `tract add --json -` takes it). The store is
    /// built once per test run, in its own project, and each caller gets a copy of its files
    /// (the store file and its journal): the same store, without the cost of another
    /// `tract add`.
    pub fn with_messages(template: &'static Template, messages: impl FnOnce() -> String) -> Self {
        let files = template.get_or_init(|| {
            let p = Project::new();
            p.ok_in(&["add", "--json", "-"], &messages());
            p.files().into_iter().collect()
        });
        let p = Project::empty();
        for (rel, bytes) in files {
            let path = p.path().join(".tract").join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        p
    }

    /// A project whose store file holds `bytes` (a store an older build wrote: it has no
    /// journal).
    pub fn with_store(bytes: &[u8]) -> Self {
        let p = Project::empty();
        std::fs::create_dir(p.path().join(".tract")).unwrap();
        std::fs::write(p.store(), bytes).unwrap();
        p
    }

    /// Every file of the store (under `.tract/`, its journal's included), by its path there,
    /// with its bytes.
    pub fn files(&self) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
        let dot = self.path().join(".tract");
        let mut files = std::collections::BTreeMap::new();
        let mut dirs = vec![dot.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let rel = path.strip_prefix(&dot).unwrap().to_path_buf();
                    files.insert(rel, std::fs::read(&path).unwrap());
                }
            }
        }
        files
    }

    /// The project directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The store commands find here: `.tract/store.redb`.
    pub fn store(&self) -> PathBuf {
        self.path().join(".tract/store.redb")
    }

    /// The command, ready to run in the project directory.
    pub fn cmd(&self, args: &[&str]) -> Command {
        command(self.path(), args)
    }

    /// Runs `tract ARGS` with nothing on standard input.
    pub fn run(&self, args: &[&str]) -> Run {
        Run::of(self.cmd(args), None)
    }

    /// Runs `tract ARGS` with `stdin` on standard input.
    pub fn run_in(&self, args: &[&str], stdin: &str) -> Run {
        Run::of(self.cmd(args), Some(stdin))
    }

    /// Runs `tract ARGS` with these environment variables set too.
    pub fn run_env(&self, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Run {
        let mut c = self.cmd(args);
        c.envs(env.iter().copied());
        Run::of(c, stdin)
    }

    /// Runs a command that must succeed; returns its standard output.
    pub fn ok(&self, args: &[&str]) -> String {
        succeeded(args, self.run(args))
    }

    /// Like [`Project::ok`], with `stdin` on standard input.
    pub fn ok_in(&self, args: &[&str], stdin: &str) -> String {
        succeeded(args, self.run_in(args, stdin))
    }

    /// Runs a command that must fail with an error (one of the categories' exit codes, see
    /// [`exit`]) and an `error:` line; the snapshots and [`exit`]'s users pin which code.
    pub fn fails(&self, args: &[&str]) -> Run {
        failed(args, self.run(args))
    }

    /// Like [`Project::fails`], with `stdin` on standard input.
    pub fn fails_in(&self, args: &[&str], stdin: &str) -> Run {
        failed(args, self.run_in(args, stdin))
    }

    /// Everything a user can see of the store: history, refs and their moves. (The file's
    /// bytes are not compared: opening a store in multi-writer mode updates its lock state.)
    pub fn state(&self) -> String {
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

    /// How many commits `log` shows from HEAD.
    pub fn log_len(&self) -> usize {
        self.ok(&["log", "--oneline"]).lines().count()
    }

    /// The full hash of `rev`.
    pub fn hash(&self, rev: &str) -> String {
        json(&self.ok(&["show", "--json", rev]))["commit_hash"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

/// Runs `tract ARGS` in `dir` at a terminal (a real one: `script` runs it in a pseudo-terminal,
/// standard output and error both on it), with the fixed clock and nothing else in the
/// environment; returns what the terminal showed, line ends as `\n`.
pub fn at_terminal(dir: &Path, args: &str) -> String {
    let out = Command::new("script")
        .args(["-q", "-e", "-c"])
        .arg(format!("'{BIN}' {args}"))
        .arg("/dev/null")
        .current_dir(dir)
        .env_clear()
        .env("TRACT_TIMESTAMP", TIMESTAMP)
        // A terminal that can redraw a line (without TERM, progress is not drawn).
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n")
}

/// The exit codes of docs/cli.md ("Exit codes"), but 1 (a check found problems: `tract
/// fsck`'s snapshots show it).
pub mod exit {
    /// The command line did not parse.
    pub const USAGE: i32 = 2;
    /// What the command names does not exist.
    pub const NOT_FOUND: i32 = 3;
    /// The input cannot be used as given.
    pub const INVALID_INPUT: i32 = 4;
    /// The store's state refuses the request.
    pub const CONFLICT: i32 = 5;
    /// Stored bytes are damaged.
    pub const CORRUPT: i32 = 6;
    /// Something needed is busy or out of reach for now.
    pub const UNAVAILABLE: i32 = 7;
    /// None of the above.
    pub const INTERNAL: i32 = 8;
    /// The codes of the error categories, in their order.
    pub const CATEGORIES: [i32; 6] = [
        NOT_FOUND,
        INVALID_INPUT,
        CONFLICT,
        CORRUPT,
        UNAVAILABLE,
        INTERNAL,
    ];
}

pub fn succeeded(args: &[&str], run: Run) -> String {
    assert_eq!(run.code, Some(0), "tract {args:?} failed:\n{run}");
    run.stdout
}

pub fn failed(args: &[&str], run: Run) -> Run {
    assert!(
        run.code.is_some_and(|c| exit::CATEGORIES.contains(&c)),
        "tract {args:?} should fail with an error:\n{run}"
    );
    assert!(run.stderr.starts_with("error: "), "{run}");
    run
}

pub fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

/// A chat-completions request body as text: each field but the messages on a line, then each
/// message's role and its content as it reads.
pub fn request_text(body: &serde_json::Value) -> String {
    let mut out = String::new();
    for (key, value) in body.as_object().unwrap() {
        if key != "messages" {
            out.push_str(&format!("{key}: {value}\n"));
        }
    }
    for m in body["messages"].as_array().unwrap() {
        out.push_str(&format!("--- {}\n", m["role"].as_str().unwrap()));
        out.push_str(m["content"].as_str().unwrap());
        out.push('\n');
    }
    out
}

/// The length of a JSON list.
pub fn len(s: &str) -> usize {
    json(s).as_array().unwrap().len()
}

/// A base URL where nothing listens: a port bound and released.
pub fn dead_url() -> String {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    url
}

/// The assistant's tool call in [`a_session`], in OpenAI's wire form.
pub const GREP_CALL: &str =
    r#"[{"id":"c1","type":"function","function":{"name":"grep","arguments":"{\"p\":\"cfg\"}"}}]"#;

/// A short agent session: a system prompt, a question, a grep call and its two-line result,
/// added in one `add --json` (the same commits as adding them one by one with flags).
pub fn a_session() -> Project {
    static TEMPLATE: Template = OnceLock::new();
    Project::with_messages(&TEMPLATE, || {
        [
            r#"{"role":"system","content":"You are terse."}"#,
            r#"{"role":"user","content":"Where is the config?"}"#,
            &format!(r#"{{"role":"assistant","content":"","tool_calls":{GREP_CALL}}}"#),
            r#"{"role":"tool","tool_call_id":"c1","name":"grep","content":"config.py:1: CFG=1\nconfig.py:2: X=2"}"#,
        ]
        .join("\n")
    })
}

/// A session with parallel calls (answered out of order), an error and a call left without a
/// result, as JSONL.
pub fn tool_stream() -> String {
    [
        r#"{"role":"user","content":"find DATABASE_URL"}"#,
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"g1","name":"grep","arguments":{"p":"DATABASE_URL"}},{"id":"r1","name":"read_file","arguments":{"path":"cfg.py"}}]}"#,
        r#"{"role":"tool","tool_call_id":"r1","name":"read_file","content":"DATABASE_URL = env()"}"#,
        r#"{"role":"tool","tool_call_id":"g1","name":"grep","content":"cfg.py:1: DATABASE_URL = env()\nold.py:9: DATABASE_URL"}"#,
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"b1","name":"bash","arguments":{"cmd":"pytest"}}]}"#,
        r#"{"role":"tool","tool_call_id":"b1","name":"bash","content":"1 failed","is_error":true}"#,
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"x1","name":"edit_file","arguments":{}}]}"#,
    ]
    .join("\n")
}

/// A project holding [`tool_stream`].
pub fn tool_project() -> Project {
    static TEMPLATE: Template = OnceLock::new();
    Project::with_messages(&TEMPLATE, tool_stream)
}

/// Four grep turns, each with a 100-line result.
pub fn grep_turns() -> Project {
    static TEMPLATE: Template = OnceLock::new();
    Project::with_messages(&TEMPLATE, || {
        let mut stream = String::new();
        for i in 0..4 {
            stream.push_str(&format!(
                "{{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{{\"id\":\"c{i}\",\"name\":\"grep\",\"arguments\":{{}}}}]}}\n"
            ));
            let body = format!("hit {i}\\n").repeat(100);
            stream.push_str(&format!(
                "{{\"role\":\"tool\",\"tool_call_id\":\"c{i}\",\"name\":\"grep\",\"content\":\"{body}\"}}\n"
            ));
        }
        stream
    })
}

/// `tract add` of a call to `name` and its `output`, with `env` set (no LLM unless it names
/// one); returns the run that added the result.
pub fn add_tool_turn(p: &Project, id: &str, name: &str, output: &str, env: &[(&str, &str)]) -> Run {
    let calls = format!(r#"[{{"id":"{id}","name":"{name}","arguments":{{"q":"DATABASE_URL"}}}}]"#);
    p.ok(&["add", "--role", "assistant", "--tool-calls", &calls, ""]);
    let run = p.run_env(
        &[
            "add",
            "--role",
            "tool",
            "--name",
            name,
            "--tool-call-id",
            id,
            "-",
        ],
        Some(output),
        env,
    );
    assert_eq!(run.code, Some(0), "{run}");
    run
}
