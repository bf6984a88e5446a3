//! `tract compress`: replace runs of messages with summaries; the originals stay in history.

use crate::common::{
    Project, Template, assert_run_snapshot, dead_url, exit, grep_turns, json, redact_id,
    request_text, tool_project, tool_stream,
};
use insta::assert_snapshot;
use std::sync::OnceLock;

/// The tool session, then the assistant's answer.
fn answered() -> Project {
    static TEMPLATE: Template = OnceLock::new();
    Project::with_messages(&TEMPLATE, || {
        let answer = r#"{"role":"assistant","content":"DATABASE_URL is read in cfg.py."}"#;
        format!("{}\n{answer}", tool_stream())
    })
}

/// A dry run lists the runs it would summarize and their tokens, and commits nothing.
#[test]
fn a_dry_run_commits_nothing() {
    let p = answered();
    let before = p.state();
    let dry = p.run(&["compress", "--tool-turns", "--dry-run"]);
    assert_snapshot!(dry, @"
        exit: 0
        --- stdout
        would summarize 6 messages, 66 tokens: f40cd54f56 f89782dba3 4994bf4ee3 7365ba8be3 3b8efa5893 a029acc7b0
        1 run, 66 tokens (dry run, nothing committed)
        prompt cache: invalidates 77 cached tokens, saves up to 66 tokens a request (less the summaries)
        ");
    assert!(dry.stdout.contains("dry run"), "{dry}");
    assert!(p.state() == before, "a dry run commits nothing");
}

/// `--tool-turns --name grep` takes the grep turn (the call and both parallel results). Its
/// outputs are a few lines: a model that says more than they hold makes a summary longer than
/// they are, so nothing is committed and a warning says so. A summary written by hand replaces
/// them: one compress commit, which `show` and `log` present as a summary of its sources; each
/// source links to the summary that replaced it; the model sees the summary and the answer
/// after it.
#[test]
fn tool_turns_become_a_summary_linked_to_its_sources() {
    let p = answered();
    let before = p.state();
    let verbose =
        "The agent searched the project for DATABASE_URL and read the file it found. ".repeat(4);
    let stub = tract_stub_llm::serve(vec![tract_stub_llm::ok(&verbose)]).unwrap();
    let skipped = p.run(&[
        "compress",
        "--tool-turns",
        "--name",
        "grep",
        "--strategy",
        "llm",
        "--llm-base-url",
        &stub.url,
        "--llm-model",
        "stub",
    ]);
    assert_snapshot!(skipped, @"
        exit: 0
        --- stdout
        compressed 0 runs: tokens 115 -> 115
        --- stderr
        warning: the summary of 3 messages (63 tokens) is not shorter than they are (46 tokens); they were kept as they are
        ");
    assert!(skipped.stderr.contains("not shorter"), "{skipped}");
    assert!(
        p.state() == before,
        "a summary that saves nothing commits nothing"
    );
    let run = p.run(&[
        "compress",
        "--tool-turns",
        "--name",
        "grep",
        "--content",
        "grep and read_file: cfg.py:1 reads DATABASE_URL",
    ]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        ba90ecfa4c compress user      -                15  (summary of 3: f40cd54f56..4994bf4ee3) grep and read_file: cfg.py:1 reads DATABASE_URL
        compressed 1 run: tokens 115 -> 84
        ");
    assert!(run.stdout.contains("compressed 1 run: tokens"), "{run}");
    let head = json(&p.ok(&["show", "--json"]));
    assert_eq!(head["op"], "compress");
    assert_eq!(
        head["sources"].as_array().unwrap().len(),
        3,
        "the call and both results"
    );
    assert_eq!(head["summarizer"], "manual");
    let shown = p.run(&["show"]);
    assert_snapshot!(shown, @"
        exit: 0
        --- stdout
        commit  ba90ecfa4cb67944575bab2739da82543f8adb59ebfe96824f10346ca88497fd
        op      compress
        parent  794513a5e9
        date    2026-01-01T00:00:00.000008Z
        summary of 3: f40cd54f56 f89782dba3 4994bf4ee3
        by      manual
        role    user
        tokens  15

        grep and read_file: cfg.py:1 reads DATABASE_URL
        ");
    assert!(
        shown.stdout.contains("summary of 3:") && shown.stdout.contains("by      manual"),
        "{shown}"
    );

    // The link back: a source shows the summary that replaced it; log shows the span.
    let source = head["sources"][1].as_str().unwrap()[..12].to_string();
    let summary_id = head["commit_hash"].as_str().unwrap()[..10].to_string();
    let shown = p.run(&["show", &source]);
    assert_snapshot!(shown, @"
        exit: 0
        --- stdout
        commit  f89782dba3cecc930d8fe2bf61298c6929f4c8280242c00cb9669fc98342f51e
        op      append
        parent  f40cd54f56
        date    2026-01-01T00:00:00.000002Z
        role    tool  name read_file  tool_call_id r1
        tokens  8

        DATABASE_URL = env()

        compressed into ba90ecfa4c
        ");
    assert!(
        shown
            .stdout
            .contains(&format!("compressed into {summary_id}"))
    );
    let source_json = json(&p.ok(&["show", "--json", &source]));
    assert_eq!(source_json["compressed_into"], head["commit_hash"]);
    let log = p.run(&["log", "-n", "1"]);
    assert_snapshot!(log, @"
        exit: 0
        --- stdout
        ba90ecfa4c compress user      -                15  (summary of 3: f40cd54f56..4994bf4ee3) grep and read_file: cfg.py:1 reads DATABASE_URL
        ");
    assert!(log.stdout.contains("(summary of 3:"));

    let run = p.run(&["compile"]);
    assert_run_snapshot!("after_tool_turns", run);
    let oai = json(&run.stdout);
    let contents: Vec<&str> = oai
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(contents.contains(&"grep and read_file: cfg.py:1 reads DATABASE_URL"));
    assert!(
        contents.contains(&"DATABASE_URL is read in cfg.py."),
        "the answer stays"
    );
}

/// `--range A..B --content TEXT` replaces the positions from A to B with that text; a missing
/// commit, a malformed range or a position already compressed is a one-line error that
/// commits nothing; a zero target is a usage error.
#[test]
fn a_range_by_hand_and_bad_requests() {
    let p = answered();
    p.ok(&[
        "compress",
        "--tool-turns",
        "--name",
        "grep",
        "--content",
        "the grep turn",
    ]);
    let log = json(&p.ok(&["log", "--json", "-n", "3"]));
    let first = log[2]["commit_hash"].as_str().unwrap()[..12].to_string();
    let last = log[1]["commit_hash"].as_str().unwrap()[..12].to_string();
    let run = p.run(&[
        "compress",
        "--range",
        &format!("{first}..{last}"),
        "--content",
        "by hand",
    ]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        5eca8a91e1 compress user      -                 5  (summary of 2: a029acc7b0..794513a5e9) by hand
        compressed 1 run: tokens 75 -> 34
        ");
    assert!(run.stdout.contains("compressed 1 run"), "{run}");
    assert_snapshot!(p.run(&["show"]), @"
        exit: 0
        --- stdout
        commit  5eca8a91e1820416b66553fe2a283c69337dc2fd9c59d1c8f52efe0ce94c863f
        op      compress
        parent  ed8233f250
        date    2026-01-01T00:00:00.000009Z
        summary of 2: a029acc7b0 794513a5e9
        by      manual
        role    user
        tokens  5

        by hand
        ");

    let before = p.state();
    assert_snapshot!(p.fails(&["compress", "--commits", "ffffffffff"]), @"
        exit: 3
        --- stderr
        error: commit or branch 'ffffffffff' not found
        hint: `tract log` lists commits; `tract branch` lists branches
        ");
    assert_snapshot!(p.fails(&["compress", "--range", "nope"]), @"
        exit: 4
        --- stderr
        error: invalid input: --range takes A..B, not 'nope'
        ");
    assert_snapshot!(p.fails(&["compress", "--commits", &first]), @"
        exit: 3
        --- stderr
        error: invalid operation: commit a029acc7b0 is not a message in the current view
        ");
    let usage = p.run(&["compress", "--target-tokens", "0"]);
    assert_snapshot!(usage, @"
        exit: 2
        --- stderr
        error: invalid value '0' for '--target-tokens <N>': 0 is not in 1..=4294967295

        For more information, try '--help'.
        ");
    assert_eq!(usage.code, Some(exit::USAGE));
    assert!(p.state() == before, "failed commands change nothing");
}

/// `--strategy clear` clears old tool results exactly like `tract clear` (the same commits and
/// output on the same history); results smaller than their placeholder are left alone.
#[test]
fn strategy_clear_is_tract_clear() {
    let p = answered();
    let run = p.run(&["compress", "--strategy", "clear", "--keep", "0"]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        cleared 0 results: tokens 115 -> 115
        ");
    assert!(run.stdout.contains("cleared"), "{run}");

    let p = grep_turns();
    let run = p.run(&["compress", "--strategy", "clear", "--keep", "1"]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        20b2ffeaef edit   tool      grep             35  (edit of 43e1616e60) [tract] Cleared this grep result to save context (403 tokens, 600 bytes). …
        dcb4b00557 edit   tool      grep             34  (edit of e9834f7ca7) [tract] Cleared this grep result to save context (403 tokens, 600 bytes). …
        cf6129e8e5 edit   tool      grep             36  (edit of 284e304b3f) [tract] Cleared this grep result to save context (403 tokens, 600 bytes). …
        cleared 3 results: tokens 1635 -> 531
        ");
    assert!(run.stdout.contains("cleared 3 results"), "{run}");
    let twin = grep_turns();
    assert_eq!(run.stdout, twin.ok(&["clear", "--keep", "1"]));
    assert_eq!(p.ok(&["log", "--json"]), twin.ok(&["log", "--json"]));
}

/// `--strategy llm` sends the run and the instructions to a chat-completions server and
/// commits its answer as the summary, naming the model and server as the summarizer. (The
/// summary's id depends on the server's port, so it is shown as `[SUMMARY]`.)
#[test]
fn compress_with_an_llm_server() {
    let p = tool_project();
    let stub = tract_stub_llm::serve(vec![tract_stub_llm::ok(
        "grep and read_file found DATABASE_URL in cfg.py",
    )])
    .unwrap();
    let url = stub.url.clone();
    let run = p.run(&[
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
    let head = json(&p.ok(&["show", "--json"]));
    let _summary = redact_id(head["commit_hash"].as_str().unwrap(), "[SUMMARY]");
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        [SUMMARY] compress user      -                13  (summary of 3: f40cd54f56..4994bf4ee3) grep and read_file found DATABASE_URL in cfg.py
        compressed 1 run: tokens 104 -> 71
        ");
    assert!(run.stdout.contains("compressed 1 run"), "{run}");

    let body = stub.bodies.lock().unwrap()[0].clone();
    let body = json(&body);
    assert_eq!(body["model"], "stub");
    assert!(
        body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("keep paths")
    );
    insta::with_settings!({ description => "the request body the server received", omit_expression => true }, {
        assert_snapshot!("llm_request", request_text(&body));
    });

    assert_eq!(head["summarizer"], format!("openai:stub@{url}"));
    assert_eq!(
        head["message"]["content"],
        "grep and read_file found DATABASE_URL in cfg.py"
    );
    assert_snapshot!(p.run(&["show"]), @"
        exit: 0
        --- stdout
        commit  [SUMMARY]
        op      compress
        parent  a029acc7b0
        date    2026-01-01T00:00:00.000007Z
        summary of 3: f40cd54f56 f89782dba3 4994bf4ee3
        by      openai:stub@http://127.0.0.1:[PORT]/v1
        role    user
        tokens  13

        grep and read_file found DATABASE_URL in cfg.py
        ");
}

/// An unreachable server, or no model named anywhere: one clear line, nothing committed.
#[test]
fn an_unreachable_or_unnamed_llm_commits_nothing() {
    let p = tool_project();
    let before = p.state();
    let dead = dead_url();
    let run = p.run_env(
        &[
            "compress",
            "--tool-turns",
            "--strategy",
            "llm",
            "--llm-base-url",
            &dead,
            "--llm-model",
            "m",
        ],
        None,
        &[("TRACT_LLM_MODEL", "")],
    );
    assert_snapshot!(run, @"
        exit: 7
        --- stderr
        error: summarizer error: openai:m@http://127.0.0.1:[PORT]/v1: cannot reach http://127.0.0.1:[PORT]/v1/chat/completions: Connection refused (os error 111)
        ");
    assert_eq!(run.code, Some(exit::UNAVAILABLE));
    assert!(run.stderr.contains("summarizer error"), "{run}");
    let run = p.fails(&["compress", "--tool-turns", "--strategy", "llm"]);
    assert_snapshot!(run, @"
        exit: 4
        --- stderr
        error: invalid input: --strategy llm needs a model: --llm-model, TRACT_LLM_MODEL or OPENAI_MODEL
        ");
    assert!(run.stderr.contains("needs a model"));
    assert!(p.state() == before);
}

/// The README's tour, run as written in a new directory (without its `cargo install` and
/// `serve --open`): every step succeeds, and `tract compress --tool-turns --target-tokens 100`
/// compresses the tool turns. It printed "compressed 0 run(s)" and warned that the summary was
/// not shorter: the only turn's result had been edited down to one line.
#[test]
fn the_readme_tour_runs_as_written_and_compresses() {
    let readme = include_str!("../../../../README.md");
    let tour = readme
        .split("## A 30-second tour")
        .nth(1)
        .and_then(|t| t.split("```sh\n").nth(1))
        .and_then(|t| t.split("```").next())
        .unwrap();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_tract"));
    let path = format!("{}:/usr/bin:/bin", bin.parent().unwrap().display());
    let p = Project::empty();
    let mut compressed = None;
    for step in tour.lines() {
        let command = step.split('#').next().unwrap_or_default().trim();
        if command.is_empty() || command.starts_with("cargo install") || command.contains("--open")
        {
            continue;
        }
        // Through a shell, as a reader pastes it (pipes, quotes and comments included).
        let mut sh = std::process::Command::new("sh");
        sh.args(["-c", step])
            .current_dir(p.path())
            .env_clear()
            .env("PATH", &path)
            .env("TRACT_TIMESTAMP", crate::common::TIMESTAMP);
        let run = crate::common::Run::of(sh, None);
        assert_eq!(run.code, Some(0), "{step}\n{run}");
        assert!(!run.stderr.contains("warning:"), "{step}\n{run}");
        if command.starts_with("tract compress") {
            compressed = Some(run);
        }
    }
    let run = compressed.expect("the tour compresses");
    assert!(
        run.stdout.contains("compressed 1 run:"),
        "the step compresses the two tool turns: {run}"
    );
    let head = json(&p.ok(&["show", "--json"]));
    assert_eq!(head["op"], "compress");
    assert_eq!(head["sources"].as_array().unwrap().len(), 4);
    let summary = head["message"]["content"].as_str().unwrap();
    assert!(
        summary
            .starts_with("[Summary of 4 messages]\ngrep({\"pattern\":\"DATABASE_URL\"}) returned:"),
        "{summary}"
    );
    assert!(
        summary.contains("shell({\"cmd\":\"ls -l /usr/bin\"}) returned:"),
        "{summary}"
    );
}
