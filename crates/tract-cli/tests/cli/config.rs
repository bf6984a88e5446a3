//! `tract config`: the stored tool-summarization policy, and what it does to the tool results
//! `tract add` records.

use crate::common::{Project, add_tool_turn, dead_url, json, redact_id, request_text};
use insta::assert_snapshot;

/// 300 lines of grep output: far over any threshold.
fn big_output() -> String {
    (0..300)
        .map(|i| format!("src/app/mod{i}.py:{i}: settings.DATABASE_URL\n"))
        .collect()
}

/// A project whose policy summarizes grep results, and any result over 500 tokens.
fn with_policy() -> Project {
    let p = Project::new();
    p.ok(&[
        "config",
        "tool-summarization",
        "--tool",
        "grep=only file names and line numbers",
        "--auto-threshold",
        "500",
    ]);
    p
}

/// A new store summarizes nothing; setting per-tool instructions and a threshold prints the
/// policy, which `config show` then shows, as text or JSON; removing them turns it off again.
#[test]
fn the_policy_is_stored_and_shown() {
    let p = Project::new();
    assert_snapshot!(p.run(&["config", "show"]), @"
        exit: 0
        --- stdout
        tool summarization: off (tool results are recorded as they are)
        retention: off (gc removes only what nothing reaches)
        secrets: scrubbed as they are written, by 232 built-in rules
        ");
    let shown = p.run(&[
        "config",
        "tool-summarization",
        "--tool",
        "grep=only file names and line numbers",
        "--auto-threshold",
        "500",
    ]);
    assert_snapshot!(shown, @"
        exit: 0
        --- stdout
        tool summarization:
          grep: only file names and line numbers
          any result over 500 tokens: the tool prompt alone
        --- stderr
        note: the instructions apply when an LLM summarizer is set (TRACT_LLM_MODEL, or OPENAI_MODEL, with TRACT_LLM_BASE_URL and TRACT_LLM_API_KEY); until then the built-in extractive summarizer shortens these results and ignores them
        ");
    assert!(
        shown
            .stdout
            .contains("grep: only file names and line numbers"),
        "{shown}"
    );
    assert!(shown.stdout.contains("over 500 tokens"), "{shown}");
    assert_snapshot!(p.run(&["config", "show"]), @"
        exit: 0
        --- stdout
        tool summarization:
          grep: only file names and line numbers
          any result over 500 tokens: the tool prompt alone
        retention: off (gc removes only what nothing reaches)
        secrets: scrubbed as they are written, by 232 built-in rules
        --- stderr
        note: the instructions apply when an LLM summarizer is set (TRACT_LLM_MODEL, or OPENAI_MODEL, with TRACT_LLM_BASE_URL and TRACT_LLM_API_KEY); until then the built-in extractive summarizer shortens these results and ignores them
        ");
    let stored = p.run(&["config", "show", "--json"]);
    assert_snapshot!(stored, @r#"
        exit: 0
        --- stdout
        {
          "tool_summarization": {
            "instructions": {
              "grep": "only file names and line numbers"
            },
            "auto_threshold": 500,
            "default_instructions": null,
            "summarizer": "extractive",
            "instructions_apply": false
          },
          "retention": {
            "rules": [],
            "pinned": []
          },
          "secrets": {
            "enabled": true,
            "rules": {},
            "disabled": [],
            "allow": []
          }
        }
        "#);
    assert_eq!(
        json(&stored.stdout)["tool_summarization"]["auto_threshold"],
        500
    );
    let off = p.run(&[
        "config",
        "tool-summarization",
        "--remove-tool",
        "grep",
        "--no-auto-threshold",
    ]);
    assert_snapshot!(off, @"
        exit: 0
        --- stdout
        tool summarization: off (tool results are recorded as they are)
        ");
    assert!(off.stdout.contains("off"), "{off}");
}

/// Instructions were stored and silently ignored when no LLM was set: the extractive
/// summarizer does not read them. Configuring them, and `config show` (text and JSON), say
/// that they apply when an LLM summarizer is set; with one set, nothing is said.
#[test]
fn instructions_without_an_llm_are_said_to_wait_for_one() {
    let p = Project::new();
    let configured = p.run(&[
        "config",
        "tool-summarization",
        "--tool",
        "grep=file names and line numbers only",
    ]);
    assert_snapshot!(configured, @"
        exit: 0
        --- stdout
        tool summarization:
          grep: file names and line numbers only
          other tools: recorded as they are (no threshold)
        --- stderr
        note: the instructions apply when an LLM summarizer is set (TRACT_LLM_MODEL, or OPENAI_MODEL, with TRACT_LLM_BASE_URL and TRACT_LLM_API_KEY); until then the built-in extractive summarizer shortens these results and ignores them
        ");
    assert_snapshot!(p.run(&["config", "show"]), @"
        exit: 0
        --- stdout
        tool summarization:
          grep: file names and line numbers only
          other tools: recorded as they are (no threshold)
        retention: off (gc removes only what nothing reaches)
        secrets: scrubbed as they are written, by 232 built-in rules
        --- stderr
        note: the instructions apply when an LLM summarizer is set (TRACT_LLM_MODEL, or OPENAI_MODEL, with TRACT_LLM_BASE_URL and TRACT_LLM_API_KEY); until then the built-in extractive summarizer shortens these results and ignores them
        ");
    let shown = json(&p.ok(&["config", "show", "--json"]));
    assert_eq!(shown["tool_summarization"]["summarizer"], "extractive");
    assert_eq!(shown["tool_summarization"]["instructions_apply"], false);
    // With an LLM set, the instructions apply: no note.
    let llm = [
        ("TRACT_LLM_MODEL", "m"),
        ("TRACT_LLM_BASE_URL", "http://127.0.0.1:9/v1"),
    ];
    let with_llm = p.run_env(&["config", "show"], None, &llm);
    assert!(with_llm.stderr.is_empty(), "{with_llm}");
    let shown = json(&p.run_env(&["config", "show", "--json"], None, &llm).stdout);
    assert_eq!(
        shown["tool_summarization"]["summarizer"],
        "openai:m@http://127.0.0.1:9/v1"
    );
    assert_eq!(shown["tool_summarization"]["instructions_apply"], true);
    // A threshold alone has no instructions to wait for.
    let p = Project::new();
    let threshold = p.run(&["config", "tool-summarization", "--auto-threshold", "1000"]);
    assert!(threshold.stderr.is_empty(), "{threshold}");
}

/// A negative threshold, empty instructions, a `--tool` without `=`, or blank default
/// instructions: each is refused with a line saying what is wrong, and the stored policy is
/// unchanged.
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
    let ts = ["config", "tool-summarization"];
    let run = p.fails(&[&ts[..], &["--auto-threshold", "-1"]].concat());
    assert_snapshot!(run, @"
        exit: 4
        --- stderr
        error: invalid input: --auto-threshold must be a non-negative number of tokens, not -1
        ");
    assert!(run.stderr.contains("non-negative"), "{run}");
    let run = p.fails(&[&ts[..], &["--tool", "bash="]].concat());
    assert_snapshot!(run, @"
        exit: 4
        --- stderr
        error: invalid input: the instructions for tool 'bash' are empty
        ");
    assert!(run.stderr.contains("'bash' are empty"), "{run}");
    let run = p.fails(&[&ts[..], &["--tool", "bash"]].concat());
    assert_snapshot!(run, @"
        exit: 4
        --- stderr
        error: invalid input: --tool takes NAME=INSTRUCTIONS, not 'bash'
        ");
    assert!(run.stderr.contains("NAME=INSTRUCTIONS"), "{run}");
    let run = p.fails(&[&ts[..], &["--default-instructions", " "]].concat());
    assert_snapshot!(run, @"
        exit: 4
        --- stderr
        error: invalid input: default_instructions is empty
        ");
    assert!(
        run.stderr.contains("default_instructions is empty"),
        "{run}"
    );
    assert_eq!(p.ok(&["config", "show", "--json"]), before);
}

/// With no LLM configured, a grep result the policy covers is summarized by the extractive
/// summarizer: `add` prints the original's id and a note naming the edit the model sees; the
/// original stays whole in history. The summary reads as the result shortened (it began
/// "[Summary of 2 messages]\n[assistant] grep(...)", which the model took for the output).
#[test]
fn the_policy_summarizes_a_result_added() {
    let p = with_policy();
    p.ok(&["add", "where is the database configured?"]);
    let big = big_output();
    let run = add_tool_turn(&p, "g1", "grep", &big, &[]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        a2178668d4
        --- stderr
        note: the grep result a2178668d4 was summarized by extractive; the model sees edit 70d2f047d1 (3903 → 260 tokens)
        ");
    let id = run.stdout.trim().to_string();
    assert!(
        run.stderr.contains(&format!(
            "the grep result {id} was summarized by extractive"
        )),
        "{run}"
    );
    let original = json(&p.ok(&["show", &id, "--json"]));
    assert_eq!(original["message"]["content"], big.as_str());
    let head = json(&p.ok(&["show", "--json"]));
    assert_eq!(head["op"], "edit");
    assert!(head["edit_target"].as_str().unwrap().starts_with(&id));
    assert_snapshot!(p.run(&["show"]), @r#"
        exit: 0
        --- stdout
        commit  70d2f047d14e395671414210d832bca4143fbe46fef349790b4a86e593f0a1dd
        op      edit of a2178668d4
        parent  a2178668d4
        date    2026-01-01T00:00:00.000003Z
        note    summarized by extractive
        role    tool  name grep  tool_call_id g1
        tokens  260

        src/app/mod0.py:0: settings.DATABASE_URL
        src/app/mod1.py:1: settings.DATABASE_URL
        src/app/mod2.py:2: settings.DATABASE_URL
        src/app/mod3.py:3: settings.DATABASE_URL
        src/app/mod4.py:4: settings.DATABASE_URL
        src/app/mod5.py:5: settings.DATABASE_URL
        src/app/mod6.py:6: settings.DATABASE_URL
        src/app/mod7.py:7: settings.DATABASE_URL
        src/app/mod8.py:8: settings.DATABASE_URL
        src/app/mod9.py:9: settings.DATABASE_URL
        src/app/mod10.py:10: settings.DATABASE_URL
        src/app/mod11.py:11: settings.DATABASE_URL
        src/app/mod12.py:12: settings.DATABASE_URL
        src/app/mod13.py:13: settings.DATABASE_URL
        src/app/mod14.py:14: settings.DATABASE_URL
        src/app/mod15.py:15: settings.DATABASE_URL
        src/app/mod16.py:16: settings.DATABASE_URL
        src/app/mod17.py:17: settings.DATABASE_URL
        src/app/mod18.py:18: settings.DATABASE_URL
        (… 281 of 300 lines omitted)
        "#);
    let sent = json(&p.ok(&["compile"]));
    let last = &sent.as_array().unwrap().last().unwrap()["content"];
    // The result shortened, as the tool's output: no header, no call.
    assert!(
        last.as_str()
            .unwrap()
            .starts_with("src/app/mod0.py:0: settings.DATABASE_URL\n"),
        "{last}"
    );
}

/// An LLM named by the environment summarizes a result over the threshold, given the tool
/// prompt and the call; the model sees its answer. (The summary's id depends on the server's
/// port, so it is shown as `[SUMMARY]`.)
#[test]
fn an_llm_from_the_environment_summarizes() {
    let p = with_policy();
    let stub =
        tract_stub_llm::serve(vec![tract_stub_llm::ok("bash: 3 tests failed in db.py")]).unwrap();
    let env = [
        ("TRACT_LLM_BASE_URL", stub.url.as_str()),
        ("TRACT_LLM_MODEL", "stub"),
    ];
    let run = add_tool_turn(&p, "b1", "bash", &big_output(), &env);
    let head = p.hash("HEAD");
    let _summary = redact_id(&head, "[SUMMARY]");
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        ca1214f99f
        --- stderr
        note: the bash result ca1214f99f was summarized by openai:stub@http://127.0.0.1:[PORT]/v1; the model sees edit [SUMMARY] (3903 → 12 tokens)
        ");
    assert!(run.stderr.contains("summarized by openai:stub@"), "{run}");
    let body = json(&stub.bodies.lock().unwrap()[0]);
    assert_eq!(
        body["messages"][0]["content"],
        tract_core::TOOL_SUMMARIZE_SYSTEM
    );
    insta::with_settings!({ description => "the request body the server received", omit_expression => true }, {
        assert_snapshot!("policy_llm_request", request_text(&body));
    });

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
}

/// A short result of a tool without instructions passes through: one commit, no note.
#[test]
fn a_short_result_passes_through() {
    let p = with_policy();
    let before = p.log_len();
    let run = add_tool_turn(&p, "r1", "read_file", "x = 1", &[]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        a5b4cbbdce
        ");
    assert!(run.stderr.is_empty(), "{run}");
    assert_eq!(p.log_len(), before + 2);
}

/// When the summarizer fails the result is kept as it is, with a warning.
#[test]
fn a_failed_summary_keeps_the_result() {
    let p = with_policy();
    let dead = dead_url();
    let env = [
        ("TRACT_LLM_BASE_URL", dead.as_str()),
        ("TRACT_LLM_MODEL", "m"),
    ];
    let big = big_output();
    let run = add_tool_turn(&p, "g2", "grep", &big, &env);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        be7a6198c5
        --- stderr
        warning: summarizing the grep result failed (summarizer error: openai:m@http://127.0.0.1:[PORT]/v1: cannot reach http://127.0.0.1:[PORT]/v1/chat/completions: Connection refused (os error 111)); the result was kept as it is
        ");
    assert!(
        run.stderr
            .contains("warning: summarizing the grep result failed"),
        "{run}"
    );
    let head = json(&p.ok(&["show", "--json"]));
    assert!(
        head["commit_hash"]
            .as_str()
            .unwrap()
            .starts_with(run.stdout.trim())
    );
    assert_eq!(head["message"]["content"], big.as_str());
}
