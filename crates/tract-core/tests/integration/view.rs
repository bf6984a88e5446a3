//! The view and its renderings: calls paired with their results, provider-native parts, the
//! Responses items, the same bytes every time, a cold view equal to the incremental one, and a
//! view's pages.

use crate::support::{branch, call, delegated, open_bound, temp_store};
use serde_json::json;
use tract_core::{Bind, Content, MergeRequest, MergeStrategy, Message, PageAt, Rev, Role, Tract};

#[test]
fn parallel_results_follow_their_calls_in_call_order() {
    let t = Tract::in_memory().unwrap();
    t.system("sys").unwrap();
    t.user("go").unwrap();
    t.assistant("looking", vec![call("c1", "grep"), call("c2", "read_file")])
        .unwrap();
    // Results recorded out of order, with a user interjection in between.
    t.tool_result("c2", "read_file", "file body", false)
        .unwrap();
    t.tool_result("c1", "grep", "match", false).unwrap();
    t.assistant("done", vec![]).unwrap();
    let c = t.compile().unwrap();
    let anth = c.to_anthropic().unwrap();
    assert_eq!(anth["system"], "sys");
    let msgs = anth["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4);
    let results = msgs[2]["content"].as_array().unwrap();
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(results.len(), 2, "parallel results share one user message");
    assert_eq!(results[0]["tool_use_id"], "c1");
    assert_eq!(results[1]["tool_use_id"], "c2");
    assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
    assert_eq!(msgs[1]["content"][1]["input"], json!({"q": "c1"}));
    let oai = c.to_openai().unwrap();
    let roles: Vec<&str> = oai
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool", "assistant"]
    );
    assert_eq!(oai[3]["tool_call_id"], "c1");
    assert_eq!(oai[2]["tool_calls"][0]["type"], "function");
    assert_eq!(
        oai[2]["tool_calls"][0]["function"]["arguments"],
        r#"{"q":"c1"}"#
    );
}

#[test]
fn calls_without_results_get_one_synthetic_error_and_orphans_are_not_sent() {
    let t = Tract::in_memory().unwrap();
    t.user("go").unwrap();
    t.tool_result("ghost", "grep", "nobody asked", false)
        .unwrap();
    t.assistant("", vec![call("c1", "bash")]).unwrap();
    let c = t.compile().unwrap();
    let oai = c.to_openai().unwrap();
    let arr = oai.as_array().unwrap();
    assert_eq!(
        arr.len(),
        3,
        "orphan result dropped, synthetic result added"
    );
    assert_eq!(arr[2]["role"], "tool");
    assert_eq!(arr[2]["tool_call_id"], "c1");
    assert!(arr[2]["content"].as_str().unwrap().starts_with("[tract]"));
    let anth = c.to_anthropic().unwrap();
    assert_eq!(anth["messages"][2]["content"][0]["is_error"], true);
    assert_eq!(c.warnings().len(), 2);
    assert_eq!(t.status().unwrap().unanswered_calls, 1);
    // Token total is what is sent: the per-message counts plus reply priming.
    let per: u64 = c
        .messages()
        .unwrap()
        .iter()
        .map(|m| u64::from(m.tokens))
        .sum();
    assert_eq!(c.token_count(), per + 3);
}

/// Provider-native content: Anthropic thinking (with its signature), redacted thinking and
/// images go back to Anthropic exactly, first in their message; the OpenAI rendering leaves
/// out what OpenAI cannot take, with a warning, and keeps every call paired with its result.
#[test]
fn provider_native_parts_render_exactly_where_they_can_and_are_left_out_with_a_warning() {
    let t = Tract::in_memory().unwrap();
    let thinking = json!({"type": "thinking", "thinking": "grep first", "signature": "EqQBCkYIARgCIkD+/sig=="});
    let redacted = json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"});
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}});
    let user =
        json!({"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]});
    t.append(tract_core::json::message_from_json(&user).unwrap())
        .unwrap();
    let assistant = json!({"role": "assistant",
        "content": [thinking, redacted, {"type": "text", "text": "Let me look."}],
        "tool_calls": [{"id": "toolu_1", "name": "grep", "arguments": "{\"q\":\"x\"}"}]});
    t.append(tract_core::json::message_from_json(&assistant).unwrap())
        .unwrap();
    t.tool_result("toolu_1", "grep", "1 match", false).unwrap();
    // A Responses reasoning item neither provider's chat format takes.
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": []});
    t.append(Message {
        content: Content::Parts(vec![tract_core::ContentPart::Raw(reasoning.to_string())]),
        ..Message::text(Role::Assistant, "")
    })
    .unwrap();
    t.assistant("An image of a cat.", vec![]).unwrap();
    let c = t.compile().unwrap();

    let anth = c.to_anthropic().unwrap();
    let msgs = anth["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["content"][1], image);
    assert_eq!(
        msgs[1]["content"],
        json!([thinking, redacted, {"type": "text", "text": "Let me look."},
               {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}}])
    );
    assert_eq!(msgs[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(
        msgs[3]["content"],
        json!([{"type": "text", "text": "An image of a cat."}])
    );
    assert_eq!(msgs.len(), 4);

    let oai = c.to_openai().unwrap();
    let oai = oai.as_array().unwrap();
    assert_eq!(
        oai[0]["content"],
        json!([{"type": "text", "text": "what is this?"}])
    );
    assert_eq!(
        oai[1]["content"],
        json!([{"type": "text", "text": "Let me look."}])
    );
    assert_eq!(oai[1]["tool_calls"][0]["id"], "toolu_1");
    assert_eq!(oai[2]["tool_call_id"], "toolu_1");
    // The reasoning-only message is not sent at all; the next one follows.
    assert_eq!(oai[3]["content"], "An image of a cat.");
    assert_eq!(oai.len(), 4);
    let warnings = c.warnings();
    for wanted in [
        "a 'image' part is left out of the OpenAI rendering",
        "a 'thinking' part is left out of the OpenAI rendering",
        "a 'redacted_thinking' part is left out of the OpenAI rendering",
        "a 'reasoning' part is left out of the OpenAI rendering",
        "a 'reasoning' part is left out of the Anthropic rendering",
        // The reasoning item alone: nothing of its message is sent, and that is said too.
        "has nothing the OpenAI rendering can send",
        "has nothing the Anthropic rendering can send",
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(wanted)),
            "{wanted}: {warnings:?}"
        );
    }
    assert_eq!(warnings.len(), 7, "{warnings:?}");
}

/// A view as Responses items: the last `limit` of them are the tail of all of them, a call
/// with no result is followed by a marked error output, an orphan result is left out.
#[test]
fn a_view_renders_as_responses_items_whole_or_its_tail() {
    let t = Tract::in_memory().unwrap();
    let items = json!([
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "found"},
        {"type": "function_call", "call_id": "c2", "name": "grep", "arguments": "{}"},
    ]);
    let messages = tract_core::formats::responses::messages_from_items(
        items.as_array().unwrap(),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(messages[2].name.as_deref(), Some("grep"));
    t.append_batch(messages).unwrap();
    t.tool_result("nobody-called", "grep", "orphan", false)
        .unwrap();
    let c = t.compile().unwrap();
    let all = c.to_responses(None).unwrap();
    let all = all.as_array().unwrap();
    assert_eq!(&all[..4], items.as_array().unwrap().as_slice());
    assert_eq!(all[4]["call_id"], "c2");
    assert_eq!(all[4]["output"], tract_core::view::SYNTHETIC_RESULT);
    assert_eq!(all.len(), 5);
    for n in 0..=7 {
        let tail = c.to_responses(Some(n)).unwrap();
        assert_eq!(
            tail.as_array().unwrap().as_slice(),
            &all[all.len().saturating_sub(n)..],
            "{n}"
        );
    }
}

#[test]
fn the_same_view_renders_to_the_same_bytes() {
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.user("hi").unwrap();
    t.assistant("", vec![call("c1", "grep"), call("c2", "grep")])
        .unwrap();
    t.tool_result("c1", "grep", "x", false).unwrap();
    let a = t.compile().unwrap().to_anthropic().unwrap().to_string();
    let b = Tract::open_existing(&path)
        .unwrap()
        .compile()
        .unwrap()
        .to_anthropic()
        .unwrap()
        .to_string();
    assert_eq!(a, b);
    assert_eq!(a, t.compile().unwrap().to_anthropic().unwrap().to_string());
}

#[test]
fn a_cold_view_of_a_long_history_equals_the_incremental_one() {
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.compile().unwrap(); // start the cached view, so later appends extend it in place
    let mut msgs = Vec::new();
    for i in 0..1200 {
        msgs.push(Message::text(Role::User, format!("question {i}")));
        let mut a = Message::text(Role::Assistant, "");
        a.tool_calls = vec![call(&format!("c{i}"), "grep")];
        msgs.push(a);
        if i % 7 != 0 {
            msgs.push(Message::tool_result(
                format!("c{i}"),
                "grep",
                format!("hit {i}"),
                false,
            ));
        }
    }
    for chunk in msgs.chunks(500) {
        t.append_batch(chunk.to_vec()).unwrap();
    }
    let warm = t.compile().unwrap().to_openai().unwrap().to_string();
    let cold = Tract::open_existing(&path)
        .unwrap()
        .compile()
        .unwrap()
        .to_openai()
        .unwrap()
        .to_string();
    assert_eq!(warm, cold);
    // Every seventh call never got a result.
    assert_eq!(t.status().unwrap().unanswered_calls, 1200_u64.div_ceil(7));
}

/// A page of a view tells a viewer each call's state and result, what each content is, where
/// a compressed run and a merged sub-agent came from, and where other branches fork.
#[test]
fn a_view_page_shows_calls_versions_marks_summaries_merges_and_forks() {
    use tract_core::{ClearOptions, CompressRequest, Manual, Mark, ToolPolicy};
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let sub = delegated(&t); // system, user, a pending `task` call; `sub` forked there
    let merged = t
        .merge(
            &branch("sub"),
            &MergeRequest {
                strategy: MergeStrategy::ToolResult {
                    call_id: "task_1".into(),
                },
                ..MergeRequest::default()
            },
        )
        .unwrap();
    let early = [
        t.user("first aside").unwrap(),
        t.user("second aside").unwrap(),
    ];
    let summary = t
        .compress(&CompressRequest {
            commits: Some(early.iter().map(|c| Rev::from(c.id)).collect()),
            summarizer: Some(&Manual("two asides".into())),
            ..CompressRequest::default()
        })
        .unwrap()
        .commits[0]
        .id;
    t.assistant(
        "",
        vec![call("g", "grep"), call("r", "read"), call("p", "test")],
    )
    .unwrap();
    let grep = t
        .tool_result("g", "grep", "a.py:1 TODO\nb.py:2 TODO", false)
        .unwrap();
    t.tool_result("r", "read", "no such file", true).unwrap();
    let grep_edit = t
        .edit_tool_result(grep.id, "g", "grep", Content::Text("a.py:1".into()))
        .unwrap();
    // The policy summarizes the next grep; the one after is cleared, the last redacted.
    t.set_tool_policy(&ToolPolicy {
        instructions: [("ls".to_string(), "names only".to_string())].into(),
        ..ToolPolicy::default()
    })
    .unwrap();
    t.set_summarizer(Some(std::sync::Arc::new(Manual("src/".into()))));
    t.assistant("", vec![call("l", "ls")]).unwrap();
    t.tool_result("l", "ls", "src/\n".repeat(200), false)
        .unwrap();
    t.assistant("", vec![call("s", "secrets")]).unwrap();
    let secret = t.tool_result("s", "secrets", "KEY=hunter2", false).unwrap();
    t.redact(secret.id, "a leaked key").unwrap();
    t.assistant("", vec![call("big", "cat")]).unwrap();
    t.tool_result("big", "cat", "line\n".repeat(400), false)
        .unwrap();
    t.clear_tool_results(&ClearOptions {
        keep: 0,
        exclude_tools: vec![
            "grep".into(),
            "read".into(),
            "ls".into(),
            "secrets".into(),
            "task".into(),
        ],
        ..ClearOptions::default()
    })
    .unwrap();
    t.create_branch(&branch("review"), &Rev::from(summary))
        .unwrap();

    let page = t.view_page(PageAt::Last, 100).unwrap();
    assert_eq!(page.total, page.entries.len());
    assert_eq!(page.offset, 0);
    assert_eq!(page.token_count, t.compile().unwrap().token_count());
    let ops: Vec<&str> = page
        .entries
        .iter()
        .map(|e| match &e.entry.origin.op {
            tract_core::Op::Compress { .. } => "compress",
            tract_core::Op::Merge { .. } => "merge",
            _ => "append",
        })
        .collect();
    assert_eq!(
        &ops[..5],
        ["append", "append", "append", "merge", "compress"]
    );
    // The sub-agent's answer is the task call's result, given by the merge.
    let task = &page.entries[2].calls[0];
    assert_eq!(task.info.state.as_str(), "ok");
    assert_eq!(task.result.as_ref().unwrap().entry.position, merged.id);
    assert_eq!(page.entries[3].caller, Some(2));
    assert_eq!(
        t.compressed_sources(summary)
            .unwrap()
            .iter()
            .map(|c| c.id)
            .collect::<Vec<_>>(),
        early.iter().map(|c| c.id).collect::<Vec<_>>()
    );
    // Three parallel calls: ok (edited), error, pending (a synthetic result is sent).
    let calls = &page.entries[5].calls;
    let states: Vec<&str> = calls.iter().map(|c| c.info.state.as_str()).collect();
    assert_eq!(states, ["ok", "error", "pending"]);
    let g = calls[0].result.as_ref().unwrap();
    assert_eq!(g.message.content.text(), "a.py:1");
    assert_eq!(g.entry.edits.len(), 1);
    assert_eq!(g.marks, [Mark::Edited]);
    assert!(calls[2].result.is_none() && calls[2].info.duration_us.is_none());
    assert!(calls[0].info.duration_us.is_some());
    let marks = |tool: &str| {
        let e = page
            .entries
            .iter()
            .find(|e| e.entry.shape.name.as_deref() == Some(tool));
        e.unwrap().marks.clone()
    };
    assert_eq!(marks("ls"), [Mark::Edited, Mark::Summarized]);
    assert_eq!(marks("secrets"), [Mark::Redacted]);
    assert!(marks("cat").contains(&Mark::Cleared), "{:?}", marks("cat"));
    assert!(page.entries[0].calls.is_empty() && page.entries[0].marks.is_empty());
    // Pages: the last by default, an offset past the end is empty.
    let last = t.view_page(PageAt::Last, 3).unwrap();
    assert_eq!(last.offset, page.total - 3);
    assert_eq!(last.entries[0].index, page.total - 3);
    assert!(
        t.view_page(PageAt::Offset(page.total + 5), 3)
            .unwrap()
            .entries
            .is_empty()
    );
    // Where the other branches fork; indexes of commits in view.
    let forks = t.fork_points(0).unwrap();
    let at = |name: &str| forks.iter().find(|(n, _)| n == name).map(|(_, c)| *c);
    assert_eq!(at("review"), Some(summary));
    assert_eq!(at("sub"), Some(sub.head().unwrap().commit.unwrap()));
    // Only forks among recent commits: an older one is not looked for.
    let summary_time = t.get_commit(summary).unwrap().commit.timestamp_us;
    let recent = t.fork_points(summary_time + 1).unwrap();
    assert!(
        recent.iter().all(|(n, _)| n != "review" && n != "sub"),
        "{recent:?}"
    );
    assert_eq!(
        t.view_indexes([summary, early[0].id, grep.id, grep_edit.id])
            .unwrap(),
        [Some(4), None, None, Some(6)]
    );
}
