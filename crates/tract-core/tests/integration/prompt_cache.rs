//! What a prompt cache could have served, against a server that computes it from the bytes it
//! was sent: a 500-step agent sends each view as `Rendering` makes it to a stub of Anthropic's
//! Messages API that reports, for each request, what it shares byte for byte with the one
//! before; its answers (with that usage) are appended from its response bodies. Along the way
//! the agent edits, compresses, clears, changes its system prompt, redacts and switches model.
//! `cache_report` must name every request the server saw not extend the one before, with the
//! commit the agent made for it, and no other.

use crate::support::file_store;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tract_core::{
    AppendOptions, CacheOptions, Cause, ClearOptions, CommitId, CompressRequest, Content, Manual,
    Message, Provider, Rendering, Rev, Role, Tract, Usage,
};

/// Sends `body` to the stub's Messages endpoint and returns its answer.
fn post(url: &str, body: &str) -> Value {
    let mut response = ureq::post(&format!("{url}/messages"))
        .header("Content-Type", "application/json")
        .send(body)
        .unwrap();
    serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap()
}

/// Compresses the positions from `from` to `to` (both in view) into `summary`, written by hand:
/// the compress commit.
fn compress_run(t: &Tract, from: CommitId, to: CommitId, summary: &str) -> CommitId {
    let positions = t.positions_between(&from.into(), &to.into()).unwrap();
    let manual = Manual(summary.into());
    t.compress(&CompressRequest {
        commits: Some(positions.into_iter().map(Rev::from).collect()),
        summarizer: Some(&manual),
        ..CompressRequest::default()
    })
    .unwrap()
    .commits[0]
        .id
}

/// The tool results in view, oldest first.
fn results(t: &Tract) -> Vec<CommitId> {
    t.compile()
        .unwrap()
        .messages()
        .unwrap()
        .into_iter()
        .filter(|m| m.message.role == Role::Tool && !m.synthetic)
        .filter_map(|m| m.commit)
        .collect()
}

#[test]
fn every_break_the_server_saw_is_named_with_its_commit_and_no_other() {
    let stub = tract_stub_llm::serve_prompt_cache().unwrap();
    let (_dir, path) = file_store();
    let t = Tract::open(&path).unwrap();
    let system = t
        .system("You are a coding agent. Read files with `read`.")
        .unwrap();
    let mut users = vec![
        t.user("The tests fail in src/parser.rs; find out why.")
            .unwrap()
            .id,
    ];
    let mut rendering = Rendering::new(Provider::Anthropic);
    let mut model = "claude-sonnet-4-5";
    // What the agent did before each request that it expects to break the cached prefix.
    let mut expected: BTreeMap<usize, (CommitId, Cause)> = BTreeMap::new();
    for n in 0..500 {
        let breaking = match n {
            _ if n % 97 == 40 => {
                // A recent request of the user's, still in view.
                let target = users[users.len() - 3];
                let e = t
                    .edit(
                        target,
                        Content::Text(format!("(edited at step {n}) read it")),
                    )
                    .unwrap();
                Some((e.id, Cause::Edit))
            }
            _ if n % 97 == 60 => {
                let r = results(&t);
                let from = r[r.len() / 4];
                let to = r[r.len() / 2];
                let summary = format!("Steps summarized at step {n}.");
                Some((compress_run(&t, from, to, &summary), Cause::Compress))
            }
            _ if n % 97 == 80 => {
                let c = t
                    .clear_tool_results(&ClearOptions {
                        keep: 4,
                        ..ClearOptions::default()
                    })
                    .unwrap();
                c.cleared.first().map(|e| (e.id, Cause::Clear))
            }
            250 => {
                let e = t
                    .edit(
                        system.id,
                        Content::Text("You are a careful coding agent.".into()),
                    )
                    .unwrap();
                Some((e.id, Cause::System))
            }
            330 => {
                let r = results(&t);
                let target = r[r.len() - 2];
                t.redact(target, "a token in a tool result").unwrap();
                Some((target, Cause::Redaction))
            }
            _ => None,
        };
        if n == 420 {
            model = "claude-haiku-4-5";
        }
        let view = rendering.json(&t.compile().unwrap()).unwrap();
        let body = format!(
            "{{\"model\":\"{model}\",\"max_tokens\":1024,{}",
            view.strip_prefix('{').unwrap()
        );
        let answer = post(&stub.url, &body);
        let appended = t
            .append_response(&answer, &AppendOptions::default())
            .unwrap();
        if let Some(b) = breaking {
            expected.insert(n, b);
        }
        if n == 420 {
            expected.insert(n, (appended[0].id, Cause::Model));
        }
        // The agent answers the model's tool call, or asks for the next step.
        let last = t.get_commit(appended[0].id).unwrap();
        let m: &Message = last.message.as_deref().unwrap();
        match m.tool_calls.first() {
            Some(call) => {
                t.tool_result(
                    call.id.clone(),
                    "read",
                    (0..12)
                        .map(|k| format!("fn step_{n}_{k}() -> usize {{ {} }}\n", n * k))
                        .collect::<String>(),
                    false,
                )
                .unwrap();
            }
            None => users.push(t.user(format!("Go on with step {}.", n + 1)).unwrap().id),
        }
    }
    // Every cause the agent can make, several times over.
    let causes: std::collections::BTreeSet<&str> =
        expected.values().map(|(_, c)| c.as_str()).collect();
    assert_eq!(
        causes.into_iter().collect::<Vec<_>>(),
        ["clear", "compress", "edit", "model", "redaction", "system"]
    );
    assert_eq!(expected.len(), 18);
    let seen = stub.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 500);
    let server: Vec<usize> = (0..seen.len()).filter(|&n| !seen[n].extends).collect();
    assert_eq!(
        server,
        expected.keys().copied().collect::<Vec<_>>(),
        "the server saw a break exactly where the agent made one"
    );

    let report = t.cache_report(None, &CacheOptions::default()).unwrap();
    assert_eq!(report.requests.len(), 500);
    let named: BTreeMap<usize, (CommitId, Cause)> = report
        .requests
        .iter()
        .enumerate()
        .filter_map(|(n, r)| r.broke.as_ref().map(|b| (n, (b.commit, b.cause))))
        .collect();
    assert_eq!(named, expected, "every break, with its commit and cause");
    for (n, r) in report.requests.iter().enumerate() {
        // What the provider reported is kept as it reported it.
        let reported = Usage::from_json(&json!({
            "input_tokens": 3, "output_tokens": 12,
            "cache_read_input_tokens": seen[n].shared_bytes / tract_stub_llm::BYTES_PER_TOKEN,
            "cache_creation_input_tokens":
                (seen[n].body.len() - seen[n].shared_bytes) / tract_stub_llm::BYTES_PER_TOKEN,
        }))
        .unwrap();
        assert_eq!(
            r.usage.cache_read_input_tokens,
            reported.cache_read_input_tokens
        );
        // A request that extends the one before shares all of it.
        if n > 0 && r.broke.is_none() {
            assert_eq!(
                r.shared_tokens,
                report.requests[n - 1].request_tokens,
                "{n}"
            );
        }
        if n > 0 && seen[n].extends {
            assert!(seen[n].shared_bytes >= seen[n - 1].body.len() - 4, "{n}");
        }
    }
    assert!(report.system_prompt);
    assert_eq!(report.off_path, 0);
}

#[test]
fn a_gap_past_the_cache_lifetime_breaks_it_where_nothing_was_read() {
    let t = Tract::in_memory().unwrap();
    t.system("Be brief.").unwrap();
    t.user("one").unwrap();
    let answer = |text: &str, time: &str, read: u64| {
        let mut m = Message::text(Role::Assistant, text);
        Usage::from_json(&json!({
            "input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": read,
            "model": "m", "time": time,
        }))
        .unwrap()
        .put_on(&mut m)
        .unwrap();
        t.append(m).unwrap().id
    };
    answer("a", "2026-01-01T10:00:00Z", 0);
    t.user("two").unwrap();
    answer("b", "2026-01-01T10:01:00Z", 8);
    t.user("three").unwrap();
    // Ten minutes later, and the provider read nothing from its cache.
    let late = answer("c", "2026-01-01T10:11:00Z", 0);
    t.user("four").unwrap();
    // Ten minutes later again, but the provider still read from its cache (an hour's TTL).
    answer("d", "2026-01-01T10:21:00Z", 20);
    let r = t.cache_report(None, &CacheOptions::default()).unwrap();
    let broke: Vec<_> = r.requests.iter().map(|q| q.broke.clone()).collect();
    assert_eq!(broke[0], None);
    assert_eq!(broke[1], None);
    let b = broke[2].clone().unwrap();
    assert_eq!((b.commit, b.cause), (late, Cause::Ttl));
    assert_eq!(broke[3], None);
    // With an hour's lifetime, nothing broke.
    let hour = CacheOptions {
        ttl_seconds: 3600,
        ..CacheOptions::default()
    };
    let r = t.cache_report(None, &hour).unwrap();
    assert!(r.requests.iter().all(|q| q.broke.is_none()));
    assert_eq!(r.requests[2].time_us, 1_767_262_260_000_000);
}

#[test]
fn a_report_reads_every_rendering_and_one_without_requests_is_empty() {
    let t = Tract::in_memory().unwrap();
    let empty = t.cache_report(None, &CacheOptions::default()).unwrap();
    assert!(empty.requests.is_empty() && empty.tip.is_none());
    t.user("hello").unwrap();
    let first = t.user("a question").unwrap();
    let with_usage = |text: &str| {
        let mut m = Message::text(Role::Assistant, text);
        Usage::from_json(&json!({"input_tokens": 9, "output_tokens": 1}))
            .unwrap()
            .put_on(&mut m)
            .unwrap();
        t.append(m).unwrap()
    };
    with_usage("an answer");
    t.user("another").unwrap();
    with_usage("another answer");
    let e = t
        .edit(first.id, Content::Text("the question".into()))
        .unwrap();
    t.user("more").unwrap();
    with_usage("a third");
    for provider in [
        Provider::Anthropic,
        Provider::OpenAi,
        Provider::Responses { limit: None },
    ] {
        let o = CacheOptions {
            provider,
            ..CacheOptions::default()
        };
        let r = t.cache_report(None, &o).unwrap();
        assert_eq!(r.requests.len(), 3, "{provider:?}");
        assert!(!r.system_prompt);
        assert_eq!(r.requests[1].shared_tokens, r.requests[0].request_tokens);
        let b = r.requests[2].broke.clone().unwrap();
        assert_eq!((b.commit, b.cause), (e.id, Cause::Edit), "{provider:?}");
        // "hello" is still shared.
        assert!(r.requests[2].shared_tokens > 0);
        assert!(r.requests[2].shared_tokens < r.requests[1].request_tokens);
    }
    // A branch named, and one that does not exist.
    assert_eq!(
        t.cache_report(Some("main"), &CacheOptions::default())
            .unwrap()
            .requests
            .len(),
        3
    );
    assert!(
        t.cache_report(Some("nope"), &CacheOptions::default())
            .is_err()
    );
}

/// Every block that carries a breakpoint, as (message, block), `None` for the system prompt.
fn breakpoints(body: &Value) -> Vec<Option<(usize, usize)>> {
    let mut out = Vec::new();
    if body["system"][0].get("cache_control").is_some() {
        out.push(None);
    }
    for (m, message) in body["messages"].as_array().unwrap().iter().enumerate() {
        for (b, block) in message["content"].as_array().unwrap().iter().enumerate() {
            if block.get("cache_control").is_some() {
                assert_eq!(block["cache_control"], json!({"type": "ephemeral"}));
                out.push(Some((m, b)));
            }
        }
    }
    out
}

/// The body without its breakpoints, the system prompt a string again: the default rendering.
fn without_breakpoints(mut body: Value) -> Value {
    if let Some(text) = body["system"][0].get("text").cloned() {
        body["system"] = text;
    }
    for message in body["messages"].as_array_mut().unwrap() {
        for block in message["content"].as_array_mut().unwrap() {
            block.as_object_mut().unwrap().remove("cache_control");
        }
    }
    body
}

#[test]
fn breakpoints_mark_the_system_prompt_the_newest_summary_and_the_newest_message() {
    let t = Tract::in_memory().unwrap();
    // None without messages, and none asked for: the default rendering is unchanged.
    assert_eq!(
        t.compile()
            .unwrap()
            .to_anthropic_with_cache_breakpoints()
            .unwrap(),
        json!({"messages": []})
    );
    t.system("You are a coding agent.").unwrap();
    let first = t.user("Read a.py.").unwrap();
    let call = |id: &str| tract_core::ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: "{\"path\":\"a.py\"}".into(),
    };
    t.assistant("", vec![call("c1")]).unwrap();
    t.tool_result("c1", "read", "print(1)", false).unwrap();
    let last = t.assistant("It prints 1.", Vec::new()).unwrap();
    let compiled = t.compile().unwrap();
    let body = compiled.to_anthropic_with_cache_breakpoints().unwrap();
    assert_eq!(
        without_breakpoints(body.clone()),
        compiled.to_anthropic().unwrap()
    );
    // The system prompt, and the last block of the newest message; no summary yet.
    assert_eq!(breakpoints(&body), [None, Some((3, 0))]);
    assert_eq!(compiled.compress_boundary(), None);

    // A summary: its block is marked too; it shares a user message with what follows.
    let summary = compress_run(&t, first.id, last.id, "Read a.py: it prints 1.");
    t.user("Now b.py.").unwrap();
    // The newest message: an answer whose thinking block takes no breakpoint, with a call
    // that has no result yet (its synthetic result is not stable).
    let mut thinking = Message::text(Role::Assistant, "");
    thinking.content = tract_core::Content::Parts(vec![tract_core::ContentPart::Raw(
        json!({"type": "thinking", "thinking": "b.py next", "signature": "sig"}).to_string(),
    )]);
    thinking.tool_calls = vec![call("c2")];
    t.append(thinking).unwrap();
    let compiled = t.compile().unwrap();
    assert_eq!(compiled.compress_boundary(), Some(summary));
    let body = compiled.to_anthropic_with_cache_breakpoints().unwrap();
    assert_eq!(
        without_breakpoints(body.clone()),
        compiled.to_anthropic().unwrap()
    );
    let messages = body["messages"].as_array().unwrap();
    // [user: summary, "Now b.py."] [assistant: thinking, tool_use] [user: synthetic result]
    assert_eq!(messages.len(), 3, "{body}");
    assert_eq!(breakpoints(&body), [None, Some((0, 0)), Some((1, 1))]);
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    assert!(breakpoints(&body).len() <= 4);
    // The default output is what it was.
    assert_eq!(
        compiled.to_anthropic().unwrap().to_string(),
        Rendering::new(Provider::Anthropic).json(&compiled).unwrap()
    );
}

/// An answer carrying usage, as an agent appends it after each request.
fn answered(t: &Tract, text: &str) -> CommitId {
    let mut m = Message::text(Role::Assistant, text);
    Usage::from_json(&json!({"input_tokens": 10, "output_tokens": 2}))
        .unwrap()
        .put_on(&mut m)
        .unwrap();
    t.append(m).unwrap().id
}

/// A tool turn whose result is long enough to clear.
fn tool_turn(t: &Tract, k: usize) {
    let call = tract_core::ToolCall {
        id: format!("c{k}"),
        name: "read".into(),
        arguments: format!("{{\"path\":\"f{k}.rs\"}}"),
    };
    t.assistant("", vec![call]).unwrap();
    let text: String = (0..30).map(|n| format!("line {n} of f{k}.rs\n")).collect();
    t.tool_result(format!("c{k}"), "read", text, false).unwrap();
}

#[test]
fn a_compaction_that_keeps_the_stable_prefix_goes_after_the_newest_summary() {
    let t = Tract::in_memory().unwrap();
    t.system("You are a coding agent.").unwrap();
    let first = t.user("Read the first files.").unwrap();
    tool_turn(&t, 0);
    let done = answered(&t, "Read f0.");
    compress_run(&t, first.id, done, "f0.rs read.");
    let next = t.user("Now the next ones.").unwrap();
    for k in 1..4 {
        tool_turn(&t, k);
    }
    answered(&t, "Read f1 to f3.");
    let view = t.compile().unwrap();
    let summary = view.compress_boundary().unwrap();
    // The whole view but the system prompt, with the summary; or after it.
    let all = t.plan_compress(&CompressRequest::default()).unwrap();
    let kept = t
        .plan_compress(&CompressRequest {
            keep_prefix: true,
            ..CompressRequest::default()
        })
        .unwrap();
    assert_eq!(all.runs[0].sources[0], summary);
    assert_eq!(kept.runs[0].sources[0], next.id);
    let tokens = view.message_tokens();
    // The system prompt is sent first, then the summary, then what follows it.
    assert_eq!(
        all.cached_tokens_invalidated,
        tokens[1..].iter().map(|&n| u64::from(n)).sum::<u64>()
    );
    assert_eq!(
        kept.cached_tokens_invalidated,
        tokens[2..].iter().map(|&n| u64::from(n)).sum::<u64>()
    );
    assert!(kept.cached_tokens_invalidated < all.cached_tokens_invalidated);

    // Compressed so, the next request shares the prefix up to the summary with the one before.
    let manual = Manual("f1 to f3 read.".into());
    t.compress(&CompressRequest {
        keep_prefix: true,
        summarizer: Some(&manual),
        ..CompressRequest::default()
    })
    .unwrap();
    t.user("Go on.").unwrap();
    answered(&t, "Going on.");
    let r = t.cache_report(None, &CacheOptions::default()).unwrap();
    let last = r.requests.last().unwrap();
    assert_eq!(last.broke.as_ref().unwrap().cause, Cause::Compress);
    let prefix: u64 = tokens[..2].iter().map(|&n| u64::from(n)).sum();
    assert_eq!(
        last.shared_tokens, prefix,
        "the system prompt and the first summary"
    );

    // Nothing after the newest summary: nothing to compress, said plainly; nothing changes.
    let head = t.compile().unwrap().head();
    let err = t
        .compress(&CompressRequest {
            commits: Some(vec![Rev::from(summary)]),
            keep_prefix: true,
            summarizer: Some(&manual),
            ..CompressRequest::default()
        })
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("nothing selected after the stable prefix"),
        "{err}"
    );
    assert_eq!(t.compile().unwrap().head(), head);
}

#[test]
fn a_clear_that_keeps_the_stable_prefix_leaves_the_results_before_the_newest_summary() {
    let t = Tract::in_memory().unwrap();
    t.system("You are a coding agent.").unwrap();
    t.user("Read them all.").unwrap();
    for k in 0..3 {
        tool_turn(&t, k);
    }
    let from = t.user("Summarize what you found in the middle.").unwrap();
    let to = answered(&t, "Found little.");
    compress_run(&t, from.id, to, "Little found.");
    for k in 3..8 {
        tool_turn(&t, k);
    }
    let o = ClearOptions {
        keep: 2,
        ..ClearOptions::default()
    };
    let all = t.plan_clear_tool_results(&o).unwrap();
    let kept = t
        .plan_clear_tool_results(&ClearOptions {
            keep_prefix: true,
            ..o.clone()
        })
        .unwrap();
    // Six older turns: three before the summary, three after it.
    assert_eq!(all.candidates.len(), 6);
    assert_eq!(kept.candidates.len(), 3);
    let positions =
        |c: &[tract_core::ClearCandidate]| c.iter().map(|c| c.position).collect::<Vec<_>>();
    assert_eq!(positions(&kept.candidates), positions(&all.candidates[3..]));
    assert!(kept.cached_tokens_invalidated < all.cached_tokens_invalidated);
    assert!(all.tokens_before - all.tokens_after > kept.tokens_before - kept.tokens_after);
}
