//! Exports: a history export that imports back to identical ids, the view as messages,
//! Markdown and request bodies.

use crate::support::{branch, file_store, fixture, open_bound, temp_store, texts};
use serde_json::Value;
use tract_core::{Bind, Content, Error, MergeRequest, ToolCall, Tract};

#[test]
fn a_history_export_imports_back_to_identical_ids_and_the_view_exports_as_messages() {
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.import_file(fixture("claude-code-session.jsonl"), None)
        .unwrap();
    let last = t
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .into_iter()
        .find(|c| c.op() == "append")
        .unwrap();
    t.edit(last.id, Content::Text("Fixed.".into())).unwrap();
    let sub = t.fork(&branch("sub"), &tract_core::Rev::head()).unwrap();
    sub.user("sub-agent work").unwrap();
    t.merge(&branch("sub"), &MergeRequest::default()).unwrap();
    let history = t
        .export(tract_core::formats::exports::ExportFormat::Jsonl, true)
        .unwrap();
    assert_eq!(
        history.lines().count(),
        t.log(&tract_core::LogQuery {
            graph: true,
            ..Default::default()
        })
        .unwrap()
        .len()
    );
    let file = dir.path().join("history.jsonl");
    std::fs::write(&file, &history).unwrap();

    let (_d2, other) = file_store();
    let copy = open_bound(&other, Bind::Branch(branch("copy")));
    let report = copy.import_file(&file, None).unwrap();
    assert_eq!(report.format, None);
    assert_eq!(report.tip, t.head().unwrap().commit);
    assert_eq!(copy.head().unwrap().commit, t.head().unwrap().commit);
    assert_eq!(texts(&copy), texts(&t));
    assert!(tract_core::fsck(copy.store()).unwrap().is_clean());
    // Again: nothing new.
    let again = copy.import_file(&file, None).unwrap();
    assert_eq!(again.added, 0);
    // A changed line is refused, naming it.
    let changed = history.replacen("sub-agent work", "other work", 1);
    std::fs::write(&file, changed).unwrap();
    let err = copy.import_file(&file, None).unwrap_err().to_string();
    assert!(err.contains("the line was changed"), "{err}");
    // A branch elsewhere is not moved backwards or sideways.
    let elsewhere = open_bound(&other, Bind::Branch(branch("elsewhere")));
    elsewhere.user("unrelated").unwrap();
    std::fs::write(&file, &history).unwrap();
    assert!(matches!(
        elsewhere.import_file(&file, None),
        Err(Error::Diverged { .. })
    ));

    // The view as messages: importing it into an empty branch gives the same view.
    let view = t
        .export(tract_core::formats::exports::ExportFormat::Jsonl, false)
        .unwrap();
    let file = dir.path().join("view.jsonl");
    std::fs::write(&file, &view).unwrap();
    let fresh = open_bound(&other, Bind::Branch(branch("view")));
    assert_eq!(
        fresh.import_file(&file, None).unwrap().format,
        Some(tract_core::formats::transcript::Format::Jsonl)
    );
    assert_eq!(texts(&fresh), texts(&t));
}

#[test]
fn markdown_and_request_body_exports() {
    let t = Tract::in_memory().unwrap();
    t.system("Be brief.").unwrap();
    t.user("Where is `DATABASE_URL` read?").unwrap();
    t.assistant(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "grep".into(),
            arguments: r#"{"q":"DATABASE_URL"}"#.into(),
        }],
    )
    .unwrap();
    t.tool_result("c1", "grep", "config.py:42: ```", false)
        .unwrap();
    t.assistant("In config.py.", vec![]).unwrap();
    let md = t
        .export(tract_core::formats::exports::ExportFormat::Markdown, false)
        .unwrap();
    assert_eq!(
        md,
        "## System\n\nBe brief.\n\n## User\n\nWhere is `DATABASE_URL` read?\n\n## Assistant\n\n\
         ### Tool call: grep (c1)\n\n```json\n{\n  \"q\": \"DATABASE_URL\"\n}\n```\n\n\
         ## Tool result: grep (c1)\n\n````\nconfig.py:42: ```\n````\n\n## Assistant\n\nIn config.py.\n\n"
    );
    let history = t
        .export(tract_core::formats::exports::ExportFormat::Markdown, true)
        .unwrap();
    assert_eq!(history.matches("· append").count(), 5);
    let openai: Value = serde_json::from_str(
        &t.export(tract_core::formats::exports::ExportFormat::OpenAi, false)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        openai["messages"],
        t.compile().unwrap().to_openai().unwrap()
    );
    let anthropic: Value = serde_json::from_str(
        &t.export(tract_core::formats::exports::ExportFormat::Anthropic, false)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(anthropic, t.compile().unwrap().to_anthropic().unwrap());
    assert!(matches!(
        t.export(tract_core::formats::exports::ExportFormat::OpenAi, true),
        Err(Error::InvalidInput { .. })
    ));
    assert!(tract_core::formats::exports::ExportFormat::parse("yaml").is_err());
}
