//! Renderings kept across steps: the same JSON as a compile rendered whole, step after step,
//! through appends, tool calls without results, edits, compression, items and another process's
//! redaction.

use crate::support::{branch, call, open_bound, temp_store, tool_session};
use tract_core::{
    AppendOptions, Bind, Compiled, CompressRequest, Content, FnSummarizer, Provider, Rendering, Rev,
};

/// One rendering kept per provider (and a Responses one with a limit), as a caller keeps them.
struct Kept(Vec<Rendering>);

impl Kept {
    fn new() -> Self {
        Kept(
            [
                Provider::OpenAi,
                Provider::Anthropic,
                Provider::Responses { limit: None },
                Provider::Responses { limit: Some(3) },
            ]
            .into_iter()
            .map(Rendering::new)
            .collect(),
        )
    }

    /// Each kept rendering of `c` is the whole rendering's JSON.
    fn check(&mut self, c: &Compiled, step: &str) {
        for r in &mut self.0 {
            let whole = match r.provider() {
                Provider::OpenAi => c.to_openai().unwrap(),
                Provider::Anthropic => c.to_anthropic().unwrap(),
                Provider::Responses { limit } => c.to_responses(limit).unwrap(),
            };
            assert_eq!(
                r.json(c).unwrap(),
                whole.to_string(),
                "{step}: {:?}",
                r.provider()
            );
        }
    }
}

#[test]
fn kept_renderings_match_whole_ones_at_every_step_and_drop_what_left_the_view() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let mut kept = Kept::new();
    kept.check(&t.compile().unwrap(), "empty");
    // Parallel calls, results out of order, an error, a call with no result.
    let session = tool_session(&t);
    for (i, made) in session.iter().enumerate() {
        let c = t.compile_at(&Rev::from(made.id)).unwrap();
        kept.check(&c, &format!("tool session, {i}"));
    }
    // A second system message, an image part, a thinking part (left out of OpenAI's rendering,
    // kept in Anthropic's) and an empty user message between two user messages.
    t.system("second system prompt, with \"quotes\"\nand a newline")
        .unwrap();
    let from = |v: serde_json::Value| tract_core::json::message_from_json(&v).unwrap();
    t.append(from(serde_json::json!({"role": "user", "content": [
        {"type": "text", "text": "look at this"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]})))
    .unwrap();
    t.append(from(serde_json::json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
    ]})))
    .unwrap();
    // An empty user message is refused from a caller; a framework's items keep one.
    t.append_items(
        &[serde_json::json!({"role": "user", "content": ""})],
        &AppendOptions::default(),
    )
    .unwrap();
    t.user("after an empty one").unwrap();
    kept.check(&t.compile().unwrap(), "parts and system messages");
    // Items as the Agents SDK adds them.
    t.append_items(
        &[
            serde_json::json!({"role": "user", "content": "an item"}),
            serde_json::json!({"type": "function_call", "call_id": "i1", "name": "grep", "arguments": "{}"}),
            serde_json::json!({"type": "function_call_output", "call_id": "i1", "output": "found"}),
        ],
        &AppendOptions::default(),
    )
    .unwrap();
    kept.check(&t.compile().unwrap(), "items");
    // An edit of an earlier result, then a compress of the first messages.
    t.edit_tool_result(session[4].id, "g1", "grep", Content::Text("edited".into()))
        .unwrap();
    kept.check(&t.compile().unwrap(), "edit");
    let log = t.log(&tract_core::LogQuery::default()).unwrap();
    let oldest: Vec<Rev> = log.iter().rev().take(2).map(|c| Rev::from(c.id)).collect();
    let summarizer = FnSummarizer::new("fixed", |_req| Ok("the start, summarized".to_string()));
    t.compress(&CompressRequest {
        commits: Some(oldest),
        summarizer: Some(&summarizer),
        ..CompressRequest::default()
    })
    .unwrap();
    let c = t.compile().unwrap();
    kept.check(&c, "compress");
    for r in &kept.0 {
        assert!(
            r.kept() <= c.messages().unwrap().len(),
            "{:?} keeps {} pieces for {} messages",
            r.provider(),
            r.kept(),
            c.messages().unwrap().len()
        );
    }

    // Another process redacts a result: the next rendering has the placeholder, and the
    // redacted text is in no kept piece any more.
    t.assistant("", vec![call("s1", "cat")]).unwrap();
    let secret = "AWS_SECRET=AKIA-PLANTED-31337";
    let leaked = t.tool_result("s1", "cat", secret, false).unwrap();
    kept.check(&t.compile().unwrap(), "the secret in view");
    let other = open_bound(&path, Bind::Branch(branch("main")));
    other.redact(leaked.id, "a key").unwrap();
    let c = t.compile().unwrap();
    kept.check(&c, "redacted by another handle");
    for r in &mut kept.0 {
        assert!(!r.json(&c).unwrap().contains("AKIA"), "{:?}", r.provider());
    }
}

#[test]
fn a_rendering_follows_the_view_it_is_given_back_and_forth() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let mut openai = Rendering::new(Provider::OpenAi);
    let first = t.user("one").unwrap();
    t.user("two").unwrap();
    let head = t.compile().unwrap();
    let older = t.compile_at(&Rev::from(first.id)).unwrap();
    for c in [&head, &older, &head] {
        assert_eq!(openai.json(c).unwrap(), c.to_openai().unwrap().to_string());
        assert_eq!(openai.kept(), c.messages().unwrap().len());
    }
}

#[test]
fn a_compile_reads_its_text_when_it_renders_and_never_shows_what_was_redacted_since() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.user("look at the config").unwrap();
    t.assistant("", vec![call("c1", "cat")]).unwrap();
    let leaked = t
        .tool_result("c1", "cat", "AWS_SECRET=AKIAEXAMPLE", false)
        .unwrap();
    let c = t.compile().unwrap();
    // The compile holds no text: its length, tokens and warnings need none.
    assert_eq!((c.len(), c.message_tokens().len()), (3, 3));
    // Another handle redacts the result before anything is rendered.
    let other = open_bound(&path, Bind::Branch(branch("main")));
    other.redact(leaked.id, "a key").unwrap();
    let rendered = [
        c.to_openai().unwrap().to_string(),
        c.to_anthropic().unwrap().to_string(),
        c.to_responses(None).unwrap().to_string(),
        format!("{:?}", c.messages().unwrap()),
    ];
    for r in &rendered {
        assert!(!r.contains("AKIA"), "{r}");
        assert!(r.contains("redacted"), "{r}");
    }
    // A compile rendered once renders the same again (its text read once).
    assert_eq!(c.to_openai().unwrap().to_string(), rendered[0]);
    assert!(
        c.to_openai()
            .unwrap()
            .to_string()
            .contains("look at the config")
    );
}
