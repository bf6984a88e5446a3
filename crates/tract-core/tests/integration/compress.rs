//! Compressing runs into summaries (by hand, by a callable, by an OpenAI-compatible server) and
//! clearing old tool results: what is replaced, what is kept, and what is refused.

use crate::support::{branch, call, llm, open_bound, temp_store, texts, tool_session};
use std::num::NonZeroU32;
use tract_core::{Bind, Content, Error, Message, Rev, Role, Tract};

#[test]
fn a_compress_goes_on_top_of_appends_made_meanwhile_but_not_of_changed_sources() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let old: Vec<_> = (0..4)
        .map(|i| {
            t.user(format!("old message {i} with some detail to summarize"))
                .unwrap()
        })
        .collect();
    let sources: Vec<Rev> = old.iter().map(|c| Rev::from(c.id)).collect();
    // Another handle (an agent going on) appends while the summary is being written.
    let agent = open_bound(&path, Bind::Branch(branch("main")));
    let appending = tract_core::FnSummarizer::new("appending", move |_req| {
        agent.user("appended meanwhile")?;
        Ok("summary".to_string())
    });
    let req = tract_core::CompressRequest {
        commits: Some(sources.clone()),
        summarizer: Some(&appending),
        ..tract_core::CompressRequest::default()
    };
    let out = t.compress(&req).unwrap();
    assert_eq!(out.commits.len(), 1);
    assert_eq!(texts(&t), ["summary", "appended meanwhile"]);
    // One of the sources edited meanwhile: nothing committed.
    let t2 = open_bound(&path, Bind::Branch(branch("other")));
    let mine: Vec<_> = (0..3)
        .map(|i| t2.user(format!("message {i} of the other branch")).unwrap())
        .collect();
    let target = mine[1].id;
    let editor = open_bound(&path, Bind::Branch(branch("other")));
    let editing = tract_core::FnSummarizer::new("editing", move |_req| {
        editor.edit(target, Content::Text("changed meanwhile".into()))?;
        Ok("summary".to_string())
    });
    let req = tract_core::CompressRequest {
        commits: Some(mine.iter().map(|c| Rev::from(c.id)).collect()),
        summarizer: Some(&editing),
        ..tract_core::CompressRequest::default()
    };
    assert!(matches!(t2.compress(&req), Err(Error::HeadMoved { .. })));
    assert_eq!(texts(&t2)[1], "changed meanwhile");
    assert_eq!(texts(&t2).len(), 3);
}

#[test]
fn clearing_old_tool_results_keeps_recent_turns_and_history() {
    use tract_core::ClearOptions;
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let mut results = Vec::new();
    for i in 0..5 {
        let tool = if i == 1 { "memory" } else { "grep" };
        t.assistant("", vec![call(&format!("c{i}"), tool)]).unwrap();
        results.push(
            t.tool_result(
                format!("c{i}"),
                tool,
                format!("match line {i}\n").repeat(100),
                false,
            )
            .unwrap(),
        );
    }
    let opts = ClearOptions {
        keep: 2,
        exclude_tools: vec!["memory".into()],
        ..ClearOptions::default()
    };
    let plan = t.plan_clear_tool_results(&opts).unwrap();
    assert_eq!(
        plan.candidates
            .iter()
            .map(|c| c.position)
            .collect::<Vec<_>>(),
        [results[0].id, results[2].id]
    );
    let head = t.head().unwrap();
    // Asking for more than it can free changes nothing.
    let greedy = ClearOptions {
        clear_at_least: 1_000_000,
        ..opts.clone()
    };
    assert!(t.clear_tool_results(&greedy).unwrap().cleared.is_empty());
    assert_eq!(t.head().unwrap(), head);
    let out = t.clear_tool_results(&opts).unwrap();
    assert_eq!(out.cleared.len(), 2);
    assert!(out.tokens_after < out.tokens_before);
    let compiled = t.compile().unwrap();
    let texts: Vec<String> = compiled
        .messages()
        .unwrap()
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect();
    let short = &results[0].id.to_hex()[..12];
    assert!(
        texts[1].starts_with("[tract] Cleared this grep result") && texts[1].contains(short),
        "{}",
        texts[1]
    );
    assert!(texts[3].starts_with("match line 1"), "excluded tool kept");
    assert!(texts[9].starts_with("match line 4"), "recent turns kept");
    // The originals stay in history; clearing again finds nothing new.
    assert!(
        t.get_commit(results[0].id)
            .unwrap()
            .message
            .unwrap()
            .content
            .text()
            .starts_with("match line 0")
    );
    assert!(t.clear_tool_results(&opts).unwrap().cleared.is_empty());
    // Durable: a new handle compiles the same bytes.
    let again = Tract::open_existing(&path)
        .unwrap()
        .compile()
        .unwrap()
        .to_anthropic()
        .unwrap()
        .to_string();
    assert_eq!(again, compiled.to_anthropic().unwrap().to_string());
    let bad = ClearOptions {
        placeholder: Some("  ".into()),
        ..ClearOptions::default()
    };
    assert!(matches!(
        t.clear_tool_results(&bad),
        Err(Error::InvalidInput { .. })
    ));
}

#[test]
fn compress_replaces_runs_and_keeps_everything_else() {
    use tract_core::{CompressRequest, FnSummarizer, Manual, SummaryRequest};
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let c = tool_session(&t);
    let after = t.user("and now?").unwrap();
    // Edited content is what gets summarized.
    t.edit_tool_result(c[4].id, "g1", "grep", Content::Text("EDITED grep".into()))
        .unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let f = FnSummarizer::new("test", |req: &SummaryRequest| {
        seen.lock()
            .unwrap()
            .push(req.to_chat_messages().to_string());
        Ok(format!("summary of {} messages", req.messages.len()))
    });
    let ids = |r: std::ops::Range<usize>| c[r].iter().map(|i| Rev::from(i.id)).collect::<Vec<_>>();
    let before_len = t.compile().unwrap().messages().unwrap().len();
    let out = t
        .compress(&CompressRequest {
            commits: Some(ids(1..7)),
            preserve: vec![Rev::from(c[5].id)],
            instructions: Some("keep paths".into()),
            target_tokens: NonZeroU32::new(50),
            summarizer: Some(&f),
            ..CompressRequest::default()
        })
        .unwrap();
    assert_eq!(
        out.commits.len(),
        2,
        "the preserved call splits the selection"
    );
    let prompts = seen.lock().unwrap().clone();
    assert!(prompts[0].contains("EDITED grep") && prompts[0].contains("keep paths"));
    assert!(prompts[0].contains("at most 50 tokens"));
    let compiled = t.compile().unwrap();
    let texts: Vec<String> = compiled
        .messages()
        .unwrap()
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect();
    assert_eq!(texts[0], "sys");
    assert_eq!(texts[1], "summary of 4 messages");
    // The preserved bash call stays; its result was summarized, so a synthetic result stands in.
    assert_eq!(compiled.messages().unwrap()[2].position, Some(c[5].id));
    assert!(compiled.messages().unwrap()[3].synthetic);
    assert_eq!(texts[4], "summary of 1 messages");
    assert_eq!(compiled.messages().unwrap().len(), before_len - 6 + 3 + 1);
    assert_eq!(
        texts.last().unwrap(),
        "and now?",
        "commits after the range stay"
    );
    assert!(
        compiled
            .messages()
            .unwrap()
            .iter()
            .any(|m| m.position == Some(after.id))
    );
    // Provenance: the commit records sources, summarizer and parameters; originals remain.
    let info = &out.commits[0];
    assert_eq!(info.op(), "compress");
    assert_eq!(info.sources(), &[c[1].id, c[2].id, c[3].id, c[4].id]);
    assert_eq!(info.summarizer(), Some("callable:test"));
    assert!(t.get_commit(c[3].id).is_ok());
    // Durable and identical from a fresh handle.
    let again = Tract::open_existing(&path)
        .unwrap()
        .compile()
        .unwrap()
        .to_openai()
        .unwrap()
        .to_string();
    assert_eq!(again, compiled.to_openai().unwrap().to_string());
    // A source is no longer in view: editing it is refused.
    assert!(t.edit(c[3].id, Content::Text("x".into())).is_err());
    // Manual content.
    let manual = Manual("by hand".into());
    t.compress(&CompressRequest {
        commits: Some(vec![Rev::from(after.id)]),
        summarizer: Some(&manual),
        ..CompressRequest::default()
    })
    .unwrap();
    assert_eq!(
        crate::support::texts(&t).last().map(String::as_str),
        Some("by hand")
    );
}

#[test]
fn compress_refuses_bad_requests_and_failed_summaries_commit_nothing() {
    use tract_core::{CompressRequest, FnSummarizer, SummaryRequest};
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let head = t.head().unwrap();
    let sel = |i: usize| Some(vec![Rev::from(c[i].id)]);
    let failing = FnSummarizer::new("down", |_: &SummaryRequest| {
        Err(Error::Summarizer {
            summarizer: "callable:down".into(),
            reason: "503 from the model".into(),
        })
    });
    let bad = [
        CompressRequest {
            commits: Some(vec![]),
            ..CompressRequest::default()
        },
        CompressRequest {
            commits: Some(vec![Rev::parse(&"f".repeat(12)).unwrap()]),
            ..CompressRequest::default()
        },
        CompressRequest {
            commits: sel(1),
            preserve: vec![Rev::from(c[2].id)],
            ..CompressRequest::default()
        },
        CompressRequest {
            commits: sel(1),
            preserve: vec![Rev::from(c[1].id)],
            ..CompressRequest::default()
        },
        CompressRequest {
            commits: sel(1),
            summarizer: Some(&failing),
            ..CompressRequest::default()
        },
    ];
    for req in &bad {
        assert!(t.compress(req).is_err());
    }
    // A zero target length cannot be asked for: it is refused where a surface's number
    // becomes a target.
    assert!(tract_core::tools::decision::target_tokens(0).is_err());
    assert_eq!(t.head().unwrap(), head, "nothing committed");
}

#[test]
fn compress_tool_calls_takes_whole_turns_and_keeps_the_answer() {
    use tract_core::CompressRequest;
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let answer = t.assistant("The config is in config.py.", vec![]).unwrap();
    // A summary shorter than any turn, so every selected run is replaced.
    let brief =
        tract_core::FnSummarizer::new("brief", |_: &tract_core::SummaryRequest| Ok("ok".into()));
    let req = || CompressRequest {
        summarizer: Some(&brief),
        ..CompressRequest::default()
    };
    // Naming only one result of the parallel turn takes the whole turn.
    let out = t
        .compress_tool_calls(
            &tract_core::ToolTurns {
                commits: Some(vec![Rev::from(c[3].id), Rev::from(answer.id)]),
                name: None,
                preserve_answer: true,
            },
            req(),
        )
        .unwrap();
    assert_eq!(out.commits.len(), 1);
    assert_eq!(out.commits[0].sources(), &[c[2].id, c[3].id, c[4].id]);
    let params = match &out.commits[0].commit.op {
        tract_core::Op::Compress { params, .. } => params.clone(),
        _ => unreachable!(),
    };
    assert_eq!(params["system_prompt"], tract_core::TOOL_SUMMARIZE_SYSTEM);
    let compiled = t.compile().unwrap();
    assert!(
        compiled
            .messages()
            .unwrap()
            .iter()
            .any(|m| m.position == Some(answer.id)),
        "answer kept"
    );
    assert!(
        compiled.warnings().iter().all(|w| !w.contains("g1")),
        "{:?}",
        compiled.warnings()
    );
    // Every grep turn (none left but the second) by name.
    let out = t
        .compress_tool_calls(
            &tract_core::ToolTurns {
                commits: None,
                name: Some("grep".into()),
                preserve_answer: true,
            },
            req(),
        )
        .unwrap();
    assert_eq!(out.commits[0].sources(), &[c[7].id, c[8].id]);
    assert!(
        t.compress_tool_calls(
            &tract_core::ToolTurns {
                commits: None,
                name: Some("nope".into()),
                preserve_answer: true
            },
            req()
        )
        .is_err()
    );
}

#[test]
fn a_summary_no_shorter_than_its_run_leaves_the_run_as_it_is() {
    use tract_core::CompressRequest;
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let long = tract_core::FnSummarizer::new("wordy", |_: &tract_core::SummaryRequest| {
        Ok("a summary much longer than the run it replaces ".repeat(20))
    });
    let head = t.head().unwrap();
    let before = t.status().unwrap().token_count;
    let out = t
        .compress(&CompressRequest {
            commits: Some(vec![Rev::from(c[1].id)]),
            summarizer: Some(&long),
            ..CompressRequest::default()
        })
        .unwrap();
    assert!(out.commits.is_empty(), "nothing committed");
    assert_eq!(out.skipped.len(), 1);
    assert_eq!(out.skipped[0].sources, vec![c[1].id]);
    assert!(
        out.warnings[0].contains("not shorter"),
        "{:?}",
        out.warnings
    );
    assert_eq!((out.tokens_before, out.tokens_after), (before, before));
    assert_eq!(t.head().unwrap(), head);
    // A summary the caller wrote is taken as given, long or not.
    let manual = tract_core::Manual("written by hand, and long: ".repeat(20));
    let out = t
        .compress(&CompressRequest {
            commits: Some(vec![Rev::from(c[1].id)]),
            summarizer: Some(&manual),
            ..CompressRequest::default()
        })
        .unwrap();
    assert_eq!(out.commits.len(), 1);
    assert!(out.skipped.is_empty());
}

#[test]
fn an_openai_compatible_server_summarizes_with_retries() {
    use tract_core::CompressRequest;
    use tract_stub_llm::{Reply, ok, serve};
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    t.edit_tool_result(c[4].id, "g1", "grep", Content::Text("EDITED grep".into()))
        .unwrap();
    let stub = serve(vec![
        Reply::Body(429, "{\"error\":\"slow down\"}".into()),
        ok("the summary"),
    ])
    .unwrap();
    let (url, seen) = (stub.url, stub.bodies);
    let client = llm(&url);
    let out = t
        .compress_tool_calls(
            &tract_core::ToolTurns {
                commits: Some(vec![Rev::from(c[2].id)]),
                name: None,
                preserve_answer: true,
            },
            CompressRequest {
                instructions: Some("keep paths".into()),
                target_tokens: NonZeroU32::new(40),
                summarizer: Some(&client),
                ..CompressRequest::default()
            },
        )
        .unwrap();
    assert_eq!(
        out.commits[0].summarizer(),
        Some(format!("openai:stub-model@{url}").as_str())
    );
    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "429, then success");
    let body: serde_json::Value = serde_json::from_str(&bodies[1]).unwrap();
    assert_eq!(body["model"], "stub-model");
    assert_eq!(
        body["messages"][0]["content"],
        tract_core::TOOL_SUMMARIZE_SYSTEM
    );
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("keep paths") && prompt.contains("at most 40 tokens"));
    assert!(
        prompt.contains("EDITED grep"),
        "the current content is sent"
    );
    let shown = t.compile().unwrap();
    assert!(
        shown
            .messages()
            .unwrap()
            .iter()
            .any(|m| m.message.content.text() == "the summary")
    );
}

#[test]
fn llm_failures_are_clear_errors_and_commit_nothing() {
    use tract_core::CompressRequest;
    use tract_stub_llm::{Reply, serve};
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let head = t.head().unwrap();
    let try_with = |script: Vec<Reply>| {
        let client = llm(&serve(script).unwrap().url);
        t.compress(&CompressRequest {
            commits: Some(vec![Rev::from(c[3].id)]),
            summarizer: Some(&client),
            ..CompressRequest::default()
        })
        .unwrap_err()
        .to_string()
    };
    let e = try_with((0..3).map(|_| Reply::Body(500, "{}".into())).collect());
    assert!(e.contains("HTTP 500") && e.contains("after 3 tries"), "{e}");
    let e = try_with(
        (0..3)
            .map(|_| Reply::Hang(std::time::Duration::from_millis(700)))
            .collect(),
    );
    assert!(e.contains("no answer within 400 ms"), "{e}");
    let e = try_with(vec![Reply::Body(200, "{not json".into())]);
    assert!(e.contains("not JSON"), "{e}");
    let e = try_with(vec![Reply::Body(401, "{\"error\":\"bad key\"}".into())]);
    assert!(e.contains("HTTP 401") && e.contains("bad key"), "{e}");
    // Nothing listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let mut client = llm(&url);
    client.retries = 0;
    let e = t
        .compress(&CompressRequest {
            commits: Some(vec![Rev::from(c[3].id)]),
            summarizer: Some(&client),
            ..CompressRequest::default()
        })
        .unwrap_err();
    assert!(matches!(e, Error::Summarizer { .. }), "{e}");
    assert_eq!(t.head().unwrap(), head, "nothing committed");
}

#[test]
fn compressing_many_runs_matches_a_cold_rebuild() {
    use tract_core::{CompressRequest, Manual};
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.compile().unwrap();
    let mut msgs = Vec::new();
    for i in 0..300 {
        msgs.push(Message::text(Role::User, format!("question {i}")));
        let mut a = Message::text(Role::Assistant, "");
        a.tool_calls = vec![call(&format!("c{i}"), "grep")];
        msgs.push(a);
        msgs.push(Message::tool_result(
            format!("c{i}"),
            "grep",
            format!("hit {i}"),
            false,
        ));
        msgs.push(Message::text(Role::Assistant, format!("answer {i}")));
    }
    t.append_batch(msgs).unwrap();
    let manual = Manual("turn summary".into());
    let out = t
        .compress_tool_calls(
            &tract_core::ToolTurns {
                commits: None,
                name: None,
                preserve_answer: true,
            },
            CompressRequest {
                summarizer: Some(&manual),
                ..CompressRequest::default()
            },
        )
        .unwrap();
    assert_eq!(
        out.commits.len(),
        300,
        "one run per turn: questions and answers split them"
    );
    let warm = t.compile().unwrap();
    assert_eq!(warm.messages().unwrap().len(), 900);
    assert!(warm.warnings().is_empty());
    let cold = Tract::open_existing(&path).unwrap().compile().unwrap();
    assert_eq!(
        warm.to_openai().unwrap().to_string(),
        cold.to_openai().unwrap().to_string()
    );
    assert_eq!(t.find_tool_turns(None).unwrap().len(), 0);
}
