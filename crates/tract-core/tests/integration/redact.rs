//! Redaction, and gc removing what nothing reaches any more.

use crate::support::{assert_listing_matches_views, branch, call, open_bound, temp_store, texts};
use tract_core::{Bind, Error, Rev, SearchQuery, ToolCall, Tract};

#[test]
fn a_redacted_result_is_gone_from_views_search_and_chunks_and_ids_stay_valid() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.system("sys").unwrap();
    t.user("show me the config").unwrap();
    let asked = t
        .assistant(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "cat".into(),
                arguments: r#"{"path":".env"}"#.into(),
            }],
        )
        .unwrap();
    let secret = "AWS_SECRET=AKIA-PLANTED-9f31c";
    let result = t
        .tool_result("c1", "cat", format!("DEBUG=1\n{secret}\n"), false)
        .unwrap();
    // A large output with the secret in it: stored in chunks.
    t.assistant("", vec![call("c2", "bash")]).unwrap();
    let big = format!("{}\n{secret}\n{}", "x".repeat(700_000), "y".repeat(700_000));
    let big_result = t.tool_result("c2", "bash", big, false).unwrap();
    t.assistant("done", vec![]).unwrap();
    let side = t.fork(&branch("side"), &tract_core::Rev::head()).unwrap();
    side.user("on the side").unwrap();
    let before = tract_core::fsck(t.store()).unwrap();
    assert!(before.is_clean() && before.chunks >= 2);
    let ids: Vec<_> = t
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .iter()
        .map(|i| i.id)
        .collect();

    let r = t.redact(result.id, "an AWS key in a tool result").unwrap();
    assert_eq!((r.commit, r.blob), (result.id, result.commit.blob.unwrap()));
    let r2 = side
        .redact(big_result.id, "the same key in a build log")
        .unwrap();
    assert_eq!(r2.chunks_removed.len(), 2, "its chunks went with it");
    // Both handles (and a new one) see placeholders; pairing and requests stay valid.
    for h in [&t, &side, &open_bound(&path, Bind::Branch(branch("main")))] {
        let c = h.compile().unwrap();
        let oai = c.to_openai().unwrap();
        let text = oai.to_string();
        assert!(!text.contains("AKIA"), "{text}");
        assert_eq!(oai[3]["role"], "tool");
        assert_eq!(oai[3]["tool_call_id"], "c1");
        assert_eq!(oai[3]["content"], tract_core::ops::redact::REDACTED_TEXT);
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    }
    for history in [false, true] {
        let q = SearchQuery {
            query: "AKIA".into(),
            history,
            ..SearchQuery::default()
        };
        assert!(t.search(&q).unwrap().is_empty());
    }
    // Every id is still valid; the call's arguments stayed (only the result was named).
    let after: Vec<_> = t
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(after, ids);
    let call_message = t.get_commit(asked.id).unwrap().message.unwrap();
    assert_eq!(call_message.tool_calls[0].arguments, r#"{"path":".env"}"#);
    let shown = t.get_commit(result.id).unwrap();
    assert_eq!(shown.message.unwrap().tool_call_id.as_deref(), Some("c1"));
    // fsck: redacted, not corrupt; counts listed match the views again.
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.redacted.len(), 2);
    assert_listing_matches_views(&path, &t, "after redaction");
    // Bad input changes nothing.
    assert!(matches!(
        t.redact(result.id, "again"),
        Err(Error::InvalidOperation { .. })
    ));
    assert!(matches!(
        t.redact(result.id, "  "),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        t.redact(Rev::parse("ffffffffff").unwrap(), "x"),
        Err(Error::UnknownRevision { .. })
    ));
}

#[test]
fn gc_removes_only_what_nothing_reaches_and_leaves_fsck_clean() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.user("shared").unwrap();
    let doomed = t.fork(&branch("doomed"), &tract_core::Rev::head()).unwrap();
    doomed.user("only on the doomed branch").unwrap();
    doomed
        .user(format!("large {}", "z".repeat(2_000_000)))
        .unwrap();
    let kept = t.fork(&branch("kept"), &tract_core::Rev::head()).unwrap();
    kept.user("on a kept branch").unwrap();
    drop(doomed);
    t.delete_branch(&branch("doomed")).unwrap();
    // Within the grace period the reflog keeps the deleted branch's commits.
    let first = tract_core::gc(t.store(), tract_core::ops::gc::DEFAULT_GRACE).unwrap();
    assert_eq!((first.commits, first.blobs, first.chunks), (0, 0, 0));
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean() && report.unreachable_commits.is_empty());
    // Pruning now: the deleted branch's two commits, blobs and chunks go; the rest stays.
    let pruned = tract_core::gc(t.store(), std::time::Duration::ZERO).unwrap();
    assert_eq!((pruned.commits, pruned.blobs), (2, 2), "{pruned:?}");
    assert!(pruned.chunks >= 2 && pruned.bytes > 0 && pruned.reflog_entries > 0);
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert!(report.unreachable_commits.is_empty() && report.unreachable_chunks.is_empty());
    assert_eq!(texts(&kept), ["shared", "on a kept branch"]);
    assert_eq!(texts(&t), ["shared"]);
    assert_eq!(
        tract_core::gc(t.store(), std::time::Duration::ZERO).unwrap(),
        tract_core::GcOutcome::default()
    );
}

/// A redaction makes a handle's cached view stale: the next write on that handle must not
/// count the removed content into the branch's kept counts (found by the web view's tests: the
/// sessions list and the view disagreed, and fsck reported the counts).
#[test]
fn the_write_after_a_redaction_keeps_counts_that_match_the_view() {
    let (_dir, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.system("be careful").unwrap();
    let run = [t.user("one").unwrap().id, t.user("two").unwrap().id];
    t.compress(&tract_core::CompressRequest {
        commits: Some(run.iter().map(Rev::from).collect()),
        summarizer: Some(&tract_core::Manual("both".into())),
        ..tract_core::CompressRequest::default()
    })
    .unwrap();
    t.assistant("", vec![call("e", "bash")]).unwrap();
    let leaked = t
        .tool_result(
            "e",
            "bash",
            "HOME=/home/dev\nAPI_KEY=sk-live-0123456789abcdef0123456789abcdef\n",
            false,
        )
        .unwrap();
    t.redact(leaked.id, "a leaked key").unwrap();
    t.assistant("", vec![call("t", "task")]).unwrap();
    t.user("and then?").unwrap();
    let fresh = Tract::open(&path).unwrap();
    let listed = t.branches().unwrap()[0].token_count;
    assert_eq!(listed, fresh.compile().unwrap().token_count());
    assert_eq!(listed, t.compile().unwrap().token_count());
    let report = tract_core::fsck(fresh.store()).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn summaries_made_from_redacted_content_are_listed_and_followed() {
    use tract_core::{
        CompressRequest, FnSummarizer, Message, RecordOptions, RedactOptions, ToolPolicy,
    };
    for follow in [false, true] {
        let (_dir, path) = temp_store();
        let t = open_bound(&path, Bind::Branch(branch("main")));
        t.set_tool_policy(&ToolPolicy {
            instructions: Default::default(),
            auto_threshold: Some(50),
            default_instructions: None,
        })
        .unwrap();
        t.user("show me the config").unwrap();
        let asked = t.assistant("", vec![call("c1", "cat")]).unwrap().id;
        let secret = "AWS_SECRET=AKIAEXAMPLE in the config file\n".repeat(40);
        let out = t
            .record_tool_result(
                Message::tool_result("c1", "cat", secret, false),
                &RecordOptions::default(),
            )
            .unwrap();
        // The policy's summary of the secret (a hook's edit) may hold it.
        let hook = out.replacement.expect("summarized by the policy").id;
        let original = out.original.id;
        t.user("unrelated").unwrap();
        // A compression of the turn summarizes that summary.
        let summarizer = FnSummarizer::new("fixed", |_| Ok("the cat turn".to_string()));
        let compressed = t
            .compress(&CompressRequest {
                commits: Some(vec![Rev::from(asked), Rev::from(original)]),
                summarizer: Some(&summarizer),
                ..CompressRequest::default()
            })
            .unwrap();
        let summary = compressed.commits[0].id;
        let r = t
            .redact_with(original, "a key", &RedactOptions { follow })
            .unwrap();
        let report = tract_core::fsck(t.store()).unwrap();
        assert!(report.is_clean(), "{:?}", report.problems);
        if follow {
            assert_eq!(r.followed, [hook, summary]);
            assert!(r.derived.is_empty() && report.derived_from_redacted.is_empty());
            let shown = t.compile().unwrap().to_openai().unwrap().to_string();
            assert!(
                !shown.contains("AKIA") && !shown.contains("the cat turn"),
                "{shown}"
            );
            assert_eq!(report.redacted.len(), 3);
        } else {
            assert!(r.followed.is_empty());
            assert_eq!(r.derived, [hook, summary]);
            assert_eq!(report.derived_from_redacted, [hook, summary]);
            assert_eq!(report.redacted.len(), 1);
        }
    }
}
