//! `tract repair`: after a crash, answer every call left without a result.

use crate::common::{json, tool_project};
use insta::assert_snapshot;

/// Repair commits a marked error result for the call left pending and says how many; status
/// stops warning, compile stops warning, and a second repair finds nothing to do.
#[test]
fn repair_answers_calls_left_without_a_result() {
    let p = tool_project();
    let status = json(&p.ok(&["status", "--json"]));
    assert_eq!(status["unanswered_tool_calls"], 1);
    let run = p.run(&["repair"]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        71f1291d36 append tool      edit_file        29  [error] [tract] No result was recorded for this tool call: the agent stopped before the tool re…
        1 tool call without a result answered with a marked error result
        ");
    assert!(run.stdout.contains("1 tool call without"), "{run}");
    let status = json(&p.ok(&["status", "--json"]));
    assert_eq!(status["unanswered_tool_calls"], 0);
    assert_snapshot!(p.run(&["status"]), @"
        exit: 0
        --- stdout
        On branch main
        head      71f1291d36
        messages  8
        tokens    104
        store     [DIR]/.tract/store.redb
        ");
    assert_snapshot!(p.run(&["show"]), @"
        exit: 0
        --- stdout
        commit  71f1291d364cdad0591a3041435a792fa71cff871c07b5e9ca63bf1dac360320
        op      append
        parent  a029acc7b0
        date    2026-01-01T00:00:00.000007Z
        note    repair: synthetic result for a call with none
        role    tool  name edit_file  tool_call_id x1  [error]
        tokens  29

        [tract] No result was recorded for this tool call: the agent stopped before the tool returned. Treat the call as failed.
        ");
    let again = p.run(&["repair"]);
    assert_snapshot!(again, @"
        exit: 0
        --- stdout
        0 tool calls without a result answered with a marked error result
        ");
    assert!(again.stdout.contains("0 tool calls without"));
    let compile = p.run(&["compile"]);
    assert_eq!(compile.code, Some(0));
    assert!(compile.stderr.is_empty(), "no warnings after repair");
}
