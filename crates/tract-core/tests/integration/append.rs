//! Appending messages: what reopening keeps, blobs shared by identical payloads, token counts,
//! batches, compare-and-swap, and the JSON input forms.

use crate::support::temp_store;
use serde_json::{Value, json};
use tract_core::{AppendOptions, Error, Message, Role, Tract};

#[test]
fn messages_survive_reopening_and_compile_the_same() {
    let (_d, path) = temp_store();
    let before = {
        let t = Tract::open(&path).unwrap();
        t.system("be brief").unwrap();
        t.user("hello").unwrap();
        t.assistant("hi", vec![]).unwrap();
        t.compile().unwrap().to_openai().unwrap().to_string()
    };
    let t = Tract::open_existing(&path).unwrap();
    let after = t.compile().unwrap().to_openai().unwrap().to_string();
    assert_eq!(before, after);
    assert_eq!(t.log(&tract_core::LogQuery::default()).unwrap().len(), 3);
}

#[test]
fn identical_payloads_share_one_blob() {
    let t = Tract::in_memory().unwrap();
    let a = t.user("same words").unwrap();
    let b = t.user("same words").unwrap();
    assert_ne!(a.id, b.id);
    assert_eq!(a.commit.blob, b.commit.blob);
}

#[test]
fn token_counts_follow_the_cookbook_framing() {
    let t = Tract::in_memory().unwrap();
    let info = t.user("hello world").unwrap();
    assert_eq!(info.token_count, 2 + 3);
    assert_eq!(t.compile().unwrap().token_count(), 5 + 3);
}

#[test]
fn a_batch_with_one_bad_message_commits_nothing() {
    let t = Tract::in_memory().unwrap();
    t.user("before").unwrap();
    let head = t.head().unwrap();
    let mut bad = Message::text(Role::Tool, "no call id");
    bad.tool_call_id = None;
    let err = t
        .append_batch(vec![Message::text(Role::User, "ok"), bad])
        .unwrap_err();
    assert!(err.to_string().contains("message 2"), "{err}");
    // A long batch: the error still names the right message.
    let mut long: Vec<Message> = (0..400)
        .map(|i| Message::text(Role::User, format!("m{i}")))
        .collect();
    long[299].tool_call_id = Some("not on a user message".into());
    let err = t.append_batch(long).unwrap_err();
    assert!(err.to_string().contains("message 300"), "{err}");
    assert_eq!(t.head().unwrap(), head);
    assert_eq!(t.log(&tract_core::LogQuery::default()).unwrap().len(), 1);
}

#[test]
fn compare_and_swap_append() {
    let t = Tract::in_memory().unwrap();
    let a = t.user("a").unwrap();
    let opts = AppendOptions {
        expected_head: Some(Some(a.id)),
        note: None,
    };
    let b = t
        .append_with(Message::text(Role::User, "b"), &opts)
        .unwrap();
    let err = t
        .append_with(Message::text(Role::User, "c"), &opts)
        .unwrap_err();
    assert!(matches!(err, Error::HeadMoved { .. }), "{err}");
    assert_eq!(t.head().unwrap().commit, Some(b.id));
}

#[test]
fn json_input_forms_and_metadata() {
    let t = Tract::in_memory().unwrap();
    let m = tract_core::json::message_from_json(&json!({
        "role": "assistant", "content": null, "refusal": null,
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "grep", "arguments": "{\"a\": 1}"}}]
    }))
    .unwrap();
    let info = t.append(m).unwrap();
    let meta = info.metadata();
    assert_eq!(meta["tool_calls"][0]["name"], "grep");
    assert_eq!(meta["refusal"], Value::Null);
    assert_eq!(info.content_type(), Some("tool_call"));
    assert_eq!(info.op(), "append");
}

/// `user("")` committed an empty message. Every way a caller writes a user or system message
/// refuses one with no content (or only blank text), and commits nothing; an assistant message
/// that calls tools may be empty, and so may an imported transcript's or a framework's items.
#[test]
fn an_empty_user_or_system_message_is_refused() {
    let t = Tract::in_memory().unwrap();
    let user = t.user("keep me").unwrap();
    let refused = |r: tract_core::Result<_>| match r {
        Err(Error::InvalidMessage { reason, .. }) => reason,
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("accepted"),
    };
    assert_eq!(refused(t.user("")), "a user message cannot be empty");
    assert_eq!(
        refused(t.system(" \n ")),
        "a system message cannot be empty"
    );
    let parts = tract_core::json::message_from_json(&json!({"role": "user", "content": [
        {"type": "text", "text": ""}]}))
    .unwrap();
    assert_eq!(refused(t.append(parts)), "a user message cannot be empty");
    let batch = vec![
        Message::text(Role::User, "fine"),
        Message::text(Role::System, ""),
    ];
    match t.append_batch(batch) {
        Err(e) => assert_eq!(
            e.to_string(),
            "invalid input: message 2: a system message cannot be empty"
        ),
        Ok(_) => panic!("accepted"),
    }
    assert_eq!(
        refused(t.edit(user.id, tract_core::Content::Text(String::new()))),
        "a user message cannot be empty"
    );
    assert_eq!(t.log(&tract_core::LogQuery::default()).unwrap().len(), 1);
    t.assistant("", vec![crate::support::call("c1", "grep")])
        .unwrap();
    // A transcript that holds an empty user message imports as it is.
    let transcript = tract_core::formats::transcript::parse(
        "{\"role\":\"user\",\"content\":\"\"}\n{\"role\":\"user\",\"content\":\"after\"}\n",
        None,
    )
    .unwrap();
    let fresh = Tract::in_memory().unwrap();
    assert_eq!(fresh.import(transcript).unwrap().added, 2);
}

#[test]
fn usage_rides_with_its_answer_through_edits_and_redaction_and_bad_usage_appends_nothing() {
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.user("how big is the repo?").unwrap();
    // Given in OpenAI's names, kept in Anthropic's.
    let given = json!({
        "prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240,
        "prompt_tokens_details": {"cached_tokens": 1024}, "model": "gpt-4.1",
        "request_id": "req_1"
    });
    let mut answer = Message::text(Role::Assistant, "about 3 MB");
    tract_core::Usage::from_json(&given)
        .unwrap()
        .put_on(&mut answer)
        .unwrap();
    let c = t.append(answer).unwrap();
    let read = |id| {
        let info = t.get_commit(id).unwrap();
        tract_core::Usage::of(info.message.as_deref().unwrap()).unwrap()
    };
    let usage = read(c.id).unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_input_tokens,
            usage.output_tokens
        ),
        (176, 1024, 40)
    );
    assert_eq!(usage.model.as_deref(), Some("gpt-4.1"));
    // Usage is not something the model sees.
    assert!(
        !t.compile()
            .unwrap()
            .to_openai()
            .unwrap()
            .to_string()
            .contains("cache")
    );
    // An edit of the answer keeps what it cost; so does its redaction.
    let edit = t
        .edit(c.id, tract_core::Content::Text("about 3.1 MB".into()))
        .unwrap();
    assert_eq!(read(edit.id), Some(usage.clone()));
    t.redact(edit.id, "a test").unwrap();
    assert_eq!(read(edit.id), Some(usage));
    // JSON input takes `usage` too, in Anthropic's names.
    let m = tract_core::json::message_from_json(&json!({
        "role": "assistant", "content": "done",
        "usage": {"input_tokens": 5, "output_tokens": 6, "cache_creation_input_tokens": 700}
    }))
    .unwrap();
    assert_eq!(
        tract_core::Usage::of(&m)
            .unwrap()
            .unwrap()
            .cache_creation_input_tokens,
        700
    );
    // A field of the caller's own named `usage`, under `metadata`, stays theirs.
    let own = tract_core::json::message_from_json(&json!({
        "role": "user", "content": "hi", "metadata": {"usage": "my own"}
    }))
    .unwrap();
    assert_eq!(own.metadata["usage"], "\"my own\"");
    assert!(!own.metadata.contains_key("tract.usage"));
    // Bad usage, or usage on another role, appends nothing.
    let head = t.head().unwrap().commit;
    for bad in [
        json!({"role": "assistant", "content": "x", "usage": {"input_tokens": -3}}),
        json!({"role": "assistant", "content": "x", "usage": {"output_tokens": 2.5}}),
        json!({"role": "user", "content": "x", "usage": {"input_tokens": 1}}),
        json!({"role": "user", "content": "x", "metadata": {"tract.usage": {"input_tokens": 1}}}),
    ] {
        assert!(tract_core::json::message_from_json(&bad).is_err(), "{bad}");
    }
    let mut user = Message::text(Role::User, "sneaky");
    user.metadata
        .insert("tract.usage".into(), r#"{"input_tokens":1}"#.into());
    assert!(matches!(t.append(user), Err(Error::InvalidMessage { .. })));
    assert_eq!(t.head().unwrap().commit, head);
}
