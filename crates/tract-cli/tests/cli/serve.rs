//! `tract serve`: the real server on a free port, asked over plain HTTP. The page's behaviour
//! in a browser is tested by the Python suite (tests/python/test_serve.py, headless Chromium);
//! here: how it starts and fails, its headers, and the API's answers on a session with fixed
//! ids.

use crate::common::{Project, json};
use crate::search::{deploy_session_and_a_retry, marked};
use insta::assert_snapshot;
use regex::Regex;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

/// A running server, stopped when dropped.
pub(crate) struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `tract serve` on a free port of `p`'s store, with `extra` arguments.
    pub(crate) fn start(p: &Project, extra: &[&str]) -> Server {
        let mut args = vec!["serve", "--port", "0"];
        args.extend_from_slice(extra);
        let mut child = p
            .cmd(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let addr = first
            .trim()
            .strip_prefix("tract serve: http://")
            .and_then(|a| a.strip_suffix('/'))
            .unwrap_or_else(|| panic!("first line: {first:?}"))
            .to_string();
        Server { child, addr }
    }

    /// One request; the status line, the headers (lower-cased names) and the body.
    fn request(&self, method: &str, path: &str) -> (String, Vec<(String, String)>, String) {
        self.request_for(&self.addr, method, path)
    }

    /// One request naming `host` in its Host header.
    fn request_for(
        &self,
        host: &str,
        method: &str,
        path: &str,
    ) -> (String, Vec<(String, String)>, String) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        let mut lines = head.lines();
        let status = lines.next().unwrap().to_string();
        let headers = lines
            .filter_map(|l| l.split_once(": "))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
            .collect();
        (status, headers, body.to_string())
    }

    /// GETs `path`: its JSON (anything but 200 fails the test).
    pub(crate) fn get(&self, path: &str) -> serde_json::Value {
        let (status, _, body) = self.request("GET", path);
        assert!(status.ends_with("200 OK"), "{path}: {status} {body}");
        json(&body)
    }

    fn error(&self, method: &str, path: &str) -> String {
        let (status, _, body) = self.request(method, path);
        format!("{status}\n{body}")
    }
}

/// A session with parallel calls (ok, error), an edited result and a pending call.
fn session() -> Project {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "You are a careful coding agent."]);
    p.ok(&["add", "Why does the login test fail?"]);
    p.ok(&[
        "add",
        "--json",
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"g","name":"grep","arguments":"{\"pattern\":\"expiry\"}"},{"id":"t","name":"bash","arguments":"{\"cmd\":\"pytest\"}"}]}"#,
    ]);
    let grep = p.ok(&[
        "add",
        "--role",
        "tool",
        "--name",
        "grep",
        "--tool-call-id",
        "g",
        "auth.py:12: if now > expiry + 1:\nauth.py:40: expiry = issued + ttl",
    ]);
    p.ok(&[
        "add",
        "--json",
        r#"{"role":"tool","name":"bash","tool_call_id":"t","content":"1 failed","is_error":true}"#,
    ]);
    p.ok(&["edit", grep.trim(), "auth.py:12"]);
    p.ok(&[
        "add",
        "--json",
        r#"{"role":"assistant","content":"Deploying.","tool_calls":[{"id":"d","name":"deploy","arguments":"{}"}]}"#,
    ]);
    p
}

#[test]
fn the_api_answers_a_session_with_its_cards_versions_and_headers() {
    let p = session();
    let s = Server::start(&p, &[]);
    assert!(s.addr.starts_with("127.0.0.1:"), "loopback by default");

    let (status, headers, body) = s.request("GET", "/");
    assert!(status.ends_with("200 OK"));
    assert!(body.contains("/assets/app.js"));
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_snapshot!(header("content-security-policy"), @"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    assert_eq!(header("x-content-type-options"), "nosniff");

    let view = s.get("/api/view?branch=main");
    assert_eq!(
        (view["total"].as_u64(), view["offset"].as_u64()),
        (Some(6), Some(0))
    );
    let cards: Vec<String> = view["entries"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["calls"].as_array().unwrap().clone())
        .map(|c| {
            let r = &c["result"];
            format!(
                "{} {} synthetic={} result={} marks={} versions={}",
                c["name"].as_str().unwrap(),
                c["state"].as_str().unwrap(),
                c["synthetic"],
                r["content"],
                r["marks"],
                r["version_count"]
            )
        })
        .collect();
    assert_snapshot!(cards.join("\n"), @r#"
    grep ok synthetic=false result="auth.py:12" marks=["edited"] versions=2
    bash error synthetic=false result="1 failed" marks=[] versions=1
    deploy pending synthetic=true result=null marks=null versions=null
    "#);
    // Results are shown in their call's card: each names its caller.
    let callers: Vec<String> = view["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{} {}", e["role"].as_str().unwrap(), e["caller"]))
        .collect();
    assert_eq!(
        callers,
        [
            "system null",
            "user null",
            "assistant null",
            "tool 2",
            "tool 2",
            "assistant null"
        ]
    );

    // The edited result's versions: the original first, the edit current.
    let position = view["entries"][3]["commit_hash"]
        .as_str()
        .unwrap()
        .to_string();
    let commit = s.get(&format!("/api/commit/{}", &position[..8]));
    let versions: Vec<String> = commit["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            format!(
                "{} current={} {:?}",
                v["op"].as_str().unwrap(),
                v["current"],
                v["content"].as_str().unwrap()
            )
        })
        .collect();
    assert_snapshot!(versions.join("\n"), @r#"
    append current=false "auth.py:12: if now > expiry + 1:\nauth.py:40: expiry = issued + ttl"
    edit current=true "auth.py:12"
    "#);

    // Search: the original only in history, and then not at a place in the view.
    let hits = s.get("/api/search?branch=main&q=issued");
    assert_eq!(hits["hits"].as_array().unwrap().len(), 0);
    let hits = s.get("/api/search?branch=main&q=issued&history=true");
    assert_eq!(
        hits["hits"][0]["commit_hash"].as_str(),
        Some(position.as_str())
    );
    assert!(hits["hits"][0]["index"].is_null());
    let sessions = s.get("/api/sessions");
    assert_eq!(sessions["sessions"][0]["messages"], 6);
    assert_eq!(sessions["sessions"][0]["token_count"], view["token_count"]);
}

#[test]
fn bad_requests_get_json_errors_and_the_server_goes_on() {
    let p = session();
    let s = Server::start(&p, &[]);
    assert_snapshot!(s.error("GET", "/api/view?branch=nope"), @r#"
    HTTP/1.1 404 Not Found
    {"error":{"code":"not_found","category":"not_found","message":"branch 'nope' not found"}}
    "#);
    assert_snapshot!(s.error("GET", "/api/view?branch=main&limit=0"), @r#"
    HTTP/1.1 400 Bad Request
    {"error":{"code":"bad_request","category":"invalid_input","message":"limit must be a whole number from 1 to 500, not '0'"}}
    "#);
    assert_snapshot!(s.error("GET", "/api/view"), @r#"
    HTTP/1.1 400 Bad Request
    {"error":{"code":"bad_request","category":"invalid_input","message":"the branch parameter is missing"}}
    "#);
    assert_snapshot!(s.error("GET", "/api/commit/zzzz"), @r#"
    HTTP/1.1 404 Not Found
    {"error":{"code":"not_found","category":"not_found","message":"commit or branch 'zzzz' not found"}}
    "#);
    assert_snapshot!(s.error("DELETE", "/api/sessions"), @r#"
    HTTP/1.1 405 Method Not Allowed
    {"error":{"code":"method_not_allowed","category":"invalid_input","message":"the view is read-only: only GET and HEAD are served"}}
    "#);
    assert_snapshot!(s.error("GET", "/api/nothing"), @r#"
    HTTP/1.1 404 Not Found
    {"error":{"code":"not_found","category":"not_found","message":"no such page or endpoint"}}
    "#);
    // Another name pointed at 127.0.0.1 (DNS rebinding) is refused; loopback names are not.
    let (status, _, body) = s.request_for("attacker.example:8484", "GET", "/api/sessions");
    assert_snapshot!(format!("{status}\n{body}"), @r#"
    HTTP/1.1 403 Forbidden
    {"error":{"code":"forbidden_host","category":"invalid_input","message":"the server answers only requests for a loopback host, not 'attacker.example:8484' (start it with --bind to serve other addresses)"}}
    "#);
    for host in ["localhost:8484", "[::1]:8484", "127.0.0.1"] {
        let (status, _, _) = s.request_for(host, "GET", "/api/sessions");
        assert!(status.ends_with("200 OK"), "{host}: {status}");
    }
    let before = p.state();
    assert_eq!(s.get("/api/store")["branches"], 1);
    assert_eq!(
        p.state(),
        before,
        "nothing a request does changes the store"
    );
}

/// Every endpoint that reads a named branch answers a 404 for one that does not exist, in the
/// words of the CLI: the closest branches there are. The current branch of a new store, before
/// its first commit, is an empty view.
#[test]
fn a_branch_that_does_not_exist_is_a_404_naming_the_close_ones() {
    let p = session();
    for b in ["session-1", "session-2", "session-10"] {
        p.ok(&["--branch", b, "add", "hello"]);
    }
    let s = Server::start(&p, &[]);
    let missing = "{\"error\":{\"code\":\"not_found\",\"category\":\"not_found\",\"message\":\"branch 'sesion-1' not found; \
                   did you mean 'session-1', 'session-10' or 'session-2'?\"}}";
    for path in [
        "/api/view?branch=sesion-1",
        "/api/view?branch=sesion-1&offset=0&limit=5",
        "/api/history?branch=sesion-1",
        "/api/search?branch=sesion-1&q=hello",
        "/api/commit/HEAD?branch=sesion-1",
    ] {
        assert_eq!(
            s.error("GET", path),
            format!("HTTP/1.1 404 Not Found\n{missing}"),
            "{path}"
        );
    }
    assert_snapshot!(s.error("GET", "/api/history?branch=Session-2"), @r#"
    HTTP/1.1 404 Not Found
    {"error":{"code":"not_found","category":"not_found","message":"branch 'Session-2' not found; did you mean 'session-2'?"}}
    "#);
    // Once the branch exists, it is served.
    p.ok(&["--branch", "sesion-1", "add", "now it exists"]);
    assert_eq!(s.get("/api/view?branch=sesion-1")["total"], 1);

    let new = Project::new();
    let s = Server::start(&new, &[]);
    let view = s.get("/api/view?branch=main");
    assert_eq!(
        (view["total"].clone(), view["head"].clone()),
        (0.into(), serde_json::Value::Null)
    );
    assert_snapshot!(s.error("GET", "/api/history?branch=mian"), @r#"
    HTTP/1.1 404 Not Found
    {"error":{"code":"not_found","category":"not_found","message":"branch 'mian' not found"}}
    "#);
}

/// `/api/search` answers hits best first with their score, highlights and branches, a page
/// at a time (`offset`, `more`); `all=true` searches every session, a hit of another branch's
/// having no place in this view; the filters pass through; bad parameters are 400s.
#[test]
fn search_ranks_pages_and_searches_every_session() {
    let p = deploy_session_and_a_retry();
    let s = Server::start(&p, &[]);
    let page = |path: &str| -> String {
        let answer = s.get(path);
        let hits: Vec<String> = answer["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let marked = marked(h);
                format!(
                    "{} index={} score={} branches={} marked={marked:?}",
                    &h["commit_hash"].as_str().unwrap()[..10],
                    h["index"],
                    if h["score"].is_f64() { "yes" } else { "null" },
                    h["branches"],
                )
            })
            .collect();
        format!(
            "{path}\noffset={} more={}\n{}\n",
            answer["offset"],
            answer["more"],
            hits.join("\n")
        )
    };
    let answers = [
        "/api/search?q=deploy&all=true",
        "/api/search?branch=main&q=deploy",
        "/api/search?branch=main&q=deploy&limit=2",
        "/api/search?branch=main&q=deploy&limit=2&offset=2",
        "/api/search?branch=main&q=deploy&all=true",
        "/api/search?branch=retry&q=deploy",
        "/api/search?branch=main&q=connection&errors=true",
        "/api/search?branch=main&q=deploy%20OR%20connection&op=append&since=2026-01-01T00:00:00.000002Z&until=2026-01-01T00:00:00.000004Z",
        "/api/search?branch=main&q=%22connection%20refused%22",
    ]
    .map(page)
    .join("\n");
    assert_snapshot!(answers, @r#"
        /api/search?q=deploy&all=true
        offset=0 more=false
        d9a60c89c2 index=null score=yes branches=["main"] marked=["deploy", "deploy", "deploy"]
        651e92b005 index=null score=yes branches=["main"] marked=["deploy"]
        65235cfb84 index=null score=yes branches=["main","retry"] marked=["deploy"]
        1426834272 index=null score=yes branches=["retry"] marked=["deploy"]
        23bacaa138 index=null score=yes branches=["main","retry"] marked=["deploy"]

        /api/search?branch=main&q=deploy
        offset=0 more=false
        d9a60c89c2 index=3 score=yes branches=["main"] marked=["deploy", "deploy", "deploy"]
        651e92b005 index=2 score=yes branches=["main"] marked=["deploy"]
        65235cfb84 index=0 score=yes branches=["main","retry"] marked=["deploy"]
        23bacaa138 index=1 score=yes branches=["main","retry"] marked=["deploy"]

        /api/search?branch=main&q=deploy&limit=2
        offset=0 more=true
        d9a60c89c2 index=3 score=yes branches=["main"] marked=["deploy", "deploy", "deploy"]
        651e92b005 index=2 score=yes branches=["main"] marked=["deploy"]

        /api/search?branch=main&q=deploy&limit=2&offset=2
        offset=2 more=false
        65235cfb84 index=0 score=yes branches=["main","retry"] marked=["deploy"]
        23bacaa138 index=1 score=yes branches=["main","retry"] marked=["deploy"]

        /api/search?branch=main&q=deploy&all=true
        offset=0 more=false
        d9a60c89c2 index=3 score=yes branches=["main"] marked=["deploy", "deploy", "deploy"]
        651e92b005 index=2 score=yes branches=["main"] marked=["deploy"]
        65235cfb84 index=0 score=yes branches=["main","retry"] marked=["deploy"]
        1426834272 index=null score=yes branches=["retry"] marked=["deploy"]
        23bacaa138 index=1 score=yes branches=["main","retry"] marked=["deploy"]

        /api/search?branch=retry&q=deploy
        offset=0 more=false
        65235cfb84 index=0 score=yes branches=["main","retry"] marked=["deploy"]
        1426834272 index=2 score=yes branches=["retry"] marked=["deploy"]
        23bacaa138 index=1 score=yes branches=["main","retry"] marked=["deploy"]

        /api/search?branch=main&q=connection&errors=true
        offset=0 more=false
        d9a60c89c2 index=3 score=yes branches=["main"] marked=["connection"]

        /api/search?branch=main&q=deploy%20OR%20connection&op=append&since=2026-01-01T00:00:00.000002Z&until=2026-01-01T00:00:00.000004Z
        offset=0 more=false
        d9a60c89c2 index=3 score=yes branches=["main"] marked=["deploy", "deploy", "connection", "deploy"]
        651e92b005 index=2 score=yes branches=["main"] marked=["deploy"]

        /api/search?branch=main&q=%22connection%20refused%22
        offset=0 more=false
        23bacaa138 index=1 score=yes branches=["main","retry"] marked=["connection", "refused"]
    "#);
    let scores: Vec<f64> = s.get("/api/search?branch=main&q=deploy")["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );

    let errors = [
        "/api/search?q=deploy",
        "/api/search?branch=main&q=deploy&offset=-1",
        "/api/search?branch=main&q=deploy&offset=10001",
        "/api/search?branch=main&q=deploy&all=maybe",
        "/api/search?branch=main&q=deploy&since=yesterday",
        "/api/search?branch=main&q=deploy&op=rebase",
        "/api/search?branch=main&q=-deploy",
    ]
    .map(|path| format!("{path}\n{}\n", s.error("GET", path)))
    .join("\n");
    assert_snapshot!(errors, @r#"
        /api/search?q=deploy
        HTTP/1.1 400 Bad Request
        {"error":{"code":"bad_request","category":"invalid_input","message":"the branch parameter is missing (or all=true, to search every branch)"}}

        /api/search?branch=main&q=deploy&offset=-1
        HTTP/1.1 400 Bad Request
        {"error":{"code":"bad_request","category":"invalid_input","message":"offset must be a whole number from 0 to 10000, not '-1'"}}

        /api/search?branch=main&q=deploy&offset=10001
        HTTP/1.1 400 Bad Request
        {"error":{"code":"bad_request","category":"invalid_input","message":"offset must be a whole number from 0 to 10000, not '10001'"}}

        /api/search?branch=main&q=deploy&all=maybe
        HTTP/1.1 400 Bad Request
        {"error":{"code":"bad_request","category":"invalid_input","message":"all must be true or false, not 'maybe'"}}

        /api/search?branch=main&q=deploy&since=yesterday
        HTTP/1.1 400 Bad Request
        {"error":{"code":"bad_request","category":"invalid_input","message":"invalid input: since 'yesterday' is not a time: give an RFC 3339 time (2026-01-31T09:00:00Z) or a duration ago (7d, 2h, 30min)"}}

        /api/search?branch=main&q=deploy&op=rebase
        HTTP/1.1 400 Bad Request
        {"error":{"code":"bad_request","category":"invalid_input","message":"invalid input: unknown operation 'rebase' to search (one of: append, edit, compress, merge)"}}

        /api/search?branch=main&q=-deploy
        HTTP/1.1 400 Bad Request
        {"error":{"code":"bad_request","category":"invalid_input","message":"invalid input: the search '-deploy' has no word to look for (punctuation is not searched; a regular expression searches it)"}}
    "#);
}

/// `tract serve --open` where no browser can be opened says so on standard error, with the
/// address to open by hand, and serves all the same: with an opener that fails (`xdg-open`
/// finding no browser ends with 3), and with no opener at all.
#[cfg(target_os = "linux")]
#[test]
fn serve_open_without_a_browser_says_so_and_serves() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new();
    let failing = p.path().join("failing");
    let none = p.path().join("none");
    for d in [&failing, &none] {
        std::fs::create_dir(d).unwrap();
    }
    let opener = failing.join("xdg-open");
    std::fs::write(
        &opener,
        "#!/bin/sh\necho 'xdg-open: no method available for opening' >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut said = Vec::new();
    for path in [&failing, &none] {
        let mut child = p
            .cmd(&["serve", "--port", "0", "--open"])
            .env("PATH", path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        // Read beside the test, so a server that says nothing fails it instead of hanging it.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stderr).read_line(&mut line);
            let _ = tx.send(line);
        });
        let addr = first
            .trim()
            .strip_prefix("tract serve: http://")
            .and_then(|a| a.strip_suffix('/'))
            .unwrap_or_else(|| panic!("first line: {first:?}"))
            .to_string();
        let s = Server { child, addr };
        assert_eq!(s.get("/api/sessions")["sessions"], serde_json::json!([]));
        let warning = rx.recv_timeout(Duration::from_secs(20));
        said.push(warning.expect("no warning on standard error"));
        // Still serving after the warning.
        assert_eq!(s.get("/api/sessions")["sessions"], serde_json::json!([]));
    }
    assert_snapshot!(said.concat(), @"
        warning: no browser could be opened (xdg-open: exit status: 3); open http://127.0.0.1:[PORT]/ yourself, the view is served there
        warning: no browser could be opened (xdg-open: No such file or directory (os error 2)); open http://127.0.0.1:[PORT]/ yourself, the view is served there
        ");
}

#[test]
fn a_missing_store_or_a_busy_port_is_one_error_line() {
    let empty = Project::empty();
    assert_snapshot!(empty.run(&["serve", "--port", "0"]), @"
    exit: 3
    --- stderr
    error: no tract store found: none named (--store, TRACT_STORE), no .tract/store.redb in [DIR] or any parent directory, and no per-user store (neither XDG_DATA_HOME nor HOME is set)
    hint: run `tract init` to create one here, or pass --store PATH|URL
    ");
    let p = session();
    let s = Server::start(&p, &[]);
    let port = s.addr.rsplit(':').next().unwrap().to_string();
    assert_snapshot!(p.run(&["serve", "--port", &port]), @"
    exit: 7
    --- stderr
    error: cannot listen on 127.0.0.1:[PORT]: Address already in use (os error 98)
    hint: another program listens there: pick another --port, or --port 0 for any free one
    ");
}

/// The most lines a module of the page may have: each is one part of the page, short enough
/// to read at once.
const MODULE_LINES: usize = 400;

/// The page's script is ES modules: the one index.html loads and every module a served module
/// imports are served, as JavaScript, as they are in `serve/assets/`; every module there is
/// one the page imports, and the page names them all to be fetched at once; none is longer
/// than MODULE_LINES.
#[test]
fn the_page_s_modules_are_all_served_and_short() {
    let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands/serve/assets");
    let s = Server::start(&Project::new(), &[]);
    let (_, index_headers, index) = s.request("GET", "/");
    let script = Regex::new(r#"<script\b[^>]*\bsrc="([^"]+)""#).unwrap();
    // `import ... from "x"`, `export ... from "x"` and `import "x"`.
    let import =
        Regex::new(r#"(?m)^\s*(?:import\s*|(?:import|export)\s[^'";]*?\bfrom\s*)['"]([^'"]+)['"]"#)
            .unwrap();
    let mut todo: Vec<String> = script
        .captures_iter(&index)
        .map(|c| c[1].to_string())
        .collect();
    assert_eq!(todo, ["/assets/app.js"], "index.html loads one script");
    let mut served = BTreeSet::new();
    while let Some(path) = todo.pop() {
        if !served.insert(path.clone()) {
            continue;
        }
        let (status, headers, body) = s.request("GET", &path);
        assert!(
            status.ends_with("200 OK"),
            "{path} is imported but not served: {status}"
        );
        let content_type = headers.iter().find(|(k, _)| k == "content-type");
        assert_eq!(
            content_type.map(|(_, v)| v.as_str()),
            Some("text/javascript; charset=utf-8"),
            "{path}"
        );
        let name = path.strip_prefix("/assets/").unwrap();
        let file = std::fs::read_to_string(assets.join(name)).unwrap();
        assert_eq!(body, file, "{path} is served as it is in the assets folder");
        let lines = file.lines().count();
        assert!(
            lines <= MODULE_LINES,
            "{path} has {lines} lines, more than {MODULE_LINES}: split it"
        );
        for c in import.captures_iter(&body) {
            todo.push(resolve(&path, &c[1]));
        }
    }
    let modules: BTreeSet<String> = std::fs::read_dir(&assets)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".js"))
        .map(|name| format!("/assets/{name}"))
        .collect();
    assert_eq!(
        served, modules,
        "every module in the folder is one the page imports"
    );
    let (_, link) = index_headers.iter().find(|(k, _)| k == "link").unwrap();
    let preloaded: BTreeSet<String> = link
        .split(", ")
        .map(|l| {
            let module = l.strip_suffix(">; rel=modulepreload").unwrap();
            module.strip_prefix('<').unwrap().to_string()
        })
        .collect();
    assert_eq!(preloaded, modules, "the page preloads every module");
    let (status, _, _) = s.request("GET", "/assets/nope.js");
    assert!(status.ends_with("404 Not Found"), "{status}");
}

/// The path of the module that `spec` names when imported from the module at `from`.
fn resolve(from: &str, spec: &str) -> String {
    assert!(
        spec.starts_with("./") || spec.starts_with("../"),
        "{from} imports {spec:?}: the page has no import map, so only relative paths load"
    );
    let mut path: Vec<&str> = from.split('/').collect();
    path.pop();
    for part in spec.split('/') {
        match part {
            "." => {}
            ".." => {
                path.pop();
            }
            _ => path.push(part),
        }
    }
    path.join("/")
}
