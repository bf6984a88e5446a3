//! Importing transcripts: each format told apart and read, a grown transcript adding only its
//! new part, a request rendered back exactly, and bad input named by file and line.

use crate::support::{branch, fixture, open_bound, temp_store, texts};
use serde_json::json;
use tract_core::{Bind, Error, SearchQuery, Tract};

#[test]
fn a_grown_transcript_adds_only_its_new_part_and_another_branch_is_refused() {
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("imported")));
    let body = |n: usize| {
        let mut messages = vec![json!({"role": "system", "content": "be brief"})];
        for k in 0..n {
            messages.push(json!({"role": "user", "content": format!("q{k}")}));
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("call_{k}"), "type": "function", "function": {"name": "grep", "arguments": "{}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": format!("call_{k}"), "content": format!("r{k}")}));
        }
        json!({"model": "gpt-test", "messages": messages}).to_string()
    };
    let file = dir.path().join("request.json");
    std::fs::write(&file, body(1)).unwrap();
    let first = t.import_file(&file, None).unwrap();
    assert_eq!(
        first.format,
        Some(tract_core::formats::transcript::Format::OpenAi)
    );
    assert_eq!(first.added, 4);
    // Tool results take their call's tool name.
    assert_eq!(
        t.find_tool_results(&tract_core::ResultQuery {
            name: Some("grep".into()),
            ..Default::default()
        })
        .unwrap()
        .len(),
        1
    );
    std::fs::write(&file, body(3)).unwrap();
    let grown = t.import_file(&file, None).unwrap();
    assert_eq!((grown.added, grown.already), (6, 4));
    assert_eq!(t.compile().unwrap().messages().unwrap().len(), 10);
    // A branch holding other messages at that place is refused, and keeps what it had.
    let other = open_bound(&path, Bind::Branch(branch("other")));
    other.user("something else").unwrap();
    let refused = other.import_file(&file, None);
    assert!(
        matches!(&refused, Err(Error::InvalidOperation { message }) if message.contains("line 1")),
        "{refused:?}"
    );
    assert_eq!(texts(&other), ["something else"]);
}

#[test]
fn an_anthropic_request_renders_back_exactly_after_import() {
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("a")));
    let body = json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What is in this image?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Look closer.", "signature": "EqQBsig"},
                {"type": "redacted_thinking", "data": "EmwKAhgB"},
                {"type": "text", "text": "Let me zoom."},
                {"type": "tool_use", "id": "toolu_1", "name": "zoom", "input": {"factor": 2}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a cat"}]},
                {"type": "text", "text": "and?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]}
        ]
    });
    let file = dir.path().join("body.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let report = t.import_file(&file, None).unwrap();
    assert_eq!(
        report.format,
        Some(tract_core::formats::transcript::Format::Anthropic)
    );
    let rendered = t.compile().unwrap().to_anthropic().unwrap();
    assert_eq!(rendered["system"], body["system"]);
    assert_eq!(rendered["messages"], body["messages"]);
}

#[test]
fn a_bad_transcript_line_names_its_file_and_line_and_nothing_is_committed() {
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("bad")));
    let cases: &[(&str, &str)] = &[
        (
            "{\"role\": \"user\", \"content\": \"ok\"}\n{\"role\": \"user\", \"content\": \"ok\"\n",
            "line 2: malformed JSON",
        ),
        (
            "{\"role\": \"user\", \"content\": \"ok\"}\n{\"role\": \"robot\", \"content\": \"x\"}\n",
            "line 2: unknown role 'robot'",
        ),
        ("", "line 1: the file is empty"),
        ("[1, 2]", "cannot tell the format"),
    ];
    for (text, wanted) in cases {
        let file = dir.path().join("t.jsonl");
        std::fs::write(&file, text).unwrap();
        let err = t.import_file(&file, None).unwrap_err();
        let shown = err.to_string();
        assert!(matches!(err, Error::InvalidTranscript { .. }), "{shown}");
        assert!(shown.contains("t.jsonl: "), "{shown}");
        assert!(shown.contains(wanted), "{wanted}: {shown}");
    }
    // A Claude Code file whose chain names a parent that is not there: Claude Code shows the
    // conversation from the line after the gap (here the compacted one goes on past it, as
    // the Claude Agent SDK's reader shows it), and so does the import.
    let broken: String = std::fs::read_to_string(fixture("claude-code-session.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.contains("\"uuid\": \"u3\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let file = dir.path().join("broken.jsonl");
    std::fs::write(&file, broken).unwrap();
    t.import_file(&file, None).unwrap();
    assert_eq!(
        texts(&t),
        [
            "This session is being continued from a previous conversation. Summary: DATABASE_URL is read in config.py:42; one test fails.",
            "Fix the failing test.",
            "Fixed: the test expected the old URL."
        ]
    );
    // A file with no conversation line at all is refused, and nothing changes.
    let head = t.head().unwrap().commit;
    let file = dir.path().join("snapshots.jsonl");
    std::fs::write(
        &file,
        "{\"type\": \"file-history-snapshot\", \"messageId\": \"u1\", \"sessionId\": \"s\"}\n",
    )
    .unwrap();
    let err = t.import_file(&file, None).unwrap_err().to_string();
    assert!(err.contains("no Claude Code transcript line"), "{err}");
    assert_eq!(t.head().unwrap().commit, head);
    let missing = t.import_file(dir.path().join("nope.jsonl"), None);
    assert!(matches!(missing, Err(Error::Io { .. })), "{missing:?}");
}

#[test]
fn each_format_is_told_apart_and_read() {
    use tract_core::formats::transcript::{Format, Transcript, parse};
    let steps = |t: Transcript| match t {
        Transcript::Steps { format, steps, .. } => (format, steps.len()),
        Transcript::Commits(c) => panic!("commits: {}", c.len()),
    };
    let responses = json!({"instructions": "be brief", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"}]});
    assert_eq!(
        steps(parse(&responses.to_string(), None).unwrap()),
        (Format::OpenAiResponses, 4)
    );
    let items = "{\"type\": \"function_call\", \"call_id\": \"c1\", \"name\": \"f\", \"arguments\": \"{}\"}\n\
                 {\"type\": \"function_call_output\", \"call_id\": \"c1\", \"output\": \"ok\"}\n";
    assert_eq!(
        steps(parse(items, None).unwrap()),
        (Format::OpenAiResponses, 2)
    );
    let chat = json!([{"role": "developer", "content": "x"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "r"}]);
    let (f, n) = steps(parse(&chat.to_string(), None).unwrap());
    assert_eq!((f, n), (Format::OpenAi, 3));
    let neutral =
        "{\"role\": \"user\", \"content\": \"a\"}\n{\"role\": \"assistant\", \"content\": \"b\"}\n";
    assert_eq!(steps(parse(neutral, None).unwrap()), (Format::Jsonl, 2));
    // tract's own export: a tool result holding Claude's blocks is tract's, not Anthropic's.
    let exported = "{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"t\", \"name\": \"Read\", \"arguments\": \"{}\"}]}\n\
                    {\"role\": \"tool\", \"content\": [{\"type\": \"text\", \"text\": \"x\"}, {\"type\": \"image\", \"source\": {\"type\": \"base64\", \"media_type\": \"image/png\", \"data\": \"iVBORw0KGgo=\"}}], \"name\": \"Read\", \"tool_call_id\": \"t\"}\n";
    assert_eq!(steps(parse(exported, None).unwrap()), (Format::Jsonl, 2));
    let anthropic = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]});
    assert_eq!(
        steps(parse(&anthropic.to_string(), None).unwrap()),
        (Format::Anthropic, 1)
    );
    // A format named is used as named; a value it cannot read names the line.
    let err = parse(&chat.to_string(), Some(Format::Anthropic))
        .map(|_| ())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("line 1: unknown message role 'developer'"),
        "{err}"
    );
    assert!(matches!(Format::parse("auto"), Ok(None)));
}

/// Found by fuzzing (transcript_parse, from its seeds): a text block with more than its text
/// (Anthropic's `cache_control`) was read back from the neutral form as plain text, dropping
/// the rest, so the message (and its id) changed on the way. It is kept verbatim; its text is
/// still searched, and OpenAI is sent the text alone.
#[test]
fn a_text_block_with_cache_control_is_kept_whole_and_still_read_as_text() {
    let t = Tract::in_memory().unwrap();
    let block = json!({"type": "text", "text": "the long system prompt", "cache_control": {"type": "ephemeral"}});
    let m =
        tract_core::json::message_from_json(&json!({"role": "user", "content": [block]})).unwrap();
    let back = tract_core::json::message_from_json(&tract_core::json::message_to_json(&m)).unwrap();
    assert_eq!(back, m);
    t.append(m).unwrap();
    let c = t.compile().unwrap();
    assert_eq!(
        c.to_anthropic().unwrap()["messages"][0]["content"][0],
        block
    );
    assert_eq!(
        c.to_openai().unwrap()[0]["content"][0],
        json!({"type": "text", "text": "the long system prompt"})
    );
    let hits = t
        .search(&SearchQuery {
            query: "long system".into(),
            ..SearchQuery::default()
        })
        .unwrap();
    assert_eq!(hits.len(), 1);
}

/// Found by fuzzing (transcript_parse): a block without a string `type` inside a tool result
/// (or a system prompt's blocks) was kept as a raw part the neutral form then refused; it is
/// refused when read, naming its line, as a message's own blocks are.
#[test]
fn a_content_block_without_a_type_is_refused_anywhere() {
    use tract_core::formats::transcript::{Format, parse};
    let body = json!({"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"Type": "text", "text": "r"}]}]}]});
    let err = parse(&body.to_string(), Some(Format::Anthropic)).unwrap_err();
    assert!(
        err.to_string()
            .contains("line 1: a content part needs a string 'type'"),
        "{err}"
    );
    let system = json!({"system": [{"text": "s"}], "messages": []});
    assert!(parse(&system.to_string(), Some(Format::Anthropic)).is_err());
    // Found next: a text block without its text.
    let textless =
        json!({"messages": [{"role": "user", "content": [{"type": "text", "txet": "q"}]}]});
    let err = parse(&textless.to_string(), Some(Format::Anthropic)).unwrap_err();
    assert!(
        err.to_string()
            .contains("a text part needs a string 'text'"),
        "{err}"
    );
}

/// Found by fuzzing (transcript_parse): a Responses content part without a string `type` was
/// kept raw and then refused by the neutral form; every reader now makes its raw parts as the
/// neutral form reads them, so such a part is refused when read.
#[test]
fn a_responses_part_without_a_type_is_refused_when_read() {
    let items = json!([{"role": "assistant", "type": "message",
        "content": [{"t|pe": "output_text", "text": ":"}]}]);
    let err = tract_core::formats::transcript::parse(
        &items.to_string(),
        Some(tract_core::formats::transcript::Format::OpenAiResponses),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("in 'content': a content part needs a string 'type'"),
        "{err}"
    );
}
