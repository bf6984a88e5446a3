//! What the tests share: where a test's store lives (a file, or a schema of the PostgreSQL
//! server the run names), SQL on a PostgreSQL store's rows, handles, the sessions several
//! concepts' tests start from, and the fixtures' paths.

use tract_core::{Bind, BranchName, OpenOptions, ToolCall, Tract};

/// A tool call `id` of tool `name`, its arguments naming the id.
pub fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: format!(r#"{{"q":"{id}"}}"#),
    }
}

/// Where a test's store lives: a file in a fresh directory, or, when `TRACT_TEST_POSTGRES` holds
/// a server's URL (the test command sets it for its second run of this suite), a fresh schema
/// of that database. The suite runs once per backend.
pub fn temp_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = match postgres_url() {
        Some(url) => {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}schema=t{}_{n}_{nanos}", std::process::id()).into()
        }
        None => dir.path().join("store.redb"),
    };
    (dir, path)
}

/// A store file in a fresh directory, whichever backend the run is for: for the tests of what
/// happens to the file itself (its bytes changed, cut or copied; its size).
pub fn file_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    (dir, path)
}

/// The PostgreSQL server this run of the suite uses, if any.
pub fn postgres_url() -> Option<String> {
    std::env::var("TRACT_TEST_POSTGRES")
        .ok()
        .filter(|u| !u.is_empty())
}

/// A client on the database of a test store's URL, in the store's schema, to change rows as
/// nothing but SQL would. `None` in the run without a server.
/// A connection to the server itself (`TRACT_TEST_POSTGRES_DIRECT` when the store's URL goes
/// through a pooler), for the tests that look at or change rows behind tract's back.
pub fn sql_on(path: &std::path::Path) -> Option<postgres::Client> {
    postgres_url()?;
    let url = path.to_str().unwrap();
    let (base, schema) = url
        .rsplit_once("&schema=")
        .or_else(|| url.rsplit_once("?schema="))?;
    let direct = std::env::var("TRACT_TEST_POSTGRES_DIRECT").ok();
    let base = direct.as_deref().filter(|d| !d.is_empty()).unwrap_or(base);
    let mut client = postgres::Client::connect(base, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("SET search_path TO \"{schema}\""))
        .unwrap();
    Some(client)
}

/// Opens `path` bound as `bind` says.
pub fn open_bound(path: &std::path::Path, bind: Bind) -> Tract {
    let options = OpenOptions {
        bind,
        ..OpenOptions::default()
    };
    Tract::open_with(path, &options).unwrap()
}

/// The branch name `name` (a valid one).
pub fn branch(name: &str) -> BranchName {
    BranchName::new(name).unwrap()
}

/// The texts of `t`'s view, in order.
pub fn texts(t: &Tract) -> Vec<String> {
    t.compile()
        .unwrap()
        .messages()
        .unwrap()
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect()
}

/// A main agent that delegated a task through tool call `task_1` and a sub-agent that worked
/// on it on its own branch.
pub fn delegated(t: &Tract) -> Tract {
    t.system("you are the main agent").unwrap();
    t.user("fix the failing test").unwrap();
    t.assistant("delegating", vec![call("task_1", "task")])
        .unwrap();
    let sub = t.fork(&branch("sub"), &tract_core::Rev::head()).unwrap();
    sub.user("find why test_login fails").unwrap();
    sub.assistant("", vec![call("g1", "grep")]).unwrap();
    sub.tool_result("g1", "grep", "auth.py:12: token expiry off by one", false)
        .unwrap();
    sub.assistant("The expiry check in auth.py:12 is off by one.", vec![])
        .unwrap();
    sub
}

/// Every branch's listed counts equal what a fresh handle's view of it holds.
pub fn assert_listing_matches_views(path: &std::path::Path, t: &Tract, step: &str) {
    assert_listing_matches_views_of(path, t, step, |_| true);
}

/// As `assert_listing_matches_views`, for the branches whose names `which` accepts: each one
/// opened afresh costs a replay of its history, so a long test checks every branch now and then.
pub fn assert_listing_matches_views_of(
    path: &std::path::Path,
    t: &Tract,
    step: &str,
    which: impl Fn(&str) -> bool,
) {
    for b in t.branches().unwrap().into_iter().filter(|b| which(&b.name)) {
        let fresh = open_bound(path, Bind::Branch(branch(&b.name)));
        let s = fresh.status().unwrap();
        assert_eq!(
            (b.messages, b.token_count, b.head),
            (s.messages as u64, s.token_count, s.head.commit.unwrap()),
            "{step}: branch {}",
            b.name
        );
        let tip = fresh.get_commit(b.head).unwrap();
        assert_eq!(b.last_activity_us, tip.commit.timestamp_us, "{step}");
    }
}

/// A session with parallel calls, an edited result, an error and a crashed call.
pub fn tool_session(t: &Tract) -> Vec<tract_core::CommitInfo> {
    vec![
        t.system("sys").unwrap(),
        t.user("find the config").unwrap(),
        t.assistant("", vec![call("g1", "grep"), call("r1", "read_file")])
            .unwrap(),
        t.tool_result("r1", "read_file", "file body", false)
            .unwrap(),
        t.tool_result(
            "g1",
            "grep",
            "config.py:42: DATABASE_URL\nother.py:1: x",
            false,
        )
        .unwrap(),
        t.assistant("", vec![call("b1", "bash")]).unwrap(),
        t.tool_result("b1", "bash", "exit 1: tests failed", true)
            .unwrap(),
        t.assistant("", vec![call("g2", "grep")]).unwrap(),
        t.tool_result("g2", "grep", "nothing", false).unwrap(),
        t.assistant("", vec![call("x1", "edit_file")]).unwrap(),
    ]
}

/// A client of the OpenAI-compatible server at `url`, with a short timeout and quick retries.
pub fn llm(url: &str) -> tract_core::OpenAiCompatible {
    let mut c = tract_core::OpenAiCompatible::new(url, "stub-model");
    c.api_key = Some("sk-test".into());
    c.timeout = std::time::Duration::from_millis(400);
    c.retries = 2;
    c.backoff = std::time::Duration::from_millis(10);
    c
}

/// Imports the transcript file `path` onto the branch it names itself (its session's), in the
/// store at `store`; returns the handle on that branch and what the import did.
pub fn import_own_branch(
    store: &std::path::Path,
    path: &std::path::Path,
) -> (Tract, tract_core::ImportReport) {
    let t = tract_core::formats::transcript::parse_file(path, None).unwrap();
    let name = tract_core::formats::transcript::default_branch(&t, path);
    let h = open_bound(store, tract_core::Bind::Branch(branch(&name)));
    let report = h.import(t).unwrap();
    (h, report)
}

/// A file of the repository's `tests/fixtures`.
pub fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// Runs the test `name` (`module::test`) of this binary again, alone in a process of its own
/// with `var` set to `value` (what the test checks for to know it is that run), and asserts it
/// passed there: for a check of something process-wide, which tests running beside it change.
pub fn passes_alone(name: &str, var: &str, value: impl AsRef<std::ffi::OsStr>) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture"])
        .env(var, value)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A capture on a new store, following an empty Claude Code projects folder in `dir` (the
/// test adds the other agents' folders), with the handle on `main` it was made from; the store's
/// directory goes with the first.
pub fn capture_in(
    dir: &std::path::Path,
) -> (tempfile::TempDir, Tract, tract_core::capture::Capture) {
    let (d, store) = temp_store();
    let projects = dir.join("claude-projects");
    std::fs::create_dir_all(&projects).unwrap();
    let t = open_bound(&store, Bind::Branch(branch("main")));
    let capture = tract_core::capture::Capture::new(t.store().clone(), &projects).unwrap();
    (d, t, capture)
}
