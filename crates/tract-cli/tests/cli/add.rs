//! `tract add`: one message from flags, or message objects from `--json`.

use crate::common::{GREP_CALL, Project, a_session, len};
use insta::assert_snapshot;

/// Each role is added from flags and the new commit's short id is printed; `-` reads the text
/// from standard input; the id printed is the one `log` shows first. The same messages given
/// as `--json` make the same commits.
#[test]
fn add_prints_the_new_commit_id() {
    let p = Project::new();
    assert_snapshot!(p.run(&["add", "--role", "system", "You are terse."]), @"
        exit: 0
        --- stdout
        e12e09c5c7
        ");
    assert_snapshot!(p.run(&["add", "Where is the config?"]), @"
        exit: 0
        --- stdout
        9d6c995d1a
        ");
    assert_snapshot!(
        p.run(&["add", "--role", "assistant", "--tool-calls", GREP_CALL, ""]),
        @"
        exit: 0
        --- stdout
        0b0f62b55f
        "
    );
    let run = p.run_in(
        &[
            "add",
            "--role",
            "tool",
            "--tool-call-id",
            "c1",
            "--name",
            "grep",
            "-",
        ],
        "config.py:1: CFG=1\nconfig.py:2: X=2",
    );
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        501f6a52ff
        ");
    let id = run.stdout.trim();
    assert_eq!(id.len(), 10);
    let log = p.ok(&["log", "--oneline"]);
    assert!(log.lines().next().unwrap().starts_with(id), "{log}");
    assert_eq!(log.lines().count(), 4);
    assert_eq!(p.ok(&["log", "--json"]), a_session().ok(&["log", "--json"]));
}

/// A JSONL stream is committed in one transaction and prints one id a message; a bad line
/// (named in the error), an unknown role or a message the flags cannot make commits nothing.
#[test]
fn json_streams_are_all_or_nothing() {
    let p = Project::new();
    let stream = "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\",\"tool_calls\":[{\"id\":\"c1\",\"name\":\"bash\",\"arguments\":{\"cmd\":\"ls\"}}]}\n{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"name\":\"bash\",\"content\":\"x\"}\n";
    let run = p.run_in(&["add", "--json", "-"], stream);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        f84867e9e1
        92fff50744
        12d5e34cfd
        ");
    assert_eq!(run.stdout.lines().count(), 3);
    assert_eq!(p.log_len(), 3);

    let before = p.state();
    let bad = "{\"role\":\"user\",\"content\":\"ok\"}\n{\"role\":\"user\",\"content\":\n";
    assert_snapshot!(p.fails_in(&["add", "--json", "-"], bad), @"
        exit: 4
        --- stderr
        error: invalid input: line 2: malformed JSON: EOF while parsing a value at line 1 column 25
        ");
    let bad_role =
        "{\"role\":\"user\",\"content\":\"ok\"}\n{\"role\":\"robot\",\"content\":\"x\"}\n";
    assert_snapshot!(p.fails_in(&["add", "--json", "-"], bad_role), @"
        exit: 4
        --- stderr
        error: invalid input: line 2: unknown role 'robot' (expected system, user, assistant or tool)
        ");
    assert_snapshot!(p.fails(&["add", "--json", "{not json"]), @"
        exit: 4
        --- stderr
        error: invalid input: line 1: malformed JSON: key must be a string at line 1 column 2
        ");
    assert_snapshot!(p.fails(&["add", "--role", "robot", "hi"]), @"
        exit: 4
        --- stderr
        error: invalid input: unknown role 'robot' (expected system, user, assistant or tool)
        ");
    assert_snapshot!(p.fails(&["add", "--role", "tool", "no call id"]), @"
        exit: 4
        --- stderr
        error: invalid input: a tool message needs a non-empty tool_call_id
        ");
    assert_eq!(p.log_len(), 3);
    assert!(p.state() == before, "failed commands change nothing");
}

/// `--json` also takes one pretty-printed object, or a list of objects.
#[test]
fn json_takes_an_object_or_a_list() {
    let p = Project::new();
    assert_snapshot!(
        p.run(&["add", "--json", "{\n \"role\": \"user\",\n \"content\": \"pretty\"\n}"]),
        @"
        exit: 0
        --- stdout
        78c787c589
        "
    );
    assert_snapshot!(
        p.run(&[
            "add",
            "--json",
            r#"[{"role":"user","content":"x"},{"role":"user","content":"y"}]"#,
        ]),
        @"
        exit: 0
        --- stdout
        9787be81d4
        e2cc686b97
        "
    );
    assert_eq!(p.log_len(), 3);
    assert_eq!(len(&p.ok(&["log", "--json"])), 3);
}

/// A field tract does not know was kept as metadata and the message committed empty:
/// `{"role":"user","text":"hi"}` made an empty user message. It is refused, naming the field
/// meant, and nothing is committed; provider fields of an OpenAI message are kept.
#[test]
fn an_unknown_field_is_refused_with_the_field_meant() {
    let p = Project::new();
    let before = p.state();
    assert_snapshot!(p.fails(&["add", "--json", r#"{"role":"user","text":"hi"}"#]), @"
        exit: 4
        --- stderr
        error: invalid input: unknown message field 'text'; did you mean 'content'? (fields of your own go under 'metadata')
        ");
    let stream = "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"conent\":\"b\"}\n";
    assert_snapshot!(p.fails_in(&["add", "--json", "-"], stream), @"
        exit: 4
        --- stderr
        error: invalid input: line 2: unknown message field 'conent'; did you mean 'content'? (fields of your own go under 'metadata')
        ");
    assert!(p.state() == before, "failed commands change nothing");
    // An assistant message as the OpenAI SDK dumps it.
    let openai = r#"{"role":"assistant","content":"hi","refusal":null,"annotations":[],"audio":null,"function_call":null,"tool_calls":null}"#;
    p.ok(&["add", "--json", openai]);
    let shown = crate::common::json(&p.ok(&["show", "HEAD", "--json"]));
    let metadata = shown["message"]["metadata"].as_object().unwrap();
    assert!(metadata.contains_key("refusal") && metadata.contains_key("annotations"));
}

/// `tract add ""` committed an empty user message. A user or system message with no content
/// is refused from flags and from JSON; an assistant message that calls tools may be empty.
#[test]
fn an_empty_user_or_system_message_is_refused() {
    let p = Project::new();
    let before = p.state();
    assert_snapshot!(p.fails(&["add", ""]), @"
        exit: 4
        --- stderr
        error: invalid input: a user message cannot be empty
        ");
    assert_snapshot!(p.fails(&["add", "--role", "system", ""]), @"
        exit: 4
        --- stderr
        error: invalid input: a system message cannot be empty
        ");
    assert_snapshot!(p.fails_in(&["add", "-"], "  \n"), @"
        exit: 4
        --- stderr
        error: invalid input: a user message cannot be empty
        ");
    let list = r#"[{"role":"user","content":"a"},{"role":"system"},{"role":"user","content":[]}]"#;
    assert_snapshot!(p.fails(&["add", "--json", list]), @"
        exit: 4
        --- stderr
        error: invalid input: message 2: a system message cannot be empty
        ");
    assert_snapshot!(p.fails(&["add", "--json", r#"{"role":"user","content":""}"#]), @"
        exit: 4
        --- stderr
        error: invalid input: a user message cannot be empty
        ");
    assert!(p.state() == before, "failed commands change nothing");
    p.ok(&[
        "add",
        "--role",
        "assistant",
        "--tool-calls",
        crate::common::GREP_CALL,
        "",
    ]);
    p.ok(&[
        "add",
        "--json",
        r#"{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x"}}]}"#,
    ]);
    assert_eq!(p.log_len(), 2);
}

/// `--usage` (or a message's `usage` field) keeps what an answer cost with it, in Anthropic's
/// names whichever provider's were given; bad counts, or usage on another role, commit nothing.
#[test]
fn usage_is_kept_with_the_answer_and_bad_usage_commits_nothing() {
    let p = Project::new();
    p.ok(&["add", "how big is it?"]);
    let openai = r#"{"prompt_tokens":900,"completion_tokens":12,"prompt_tokens_details":{"cached_tokens":512},"model":"gpt-4.1"}"#;
    p.ok(&["add", "--role", "assistant", "--usage", openai, "3 MB"]);
    let shown = crate::common::json(&p.ok(&["show", "HEAD", "--json"]));
    assert_eq!(
        shown["message"]["metadata"]["tract.usage"],
        serde_json::json!({
            "input_tokens": 388, "output_tokens": 12, "cache_read_input_tokens": 512,
            "cache_creation_input_tokens": 0, "model": "gpt-4.1"
        })
    );
    let anthropic = r#"{"role":"assistant","content":"ok","usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":900}}"#;
    p.ok(&["add", "--json", anthropic]);
    let shown = crate::common::json(&p.ok(&["show", "HEAD", "--json"]));
    assert_eq!(
        shown["message"]["metadata"]["tract.usage"]["cache_read_input_tokens"],
        900
    );
    let before = p.state();
    let negative = r#"{"input_tokens":-1,"output_tokens":2}"#;
    assert_snapshot!(p.fails(&["add", "--role", "assistant", "--usage", negative, "x"]), @"
        exit: 4
        --- stderr
        error: invalid input: usage: 'input_tokens' must be a whole number of tokens, 0 or more
        ");
    let fine = r#"{"input_tokens":1,"output_tokens":2}"#;
    assert_snapshot!(p.fails(&["add", "--usage", fine, "x"]), @"
        exit: 4
        --- stderr
        error: invalid input: usage goes with an assistant message (this one is user)
        ");
    let mixed =
        r#"{"role":"assistant","content":"x","usage":{"prompt_tokens":5,"input_tokens":5}}"#;
    assert_snapshot!(p.fails(&["add", "--json", mixed]), @"
        exit: 4
        --- stderr
        error: invalid input: usage mixes OpenAI Chat's names (prompt_tokens, completion_tokens) with input_tokens/output_tokens: give one provider's
        ");
    assert!(p.state() == before, "failed commands change nothing");
}

/// `--response` appends what a provider's response body answers with, and what it cost; a body
/// that does not read commits nothing.
#[test]
fn a_response_body_is_appended_with_its_usage() {
    let p = Project::new();
    p.ok(&["add", "read a.py"]);
    let body = r#"{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"It prints 1."}],"stop_reason":"end_turn","usage":{"input_tokens":4,"output_tokens":6,"cache_read_input_tokens":900}}"#;
    p.ok(&["add", "--response", body]);
    let shown = crate::common::json(&p.ok(&["show", "HEAD", "--json"]));
    assert_eq!(shown["content"], "It prints 1.");
    assert_eq!(
        shown["message"]["metadata"]["tract.usage"]["request_id"],
        "msg_01"
    );
    let before = p.state();
    assert_snapshot!(p.fails(&["add", "--response", r#"{"hello":1}"#]), @r#"
        exit: 4
        --- stderr
        error: invalid input: not a response body: give an OpenAI Chat Completions response ("object": "chat.completion"), an OpenAI Responses response ("object": "response") or an Anthropic Messages response ("type": "message")
    "#);
    assert!(
        p.state() == before,
        "a body that does not read commits nothing"
    );
}

/// `tract usage` sums what a branch's answers cost, per model; a bad time is refused.
#[test]
fn usage_sums_what_the_branchs_answers_cost() {
    let p = Project::new();
    p.ok(&["add", "how big is it?"]);
    let openai = r#"{"prompt_tokens":900,"completion_tokens":12,"prompt_tokens_details":{"cached_tokens":512},"model":"gpt-4.1"}"#;
    p.ok(&["add", "--role", "assistant", "--usage", openai, "3 MB"]);
    let anthropic = r#"{"role":"assistant","content":"ok","usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":900}}"#;
    p.ok(&["add", "--json", anthropic]);
    assert_snapshot!(p.ok(&["usage"]), @"
        main: 2 requests
          input 391  output 16  cache read 1412  cache write 0  (cache hit rate 78.3%, context written 0.00x)
          (no model named): 1 request
            input 3  output 4  cache read 900  cache write 0  (cache hit rate 99.7%, context written 0.00x)
          gpt-4.1: 1 request
            input 388  output 12  cache read 512  cache write 0  (cache hit rate 56.9%, context written 0.00x)
        ");
    let json = crate::common::json(&p.ok(&["usage", "--json"]));
    assert_eq!(
        json["totals"],
        serde_json::json!({
            "input_tokens": 391, "output_tokens": 16, "cache_read_input_tokens": 1412,
            "cache_creation_input_tokens": 0
        })
    );
    // Priced by the table the user gives: a model it does not price has no cost, nor the whole.
    assert_snapshot!(p.ok(&["config", "prices", "--model", "gpt-4.1", "--input", "2", "--output", "8", "--cache-read", "0.5"]), @"
        prices (USD per million tokens):
          gpt-4.1: input 2, output 8, cache read 0.5, cache write 2
    ");
    assert_snapshot!(p.ok(&["usage"]), @"
        main: 2 requests
          input 391  output 16  cache read 1412  cache write 0  (cache hit rate 78.3%, context written 0.00x)
          (no model named): 1 request
            input 3  output 4  cache read 900  cache write 0  (cache hit rate 99.7%, context written 0.00x)
          gpt-4.1: 1 request
            input 388  output 12  cache read 512  cache write 0  (cache hit rate 56.9%, context written 0.00x)
          cost: unknown
            (no model named): unknown
            gpt-4.1: 0.0011 USD
          not in the price table (`tract config prices`): (no model named)
    ");
    p.ok(&[
        "config", "prices", "--model", "*", "--input", "1", "--output", "1",
    ]);
    let json = crate::common::json(&p.ok(&["usage", "--json"]));
    assert_eq!(json["currency"], "USD");
    assert_eq!(json["unpriced_models"], serde_json::json!([]));
    assert!(json["cost"].as_f64().unwrap() > 0.0);
    let before = p.state();
    assert_snapshot!(p.fails(&["config", "prices", "--model", "m", "--input=-1", "--output", "1"]), @"
        exit: 4
        --- stderr
        error: invalid input: price table: 'm' input must be a price of 0 or more per million tokens
    ");
    assert!(p.state() == before, "a bad price changes nothing");
    assert_snapshot!(p.fails(&["usage", "--since", "yesterday-ish"]), @"
        exit: 4
        --- stderr
        error: invalid input: --since 'yesterday-ish' is not a time: give an RFC 3339 time (2026-01-31T09:00:00Z) or a duration ago (7d, 2h, 30min)
        ");
}
