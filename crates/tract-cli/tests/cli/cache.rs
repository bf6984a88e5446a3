//! `tract cache`: what a provider's prompt cache could have served each request, and the commit
//! that broke the cached prefix.

use crate::common::Project;
use insta::assert_snapshot;

/// Three answers with usage; the user's first message edited between the second and the
/// third: the third request shares only the system prompt, and the edit is named.
#[test]
fn cache_names_the_commit_that_broke_the_prefix() {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "You are terse."]);
    let first = p.ok(&["add", "Where is the config?"]);
    let answer = |read: u32| {
        format!(
            r#"{{"input_tokens":20,"output_tokens":4,"cache_read_input_tokens":{read},"model":"claude-sonnet-4-5"}}"#
        )
    };
    p.ok(&[
        "add",
        "--role",
        "assistant",
        "--usage",
        &answer(0),
        "In ./etc.",
    ]);
    p.ok(&["add", "And the logs?"]);
    p.ok(&[
        "add",
        "--role",
        "assistant",
        "--usage",
        &answer(30),
        "In ./var.",
    ]);
    p.ok(&["edit", first.trim(), "Where is the configuration?"]);
    p.ok(&["add", "And the cache?"]);
    p.ok(&[
        "add",
        "--role",
        "assistant",
        "--usage",
        &answer(8),
        "In ./tmp.",
    ]);
    assert_snapshot!(p.ok(&["cache"]), @"
        main: 3 requests, 1 break of the cached prefix
          cache read (reported): 38 tokens; shared with the request before (as tract renders them): 22 tokens
          request 3 (4994cf75f9, 2026-01-01T00:00:00): 7 of 43 tokens shared; 8 read from the cache
            broken by edit d3df78c58716e06f572f82c5788b1351a9a59ae23bc3c9f0e947ca8ad14fbd6e
        note: tool definitions are not kept in the store: a change to them is not seen
    ");
    assert_snapshot!(p.ok(&["cache", "--verbose", "--format", "openai"]), @"
        main: 3 requests, 1 break of the cached prefix
          cache read (reported): 38 tokens; shared with the request before (as tract renders them): 22 tokens
          request 1 (f1efa1b7ce, 2026-01-01T00:00:00): 0 of 15 tokens shared; 0 read from the cache
          request 2 (cb563bb4a5, 2026-01-01T00:00:00): 15 of 29 tokens shared; 30 read from the cache
          request 3 (4994cf75f9, 2026-01-01T00:00:00): 7 of 43 tokens shared; 8 read from the cache
            broken by edit d3df78c58716e06f572f82c5788b1351a9a59ae23bc3c9f0e947ca8ad14fbd6e
        note: tool definitions are not kept in the store: a change to them is not seen
    ");
    let json = crate::common::json(&p.ok(&["cache", "--json"]));
    let edit = crate::common::json(&p.ok(&["log", "--json", "-n", "3"]));
    assert_eq!(json["break_count"], 1);
    assert_eq!(json["requests"][2]["break"]["cause"], "edit");
    assert_eq!(
        json["requests"][2]["break"]["commit_hash"], edit[2]["commit_hash"],
        "the edit's full id"
    );
    assert_eq!(json["requests"][1]["break"], serde_json::Value::Null);
    assert_eq!(json["requests"][0]["cache_read_input_tokens"], 0);
    assert_eq!(json["requests"][1]["cache_read_input_tokens"], 30);
}

#[test]
fn cache_of_nothing_and_bad_input() {
    let p = Project::new();
    assert_snapshot!(p.ok(&["cache"]), @"
        main: 0 requests, 0 breaks of the cached prefix
          cache read (reported): 0 tokens; shared with the request before (as tract renders them): 0 tokens
        note: tool definitions are not kept in the store: a change to them is not seen
    ");
    p.ok(&["add", "hello"]);
    let before = p.state();
    assert_snapshot!(p.fails(&["--branch", "mian", "cache"]), @"
        exit: 3
        --- stderr
        error: branch 'mian' not found; did you mean 'main'?
        hint: `tract branch` lists branches
    ");
    assert_snapshot!(p.run(&["cache", "--format", "gemini"]), @"
        exit: 2
        --- stderr
        error: invalid value 'gemini' for '--format <FORMAT>'
          [possible values: anthropic, openai, responses]
        
        For more information, try '--help'.
    ");
    assert_snapshot!(p.run(&["cache", "--ttl", "-5"]), @"
        exit: 2
        --- stderr
        error: unexpected argument '-5' found
        
        Usage: tract cache [OPTIONS]
        
        For more information, try '--help'.
    ");
    assert!(p.state() == before, "a report changes nothing");
}

/// `compile --cache-breakpoints`: Anthropic's `cache_control` at the end of the system prompt
/// and of the newest message; only with `--format anthropic`.
#[test]
fn compile_places_cache_breakpoints() {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "You are terse."]);
    p.ok(&["add", "Where is the config?"]);
    p.ok(&["add", "--role", "assistant", "In ./etc."]);
    assert_snapshot!(p.ok(&["compile", "--format", "anthropic", "--cache-breakpoints"]), @r#"
        {
          "system": [
            {
              "type": "text",
              "text": "You are terse.",
              "cache_control": {
                "type": "ephemeral"
              }
            }
          ],
          "messages": [
            {
              "role": "user",
              "content": [
                {
                  "type": "text",
                  "text": "Where is the config?"
                }
              ]
            },
            {
              "role": "assistant",
              "content": [
                {
                  "type": "text",
                  "text": "In ./etc.",
                  "cache_control": {
                    "type": "ephemeral"
                  }
                }
              ]
            }
          ]
        }
    "#);
    let before = p.state();
    assert_snapshot!(p.fails(&["compile", "--cache-breakpoints"]), @"
        exit: 4
        --- stderr
        error: invalid input: --cache-breakpoints places Anthropic's cache_control: use it with --format anthropic
    ");
    assert!(p.state() == before);
}
