//! Replays: a recorded session rerun on a scripted model served over HTTP on 127.0.0.1, its
//! tool calls answered from the recorded results, checked by what the server was sent.

use crate::support::{branch, llm, open_bound, temp_store};
use serde_json::Value;
use tract_core::{
    Api, Bind, Error, ReplayOptions, Rev, Role, ToolCall, ToolDef, Tract, canonical_arguments,
};
use tract_stub_llm::{Reply, completion, message, serve};

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

/// A recorded session: a question answered with a grep, a second one with an ls.
fn recorded(t: &Tract) {
    t.system("You find files.").unwrap();
    t.user("Where is the config?").unwrap();
    t.assistant("", vec![call("c1", "grep", r#"{"q": "config", "n": 3}"#)])
        .unwrap();
    t.tool_result("c1", "grep", "a.py:1: config = {}", false)
        .unwrap();
    t.assistant("It is in a.py.", Vec::new()).unwrap();
    t.user("And the tests?").unwrap();
    t.assistant("", vec![call("c2", "ls", r#"{"path": "tests"}"#)])
        .unwrap();
    t.tool_result("c2", "ls", "test_a.py", false).unwrap();
    t.assistant("tests/test_a.py.", Vec::new()).unwrap();
}

/// The bodies the server received, as JSON.
fn bodies(stub: &tract_stub_llm::StubLlm) -> Vec<Value> {
    stub.bodies
        .lock()
        .unwrap()
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect()
}

/// The texts of a handle's view, with their roles.
fn view_of(t: &Tract) -> Vec<(Role, String)> {
    t.compile()
        .unwrap()
        .messages()
        .unwrap()
        .iter()
        .map(|m| (m.message.role, m.message.content.text().into_owned()))
        .collect()
}

#[test]
fn a_replay_that_matches_every_call_answers_them_from_the_recording() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    recorded(&t);
    let stub = serve(vec![
        // The same grep, its arguments written otherwise.
        completion(
            None,
            &[("r1", "grep", r#"{"n":3.0,"q":"config"}"#)],
            (20, 5),
        ),
        completion(Some("The config is in a.py."), &[], (30, 7)),
        completion(None, &[("r2", "ls", r#"{"path":"tests"}"#)], (40, 5)),
        completion(Some("There is tests/test_a.py."), &[], (50, 9)),
    ])
    .unwrap();
    let o = t
        .replay(&ReplayOptions::new(branch("main"), llm(&stub.url)))
        .unwrap();
    assert_eq!(o.branch, "replay/main/1");
    assert_eq!(
        (o.requests, o.matched, o.users_sent, o.users_total),
        (4, 2, 1, 1)
    );
    assert!(o.finished && o.divergence.is_none());
    assert_eq!((o.usage.input_tokens, o.usage.output_tokens), (140, 26));

    let sent = bodies(&stub);
    assert_eq!(sent.len(), 4);
    // The first request is the session up to its first user message, with the tools its
    // calls imply.
    assert_eq!(sent[0]["model"], "stub-model");
    let first: Vec<&str> = sent[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(first, ["You find files.", "Where is the config?"]);
    let tools: Vec<&str> = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["grep", "ls"]);
    assert_eq!(
        sent[0]["tools"][0]["function"]["parameters"]["properties"]["n"]["type"],
        "integer"
    );
    // The recorded result goes back as the answer to the new call's id.
    let second = sent[1]["messages"].as_array().unwrap();
    let result = second.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], "r1");
    assert_eq!(result["content"], "a.py:1: config = {}");
    // The recorded user message follows the model's answer.
    let third = sent[2]["messages"].as_array().unwrap();
    assert_eq!(third.last().unwrap()["content"], "And the tests?");

    let r = open_bound(&path, Bind::Branch(branch("replay/main/1")));
    let view = view_of(&r);
    assert_eq!(view.len(), 9);
    assert_eq!(view[4], (Role::Assistant, "The config is in a.py.".into()));
    assert_eq!(
        view[8],
        (Role::Assistant, "There is tests/test_a.py.".into())
    );
    // Every answer carries its usage, and the diff with the original starts at the answers.
    let usage = r.usage(None, &tract_core::UsageOptions::default()).unwrap();
    assert_eq!(usage.ledger.totals.requests, 4);
    let d = t
        .diff(
            &Rev::parse("main").unwrap(),
            &Rev::parse("replay/main/1").unwrap(),
        )
        .unwrap();
    assert_eq!(d.shared_prefix, 2);
    // The next replay takes the next name.
    assert_eq!(
        t.next_replay_branch(&branch("main")).unwrap().as_str(),
        "replay/main/2"
    );
}

#[test]
fn a_call_the_recording_lacks_is_a_divergence_or_the_hooks_to_answer() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    recorded(&t);
    let stub = serve(vec![completion(
        None,
        &[("r1", "cat", r#"{"path":"a.py"}"#)],
        (20, 5),
    )])
    .unwrap();
    let o = t
        .replay(&ReplayOptions::new(branch("main"), llm(&stub.url)))
        .unwrap();
    let d = o.divergence.as_ref().expect("a divergence");
    assert_eq!((d.step, d.tool.as_str()), (1, "cat"));
    assert_eq!(d.arguments, r#"{"path":"a.py"}"#);
    assert!(!o.finished);
    // The answer that diverged is kept, its call without a result.
    let r = open_bound(&path, Bind::Branch(branch("replay/main/1")));
    assert_eq!(r.pending_tool_calls().unwrap().len(), 1);

    // Resumed with a hook that answers it, the replay goes on.
    let stub = serve(vec![
        completion(Some("It is in a.py."), &[], (30, 5)),
        completion(Some("tests/test_a.py."), &[], (40, 5)),
    ])
    .unwrap();
    let hook = |d: &tract_core::Divergence| -> tract_core::Result<Option<String>> {
        Ok(Some(format!("contents of {}", d.arguments)))
    };
    let mut opts = ReplayOptions::new(branch("main"), llm(&stub.url));
    opts.resume = true;
    opts.on_divergence = Some(&hook);
    let o = t.replay(&opts).unwrap();
    assert_eq!((o.answered_by_hook, o.requests, o.users_sent), (1, 2, 1));
    assert!(o.finished);
    let sent = bodies(&stub);
    let answered = sent[0]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(answered["content"], r#"contents of {"path":"a.py"}"#);
}

#[test]
fn a_failed_replay_keeps_its_answers_and_resumes_where_it_stopped() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    recorded(&t);
    let stub = serve(vec![
        completion(None, &[("r1", "grep", r#"{"q":"config","n":3}"#)], (20, 5)),
        Reply::Body(500, "{\"error\": \"overloaded\"}".into()),
        Reply::Body(500, "{\"error\": \"overloaded\"}".into()),
        Reply::Body(500, "{\"error\": \"overloaded\"}".into()),
    ])
    .unwrap();
    let e = t
        .replay(&ReplayOptions::new(branch("main"), llm(&stub.url)))
        .unwrap_err();
    assert!(matches!(e, Error::Model { .. }), "{e}");
    assert!(
        e.to_string().contains("HTTP 500") && e.to_string().contains("3 tries"),
        "{e}"
    );
    let r = open_bound(&path, Bind::Branch(branch("replay/main/1")));
    // The answer and the recorded result it got are kept.
    assert_eq!(view_of(&r).len(), 4);

    let stub = serve(vec![
        completion(Some("In a.py."), &[], (30, 5)),
        completion(Some("tests/test_a.py."), &[], (40, 5)),
    ])
    .unwrap();
    let mut opts = ReplayOptions::new(branch("main"), llm(&stub.url));
    opts.resume = true;
    let o = t.replay(&opts).unwrap();
    assert_eq!((o.requests, o.users_sent), (2, 1));
    assert!(o.finished);
    let view = view_of(&r);
    assert_eq!(view.len(), 7, "{view:?}");
    assert_eq!(
        view.iter().filter(|(role, _)| *role == Role::User).count(),
        2,
        "no user message sent twice"
    );
}

#[test]
fn the_messages_api_is_spoken_with_its_tools_and_system_given() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    recorded(&t);
    let stub = serve(vec![
        message(None, &[("u1", "grep", r#"{"q":"config","n":3}"#)], (20, 5)),
        message(Some("a.py"), &[], (30, 5)),
        message(Some("tests/test_a.py"), &[], (40, 5)),
    ])
    .unwrap();
    let mut client = llm(&stub.url);
    client.api = Api::Messages;
    let mut opts = ReplayOptions::new(branch("main"), client);
    opts.system = Some("Answer in one word.".into());
    opts.tools = Some(
        ToolDef::parse_all(&serde_json::json!([{
            "name": "grep",
            "description": "Search files.",
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
        }]))
        .unwrap(),
    );
    opts.branch = Some(branch("on-claude"));
    let o = t.replay(&opts).unwrap();
    // The ls the session made next is not offered: the model answers without it.
    assert_eq!((o.requests, o.matched), (3, 1));
    assert!(o.finished);
    let sent = bodies(&stub);
    assert_eq!(sent[0]["system"], "Answer in one word.");
    assert_eq!(sent[0]["max_tokens"], 4096);
    assert_eq!(
        sent[0]["tools"][0]["input_schema"]["properties"]["q"]["type"],
        "string"
    );
    let heads = stub.heads.lock().unwrap();
    assert!(heads[0].starts_with("POST /v1/messages "), "{}", heads[0]);
    assert!(heads[0].contains("x-api-key: sk-test"), "{}", heads[0]);
    let result = &sent[1]["messages"].as_array().unwrap().last().unwrap()["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "u1");
    // The original keeps its system prompt.
    assert_eq!(view_of(&t)[0].1, "You find files.");
}

#[test]
fn bad_replays_are_clear_errors_and_lose_nothing() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    recorded(&t);
    let other = t
        .fork(&branch("other"), &Rev::parse("HEAD~2").unwrap())
        .unwrap();
    let elsewhere = other.user("only on other").unwrap().id;
    let unused = "http://127.0.0.1:9/v1";

    let mut opts = ReplayOptions::new(branch("main"), llm(unused));
    opts.from = Some(Rev::from(elsewhere));
    let e = t.replay(&opts).unwrap_err().to_string();
    assert!(e.contains("is not on the history of branch 'main'"), "{e}");

    let quiet = open_bound(&path, Bind::Branch(branch("quiet")));
    quiet.system("Nobody speaks.").unwrap();
    let e = t
        .replay(&ReplayOptions::new(branch("quiet"), llm(unused)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no user message to replay from"), "{e}");

    let mut opts = ReplayOptions::new(branch("main"), llm(unused));
    opts.resume = true;
    let e = t.replay(&opts).unwrap_err().to_string();
    assert!(e.contains("has no replay to resume"), "{e}");

    let e = t
        .replay(&ReplayOptions::new(branch("nowhere"), llm(unused)))
        .unwrap_err();
    assert!(matches!(e, Error::UnknownBranch { .. }), "{e}");
    // None of these made a branch.
    assert_eq!(t.branches().unwrap().len(), 3);

    // Answers that are not answers: not JSON, and one saying nothing.
    for (reply, said) in [
        (Reply::Body(200, "<html>busy</html>".into()), "not JSON"),
        (
            completion(Some(""), &[], (1, 1)),
            "neither content nor tool calls",
        ),
    ] {
        let stub = serve(vec![reply]).unwrap();
        let url = stub.url.replace("http://", "http://ann:pw-SECRET@");
        let mut client = llm(&url);
        client.api_key = Some("sk-SECRET".into());
        let e = t
            .replay(&ReplayOptions::new(branch("main"), client))
            .unwrap_err()
            .to_string();
        assert!(e.contains(said), "{e}");
        assert!(!e.contains("SECRET"), "{e}");
    }
    // Each made its branch, with nothing on it but the fork and its record.
    let r = open_bound(&path, Bind::Branch(branch("replay/main/2")));
    assert_eq!(view_of(&r).len(), 2);
    assert_eq!(canonical_arguments(r#"{"b":1,"a":2}"#), r#"{"a":2,"b":1}"#);
}

/// However many tries a client is allowed, a server that never answers fails it within its
/// deadline: every try and every wait of one request end by then.
#[test]
fn a_model_that_never_answers_fails_within_the_deadline() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    recorded(&t);
    let stub =
        tract_stub_llm::serve_forever(Reply::Hang(std::time::Duration::from_secs(30))).unwrap();
    let mut client = llm(&stub.url);
    client.timeout = std::time::Duration::from_millis(700);
    client.retries = 1000;
    client.deadline = Some(std::time::Duration::from_secs(3));
    let start = std::time::Instant::now();
    let e = t
        .replay(&ReplayOptions::new(branch("main"), client))
        .unwrap_err();
    let took = start.elapsed();
    assert!(matches!(e, Error::Model { .. }), "{e}");
    assert!(e.to_string().contains("no answer within"), "{e}");
    assert!(
        took >= std::time::Duration::from_secs(2) && took < std::time::Duration::from_secs(5),
        "{took:?}"
    );
}
