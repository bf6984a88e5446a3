//! Records: data kept beside the conversation, out of the view, that travels with the history.

use crate::support::{branch, call, file_store, open_bound, temp_store, texts};
use tract_core::{Bind, Error, Message, Rev, Role, SearchQuery, Tract};

#[test]
fn records_stay_out_of_the_view_and_come_back_exactly() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("threads/t1")));
    t.user("hello").unwrap();
    let view_before = t.compile().unwrap().to_openai().unwrap();
    let first = t
        .record(
            "langgraph.checkpoint",
            r#"{"step":1,"secret":"zebra"}"#,
            vec![],
        )
        .unwrap();
    assert_eq!(first.commit.op.name(), "record");
    assert_eq!(t.compile().unwrap().to_openai().unwrap(), view_before);
    // Messages and a record in one write: the messages join the view, the record does not.
    let mut asking = Message::text(Role::Assistant, "");
    asking.tool_calls.push(call("c1", "grep"));
    let second = t
        .record(
            "langgraph.writes",
            "w1",
            vec![
                asking,
                Message::tool_result("c1", "grep", "found zebra", false),
            ],
        )
        .unwrap();
    assert_eq!(texts(&t), ["hello", "", "found zebra"]);
    let status = t.status().unwrap();
    assert_eq!(status.messages, 3);
    let listed = t.branches().unwrap();
    assert_eq!(listed[0].messages, 3, "stored counts skip records");
    // Newest first, filtered by kind and the kinds under it, paged with `before`.
    let all = t.records(&tract_core::RecordQuery::default()).unwrap();
    assert_eq!(
        all.iter().map(|r| r.data.as_str()).collect::<Vec<_>>(),
        ["w1", r#"{"step":1,"secret":"zebra"}"#]
    );
    assert_eq!(all[0].commit, second.id);
    assert_eq!(
        t.records(&tract_core::RecordQuery {
            kind: Some("langgraph".into()),
            ..Default::default()
        })
        .unwrap()
        .len(),
        2
    );
    assert_eq!(
        t.records(&tract_core::RecordQuery {
            kind: Some("langgraph.checkpoint".into()),
            ..Default::default()
        })
        .unwrap()[0]
            .commit,
        first.id
    );
    assert!(
        t.records(&tract_core::RecordQuery {
            kind: Some("lang".into()),
            ..Default::default()
        })
        .unwrap()
        .is_empty()
    );
    assert_eq!(
        t.records(&tract_core::RecordQuery {
            limit: Some(1),
            ..Default::default()
        })
        .unwrap()
        .len(),
        1
    );
    let page = t
        .records(&tract_core::RecordQuery {
            before: Some(Rev::from(second.id)),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].commit, first.id);
    assert_eq!(t.get_record(first.id).unwrap().kind, "langgraph.checkpoint");
    assert!(matches!(
        t.get_record(Rev::parse("HEAD~1").unwrap()),
        Err(Error::InvalidInput { .. })
    ));
    // Search looks at what was said, not at a record's data.
    let hits = t
        .search(&SearchQuery {
            query: "zebra".into(),
            history: true,
            ..SearchQuery::default()
        })
        .unwrap();
    assert_eq!(hits.len(), 1, "the tool result only");
    // Cold (a new handle builds the view from the store) and warm views agree.
    let cold = open_bound(&path, Bind::Branch(branch("threads/t1")));
    assert_eq!(
        cold.compile().unwrap().to_openai().unwrap(),
        t.compile().unwrap().to_openai().unwrap()
    );
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
    // A bad kind is refused and nothing is written, the messages with it included.
    let head = t.head().unwrap().commit;
    for bad in ["", "has space", ".x", "x."] {
        assert!(matches!(
            t.record(bad, "x", vec![Message::text(Role::User, "lost?")]),
            Err(Error::InvalidInput { .. })
        ));
    }
    assert_eq!(t.head().unwrap().commit, head);
}

#[test]
fn records_travel_through_push_history_export_and_redaction() {
    let (dir, a) = temp_store();
    let (_b, b) = temp_store();
    let t = open_bound(&a, Bind::Branch(branch("main")));
    t.user("hi").unwrap();
    let rec = t
        .record("claude.entries", r#"[{"uuid":"u1"}]"#, vec![])
        .unwrap();
    t.assistant("hello", vec![]).unwrap();
    Tract::open(&b).unwrap();
    let _ = tract_core::push(t.store(), &b, &tract_core::SyncOptions::default()).unwrap();
    let dst = open_bound(&b, Bind::Branch(branch("main")));
    assert_eq!(
        dst.records(&tract_core::RecordQuery::default()).unwrap(),
        t.records(&tract_core::RecordQuery::default()).unwrap()
    );
    // A history export names the record and imports back to identical ids.
    let history = t
        .export(tract_core::formats::exports::ExportFormat::Jsonl, true)
        .unwrap();
    assert!(history.contains(r#""kind":"claude.entries""#), "{history}");
    let file = dir.path().join("history.jsonl");
    std::fs::write(&file, &history).unwrap();
    let (_c, c) = file_store();
    let copy = open_bound(&c, Bind::Branch(branch("copy")));
    copy.import_file(&file, None).unwrap();
    assert_eq!(copy.head().unwrap().commit, t.head().unwrap().commit);
    assert_eq!(copy.get_record(rec.id).unwrap().data, r#"[{"uuid":"u1"}]"#);
    // A record can be redacted like any blob: its data is gone, the ids stay valid.
    t.redact(rec.id, "personal data").unwrap();
    let redacted = t.get_record(rec.id).unwrap();
    assert!(!redacted.data.contains("u1"), "{}", redacted.data);
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(texts(&t), ["hi", "hello"]);
}
