//! `tract import` and `tract export`.

use crate::common::Project;
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
        session.jsonl: claude-code onto import/7f3c1a2e-5b1d-4c8e-9a0f-2d6e8b4c1a90: 10 added, 3 lines without a message skipped, 1 off the conversation's path
        ");
    assert_snapshot!(p.run(&["import", "session.jsonl", "--json"]), @r#"
        exit: 0
        --- stdout
        [
          {
            "file": "session.jsonl",
            "branch": "import/7f3c1a2e-5b1d-4c8e-9a0f-2d6e8b4c1a90",
            "format": "claude-code",
            "added": 0,
            "already": 10,
            "skipped": 3,
            "off_path": 1,
            "tip": "a21210b399dc2a4543efe712dabe2fa96c455389c1b25ab39104c21fc094367b"
          }
        ]
        "#);
    let on = ["--branch", "import/7f3c1a2e-5b1d-4c8e-9a0f-2d6e8b4c1a90"];
    assert_snapshot!(p.run(&[on[0], on[1], "log"]), @r#"
        exit: 0
        --- stdout
        a21210b399 append assistant -                12  Fixed: the test expected the old URL.
        e3d21a4b84 append user      -                 8  Fix the failing test.
        30e43fd0f4 compress user      -                29  (summary of 7: 76af516deb..8cf0236107) This session is being continued from a previous conversa…
        8cf0236107 append tool      Bash              9  [error] 1 failed, 41 passed
        c3b0f7806a append assistant Bash             12  Bash({"command":"pytest -q"})
        2b709eabe7 append user      -                10  Thanks. Now check the tests.
        a6a866ad52 append assistant -                14  It is read in config.py, line 42.
        0c79891133 append tool      Grep             17  config.py:42: DATABASE_URL = os.environ["DATABASE_URL"]
        86d16f5006 append assistant Grep             56  Let me search.
        76af516deb append user      -                 9  Where is DATABASE_URL read?
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
        exit: 1
        --- stderr
        error: invalid transcript bad.jsonl: line 2: 'content' must be a string, null or a list of parts
        ");
    assert_snapshot!(p.fails(&["import", "session.jsonl", "--format", "yaml"]), @"
        exit: 1
        --- stderr
        error: invalid input: unknown transcript format 'yaml' (auto, claude-code, openai, openai-responses, anthropic, jsonl)
        ");
    assert_snapshot!(p.fails(&["export", "--format", "openai", "--history"]), @"
        exit: 1
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
        ");
    assert_snapshot!(p.run(&["--branch", "review", "log", "--graph"]), @r#"
        exit: 0
        --- stdout
        ○  8c45cffa2c append assistant -                17  Two findings: token rotation (auth) and refund rounding (billing).  (review)
        ◆    604d4c34d6 merge  tool      Task             20  (review/agents/b4 answers toolu_T2) Billing rounds cents down in refunds.
        ├─╮
        │ ○  2ec5bc4ff9 append assistant -                10  Billing rounds cents down in refunds.  (review/agents/b4)
        │ ○  8562e85a6b append user      -                10  Review src/billing for bugs.
        ├─╯
        ◆    e803dfef57 merge  tool      Task             12  (review/agents/a1b2c3 answers toolu_T1) Auth: the session token is never rotated.
        ├─╮
        │ ○  e7ce959ef2 append assistant -                12  Auth: the session token is never rotated.  (review/agents/a1b2c3)
        │ ○  80f705da65 append tool      Grep              6  No matches found
        │ ○  16b2fb41fa append assistant Grep             10  Grep({"pattern":"rotate"})
        │ ○  f8dc617770 append user      -                 9  Review src/auth for bugs.
        ├─╯
        ○  25ca0bb74f append assistant Task,Task        50  Task({"subagent_type":"reviewer","description":"Review auth","prompt":"Review src/auth for bugs…
        ○  a0475eeea2 append user      -                12  Review the auth module and the billing module.
        "#);
    assert_snapshot!(p.run(&["branch"]), @"
        exit: 0
        --- stdout
          review               8c45cffa2c      5 msgs      114 tok  2026-11-21T10:00:25Z
          review/agents/a1b2c3 e7ce959ef2      6 msgs      160 tok  2026-11-21T10:00:19Z
          review/agents/b4     2ec5bc4ff9      5 msgs      126 tok  2026-11-21T10:00:20Z
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
        ");
    let on = ["--branch", "threads/t1"];
    assert_snapshot!(p.run(&[on[0], on[1], "log"]), @"
        exit: 0
        --- stdout
        5074fdfe1a record system    -                 0  langgraph.checkpoint (7 bytes)
        273eadf6e4 append assistant -                 5  hello there
        f38307ef87 append user      -                 4  hi
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
