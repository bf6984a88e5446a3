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
