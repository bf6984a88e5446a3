//! `tract show`: one commit with its whole message, as text or JSON.

use crate::common::{a_session, json};
use insta::assert_snapshot;

/// The header (id, op, parent, date, role, name, call id, tokens) and the whole content, every
/// line of it, of the commit an id names, even once it is edited; an assistant's tool calls
/// are listed one a line.
#[test]
fn show_prints_a_commit_and_its_whole_message() {
    let p = a_session();
    let id = p.ok(&["log", "--oneline", "-n", "1"])[..10].to_string();
    p.ok(&["edit", &id, "config.py:1"]);
    let show = p.run(&["show", &id]);
    assert_snapshot!(show, @"
        exit: 0
        --- stdout
        commit  501f6a52ffe0a11242de7104f848704a9938fd69d234e5aca7d636c87f0c3001
        op      append
        parent  0b0f62b55f
        date    2026-01-01T00:00:00.000003Z
        role    tool  name grep  tool_call_id c1
        tokens  20

        config.py:1: CFG=1
        config.py:2: X=2
        ");
    assert!(
        show.stdout.contains("tool_call_id c1") && show.stdout.contains("config.py:2: X=2"),
        "{show}"
    );
    assert_snapshot!(p.run(&["show", "HEAD~2"]), @r#"
        exit: 0
        --- stdout
        commit  0b0f62b55f23def31d35316a4ba8cb04f8c359be01cd997fe70f61d8ed81be73
        op      append
        parent  9d6c995d1a
        date    2026-01-01T00:00:00.000002Z
        role    assistant
        tokens  9
        call    c1 grep({"p":"cfg"})
        "#);
}

/// `--json` of an edit: op `edit`, what it edits, and the message with its name kept.
#[test]
fn show_json_of_an_edit() {
    let p = a_session();
    p.ok(&["edit", "HEAD", "config.py:1"]);
    let run = p.run(&["show", "--json", "HEAD"]);
    assert_snapshot!(run, @r#"
        exit: 0
        --- stdout
        {
          "commit_hash": "f8a23b35d569cc35f22b4e0024ca55c6644d98b0c4df4e699fa60bf36a7d0f85",
          "op": "edit",
          "parents": [
            "501f6a52ffe0a11242de7104f848704a9938fd69d234e5aca7d636c87f0c3001"
          ],
          "edit_target": "501f6a52ffe0a11242de7104f848704a9938fd69d234e5aca7d636c87f0c3001",
          "sources": [],
          "summarizer": null,
          "created_at": "2026-01-01T00:00:00.000004Z",
          "timestamp_us": 1767225600000004,
          "note": null,
          "blob_hash": "9fafef77bdc79082e00fdfa1340c3f92dc8497580a24169ce8f059e690be7526",
          "role": "tool",
          "content_type": "tool_result",
          "name": "grep",
          "tool_call_id": "c1",
          "is_error": false,
          "tool_calls": [],
          "tool_names": [
            "grep"
          ],
          "token_count": 7,
          "content": "config.py:1",
          "message": {
            "role": "tool",
            "content": "config.py:1",
            "name": "grep",
            "tool_call_id": "c1"
          },
          "current_hash": "f8a23b35d569cc35f22b4e0024ca55c6644d98b0c4df4e699fa60bf36a7d0f85"
        }
        "#);
    let shown = json(&run.stdout);
    assert_eq!(shown["op"], "edit");
    assert_eq!(shown["message"]["name"], "grep");
    assert_snapshot!(p.run(&["show"]), @"
        exit: 0
        --- stdout
        commit  f8a23b35d569cc35f22b4e0024ca55c6644d98b0c4df4e699fa60bf36a7d0f85
        op      edit of 501f6a52ff
        parent  501f6a52ff
        date    2026-01-01T00:00:00.000004Z
        role    tool  name grep  tool_call_id c1
        tokens  7

        config.py:1
        ");
}
