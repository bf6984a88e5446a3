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

/// The call ids of every rendering of `c`, in order, and the ids its results answer, in
/// order: (OpenAI, Anthropic, Responses), each as (calls, results).
type Ids = (Vec<String>, Vec<String>);

fn ids_sent(c: &Compiled) -> [Ids; 3] {
    let strs = |v: &serde_json::Value, key: &str| v[key].as_str().unwrap().to_string();
    let openai = c.to_openai().unwrap();
    let mut o: Ids = Default::default();
    for m in openai.as_array().unwrap() {
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            o.0.push(strs(call, "id"));
        }
        if m["role"] == "tool" {
            o.1.push(strs(m, "tool_call_id"));
        }
    }
    let anthropic = c.to_anthropic().unwrap();
    let mut a: Ids = Default::default();
    for m in anthropic["messages"].as_array().unwrap() {
        for b in m["content"].as_array().unwrap() {
            match b["type"].as_str() {
                Some("tool_use") => a.0.push(strs(b, "id")),
                Some("tool_result") => a.1.push(strs(b, "tool_use_id")),
                _ => {}
            }
        }
    }
    let items = c.to_responses(None).unwrap();
    let mut r: Ids = Default::default();
    for i in items.as_array().unwrap() {
        match i["type"].as_str() {
            Some("function_call") => r.0.push(strs(i, "call_id")),
            Some("function_call_output") => r.1.push(strs(i, "call_id")),
            _ => {}
        }
    }
    [o, a, r]
}

#[test]
fn a_reused_call_id_is_sent_once_per_request_and_answered_by_its_own_result() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    // Two writers that both chose `c1`, then a model that numbers its calls per turn: a call
    // whose result never came, then `call_0` twice more.
    t.user("where is DATABASE_URL read?").unwrap();
    t.assistant("", vec![call("c1", "grep")]).unwrap();
    t.tool_result("c1", "grep", "config.py:42", false).unwrap();
    t.assistant("", vec![call("c1", "grep")]).unwrap();
    t.tool_result("c1", "grep", "settings.py:7", false).unwrap();
    t.assistant("", vec![call("call_0", "ls")]).unwrap();
    t.assistant("", vec![call("call_0", "cat")]).unwrap();
    t.tool_result("call_0", "cat", "file text", false).unwrap();
    t.assistant("", vec![call("call_0", "ls")]).unwrap();
    t.tool_result("call_0", "ls", "a b", false).unwrap();
    let c = t.compile().unwrap();
    let renderings = ids_sent(&c);
    for (calls, results) in &renderings {
        let unique: std::collections::HashSet<&String> = calls.iter().collect();
        assert_eq!(unique.len(), calls.len(), "every id once: {calls:?}");
        assert_eq!(calls, results, "each call answered, in call order");
    }
    assert_eq!(renderings[0], renderings[1], "the same ids for Anthropic");
    assert_eq!(renderings[0], renderings[2], "the same ids for Responses");
    let calls = &renderings[0].0;
    // The first call with an id keeps it; later ones get a new id from their position.
    assert_eq!(calls[0], "c1");
    assert!(
        calls[1].starts_with("c1_") && calls[1].len() == 3 + 8,
        "{calls:?}"
    );
    assert_eq!(calls[2], "call_0");
    assert!(calls[3].starts_with("call_0_") && calls[4].starts_with("call_0_"));
    assert_ne!(calls[3], calls[4]);
    // Each result is sent after the call it answers, with its own text: the second grep's
    // result answers the second grep.
    let openai = c.to_openai().unwrap();
    let msgs = openai.as_array().unwrap();
    let answer = |id: &str| {
        msgs.iter()
            .position(|m| m["tool_call_id"] == id)
            .map(|i| (i, msgs[i]["content"].clone()))
            .unwrap()
    };
    assert_eq!(answer(&calls[1]).1, "settings.py:7");
    assert_eq!(answer(&calls[0]).1, "config.py:42");
    // The call whose result never came gets the synthetic result under its own id.
    assert_eq!(answer(&calls[2]).1, tract_core::view::SYNTHETIC_RESULT);
    assert_eq!(answer(&calls[3]).1, "file text");
    // Compiling again gives the same bytes, and so does a handle that reads the view anew
    // from the branch's checkpoint; the warnings and the status name the reuses.
    assert_eq!(
        t.compile().unwrap().to_anthropic().unwrap(),
        c.to_anthropic().unwrap()
    );
    t.checkpoint_views().unwrap();
    let fresh = open_bound(&path, Bind::Branch(branch("main")));
    assert_eq!(
        fresh.compile().unwrap().to_anthropic().unwrap(),
        c.to_anthropic().unwrap()
    );
    assert_eq!(c.reused_call_ids().len(), 3, "{:?}", c.reused_call_ids());
    assert!(
        c.warnings()
            .iter()
            .any(|w| w.contains("tool call id c1") && w.contains(&calls[1])),
        "{:?}",
        c.warnings()
    );
    assert_eq!(t.status().unwrap().reused_call_ids, 3);
    // fsck names the branch, and nothing is a problem.
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.reused_call_ids, vec![("main".to_string(), 3)]);
}

#[test]
fn kept_renderings_follow_ids_that_stop_or_start_being_reused() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let mut kept = Kept::new();
    t.user("go").unwrap();
    let first = t.assistant("", vec![call("c1", "grep")]).unwrap();
    let result = t.tool_result("c1", "grep", "one", false).unwrap();
    t.assistant("", vec![call("c1", "grep")]).unwrap();
    kept.check(&t.compile().unwrap(), "the second c1, waiting");
    t.tool_result("c1", "grep", "two", false).unwrap();
    kept.check(&t.compile().unwrap(), "the second c1, answered");
    // Compressing the first turn away: the second call keeps its own id again.
    let summary = tract_core::Manual("grep found one".into());
    t.compress(&CompressRequest {
        commits: Some(vec![Rev::from(first.id), Rev::from(result.id)]),
        summarizer: Some(&summary),
        ..CompressRequest::default()
    })
    .unwrap();
    let c = t.compile().unwrap();
    kept.check(&c, "the first c1 compressed");
    assert_eq!(ids_sent(&c)[0].0, vec!["c1".to_string()]);
    assert!(c.reused_call_ids().is_empty());
}
