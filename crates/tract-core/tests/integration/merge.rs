//! Merges: a sub-agent's branch brought back as a tool result or appended, nested merges folded
//! the same cold and warm, and the merges refused.

use crate::support::{
    assert_listing_matches_views, branch, call, delegated, open_bound, temp_store, texts,
};
use tract_core::{Bind, Content, Error, MergeRequest, MergeStrategy, Rev, SearchQuery, Tract};

#[test]
fn a_tool_result_merge_answers_the_call_with_the_sub_agents_answer() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let sub = delegated(&t);
    let before = t.head().unwrap().commit.unwrap();
    let req = MergeRequest {
        strategy: MergeStrategy::ToolResult {
            call_id: "task_1".into(),
        },
        ..MergeRequest::default()
    };
    let m = t.merge(&branch("sub"), &req).unwrap();
    let sub_tip = sub.head().unwrap().commit.unwrap();
    assert_eq!(
        m.commit.parents,
        [before, sub_tip],
        "two parents, ours first"
    );
    assert_eq!(m.op(), "merge");
    let (name, tip, _) = m.merged().unwrap();
    assert_eq!((name, tip), ("sub", sub_tip));
    assert_eq!(
        texts(&t),
        [
            "you are the main agent",
            "fix the failing test",
            "delegating",
            "The expiry check in auth.py:12 is off by one."
        ]
    );
    let c = t.compile().unwrap();
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    assert_eq!(c.to_openai().unwrap()[3]["tool_call_id"], "task_1");
    let anth = c.to_anthropic().unwrap();
    assert_eq!(anth["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(anth["messages"][2]["content"][0]["tool_use_id"], "task_1");
    // The turn is whole; the sub-agent's work is in the history, found through the merge.
    let turns = t.find_tool_turns(Some("task")).unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].results.len(), 1);
    let q = SearchQuery {
        query: "token expiry".into(),
        history: true,
        ..SearchQuery::default()
    };
    assert_eq!(t.search(&q).unwrap().len(), 1);
    let in_view = SearchQuery {
        history: false,
        ..q
    };
    assert!(t.search(&in_view).unwrap().is_empty());
    // `log` follows first parents; the graph walks both.
    let log: Vec<_> = t
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(log.len(), 4);
    let graph = t
        .log(&tract_core::LogQuery {
            graph: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(graph.len(), 8, "4 on main + 4 on the sub-agent's branch");
    assert_eq!(graph[0].id, m.id);
    // A cold open folds the same view; the listing counts it.
    drop(t);
    let cold = open_bound(&path, Bind::Branch(branch("main")));
    assert_eq!(texts(&cold).len(), 4);
    assert_eq!(cold.status().unwrap().unanswered_calls, 0);
    assert_listing_matches_views(&path, &cold, "after a tool result merge");
}

#[test]
fn a_summarized_merge_records_its_summarizer() {
    let t = Tract::in_memory().unwrap();
    delegated(&t);
    let req = MergeRequest {
        strategy: MergeStrategy::ToolResult {
            call_id: "task_1".into(),
        },
        summarize: true,
        ..MergeRequest::default()
    };
    let m = t.merge(&branch("sub"), &req).unwrap();
    assert_eq!(m.summarizer(), Some("extractive"));
    let text = m.message.as_ref().unwrap().content.text().into_owned();
    assert!(text.contains("auth.py:12"), "{text}");
    assert_eq!(t.status().unwrap().unanswered_calls, 0);
}

#[test]
fn an_append_merge_continues_the_view_with_the_branch_messages() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.system("sys").unwrap();
    t.user("plan").unwrap();
    let side = t.fork(&branch("side"), &tract_core::Rev::head()).unwrap();
    side.assistant("", vec![call("c1", "read_file")]).unwrap();
    side.tool_result("c1", "read_file", "contents", false)
        .unwrap();
    let answer = side.assistant("side answer", vec![]).unwrap();
    t.user("main goes on").unwrap();
    let m = t.merge(&branch("side"), &MergeRequest::default()).unwrap();
    assert!(m.message.is_none(), "an append merge carries no message");
    assert_eq!(
        texts(&t),
        ["sys", "plan", "main goes on", "", "contents", "side answer"]
    );
    // The merged messages are the branch's own commits: edits and queries reach them.
    t.edit(answer.id, Content::Text("side answer, edited".into()))
        .unwrap();
    assert_eq!(texts(&t)[5], "side answer, edited");
    assert_eq!(
        t.find_tool_results(&tract_core::ResultQuery::default())
            .unwrap()
            .len(),
        1
    );
    t.user("after the merge").unwrap();
    let warm = texts(&t);
    drop(t);
    let cold = open_bound(&path, Bind::Branch(branch("main")));
    assert_eq!(
        texts(&cold),
        warm,
        "a cold fold equals the incremental view"
    );
    assert_listing_matches_views(&path, &cold, "after an append merge");
    // The side branch is untouched and can go on and be merged again: only what is new comes.
    side.user("more on the side").unwrap();
    cold.merge(&branch("side"), &MergeRequest::default())
        .unwrap();
    assert_eq!(texts(&cold).last().unwrap(), "more on the side");
    assert_eq!(texts(&cold).len(), warm.len() + 1);
}

#[test]
fn nested_merges_edits_and_compressions_fold_the_same_cold_and_warm() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.system("sys").unwrap();
    t.user("start").unwrap();
    // A sub-agent that spawns a sub-sub-agent and appends its findings before answering.
    let sub = t.fork(&branch("sub"), &tract_core::Rev::head()).unwrap();
    sub.user("sub task").unwrap();
    let subsub = sub
        .fork(&branch("subsub"), &tract_core::Rev::head())
        .unwrap();
    subsub.assistant("", vec![call("x1", "grep")]).unwrap();
    subsub
        .tool_result("x1", "grep", "deep finding", false)
        .unwrap();
    sub.user("while the sub-sub-agent works").unwrap();
    sub.merge(&branch("subsub"), &MergeRequest::default())
        .unwrap();
    sub.assistant("sub answer", vec![]).unwrap();
    t.user("main meanwhile").unwrap();
    t.merge(&branch("sub"), &MergeRequest::default()).unwrap();
    assert_eq!(
        texts(&t),
        [
            "sys",
            "start",
            "main meanwhile",
            "sub task",
            "while the sub-sub-agent works",
            "",
            "deep finding",
            "sub answer"
        ]
    );
    // Edit a message that came through two merges, then compress across the merged ones.
    let found = t
        .find_tool_results(&tract_core::ResultQuery {
            name: Some("grep".into()),
            ..Default::default()
        })
        .unwrap();
    t.edit(found[0].id, Content::Text("deep finding, edited".into()))
        .unwrap();
    let ids: Vec<Rev> = t
        .find_tool_turns(Some("grep"))
        .unwrap()
        .iter()
        .flat_map(|turn| turn.all_hashes())
        .map(Rev::from)
        .collect();
    let req = tract_core::CompressRequest {
        commits: Some(ids),
        summarizer: Some(&tract_core::Manual("the grep found it".into())),
        ..tract_core::CompressRequest::default()
    };
    t.compress(&req).unwrap();
    let warm = texts(&t);
    assert!(warm.contains(&"the grep found it".to_string()), "{warm:?}");
    drop(t);
    let cold = open_bound(&path, Bind::Branch(branch("main")));
    assert_eq!(texts(&cold), warm);
    assert_listing_matches_views(&path, &cold, "nested merges");
    assert_eq!(
        cold.log(&tract_core::LogQuery {
            graph: true,
            ..Default::default()
        })
        .unwrap()
        .len(),
        12,
        "6 + 4 + 2 commits"
    );
}

#[test]
fn bad_merges_are_refused_and_commit_nothing() {
    let t = Tract::in_memory().unwrap();
    let sub = delegated(&t);
    let store = t.store().clone();
    let heads = |t: &Tract| {
        let mut b: Vec<_> = t
            .branches()
            .unwrap()
            .into_iter()
            .map(|b| (b.name, b.head))
            .collect();
        b.sort();
        b
    };
    let before = heads(&t);
    let tool = |id: &str| MergeRequest {
        strategy: MergeStrategy::ToolResult { call_id: id.into() },
        ..MergeRequest::default()
    };
    // Into itself.
    let e = sub
        .merge(&branch("sub"), &MergeRequest::default())
        .unwrap_err();
    assert!(e.to_string().contains("into itself"), "{e}");
    // A call that is not pending: unknown, or answered already.
    match t.merge(&branch("sub"), &tool("nope")) {
        Err(Error::CallNotPending { call_id, pending }) => {
            assert_eq!(
                (call_id.as_str(), pending),
                ("nope", vec!["task_1".to_string()])
            );
        }
        other => panic!("{other:?}"),
    }
    // A branch that does not exist, or shares no history.
    assert!(matches!(
        t.merge(&branch("ghost"), &MergeRequest::default()),
        Err(Error::UnknownBranch { .. })
    ));
    let stranger = Tract::from_store(store.clone(), &Bind::Branch(branch("stranger"))).unwrap();
    stranger.user("unrelated").unwrap();
    let before = {
        let mut b = before;
        b.push(("stranger".into(), stranger.head().unwrap().commit.unwrap()));
        b.sort();
        b
    };
    assert!(matches!(
        t.merge(&branch("stranger"), &MergeRequest::default()),
        Err(Error::NoMergeBase { .. })
    ));
    // Summarize with the append strategy; a branch with no answer; nothing new to merge.
    let append_summary = MergeRequest {
        summarize: true,
        ..MergeRequest::default()
    };
    assert!(matches!(
        t.merge(&branch("sub"), &append_summary),
        Err(Error::InvalidInput { .. })
    ));
    let quiet = t.fork(&branch("quiet"), &tract_core::Rev::head()).unwrap();
    quiet.user("no answer here").unwrap();
    let e = t.merge(&branch("quiet"), &tool("task_1")).unwrap_err();
    assert!(e.to_string().contains("no assistant answer"), "{e}");
    let behind = t.fork(&branch("behind"), &tract_core::Rev::head()).unwrap();
    let e = t
        .merge(&branch("behind"), &MergeRequest::default())
        .unwrap_err();
    assert!(
        e.to_string().contains("already in this branch's history"),
        "{e}"
    );
    drop(behind);
    let mut after = heads(&t);
    after.retain(|(n, _)| n != "quiet" && n != "behind");
    assert_eq!(after, before, "no refused merge moved a branch");
    // The call is still pending and can be merged for real; then it is not pending any more.
    t.merge(&branch("sub"), &tool("task_1")).unwrap();
    assert!(matches!(
        t.merge(&branch("sub"), &tool("task_1")),
        Err(Error::InvalidOperation { .. })
    ));
}

#[test]
fn a_merge_is_committed_only_if_the_branch_did_not_move() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    delegated(&t);
    // Another handle answers the call while the merge is summarizing.
    let other = open_bound(&path, Bind::Branch(branch("main")));
    let racing = tract_core::FnSummarizer::new("racing", move |_req| {
        other.tool_result("task_1", "task", "answered meanwhile", false)?;
        Ok("summary".to_string())
    });
    let req = MergeRequest {
        strategy: MergeStrategy::ToolResult {
            call_id: "task_1".into(),
        },
        summarize: true,
        summarizer: Some(&racing),
        ..MergeRequest::default()
    };
    let head_then = t.head().unwrap().commit;
    assert!(matches!(
        t.merge(&branch("sub"), &req),
        Err(Error::HeadMoved { expected, .. }) if expected == head_then
    ));
    assert_eq!(texts(&t).last().unwrap(), "answered meanwhile");
    assert!(
        t.log(&tract_core::LogQuery::default())
            .unwrap()
            .iter()
            .all(|i| i.op() != "merge")
    );
}
