//! `tract replay`: a recorded session rerun on a scripted model served on 127.0.0.1, its tool
//! calls answered from the recorded results; killed midway and resumed; against an endpoint
//! that never answers.

use crate::common::*;
use insta::assert_snapshot;
use std::time::{Duration, Instant};
use tract_stub_llm::{Reply, completion, serve, serve_forever};

/// [`a_session`] with the model's answer after its grep.
fn answered() -> Project {
    let p = a_session();
    p.ok(&["add", "--role", "assistant", "It is in config.py."]);
    p
}

#[test]
fn a_replay_answers_calls_from_the_recording_and_says_how_to_compare() {
    let p = answered();
    let stub = serve(vec![
        completion(None, &[("r1", "grep", r#"{ "p" : "cfg" }"#)], (30, 4)),
        completion(Some("config.py holds it."), &[], (45, 6)),
    ])
    .unwrap();
    let run = p.run(&["replay", "main", "--model", "stub", "--base-url", &stub.url]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        replay of main on replay/main/1 (forked at 9d6c995d1a)
          2 requests; 1 tool call answered from the recording; 0 user messages of 0 sent
          tokens: 75 in, 10 out, 0 read from the cache
          finished: every user message sent and answered
        compare: tract diff main replay/main/1
    ");
    let sent = stub.bodies.lock().unwrap().clone();
    let second = json(&sent[1]);
    let result = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(result["tool_call_id"], "r1");
    assert_eq!(result["content"], "config.py:1: CFG=1\nconfig.py:2: X=2");
    // The replay's commits follow its record, which names the endpoint (its port changes
    // from run to run): compared by counts.
    let d = json(&p.ok(&["diff", "main", "replay/main/1", "--json"]));
    assert_eq!(d["shared_prefix_count"], 2);
    assert_eq!(d["only_a"].as_array().unwrap().len(), 3);
    assert_eq!(d["only_b"][2]["content"], "config.py holds it.");
    let report = json(
        &p.ok(&[
            "--branch",
            "replay/main/2",
            "replay",
            "main",
            "--model",
            "stub",
            "--base-url",
            &serve(vec![
                completion(None, &[("r1", "grep", r#"{"p":"cfg"}"#)], (30, 4)),
                completion(Some("config.py."), &[], (45, 6)),
            ])
            .unwrap()
            .url,
            "--json",
        ]),
    );
    assert_eq!(report["branch"], "replay/main/2");
    assert_eq!(report["matched_call_count"], 1);
    assert_eq!(report["finished"], true);
    assert_eq!(report["diff_command"], "tract diff main replay/main/2");
}

#[test]
fn a_replay_killed_midway_resumes_from_its_last_answer() {
    let p = answered();
    let stub = serve(vec![
        completion(None, &[("r1", "grep", r#"{"p":"cfg"}"#)], (30, 4)),
        Reply::Hang(Duration::from_secs(60)),
    ])
    .unwrap();
    let mut child = p
        .cmd(&["replay", "main", "--model", "stub", "--base-url", &stub.url])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed while it waits for its second answer, the first committed.
    let start = Instant::now();
    while stub.bodies.lock().unwrap().len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no second request"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let stub = serve(vec![completion(Some("config.py."), &[], (45, 6))]).unwrap();
    let run = p.run(&["replay", "main", "--resume", "--base-url", &stub.url]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        replay of main on replay/main/1 (forked at 9d6c995d1a)
          1 request; 0 tool calls answered from the recording; 0 user messages of 0 sent
          tokens: 45 in, 6 out, 0 read from the cache
          finished: every user message sent and answered
        compare: tract diff main replay/main/1
    ");
    let exported = json(&p.ok(&["--branch", "replay/main/1", "export", "--format", "openai"]));
    let roles: Vec<&str> = exported["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
    // The request after the kill was the one the kill interrupted: the same view.
    let resumed = json(&stub.bodies.lock().unwrap()[0]);
    assert_eq!(resumed["model"], "stub");
    assert_eq!(resumed["messages"].as_array().unwrap().len(), 4);
}

#[test]
fn an_endpoint_that_never_answers_fails_in_bounded_time_and_shows_no_credentials() {
    let p = answered();
    let stub = serve_forever(Reply::Hang(Duration::from_secs(30))).unwrap();
    let url = stub.url.replace("http://", "http://ann:pw-SECRET@");
    let start = Instant::now();
    let run = p.run(&[
        "replay",
        "main",
        "--model",
        "stub",
        "--base-url",
        &url,
        "--timeout",
        "1",
        "--retries",
        "1",
    ]);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert!(!format!("{run}").contains("SECRET"), "{run}");
    assert_snapshot!(run, @"
        exit: 7
        --- stderr
        error: model error: http://127.0.0.1:[PORT]/v1: no answer within 1000 ms (after 2 tries)
        hint: every answer received before is kept on the replay's branch (`tract branch` lists it); check the endpoint and the model, then `tract replay BRANCH --resume` goes on
    ");
    // The replay's branch holds the fork and its record: nothing was lost or half-written.
    let status = json(&p.ok(&["--branch", "replay/main/1", "status", "--json"]));
    assert_eq!(status["messages"], 2, "{status}");
}

#[test]
fn bad_replay_input_is_one_error_line() {
    let p = answered();
    assert_snapshot!(p.run(&["replay", "main"]), @"
        exit: 4
        --- stderr
        error: invalid input: tract replay needs --model NAME (the model to replay the session on)
    ");
    assert_snapshot!(p.run(&["replay", "mian", "--model", "m"]), @"
        exit: 3
        --- stderr
        error: branch 'mian' not found; did you mean 'main'?
        hint: `tract branch` lists branches
    ");
    assert_snapshot!(
        p.run(&["replay", "main", "--model", "m", "--tools", "missing.json"]),
        @"
            exit: 3
            --- stderr
            error: missing.json: No such file or directory (os error 2)
        "
    );
    std::fs::write(
        p.path().join("tools.json"),
        "[{\"description\": \"no name\"}]",
    )
    .unwrap();
    assert_snapshot!(
        p.run(&["replay", "main", "--model", "m", "--tools", "tools.json"]),
        @"
            exit: 4
            --- stderr
            error: invalid input: tool definition 0: it has no name
        "
    );
    assert_snapshot!(p.run(&["replay", "main", "--resume"]), @"
        exit: 4
        --- stderr
        error: invalid input: branch 'main' has no replay to resume
    ");
    assert_snapshot!(
        p.run(&["replay", "main", "--model", "m", "--from", "0000000000"]),
        @"
            exit: 3
            --- stderr
            error: commit or branch '0000000000' not found
            hint: `tract log` lists commits; `tract branch` lists branches
        "
    );
    // None of it made a branch.
    assert_eq!(p.ok(&["branch"]).lines().count(), 1);
}
