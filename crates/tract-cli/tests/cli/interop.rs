//! `tract import` and `tract export`.

use crate::common::{Project, json};
use insta::assert_snapshot;

/// The Claude Code session of the shared fixtures, copied into the project.
fn with_session(p: &Project) {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/claude-code-session.jsonl");
    std::fs::copy(fixture, p.path().join("session.jsonl")).unwrap();
}

/// A Claude Code session goes onto a branch named after it, once: the second import adds
/// nothing; the branch reads as a Markdown transcript.
#[test]
fn a_claude_code_session_imports_once_and_exports_as_markdown() {
    let p = Project::new();
    with_session(&p);
    assert_snapshot!(p.run(&["import", "session.jsonl"]), @"
    exit: 0
    --- stdout
    session.jsonl: claude-code onto claude/-home-dev-app/7f3c1a2e-5b1d-4c8e-9a0f-2d6e8b4c1a90: 10 added, 3 lines without a message skipped, 1 off the conversation's path (kept as a record)
    ");
    assert_snapshot!(p.run(&["import", "session.jsonl", "--json"]), @r#"
    exit: 0
    --- stdout
    [
      {
        "file": "session.jsonl",
        "branch": "claude/-home-dev-app/7f3c1a2e-5b1d-4c8e-9a0f-2d6e8b4c1a90",
        "format": "claude-code",
        "added": 0,
        "already": 10,
        "skipped": 3,
        "off_path": 1,
        "recorded": 0,
        "edited": 0,
        "rewound": false,
        "session_store": false,
        "waiting_agents": [],
        "warnings": [],
        "tip": "4c65d6964cfb81042a9c05a8b9b2de417f90eca51903a9d22a93003e885a10d1"
      }
    ]
    "#);
    let on = [
        "--branch",
        "claude/-home-dev-app/7f3c1a2e-5b1d-4c8e-9a0f-2d6e8b4c1a90",
    ];
    assert_snapshot!(p.run(&[on[0], on[1], "log"]), @r#"
    exit: 0
    --- stdout
    4c65d6964c record -         -                 0  claude_code.line (490 bytes)
    15be7ace40 append assistant -                12  Fixed: the test expected the old URL.
    123bfd9b02 append user      -                 8  Fix the failing test.
    9edc57327a compress user      -                29  (summary of 7: 2c20ef8126..37cbababc2) This session is being continued from a previous conversa…
    37cbababc2 append tool      Bash              9  [error] 1 failed, 41 passed
    0905022002 append assistant Bash             12  Bash({"command":"pytest -q"})
    c6c5c0feab append user      -                10  Thanks. Now check the tests.
    a40c271204 append assistant -                14  It is read in config.py, line 42.
    3db23c4bcd append tool      Grep             17  config.py:42: DATABASE_URL = os.environ["DATABASE_URL"]
    2a675e56ed append assistant Grep             56  Let me search.
    2c20ef8126 append user      -                 9  Where is DATABASE_URL read?
    --- stderr
    note: a claude-code 2.1.37 session
    "#);
    assert_snapshot!(p.run(&[on[0], on[1], "export", "--format", "markdown"]), @"
    exit: 0
    --- stdout
    ## User

    This session is being continued from a previous conversation. Summary: DATABASE_URL is read in config.py:42; one test fails.

    ## User

    Fix the failing test.

    ## Assistant

    Fixed: the test expected the old URL.
    ");
    assert_snapshot!(p.run(&[on[0], on[1], "export", "--format", "openai"]), @r#"
    exit: 0
    --- stdout
    {
      "messages": [
        {
          "role": "user",
          "content": "This session is being continued from a previous conversation. Summary: DATABASE_URL is read in config.py:42; one test fails."
        },
        {
          "role": "user",
          "content": "Fix the failing test."
        },
        {
          "role": "assistant",
          "content": "Fixed: the test expected the old URL."
        }
      ]
    }
    "#);
}

/// `export --history` in jsonl is read back by `import` into another store with every id the
/// same.
#[test]
fn a_history_export_imports_into_another_store_with_the_same_ids() {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "be brief"]);
    p.ok(&["add", "hello"]);
    p.ok(&["edit", "HEAD", "hello there"]);
    let history = p.ok(&["export", "--history"]);
    std::fs::write(p.path().join("history.jsonl"), &history).unwrap();
    assert_snapshot!(p.run(&["--store", "copy.redb", "init"]), @"
        exit: 0
        --- stdout
        Initialized empty tract store in copy.redb
        ");
    assert_snapshot!(p.run(&["--store", "copy.redb", "--branch", "main", "import", "history.jsonl"]), @"
        exit: 0
        --- stdout
        history.jsonl: tract commits onto main: 3 added
        ");
    assert_eq!(
        p.ok(&["--store", "copy.redb", "log", "--json"]),
        p.ok(&["log", "--json"])
    );
    // The report names the format as `--format` takes it (it said "tract commits").
    let again = json(&p.ok(&["--store", "copy.redb", "import", "history.jsonl", "--json"]));
    assert_eq!(again[0]["format"], "jsonl", "{again}");
}

/// A bad line names its file and line, and nothing of any file is written.
#[test]
fn a_bad_line_names_its_file_and_line_and_nothing_is_written() {
    let p = Project::new();
    with_session(&p);
    std::fs::write(
        p.path().join("bad.jsonl"),
        "{\"role\": \"user\", \"content\": \"fine\"}\n{\"role\": \"user\", \"content\": 7}\n",
    )
    .unwrap();
    let before = p.state();
    assert_snapshot!(p.fails(&["import", "session.jsonl", "bad.jsonl"]), @"
        exit: 4
        --- stderr
        error: invalid transcript bad.jsonl: line 2: 'content' must be a string, null or a list of parts
        ");
    assert_snapshot!(p.fails(&["import", "session.jsonl", "--format", "yaml"]), @"
        exit: 4
        --- stderr
        error: invalid input: unknown transcript format 'yaml' (auto, claude-code, codex, gemini, openai, openai-responses, anthropic, jsonl)
        ");
    assert_snapshot!(p.fails(&["export", "--format", "openai", "--history"]), @"
        exit: 4
        --- stderr
        error: invalid input: a request body holds the view only: history goes to jsonl or markdown
        ");
    assert_eq!(p.state(), before);
}

/// Sub-agents (a file beside the session, and sidechain lines in it) come back as branches
/// merged as their Task's result.
#[test]
fn claude_code_sub_agents_import_as_merged_branches() {
    let p = Project::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    std::fs::copy(
        fixtures.join("claude-code-agents.jsonl"),
        p.path().join("review.jsonl"),
    )
    .unwrap();
    std::fs::create_dir_all(p.path().join("review/subagents")).unwrap();
    std::fs::copy(
        fixtures.join("claude-code-agents/subagents/agent-a1b2c3.jsonl"),
        p.path().join("review/subagents/agent-a1b2c3.jsonl"),
    )
    .unwrap();
    assert_snapshot!(p.run(&["--branch", "review", "import", "review.jsonl"]), @"
        exit: 0
        --- stdout
        review.jsonl: claude-code onto review: 5 added
        --- stderr
        note: created branch 'review'
        ");
    assert_snapshot!(p.run(&["--branch", "review", "log", "--graph"]), @r#"
    exit: 0
    --- stdout
    ○  d83e3914e2 append assistant -                17  Two findings: token rotation (auth) and refund rounding (billing).  (review [claude-code 2.1.37])
    ◆    e8aad3c35f merge  tool      Task             20  (review/agents/b4 answers toolu_T2) Billing rounds cents down in refunds.
    ├─╮
    │ ○  96390de389 append assistant -                10  Billing rounds cents down in refunds.  (review/agents/b4)
    │ ○  e6d6586318 append user      -                10  Review src/billing for bugs.
    ├─╯
    ◆    0a7aa3ff17 merge  tool      Task             12  (review/agents/a1b2c3 answers toolu_T1) Auth: the session token is never rotated.
    ├─╮
    │ ○  007e1e917a append assistant -                12  Auth: the session token is never rotated.  (review/agents/a1b2c3)
    │ ○  63eff1e27d append tool      Grep              6  No matches found
    │ ○  0249e3d8ab append assistant Grep             10  Grep({"pattern":"rotate"})
    │ ○  5ec5a5169a append user      -                 9  Review src/auth for bugs.
    ├─╯
    ○  77fcdf0e1d append assistant Task,Task        50  Task({"subagent_type":"reviewer","description":"Review auth","prompt":"Review src/auth for bugs…
    ○  9dbf65542d append user      -                12  Review the auth module and the billing module.
    --- stderr
    note: a claude-code 2.1.37 session
    "#);
    assert_snapshot!(p.run(&["branch"]), @"
    exit: 0
    --- stdout
      review               d83e3914e2      5 msgs      114 tok  2026-11-21T10:00:25Z  claude-code 2.1.37
      review/agents/a1b2c3 007e1e917a      6 msgs      160 tok  2026-11-21T10:00:19Z
      review/agents/b4     96390de389      5 msgs      126 tok  2026-11-21T10:00:20Z
    ");
}

/// A history export holding a record (a framework's checkpoint) imports to identical ids; the
/// record shows in `log` and `show` with its kind, and never in what the model is sent.
#[test]
fn a_record_imports_shows_with_its_kind_and_stays_out_of_the_view() {
    let p = Project::new();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/history-with-record.jsonl");
    std::fs::copy(fixture, p.path().join("history.jsonl")).unwrap();
    assert_snapshot!(p.run(&["import", "history.jsonl", "--branch", "threads/t1"]), @"
        exit: 0
        --- stdout
        history.jsonl: tract commits onto threads/t1: 3 added
        --- stderr
        note: created branch 'threads/t1'
        ");
    let on = ["--branch", "threads/t1"];
    assert_snapshot!(p.run(&[on[0], on[1], "log"]), @"
        exit: 0
        --- stdout
        5074fdfe1a record -         -                 0  langgraph.checkpoint (7 bytes)
        273eadf6e4 append assistant -                 5  hello there
        f38307ef87 append user      -                 4  hi
        ");
    // A record is no system message: its kind, not a role, in the graph too.
    assert_snapshot!(p.run(&[on[0], on[1], "log", "--graph"]), @"
        exit: 0
        --- stdout
        ○  5074fdfe1a record -         -                 0  langgraph.checkpoint (7 bytes)  (threads/t1)
        ○  273eadf6e4 append assistant -                 5  hello there
        ○  f38307ef87 append user      -                 4  hi
        ");
    assert_snapshot!(p.run(&[on[0], on[1], "show", "HEAD"]), @r#"
        exit: 0
        --- stdout
        commit  5074fdfe1a301d69bae4011904cbc3d083c38d3fe175ca6bd1e11887c5580d81
        op      record langgraph.checkpoint
        parent  273eadf6e4
        date    2026-11-24T01:50:17.014025Z
        role    system
        tokens  0

        {"a":1}
        "#);
    let shown = p.run(&[on[0], on[1], "show", "HEAD", "--json"]);
    assert!(
        shown
            .stdout
            .contains(r#""record_kind": "langgraph.checkpoint""#),
        "{}",
        shown.stdout
    );
    assert_snapshot!(p.run(&[on[0], on[1], "export", "--format", "openai"]), @r#"
        exit: 0
        --- stdout
        {
          "messages": [
            {
              "role": "user",
              "content": "hi"
            },
            {
              "role": "assistant",
              "content": "hello there"
            }
          ]
        }
        "#);
}

/// A projects folder as Claude Code keeps it, with two real sessions of the shared fixtures
/// (one with its sub-agents' folder).
fn with_projects(p: &Project) -> std::path::PathBuf {
    projects_in(&p.path().join("projects"), &SESSIONS)
}

/// The session files `with_projects` copies (the last is the second one's sub-agent).
const SESSIONS: [&str; 3] = [
    "v1.0.98-init-command.jsonl",
    "v2.1.39-task-subagent.jsonl",
    "v2.1.39-task-subagent/subagents/agent-aac57f5.jsonl",
];

/// `projects`, made a Claude Code projects folder holding `sessions` of the shared fixtures.
fn projects_in(projects: &std::path::Path, sessions: &[&str]) -> std::path::PathBuf {
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/claude-code-real");
    let folder = projects.join("-home-USER-spotter");
    std::fs::create_dir_all(folder.join("v2.1.39-task-subagent/subagents")).unwrap();
    for name in sessions {
        std::fs::copy(real.join(name), folder.join(name)).unwrap();
    }
    projects.to_path_buf()
}

/// `tract capture --once` imports every session of a projects folder onto its own branch, then
/// nothing the second time; a folder that is not there is a clear error.
#[test]
fn capture_once_imports_every_session_once() {
    let p = Project::new();
    with_projects(&p);
    fn capture(dir: &str) -> [&str; 5] {
        ["--store", ".tract/store.redb", "capture", "--once", dir]
    }
    assert_snapshot!(p.run(&capture("projects")), @"
    exit: 0
    --- stdout
    claude/-path-to-Demo/1af7fc5e-8455-4414-9ccd-011d40f70b2a: 20 added, 1 line kept as a record
    claude/-home-USER-projects-spotter-worktrees-spotter-4te/ae4a77f8-aedd-4bc1-888f-c94edc91af04: 30 added, 1 line kept as a record
    2 sessions, 50 messages imported, 2 lines kept as records; store .tract/store.redb
    ");
    assert_snapshot!(p.run(&capture("projects")), @"
    exit: 0
    --- stdout
    2 sessions, 0 messages imported, 0 lines kept as records; store .tract/store.redb
    ");
    assert_snapshot!(p.run(&["branch"]), @"
    exit: 0
    --- stdout
      claude/-home-USER-projects-spotter-worktrees-spotter-4te/ae4a77f8-aedd-4bc1-888f-c94edc91af04                6dd91882f4     30 msgs     6897 tok  2026-02-12T14:13:18Z  claude-code 2.1.39
      claude/-home-USER-projects-spotter-worktrees-spotter-4te/ae4a77f8-aedd-4bc1-888f-c94edc91af04/agents/aac57f5 abb3528bb3     29 msgs     7220 tok  2026-02-12T14:13:05Z
      claude/-path-to-Demo/1af7fc5e-8455-4414-9ccd-011d40f70b2a                                                    68f3072260     20 msgs     1062 tok  2025-09-03T00:47:52Z  claude-code 1.0.98
    ");
    // Each captured branch, the sub-agent's too, is checkpointed: a cold read walks at most
    // 16 commits past its checkpoint (a sixteenth of a view this small).
    crate::fsck::within_checkpoints(&p, 16);
    let before = p.state();
    assert_snapshot!(p.fails(&capture("no-such-folder")), @"
    exit: 3
    --- stderr
    error: no-such-folder: No such file or directory (os error 2)
    ");
    assert_eq!(p.state(), before);
    // No store named or found, and no home to keep the per-user store in.
    let bare = Project::empty();
    with_projects(&bare);
    assert_snapshot!(bare.fails(&["capture", "--once", "projects"]), @"
    exit: 4
    --- stderr
    error: invalid input: neither XDG_DATA_HOME nor HOME is set: name a store with --store
    ");
}

/// `tract capture --once`, with no store named and none in or above the folder, fills the
/// per-user store and says which; every other command finds that store from there by the same
/// rule (where it said "no store, run `tract init`"), a `.tract` nearer wins, and `tract init`
/// still makes `.tract` here. With no store at all, the error names what was looked for.
#[test]
fn capture_s_store_is_the_one_every_command_finds() {
    let p = Project::empty();
    let home = p.path().join("home");
    projects_in(&home.join(".claude/projects"), &SESSIONS);
    let home = home.to_str().unwrap();
    let run = |args: &[&str]| p.run_env(args, None, &[("HOME", home)]);
    assert_snapshot!(run(&["log"]), @"
        exit: 3
        --- stderr
        error: no tract store found: none named (--store, TRACT_STORE), no .tract/store.redb in [DIR] or any parent directory, and no per-user store at [DIR]/home/.local/share/tract/store.redb
        hint: run `tract init` to create one here, or pass --store PATH|URL
        ");
    let xdg = format!("{home}/data");
    assert_snapshot!(p.run_env(&["status"], None, &[("XDG_DATA_HOME", &xdg)]), @"
        exit: 3
        --- stderr
        error: no tract store found: none named (--store, TRACT_STORE), no .tract/store.redb in [DIR] or any parent directory, and no per-user store at [DIR]/home/data/tract/store.redb
        hint: run `tract init` to create one here, or pass --store PATH|URL
        ");
    assert_snapshot!(run(&["capture", "--once"]), @"
        exit: 0
        --- stdout
        claude/-path-to-Demo/1af7fc5e-8455-4414-9ccd-011d40f70b2a: 20 added, 1 line kept as a record
        claude/-home-USER-projects-spotter-worktrees-spotter-4te/ae4a77f8-aedd-4bc1-888f-c94edc91af04: 30 added, 1 line kept as a record
        2 sessions, 50 messages imported, 2 lines kept as records; store [DIR]/home/.local/share/tract/store.redb
    ");
    assert_snapshot!(run(&["branch"]), @"
        exit: 0
        --- stdout
          claude/-home-USER-projects-spotter-worktrees-spotter-4te/ae4a77f8-aedd-4bc1-888f-c94edc91af04                6dd91882f4     30 msgs     6897 tok  2026-02-12T14:13:18Z  claude-code 2.1.39
          claude/-home-USER-projects-spotter-worktrees-spotter-4te/ae4a77f8-aedd-4bc1-888f-c94edc91af04/agents/aac57f5 abb3528bb3     29 msgs     7220 tok  2026-02-12T14:13:05Z
          claude/-path-to-Demo/1af7fc5e-8455-4414-9ccd-011d40f70b2a                                                    68f3072260     20 msgs     1062 tok  2025-09-03T00:47:52Z  claude-code 1.0.98
        ");
    assert_snapshot!(run(&["search", "--all", "-n", "1", "subagent"]), @r#"
        exit: 0
        --- stdout
        e594f4b307 assistant Task,Skill   …check if opentelemetry_exporter still exists or if it's been replaced by something else in the latest OTEL ecosystem.","subagent_type":"general-purpose","model":"sonnet"})…  (claude/-home-USER-projects-spotter-worktrees-spotter-4te/ae4a77f8-aedd-4bc1-888f-c94edc91af04 [claude-code 2.1.39], claude/-home-USER-projects-spotter-worktrees-spotter-4te/ae4a77f8-aedd-4bc1-888f-c94edc91af04/agents/aac57f5)
        "#);
    assert_snapshot!(run(&["status"]), @"
        exit: 0
        --- stdout
        On branch main
        head      (no commits yet)
        messages  0
        tokens    3
        store     [DIR]/home/.local/share/tract/store.redb
        --- stderr
        note: main has no commits; 3 other branches (`tract branch`), `tract switch BRANCH` goes to one
        ");
    // A store nearer than the per-user one wins, for every command and for capture.
    assert_snapshot!(run(&["init"]), @"
        exit: 0
        --- stdout
        Initialized empty tract store in ./.tract/store.redb
        ");
    assert_snapshot!(run(&["branch"]), @"exit: 0");
    assert_snapshot!(run(&["capture", "--once"]), @"
        exit: 0
        --- stdout
        claude/-path-to-Demo/1af7fc5e-8455-4414-9ccd-011d40f70b2a: 20 added, 1 line kept as a record
        claude/-home-USER-projects-spotter-worktrees-spotter-4te/ae4a77f8-aedd-4bc1-888f-c94edc91af04: 30 added, 1 line kept as a record
        2 sessions, 50 messages imported, 2 lines kept as records; store [DIR]/.tract/store.redb
        ");
    let user = format!("{home}/.local/share/tract/store.redb");
    assert_snapshot!(run(&["--store", &user, "capture", "--once"]), @"
        exit: 0
        --- stdout
        2 sessions, 0 messages imported, 0 lines kept as records; store [DIR]/home/.local/share/tract/store.redb
        ");
}

/// A capture that cannot start (no such folder) leaves no store behind, the per-user one
/// included; one session is "1 session", one line kept "1 line kept as a record".
#[test]
fn a_failed_capture_creates_no_store_and_counts_read_right() {
    let p = Project::empty();
    let home = p.path().join("home");
    let env = [("HOME", home.to_str().unwrap())];
    assert_snapshot!(p.run_env(&["capture", "/no/such/dir", "--once"], None, &env), @"
        exit: 3
        --- stderr
        error: /no/such/dir: No such file or directory (os error 2)
        ");
    assert!(!home.exists(), "a failed capture made {}", home.display());
    assert!(!p.path().join(".tract").exists());
    projects_in(&p.path().join("projects"), &SESSIONS[..1]);
    assert_snapshot!(p.run_env(&["capture", "projects", "--once"], None, &env), @"
        exit: 0
        --- stdout
        claude/-path-to-Demo/1af7fc5e-8455-4414-9ccd-011d40f70b2a: 20 added, 1 line kept as a record
        1 session, 20 messages imported, 1 line kept as a record; store [DIR]/home/.local/share/tract/store.redb
        ");
}

/// A Claude Code session's branch goes back to Claude Code as a session file: one line per
/// message of the view, each chained to the one before; installed where Claude Code looks.
#[test]
fn a_branch_exports_as_a_claude_code_session_and_installs() {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "You are terse."]);
    p.ok(&["add", "Where is the config?"]);
    p.ok(&["add", "--role", "assistant", "In ./etc."]);
    let sid = "550e8400-e29b-41d4-a716-446655440000";
    let run = p.run(&[
        "export",
        "--format",
        "claude-code",
        "--session-id",
        sid,
        "--project",
        "/home/dev/app",
    ]);
    assert_snapshot!(run, @r#"
        exit: 0
        --- stdout
        {"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/dev/app","sessionId":"550e8400-e29b-41d4-a716-446655440000","type":"user","message":{"role":"user","content":[{"type":"text","text":"Where is the config?"}]},"uuid":"c2ec1a82-dd04-446c-a157-7ac8049c3048","timestamp":"2026-01-01T00:00:00.000Z"}
        {"parentUuid":"c2ec1a82-dd04-446c-a157-7ac8049c3048","isSidechain":false,"userType":"external","cwd":"/home/dev/app","sessionId":"550e8400-e29b-41d4-a716-446655440000","type":"assistant","message":{"id":"msg_tract_7bd82174e1514b35a7e02b67","type":"message","role":"assistant","model":"unknown","content":[{"type":"text","text":"In ./etc."}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"uuid":"7bd82174-e151-4b35-a7e0-2b676eac00df","timestamp":"2026-01-01T00:00:00.000Z"}
        --- stderr
        warning: system message 1 (e12e09c5c7) is not written: Claude Code keeps its own system prompt out of its session files
    "#);
    let config = p.path().join("claude");
    let env = [("CLAUDE_CONFIG_DIR", config.to_str().unwrap())];
    let install = || {
        p.run_env(
            &[
                "export",
                "--format",
                "claude-code",
                "--install",
                "--project",
                "/home/dev/app",
            ],
            None,
            &env,
        )
    };
    let installed = install();
    let path = installed.stdout.lines().next().unwrap().to_string();
    assert!(
        path.starts_with(config.join("projects/-home-dev-app/").to_str().unwrap()),
        "{path}"
    );
    // The same view again: the same session id, which is there already; nothing written.
    let again = install();
    assert_eq!(again.code, Some(4), "{}", again.stderr);
    assert!(again.stderr.contains("exists"), "{}", again.stderr);
}

/// Real sessions of three agents imported side by side: `branch` names each one's agent and
/// version, `search --all` says whose session holds a hit, `log` says whose session it reads,
/// and a second file giving a session id already taken (another start) is refused.
#[test]
fn sessions_of_every_agent_side_by_side_each_with_its_agent_and_version() {
    let p = Project::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let codex = "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl";
    for (from, to) in [
        (format!("codex-real/{codex}"), "codex.jsonl"),
        (
            "claude-code-real/v1.0.98-init-command.jsonl".into(),
            "claude.jsonl",
        ),
        (
            "gemini-real/legacy-v0.3x-toolcall-error-aim.json".into(),
            "gemini.json",
        ),
    ] {
        std::fs::copy(fixtures.join(from), p.path().join(to)).unwrap();
    }
    p.ok(&["import", "codex.jsonl", "claude.jsonl", "gemini.json"]);
    // (A Codex line here holds a credential, scrubbed with the store's own key: the Codex
    // branch's commit ids are the store's, so lines are compared, not snapshots.)
    let codex_branch = "codex/-Users-Sample-User-repos-codemie-ai-codemie-code/019e1625-789d-76c0-80ab-3724b5ddb799";
    let listed = p.ok(&["branch"]);
    let agent_of = |name: &str| {
        listed
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .and_then(|l| l.rsplit("  ").next())
            .map(str::to_string)
    };
    assert_eq!(
        agent_of("claude/-path-to-Demo/1af7fc5e-8455-4414-9ccd-011d40f70b2a").as_deref(),
        Some("claude-code 1.0.98"),
        "{listed}"
    );
    assert_eq!(
        agent_of(codex_branch).as_deref(),
        Some("codex 0.125.0"),
        "{listed}"
    );
    assert_eq!(
        agent_of("gemini/d53620cca11ecff4/50316244-145e-46cb-b42b-db11410ad87a").as_deref(),
        Some("gemini"),
        "{listed}"
    );
    // A file name every agent's session mentions, found in each, each hit saying whose.
    let hits = p.ok(&["search", "--all", "-n", "100", "README.md"]);
    for label in ["[claude-code 1.0.98]", "[codex 0.125.0]", "[gemini]"] {
        assert!(hits.contains(label), "no hit in a {label} session:\n{hits}");
    }
    let json: serde_json::Value = serde_json::from_str(&p.ok(&["branch", "--json"])).unwrap();
    let codex = json
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == codex_branch)
        .unwrap();
    assert_eq!(
        (&codex["agent"], &codex["agent_version"]),
        (&"codex".into(), &"0.125.0".into())
    );
    // `log` says whose session it reads, beside the log.
    let log = p.run(&["--branch", codex_branch, "log", "-n", "1"]);
    assert!(
        log.stderr
            .contains("note: a codex 0.125.0 session, started 2026-05-11T08:26:55.042Z"),
        "{}",
        log.stderr
    );
    // Another rollout under the thread's id, started at another time.
    let text = std::fs::read_to_string(p.path().join("codex.jsonl")).unwrap();
    let other = text.replacen(
        "\"timestamp\":\"2026-05-11T",
        "\"timestamp\":\"2030-05-11T",
        2,
    );
    std::fs::write(p.path().join("other.jsonl"), other).unwrap();
    assert_snapshot!(p.run(&["import", "other.jsonl"]), @"
        exit: 5
        --- stderr
        error: invalid operation: branch 'codex/-Users-Sample-User-repos-codemie-ai-codemie-code/019e1625-789d-76c0-80ab-3724b5ddb799' holds the codex session 019e1625-789d-76c0-80ab-3724b5ddb799 that started at 2026-05-11T08:26:55.042Z; this file's session has its id but started at 2030-05-11T08:26:55.042Z: another session, refused; import it into another branch with --branch
    ");
}
