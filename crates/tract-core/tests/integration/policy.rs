//! What happens to a tool result as it is recorded: the stored policy, a handler that decides
//! instead, a summarizer that fails, and a batch under the policy.

use crate::support::{call, llm, temp_store};
use serde_json::Value;
use tract_core::{Error, Message, RecordOptions, Role, Tract};

/// A session up to a pending call of `name` with id `id`.
fn pending_call(t: &Tract, id: &str, name: &str) {
    t.user("find the config").unwrap();
    t.assistant("", vec![call(id, name)]).unwrap();
}

fn big_output(lines: usize) -> String {
    (0..lines)
        .map(|i| {
            format!("src/module_{i}.rs:{i}: let value_{i} = compute({i}); // filler text here")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_stored_policy_summarizes_per_tool_and_over_the_threshold() {
    use tract_core::{Decision, ToolPolicy};
    use tract_stub_llm::{ok, serve};
    let (_d, path) = temp_store();
    let setup = Tract::open(&path).unwrap();
    setup
        .set_tool_policy(&ToolPolicy {
            instructions: [("grep".to_string(), "only file names".to_string())].into(),
            auto_threshold: Some(200),
            default_instructions: None,
        })
        .unwrap();
    drop(setup);
    // Another handle (another process would do the same) applies the stored policy.
    let t = Tract::open(&path).unwrap();
    pending_call(&t, "g1", "grep");
    let stub = serve(vec![ok("grep found src/db.rs")]).unwrap();
    let client = llm(&stub.url);
    let out = t
        .record_tool_result(
            Message::tool_result("g1", "grep", big_output(40), false),
            &RecordOptions {
                summarizer: Some(&client),
                ..RecordOptions::default()
            },
        )
        .unwrap();
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert!(matches!(out.decision, Decision::Summarize { .. }));
    let edit = out.replacement.expect("a summary edit");
    assert_eq!(edit.edit_target(), Some(out.original.id));
    assert_eq!(
        edit.commit.parents,
        vec![out.original.id],
        "original first, then its edit"
    );
    assert_eq!(
        out.original.message.as_ref().unwrap().content.text(),
        big_output(40)
    );
    let body: Value = serde_json::from_str(&stub.bodies.lock().unwrap()[0]).unwrap();
    assert_eq!(
        body["messages"][0]["content"],
        tract_core::TOOL_SUMMARIZE_SYSTEM
    );
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("only file names"), "{prompt}");
    assert!(
        prompt.contains("call g1 grep"),
        "the call is sent with its result"
    );
    // The model sees the summary; history keeps the original.
    let shown = t.compile().unwrap();
    let messages = shown.messages().unwrap();
    assert_eq!(
        messages.last().unwrap().message.content.text(),
        "grep found src/db.rs"
    );
    assert_eq!(t.edit_history(out.original.id).unwrap().len(), 2);

    // Over the threshold without per-tool instructions: the extractive summarizer (offline).
    pending_call(&t, "b1", "bash");
    let info = t.tool_result("b1", "bash", big_output(200), false).unwrap();
    let shown = t.compile().unwrap();
    let messages = shown.messages().unwrap();
    let text = messages.last().unwrap().message.content.text().into_owned();
    // The result shortened: its first lines, then what was left out.
    assert!(
        text.starts_with("src/module_0.rs:0: let value_0 = compute(0);"),
        "{text}"
    );
    assert!(text.ends_with(" of 200 lines omitted)"), "{text}");
    assert_eq!(info.message.unwrap().content.text(), big_output(200));
    // Under it: unchanged, one commit.
    pending_call(&t, "b2", "bash");
    let before = t.log(&tract_core::LogQuery::default()).unwrap().len();
    let out = t
        .record_tool_result(
            Message::tool_result("b2", "bash", "ok", false),
            &RecordOptions::default(),
        )
        .unwrap();
    assert!(out.replacement.is_none() && out.decision == Decision::Approve);
    assert_eq!(
        t.log(&tract_core::LogQuery::default()).unwrap().len(),
        before + 1
    );
}

#[test]
fn a_policy_with_empty_instructions_is_refused_and_the_stored_one_kept() {
    use tract_core::ToolPolicy;
    let t = Tract::in_memory().unwrap();
    let good = ToolPolicy {
        auto_threshold: Some(10),
        ..ToolPolicy::default()
    };
    t.set_tool_policy(&good).unwrap();
    let bad = ToolPolicy {
        instructions: [("grep".to_string(), " ".to_string())].into(),
        ..ToolPolicy::default()
    };
    let e = t.set_tool_policy(&bad).unwrap_err();
    assert!(e.to_string().contains("'grep'"), "{e}");
    assert_eq!(t.tool_policy().unwrap(), good);
    t.set_tool_policy(&ToolPolicy::default()).unwrap();
    assert_eq!(t.tool_policy().unwrap(), ToolPolicy::default());
    assert!(tract_core::HookEvent::parse("tool_call").is_err());

    // A damaged policy is reported, and costs no tool result.
    let mut d = t.store().damage().unwrap();
    d.set_setting("tool_summarization", Some(b"{not json".as_slice()))
        .unwrap();
    d.commit().unwrap();
    assert!(matches!(t.tool_policy(), Err(Error::Corrupt { .. })));
    pending_call(&t, "g1", "grep");
    let out = t
        .record_tool_result(
            Message::tool_result("g1", "grep", big_output(50), false),
            &RecordOptions::default(),
        )
        .unwrap();
    assert!(out.replacement.is_none());
    assert!(
        out.warnings[0].contains("could not be read"),
        "{:?}",
        out.warnings
    );
    t.set_tool_policy(&good).unwrap();
    assert_eq!(t.tool_policy().unwrap(), good);
}

#[test]
fn a_handler_replaces_the_policy_and_decides() {
    use std::sync::Arc;
    use tract_core::{Decision, ToolPolicy};
    let t = Tract::in_memory().unwrap();
    t.set_tool_policy(&ToolPolicy {
        auto_threshold: Some(1),
        ..ToolPolicy::default()
    })
    .unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    t.on_tool_result(move |p| {
        log.lock()
            .unwrap()
            .push((p.tool_name.clone(), p.tool_call_id.clone(), p.token_count));
        match p.content.as_str() {
            "secret" => p.reject("contains a secret"),
            "noise" => p.edit("(noise dropped)"),
            "boom" => Err(tract_core::Error::handler("handler failed")),
            "twice" => {
                p.approve()?;
                p.approve()
            }
            "silent" => Ok(()),
            _ => p.approve(),
        }
    });
    pending_call(&t, "c1", "bash");
    let head = t.head().unwrap();
    let e = t.tool_result("c1", "bash", "secret", false).unwrap_err();
    assert!(matches!(e, Error::Rejected { .. }) && e.to_string().contains("contains a secret"));
    let e = t.tool_result("c1", "bash", "boom", false).unwrap_err();
    assert!(e.to_string().contains("handler failed"));
    let e = t.tool_result("c1", "bash", "twice", false).unwrap_err();
    assert!(e.to_string().contains("already decided"), "{e}");
    assert_eq!(t.head().unwrap(), head, "nothing committed");
    assert_eq!(seen.lock().unwrap()[0], ("bash".into(), "c1".into(), 1));

    // A long result passes through: the handler approves, the threshold is not consulted.
    let out = t
        .record_tool_result(
            Message::tool_result("c1", "bash", big_output(50), false),
            &RecordOptions::default(),
        )
        .unwrap();
    assert!(out.replacement.is_none() && out.warnings.is_empty());
    pending_call(&t, "c2", "bash");
    let out = t
        .record_tool_result(
            Message::tool_result("c2", "bash", "noise", false),
            &RecordOptions::default(),
        )
        .unwrap();
    assert_eq!(out.decision, Decision::Edit("(noise dropped)".into()));
    let edit = out.replacement.unwrap();
    assert_eq!(edit.edit_target(), Some(out.original.id));
    assert_eq!(
        edit.commit.message.as_deref(),
        Some("edited by the tool_result handler")
    );
    pending_call(&t, "c3", "bash");
    let out = t
        .record_tool_result(
            Message::tool_result("c3", "bash", "silent", false),
            &RecordOptions::default(),
        )
        .unwrap();
    assert_eq!(out.decision, Decision::Approve);
    assert!(
        out.warnings[0].contains("decided nothing"),
        "{:?}",
        out.warnings
    );

    // Without the handler, the policy applies again.
    t.off_tool_result();
    pending_call(&t, "c4", "bash");
    let out = t
        .record_tool_result(
            Message::tool_result("c4", "bash", big_output(50), false),
            &RecordOptions::default(),
        )
        .unwrap();
    assert!(out.replacement.is_some());
}

#[test]
fn a_failing_summarizer_keeps_the_original_and_warns() {
    use tract_core::{Decision, FnSummarizer, SummaryRequest};
    let t = Tract::in_memory().unwrap();
    pending_call(&t, "g1", "grep");
    let failing = FnSummarizer::new("down", |_: &SummaryRequest| {
        Err(tract_core::Error::Summarizer {
            summarizer: "callable:down".into(),
            reason: "HTTP 503 after 3 tries".into(),
        })
    });
    let summarize = Decision::Summarize {
        instructions: None,
        target_tokens: None,
    };
    let out = t
        .record_tool_result(
            Message::tool_result("g1", "grep", big_output(30), false),
            &RecordOptions {
                decision: Some(summarize.clone()),
                summarizer: Some(&failing),
            },
        )
        .unwrap();
    assert!(out.replacement.is_none());
    assert!(out.warnings[0].contains("HTTP 503"), "{:?}", out.warnings);
    let shown = t.compile().unwrap();
    let messages = shown.messages().unwrap();
    assert_eq!(
        messages.last().unwrap().message.content.text(),
        big_output(30)
    );
    // Nor is an empty summary.
    pending_call(&t, "g3", "grep");
    let empty = FnSummarizer::new("blank", |_: &SummaryRequest| Ok("  ".to_string()));
    let out = t
        .record_tool_result(
            Message::tool_result("g3", "grep", big_output(30), false),
            &RecordOptions {
                decision: Some(summarize.clone()),
                summarizer: Some(&empty),
            },
        )
        .unwrap();
    assert!(out.replacement.is_none());
    assert!(
        out.warnings[0].contains("empty summary"),
        "{:?}",
        out.warnings
    );
    // A summary that is not shorter is not committed either.
    pending_call(&t, "g2", "grep");
    let out = t
        .record_tool_result(
            Message::tool_result("g2", "grep", "a.rs:1", false),
            &RecordOptions {
                decision: Some(summarize),
                ..RecordOptions::default()
            },
        )
        .unwrap();
    assert!(out.replacement.is_none());
    assert!(
        out.warnings[0].contains("not shorter"),
        "{:?}",
        out.warnings
    );
    // Not a tool result.
    let e = t
        .record_tool_result(Message::text(Role::User, "hi"), &RecordOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("role tool"), "{e}");
}

#[test]
fn a_batch_applies_the_policy_to_each_result_in_one_transaction() {
    use tract_core::{FnSummarizer, SummaryRequest, ToolPolicy};
    let t = Tract::in_memory().unwrap();
    t.set_tool_policy(&ToolPolicy {
        instructions: [("grep".to_string(), "paths only".to_string())].into(),
        ..ToolPolicy::default()
    })
    .unwrap();
    let asked = std::sync::Mutex::new(Vec::new());
    let f = FnSummarizer::new("test", |req: &SummaryRequest| {
        asked
            .lock()
            .unwrap()
            .push(req.to_chat_messages().to_string());
        Ok("grep: src/a.rs".to_string())
    });
    let mut call_message = Message::text(Role::Assistant, "");
    call_message.tool_calls = vec![call("g1", "grep")];
    let batch = vec![
        Message::text(Role::User, "where?"),
        call_message,
        Message::tool_result("g1", "grep", big_output(30), false),
        Message::text(Role::Assistant, "in src/a.rs"),
    ];
    let reflog_before = t.reflog("main", usize::MAX).unwrap().len();
    let out = t
        .append_batch_with_policy(
            batch.clone(),
            &RecordOptions {
                summarizer: Some(&f),
                ..RecordOptions::default()
            },
        )
        .unwrap();
    assert_eq!(out.len(), 4);
    assert!(out[2].replacement.is_some() && out[3].replacement.is_none());
    assert_eq!(
        t.reflog("main", usize::MAX).unwrap().len(),
        reflog_before + 1,
        "one transaction"
    );
    // The call, made earlier in the same batch, is sent with its result.
    assert!(asked.lock().unwrap()[0].contains("call g1 grep"));
    let shown = t.compile().unwrap();
    let texts: Vec<String> = shown
        .messages()
        .unwrap()
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect();
    assert_eq!(texts[2], "grep: src/a.rs");

    // A rejection anywhere commits none of the batch.
    t.on_tool_result(|p| p.reject("no"));
    let head = t.head().unwrap();
    assert!(matches!(
        t.append_batch_with_policy(
            batch,
            &RecordOptions {
                summarizer: Some(&f),
                ..RecordOptions::default()
            }
        )
        .unwrap_err(),
        Error::Rejected { .. }
    ));
    assert_eq!(t.head().unwrap(), head);

    // A decision given in the options applies to every tool result of the batch, instead of
    // the handler (which would reject) and the policy (which would summarize).
    let mut again = Message::text(Role::Assistant, "");
    again.tool_calls = vec![call("g2", "grep")];
    let out = t
        .append_batch_with_policy(
            vec![
                again,
                Message::tool_result("g2", "grep", big_output(30), false),
            ],
            &RecordOptions {
                decision: Some(tract_core::Decision::Approve),
                summarizer: Some(&f),
            },
        )
        .unwrap();
    assert!(out.iter().all(|o| o.replacement.is_none()));
    assert_eq!(
        asked.lock().unwrap().len(),
        1,
        "nothing more was summarized"
    );
    assert_eq!(crate::support::texts(&t).last(), Some(&big_output(30)));
}
