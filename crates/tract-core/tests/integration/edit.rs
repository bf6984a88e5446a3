//! Edits: a message replaced in the view, its position and tool identity kept, every version in
//! history.

use crate::support::{call, tool_session};
use tract_core::{Content, Error, Rev, Role, Tract};

#[test]
fn edits_keep_tool_identity_and_history() {
    let t = Tract::in_memory().unwrap();
    t.assistant("", vec![call("c1", "grep")]).unwrap();
    let original = t
        .tool_result("c1", "grep", "200 lines of grep", false)
        .unwrap();
    t.user("next").unwrap();
    let e1 = t.edit(original.id, Content::Text("short".into())).unwrap();
    // An edit of an edit resolves to the same position; the newest wins.
    let e2 = t
        .edit(
            Rev::parse(&e1.id.short()).unwrap(),
            Content::Text("shorter".into()),
        )
        .unwrap();
    let compiled = t.compile().unwrap();
    let msgs = compiled.messages().unwrap();
    assert_eq!(msgs.len(), 3, "edits do not add positions");
    let result = &msgs[1].message;
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.tool_call_id.as_deref(), Some("c1"));
    assert_eq!(result.name.as_deref(), Some("grep"));
    assert_eq!(result.content.text(), "shorter");
    assert_eq!(msgs[1].position, Some(original.id));
    assert_eq!(msgs[1].commit, Some(e2.id));
    // The original is still in history, and the edit names it.
    assert_eq!(
        t.get_commit(original.id)
            .unwrap()
            .message
            .unwrap()
            .content
            .text(),
        "200 lines of grep"
    );
    assert_eq!(e1.edit_target(), Some(original.id));
    assert_eq!(e2.edit_target(), Some(e1.id));
}

#[test]
fn editing_what_is_not_in_view_is_refused_and_changes_nothing() {
    let t = Tract::in_memory().unwrap();
    t.user("a").unwrap();
    let head = t.head().unwrap();
    let err = t
        .edit(
            Rev::parse(&"ab".repeat(32)).unwrap(),
            Content::Text("x".into()),
        )
        .unwrap_err();
    assert!(matches!(err, Error::UnknownRevision { .. }), "{err}");
    assert_eq!(t.head().unwrap(), head);
}

#[test]
fn tool_result_edits_are_checked_and_keep_history() {
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let head = t.head().unwrap();
    let g1 = c[4].id;
    for (target, call_id, name) in [
        (Rev::from(c[1].id), "g1", "grep"), // not a tool result
        (Rev::from(g1), "r1", "grep"),      // another call's id
        (Rev::from(g1), "g1", "read_file"), // another tool
        (Rev::parse(&"f".repeat(20)).unwrap(), "g1", "grep"), // no such commit
    ] {
        assert!(
            t.edit_tool_result(target, call_id, name, Content::Text("x".into()))
                .is_err()
        );
    }
    assert_eq!(t.head().unwrap(), head, "refused edits commit nothing");
    let e1 = t
        .edit_tool_result(g1, "g1", "grep", Content::Text("v2".into()))
        .unwrap();
    let e2 = t
        .edit_tool_result(e1.id, "g1", "grep", Content::Text("v3".into()))
        .unwrap();
    let history = t.edit_history(e2.id).unwrap();
    assert_eq!(
        history.iter().map(|i| i.id).collect::<Vec<_>>(),
        [c[4].id, e1.id, e2.id]
    );
    assert_eq!(t.edit_history(g1).unwrap().len(), 3);
    let msgs = t.compile().unwrap();
    let shown: Vec<_> = msgs
        .messages()
        .unwrap()
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect();
    assert!(shown.contains(&"v3".to_string()));
}
