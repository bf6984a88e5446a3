//! `tract merge` and `tract log --graph`: a sub-agent's branch coming back.

use crate::common::Project;
use insta::assert_snapshot;

/// A main agent that delegated a task through call `task_1`, and a sub-agent branch `sub`
/// that answered it while main went on.
fn delegated() -> Project {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "you are the main agent"]);
    p.ok(&["add", "fix the failing test"]);
    p.ok(&[
        "add",
        "--json",
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"task_1","type":"function","function":{"name":"task","arguments":"{\"goal\":\"find the bug\"}"}}]}"#,
    ]);
    p.ok(&["branch", "sub"]);
    p.ok(&["--branch", "sub", "add", "find why test_login fails"]);
    p.ok(&[
        "--branch",
        "sub",
        "add",
        "--role",
        "assistant",
        "auth.py:12 is off by one.",
    ]);
    p
}

/// The sub-agent's final answer becomes the result of the pending call; the graph shows both
/// lines; the compiled request is whole (no synthetic result).
#[test]
fn a_tool_result_merge_answers_the_pending_call() {
    let p = delegated();
    assert_snapshot!(p.run(&["merge", "sub", "--strategy", "tool_result", "--call-id", "task_1"]), @"
        exit: 0
        --- stdout
        merged sub (b886b5bd8d) into main as 22637c739e: its final answer is the result of call task_1 (12 tokens)
        ");
    assert_snapshot!(p.run(&["log", "--graph"]), @r#"
        exit: 0
        --- stdout
        ◆    22637c739e merge  tool      task             12  (sub answers task_1) auth.py:12 is off by one.  (main)
        ├─╮
        │ ○  b886b5bd8d append assistant -                12  auth.py:12 is off by one.  (sub)
        │ ○  af8a35fc0d append user      -                 8  find why test_login fails
        ├─╯
        ○  f857007362 append assistant task             11  task({"goal":"find the bug"})
        ○  bf6722a941 append user      -                 7  fix the failing test
        ○  d626778d7b append system    -                 8  you are the main agent
        "#);
    assert_snapshot!(p.run(&["show", "HEAD"]), @"
        exit: 0
        --- stdout
        commit  22637c739ebb03e941a029710d1d2ab33cbdb7f8fa76daf6b0791ec06b1d542b
        op      merge
        parent  f857007362
        parent  b886b5bd8d
        merged  sub at b886b5bd8d (its final answer is the result of call task_1)
        date    2026-01-01T00:00:00.000005Z
        role    tool  name task  tool_call_id task_1
        tokens  12

        auth.py:12 is off by one.
        ");
    assert_snapshot!(p.run(&["log", "-n", "1", "--json"]), @r#"
        exit: 0
        --- stdout
        [
          {
            "commit_hash": "22637c739ebb03e941a029710d1d2ab33cbdb7f8fa76daf6b0791ec06b1d542b",
            "op": "merge",
            "parents": [
              "f8570073622bc199185afd461f52668d7ec0d543d98dd021d80f0a636ed0e6c4",
              "b886b5bd8dd428b19b023ce4cf09b04bcbb46a345e5bc325ad3b9b2eeaf2f047"
            ],
            "edit_target": null,
            "sources": [],
            "summarizer": null,
            "created_at": "2026-01-01T00:00:00.000005Z",
            "timestamp_us": 1767225600000005,
            "note": null,
            "blob_hash": "c37a4715099f4d369569d243ab1280b27ff9fa26058f4505063bad62f49fcb45",
            "role": "tool",
            "content_type": "tool_result",
            "name": "task",
            "tool_call_id": "task_1",
            "is_error": false,
            "tool_calls": [],
            "tool_names": [
              "task"
            ],
            "token_count": 12,
            "content": "auth.py:12 is off by one.",
            "message": {
              "role": "tool",
              "content": "auth.py:12 is off by one.",
              "name": "task",
              "tool_call_id": "task_1"
            },
            "current_hash": "22637c739ebb03e941a029710d1d2ab33cbdb7f8fa76daf6b0791ec06b1d542b",
            "merge": {
              "branch": "sub",
              "tip_hash": "b886b5bd8dd428b19b023ce4cf09b04bcbb46a345e5bc325ad3b9b2eeaf2f047",
              "base_hash": "f8570073622bc199185afd461f52668d7ec0d543d98dd021d80f0a636ed0e6c4",
              "strategy": "tool_result",
              "call_id": "task_1"
            }
          }
        ]
        "#);
    assert_snapshot!(p.run(&["compile", "--format", "anthropic"]), @r#"
        exit: 0
        --- stdout
        {
          "system": "you are the main agent",
          "messages": [
            {
              "role": "user",
              "content": [
                {
                  "type": "text",
                  "text": "fix the failing test"
                }
              ]
            },
            {
              "role": "assistant",
              "content": [
                {
                  "type": "tool_use",
                  "id": "task_1",
                  "name": "task",
                  "input": {
                    "goal": "find the bug"
                  }
                }
              ]
            },
            {
              "role": "user",
              "content": [
                {
                  "type": "tool_result",
                  "tool_use_id": "task_1",
                  "content": "auth.py:12 is off by one."
                }
              ]
            }
          ]
        }
        "#);
    assert_snapshot!(p.run(&["search", "test_login", "--history"]), @"
        exit: 0
        --- stdout
        af8a35fc0d user      -            find why test_login fails  (main, sub)
        ");
}

/// An append merge continues the view with the branch's messages since it forked; merging
/// again brings only what is new.
#[test]
fn an_append_merge_brings_the_branch_messages() {
    let p = delegated();
    p.ok(&[
        "add",
        "--json",
        r#"{"role":"tool","tool_call_id":"task_1","name":"task","content":"delegated"}"#,
    ]);
    assert_snapshot!(p.run(&["merge", "sub", "-m", "bring the findings"]), @"
        exit: 0
        --- stdout
        merged sub (b886b5bd8d) into main as 201630ec0a: 2 messages appended, 54 tokens in view
        ");
    p.ok(&[
        "--branch",
        "sub",
        "add",
        "--role",
        "assistant",
        "one more finding",
    ]);
    assert_snapshot!(p.run(&["merge", "sub"]), @"
        exit: 0
        --- stdout
        merged sub (14b5bc179b) into main as 4703554351: 1 message appended, 60 tokens in view
        ");
    assert_snapshot!(p.run(&["log", "--graph", "-n", "6"]), @"
        exit: 0
        --- stdout
        ◆    4703554351 merge  -         -                 0  merged sub (14b5bc179b)  (main)
        ├─╮
        ◆ │    201630ec0a merge  -         -                 0  merged sub (b886b5bd8d)
        ├───╮
        │ ○ │  14b5bc179b append assistant -                 6  one more finding  (sub)
        │ ├─╯
        │ ○  b886b5bd8d append assistant -                12  auth.py:12 is off by one.
        │ ○  af8a35fc0d append user      -                 8  find why test_login fails
        │ │
        │ ~
        │
        ○  870241b042 append tool      task              5  delegated
        │
        ~
        ");
    assert_snapshot!(p.run(&["log", "--oneline"]), @r#"
        exit: 0
        --- stdout
        4703554351 merged sub (14b5bc179b)
        201630ec0a merged sub (b886b5bd8d)
        870241b042 delegated
        f857007362 task({"goal":"find the bug"})
        bf6722a941 fix the failing test
        d626778d7b you are the main agent
        "#);
}

/// Every refused merge says why and commits nothing.
#[test]
fn bad_merges_are_refused_and_change_nothing() {
    let p = delegated();
    let before = p.ok(&["log"]);
    assert_snapshot!(p.fails(&["merge", "main"]), @"
        exit: 5
        --- stderr
        error: invalid operation: cannot merge branch 'main' into itself
        ");
    assert_snapshot!(p.fails(&["merge", "ghost"]), @"
        exit: 3
        --- stderr
        error: branch 'ghost' not found
        hint: `tract branch` lists branches
        ");
    assert_snapshot!(p.fails(&["merge", "sub", "--strategy", "tool_result"]), @"
        exit: 4
        --- stderr
        error: invalid input: --strategy tool_result needs --call-id
        ");
    assert_snapshot!(p.fails(&["merge", "sub", "--strategy", "tool_result", "--call-id", "nope"]), @"
        exit: 5
        --- stderr
        error: invalid operation: tool call 'nope' is not pending on this branch (pending: task_1)
        ");
    assert_snapshot!(p.fails(&["merge", "sub", "--summarize"]), @"
        exit: 4
        --- stderr
        error: invalid input: summarize applies to the tool_result strategy (an append merge brings the messages themselves)
        ");
    p.ok(&["--branch", "stranger", "add", "unrelated"]);
    assert_snapshot!(p.fails(&["merge", "stranger"]), @"
        exit: 5
        --- stderr
        error: invalid operation: branch 'stranger' (ee7c4d30c8) shares no history with this branch (f857007362): nothing to merge from
        ");
    p.ok(&["branch", "behind"]);
    assert_snapshot!(p.fails(&["merge", "behind"]), @"
        exit: 5
        --- stderr
        error: invalid operation: branch 'behind' (f857007362) is already in this branch's history: nothing to merge
        ");
    assert_eq!(p.ok(&["log"]), before);
    assert_eq!(p.ok(&["--branch", "sub", "log"]).lines().count(), 5);
}
