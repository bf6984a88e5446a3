//! Tool calls and results: queries over the view, turns with their lifecycle, and repair of
//! pending calls.

use crate::support::{call, temp_store, tool_session};
use tract_core::{BranchName, Content, Error, Rev, Tract};

#[test]
fn tool_queries_follow_the_view() {
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let grep = t
        .find_tool_results(&tract_core::ResultQuery {
            name: Some("grep".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        grep.iter().map(|i| i.id).collect::<Vec<_>>(),
        [c[4].id, c[8].id]
    );
    assert_eq!(
        t.find_tool_results(&tract_core::ResultQuery::default())
            .unwrap()
            .len(),
        4
    );
    let after = t
        .find_tool_results(&tract_core::ResultQuery {
            name: Some("grep".into()),
            after: Some(Rev::from(c[4].id)),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(after.len(), 1);
    let before = t
        .find_tool_results(&tract_core::ResultQuery {
            before: Some(Rev::from(c[6].id)),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(before.len(), 2);
    assert!(
        t.find_tool_results(&tract_core::ResultQuery {
            name: Some("nope".into()),
            ..Default::default()
        })
        .unwrap()
        .is_empty()
    );
    // An edited result is returned once, as its position, with the current version reachable.
    let e = t
        .edit_tool_result(c[4].id, "g1", "grep", Content::Text("config.py:42".into()))
        .unwrap();
    let grep = t
        .find_tool_results(&tract_core::ResultQuery {
            name: Some("grep".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(grep.len(), 2);
    assert_eq!(grep[0].id, c[4].id);
    let current = grep[0].current.as_ref().unwrap();
    assert_eq!(current.commit, e.id);
    assert_eq!(current.message.content.text(), "config.py:42");
    assert!(
        grep[0]
            .message
            .as_ref()
            .unwrap()
            .content
            .text()
            .starts_with("config.py:42: DATABASE_URL")
    );
    // After/before outside the view are errors.
    t.create_branch(&BranchName::new("side").unwrap(), &Rev::from(c[1].id))
        .unwrap();
    t.switch("side").unwrap();
    let other = t.user("elsewhere").unwrap();
    t.switch("main").unwrap();
    assert!(matches!(
        t.find_tool_results(&tract_core::ResultQuery {
            after: Some(Rev::from(other.id)),
            ..Default::default()
        }),
        Err(Error::NotInView { .. })
    ));
    let calls = t.find_tool_calls(Some("grep")).unwrap();
    assert_eq!(
        calls.iter().map(|i| i.id).collect::<Vec<_>>(),
        [c[2].id, c[7].id]
    );
    assert_eq!(t.find_tool_calls(None).unwrap().len(), 4);
}

#[test]
fn turns_carry_results_in_call_order_and_lifecycle() {
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let turns = t.find_tool_turns(None).unwrap();
    assert_eq!(turns.len(), 4);
    let first = &turns[0];
    assert_eq!(first.call.id, c[2].id);
    assert_eq!(
        first.result_hashes(),
        [c[4].id, c[3].id],
        "call order, not record order"
    );
    assert_eq!(first.tool_names(), ["grep", "read_file"]);
    assert_eq!(first.all_hashes(), [c[2].id, c[4].id, c[3].id]);
    use tract_core::CallState;
    assert_eq!(first.calls[0].state, CallState::Ok);
    assert!(first.calls[0].duration_us.is_some());
    assert_eq!(first.calls[0].arguments, r#"{"q":"g1"}"#);
    assert_eq!(turns[1].calls[0].state, CallState::Error);
    assert_eq!(turns[3].calls[0].state, CallState::Pending);
    assert!(turns[3].results.is_empty());
    assert_eq!(t.find_tool_turns(Some("grep")).unwrap().len(), 2);
    assert!(t.find_tool_turns(Some("nope")).unwrap().is_empty());
}

#[test]
fn repair_answers_every_pending_call_once() {
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let c = tool_session(&t);
    t.assistant("", vec![call("p1", "bash"), call("p2", "grep")])
        .unwrap();
    assert_eq!(t.pending_tool_calls().unwrap().len(), 3);
    let repaired = t.repair().unwrap();
    assert_eq!(repaired.len(), 3);
    assert!(
        repaired
            .iter()
            .all(|r| r.message.as_ref().unwrap().is_error)
    );
    assert!(t.pending_tool_calls().unwrap().is_empty());
    assert!(t.repair().unwrap().is_empty(), "repair is idempotent");
    let reopened = Tract::open_existing(&path).unwrap();
    let compiled = reopened.compile().unwrap();
    assert!(compiled.warnings().is_empty(), "{:?}", compiled.warnings());
    let turns = reopened.find_tool_turns(Some("edit_file")).unwrap();
    assert_eq!(turns[0].results.len(), 1);
    assert_eq!(turns[0].calls[0].state, tract_core::CallState::Error);
    assert_eq!(turns[0].call.id, c[9].id);
}

#[test]
fn call_names_come_from_the_view_near_or_far() {
    use std::collections::HashSet;
    use tract_core::{CompressRequest, Manual};
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let c = tool_session(&t);
    let wanted = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<HashSet<_>>();
    let names = |t: &Tract, ids: &[&str]| {
        let mut found: Vec<_> = t.call_names(&wanted(ids)).unwrap().into_iter().collect();
        found.sort();
        found
    };
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        names(&t, &["x1", "r1", "nope"]),
        [pair("r1", "read_file"), pair("x1", "edit_file")]
    );
    // A record changes no view: the walk goes past it.
    t.record("test.kind", "{}", Vec::new()).unwrap();
    // A handle opened anew finds a call further back than the walk goes, through the view.
    for i in 0..80 {
        t.user(format!("message {i}")).unwrap();
    }
    let fresh = Tract::open(&path).unwrap();
    assert_eq!(names(&fresh, &["g2"]), [pair("g2", "grep")]);
    assert_eq!(names(&fresh, &[]), []);
    // Summarized away, the call is in history but not in the view: it is not found, near or far.
    let summarizer = Manual("the first turn".into());
    t.compress(&CompressRequest {
        commits: Some(c[2..5].iter().map(|i| Rev::from(i.id)).collect()),
        summarizer: Some(&summarizer),
        ..CompressRequest::default()
    })
    .unwrap();
    assert_eq!(names(&t, &["g1", "r1", "x1"]), [pair("x1", "edit_file")]);
    assert_eq!(names(&Tract::open(&path).unwrap(), &["g1"]), []);
}
