//! `tract compile`: the view as a provider request body.

use crate::common::{a_session, assert_run_snapshot, json, tool_project};
use insta::assert_snapshot;

/// The OpenAI body lists the view's messages, an edit in place of what it edits; the
/// Anthropic body lifts the system prompt out and sends tool results as `tool_result` blocks;
/// `--compact` is one line, the same each time.
#[test]
fn compile_openai_and_anthropic() {
    let p = a_session();
    p.ok(&["edit", "HEAD", "config.py:1"]);
    let run = p.run(&["compile"]);
    assert_run_snapshot!("openai", run);
    let oai = json(&run.stdout);
    assert_eq!(oai.as_array().unwrap().len(), 4);
    assert_eq!(oai[3]["content"], "config.py:1");

    let run = p.run(&["compile", "--format", "anthropic"]);
    assert_run_snapshot!("anthropic", run);
    let anth = json(&run.stdout);
    assert_eq!(anth["system"], "You are terse.");
    assert_eq!(anth["messages"][2]["content"][0]["type"], "tool_result");

    let compact = p.run(&["compile", "--compact"]);
    assert_snapshot!(compact, @r#"
        exit: 0
        --- stdout
        [{"role":"system","content":"You are terse."},{"role":"user","content":"Where is the config?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"grep","arguments":"{\"p\":\"cfg\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"config.py:1"}]
        "#);
    assert_eq!(compact.stdout, p.ok(&["compile", "--compact"]));
    assert_eq!(json(&compact.stdout), oai);
}

/// `--at REV` compiles the view as it was at an earlier commit.
#[test]
fn compile_at_an_earlier_commit() {
    let p = a_session();
    assert_snapshot!(p.run(&["compile", "--at", "HEAD~2"]), @r#"
        exit: 0
        --- stdout
        [
          {
            "role": "system",
            "content": "You are terse."
          },
          {
            "role": "user",
            "content": "Where is the config?"
          }
        ]
        "#);
}

/// A call left without a result gets a synthetic error result in the body, with a warning on
/// standard error; parallel results answered out of order are sent in call order.
#[test]
fn compile_warns_of_a_call_without_a_result() {
    let p = tool_project();
    assert_run_snapshot!("pending_call_openai", p.run(&["compile"]));
    assert_run_snapshot!(
        "pending_call_anthropic",
        p.run(&["compile", "--format", "anthropic"])
    );
}

/// The same call id recorded twice (`tract add --tool-calls` with `c1` in two turns): every
/// rendering sends each id once, the second call under a new id answered by its own result,
/// with a warning; `status` and `fsck` say so.
#[test]
fn compile_sends_a_reused_call_id_once() {
    let p = crate::common::Project::new();
    let grep = r#"[{"id":"c1","name":"grep","arguments":{"pattern":"DATABASE_URL"}}]"#;
    p.ok(&["add", "Where is DATABASE_URL read?"]);
    for found in ["config.py:42", "settings.py:7"] {
        p.ok(&["add", "--role", "assistant", "--tool-calls", grep, ""]);
        let result = [
            "--role",
            "tool",
            "--tool-call-id",
            "c1",
            "--name",
            "grep",
            found,
        ];
        p.ok(&[&["add"][..], &result].concat());
    }
    assert_run_snapshot!(
        "reused_id_anthropic",
        p.run(&["compile", "--format", "anthropic"])
    );
    let openai = json(&p.ok(&["compile", "--compact"]));
    let sent: Vec<(&str, &str)> = openai
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    let anthropic = json(&p.ok(&["compile", "--format", "anthropic", "--compact"]));
    let results: Vec<&str> = anthropic["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    let responses = json(&p.ok(&["compile", "--format", "responses", "--compact"]));
    let outputs: Vec<&str> = responses
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| i["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(sent[0], ("c1", "config.py:42"));
    assert_ne!(sent[1].0, "c1");
    assert_eq!(sent[1].1, "settings.py:7");
    let ids: Vec<&str> = sent.iter().map(|s| s.0).collect();
    assert_eq!(results, ids, "the same ids for Anthropic");
    assert_eq!(outputs, ids, "the same ids for Responses");
    assert_snapshot!(p.run(&["status"]), @"
        exit: 0
        --- stdout
        On branch main
        head      e3f0919887
        messages  5
        tokens    46
        store     [DIR]/.tract/store.redb
        warning: 1 tool call has an id an earlier call in view has; compile sends it under a new id (tract compile names it)
        ");
    assert_snapshot!(p.run(&["fsck"]), @"
        exit: 0
        --- stdout
        checked 5 commits, 4 blobs, 0 chunks (544 bytes), 1 branch, 5 reflog entries; counts of 1 branch replayed
        the journal holds 5 frames not yet folded into the store file, each checked
        warning: branch main: 1 tool call has an id an earlier call in its view has; compile sends it under a new id (tract compile names it)
        ");
}

/// A message with nothing the Anthropic API takes (an empty one an import kept) is left out
/// of the Anthropic body, and a warning says so: never silently.
#[test]
fn compile_says_what_the_anthropic_body_leaves_out() {
    let p = crate::common::Project::new();
    std::fs::write(
        p.path().join("chat.json"),
        r#"[{"role":"user","content":"first"},{"role":"user","content":""},{"role":"assistant","content":"done"}]"#,
    )
    .unwrap();
    p.ok(&[
        "import",
        "--format",
        "openai",
        "--branch",
        "main",
        "chat.json",
    ]);
    let run = p.run(&["compile", "--format", "anthropic", "--compact"]);
    assert_snapshot!(run, @r#"
        exit: 0
        --- stdout
        {"messages":[{"role":"user","content":[{"type":"text","text":"first"}]},{"role":"assistant","content":[{"type":"text","text":"done"}]}]}
        --- stderr
        warning: message 66a0084a8f has nothing the Anthropic rendering can send (no text, no part it takes); it is left out of it
        "#);
    assert_eq!(json(&run.stdout)["messages"].as_array().unwrap().len(), 2);
}

/// `--cache-key` prints OpenAI's `prompt_cache_key`: the same for every request of the branch
/// and of a fork of it; a branch with nothing yet has none.
#[test]
fn the_cache_key_is_the_conversations() {
    let p = crate::common::Project::new();
    assert_snapshot!(p.fails(&["compile", "--cache-key"]), @"
        exit: 4
        --- stderr
        error: invalid input: the branch has no commit yet: it has no prompt cache key
    ");
    p.ok(&["add", "hello"]);
    let key = p.ok(&["compile", "--cache-key"]);
    assert!(key.starts_with("tract-") && key.trim().len() == 38, "{key}");
    p.ok(&["add", "--role", "assistant", "hi"]);
    assert_eq!(p.ok(&["compile", "--cache-key"]), key);
    p.ok(&["branch", "retry", "HEAD~1"]);
    assert_eq!(p.ok(&["--branch", "retry", "compile", "--cache-key"]), key);
}
