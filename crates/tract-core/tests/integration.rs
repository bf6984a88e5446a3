//! The Rust API end to end, against real store files.

use serde_json::{Value, json};
use std::num::NonZeroU32;
use tract_core::{
    AppendOptions, Bind, BranchName, Content, Error, MergeRequest, MergeStrategy, Message,
    OpenOptions, Rev, Role, SearchQuery, ToolCall, Tract,
};

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: format!(r#"{{"q":"{id}"}}"#),
    }
}

/// Where a test's store lives: a file in a fresh directory, or, when `TRACT_TEST_POSTGRES` holds
/// a server's URL (the test command sets it for its second run of this suite), a fresh schema
/// of that database. The suite runs once per backend.
fn temp_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = match postgres_url() {
        Some(url) => {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}schema=t{}_{n}_{nanos}", std::process::id()).into()
        }
        None => dir.path().join("store.redb"),
    };
    (dir, path)
}

/// A store file in a fresh directory, whichever backend the run is for: for the tests of what
/// happens to the file itself (its bytes changed, cut or copied; its size).
fn file_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    (dir, path)
}

/// The PostgreSQL server this run of the suite uses, if any.
fn postgres_url() -> Option<String> {
    std::env::var("TRACT_TEST_POSTGRES")
        .ok()
        .filter(|u| !u.is_empty())
}

#[test]
fn messages_survive_reopening_and_compile_the_same() {
    let (_d, path) = temp_store();
    let before = {
        let t = Tract::open(&path).unwrap();
        t.system("be brief").unwrap();
        t.user("hello").unwrap();
        t.assistant("hi", vec![]).unwrap();
        t.compile().unwrap().to_openai().to_string()
    };
    let t = Tract::open_existing(&path).unwrap();
    let after = t.compile().unwrap().to_openai().to_string();
    assert_eq!(before, after);
    assert_eq!(t.log(None, None).unwrap().len(), 3);
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
fn edits_keep_tool_identity_and_history() {
    let t = Tract::in_memory().unwrap();
    t.assistant("", vec![call("c1", "grep")]).unwrap();
    let original = t
        .tool_result("c1", "grep", "200 lines of grep", false)
        .unwrap();
    t.user("next").unwrap();
    let e1 = t.edit(original.id, Content::Text("short".into())).unwrap();
    // An edit of an edit resolves to the same position; the newest wins.
    let e2 = t
        .edit(
            Rev::parse(&e1.id.short()).unwrap(),
            Content::Text("shorter".into()),
        )
        .unwrap();
    let compiled = t.compile().unwrap();
    let msgs = compiled.messages();
    assert_eq!(msgs.len(), 3, "edits do not add positions");
    let result = &msgs[1].message;
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.tool_call_id.as_deref(), Some("c1"));
    assert_eq!(result.name.as_deref(), Some("grep"));
    assert_eq!(result.content.text(), "shorter");
    assert_eq!(msgs[1].position, Some(original.id));
    assert_eq!(msgs[1].commit, Some(e2.id));
    // The original is still in history, and the edit names it.
    assert_eq!(
        t.get_commit(original.id)
            .unwrap()
            .message
            .unwrap()
            .content
            .text(),
        "200 lines of grep"
    );
    assert_eq!(e1.edit_target(), Some(original.id));
    assert_eq!(e2.edit_target(), Some(e1.id));
}

#[test]
fn editing_what_is_not_in_view_is_refused_and_changes_nothing() {
    let t = Tract::in_memory().unwrap();
    t.user("a").unwrap();
    let head = t.head().unwrap();
    let err = t
        .edit(
            Rev::parse(&"ab".repeat(32)).unwrap(),
            Content::Text("x".into()),
        )
        .unwrap_err();
    assert!(matches!(err, Error::UnknownRevision { .. }), "{err}");
    assert_eq!(t.head().unwrap(), head);
}

#[test]
fn branches_time_travel_and_reset_with_reflog() {
    let t = Tract::in_memory().unwrap();
    let a = t.user("one").unwrap();
    let b = t.user("two").unwrap();
    // Fork at the first commit and grow there.
    let alt = BranchName::new("alt").unwrap();
    t.create_branch(&alt, Some(&Rev::from(a.id))).unwrap();
    t.switch("alt").unwrap();
    t.user("two, differently").unwrap();
    assert_eq!(t.compile().unwrap().messages().len(), 2);
    assert_eq!(
        t.compile().unwrap().messages()[1].message.content.text(),
        "two, differently"
    );
    t.switch("main").unwrap();
    assert_eq!(t.head().unwrap().commit, Some(b.id));
    // Detached checkout: appends do not move any branch.
    t.checkout(&Rev::from(a.id)).unwrap();
    let c = t.user("detached").unwrap();
    assert_eq!(t.head().unwrap().branch(), None);
    assert_eq!(t.head().unwrap().commit, Some(c.id));
    t.switch("main").unwrap();
    assert_eq!(t.head().unwrap().commit, Some(b.id));
    // Reset, then undo it from the reflog.
    t.reset(&Rev::from(a.id)).unwrap();
    assert_eq!(t.compile().unwrap().messages().len(), 1);
    let log = t.reflog("main", Some(1)).unwrap();
    assert_eq!(log[0].old, Some(b.id));
    t.reset(&Rev::from(b.id)).unwrap();
    assert_eq!(t.compile().unwrap().messages().len(), 2);
    assert!(t.create_branch(&alt, None).is_err(), "no silent overwrite");
    assert!(BranchName::new("bad name").is_err());
    assert!(matches!(t.switch("nope"), Err(Error::UnknownBranch { .. })));
    assert_eq!(t.resolve(&Rev::parse("main~1").unwrap()).unwrap(), a.id);
}

/// Opens `path` bound as `bind` says.
fn open_bound(path: &std::path::Path, bind: Bind) -> Tract {
    let options = OpenOptions {
        bind,
        ..OpenOptions::default()
    };
    Tract::open_with(path, &options).unwrap()
}

fn branch(name: &str) -> BranchName {
    BranchName::new(name).unwrap()
}

fn texts(t: &Tract) -> Vec<String> {
    t.compile()
        .unwrap()
        .messages()
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect()
}

#[test]
fn each_handle_keeps_its_own_position() {
    let (_dir, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.user("root").unwrap();
    t.create_branch(&branch("session-b"), None).unwrap();
    // Another handle (or a terminal) moves to session-b: `t` stays on main.
    let t2 = Tract::open(&path).unwrap();
    t2.switch("session-b").unwrap();
    t.user("for main").unwrap();
    t2.user("for b").unwrap();
    assert_eq!(t.head().unwrap().branch(), Some("main"));
    assert_eq!(texts(&t), ["root", "for main"]);
    assert_eq!(texts(&t2), ["root", "for b"]);
    // Neither handle moved the store's HEAD; a terminal moving it moves neither handle.
    assert_eq!(t.store_head().unwrap().branch(), Some("main"));
    let cli = open_bound(&path, Bind::StoreHead);
    cli.switch("session-b").unwrap();
    assert_eq!(t.store_head().unwrap().branch(), Some("session-b"));
    t.user("still main").unwrap();
    assert_eq!(texts(&t), ["root", "for main", "still main"]);
    assert_eq!(texts(&cli), ["root", "for b"]);
    // A new default handle takes the branch HEAD names now.
    assert_eq!(
        Tract::open(&path).unwrap().head().unwrap().branch(),
        Some("session-b")
    );
    // HEAD's reflog holds the terminal's switch only.
    let moves = t.reflog("HEAD", None).unwrap();
    assert_eq!(moves.len(), 1);
    assert_eq!(moves[0].reason, "switch: to session-b");
}

#[test]
fn a_handle_bound_to_a_new_branch_creates_it_with_its_first_message() {
    let (_dir, path) = temp_store();
    Tract::open(&path).unwrap().user("on main").unwrap();
    let t = open_bound(&path, Bind::Branch(branch("user-42")));
    assert_eq!(t.head().unwrap().branch(), Some("user-42"));
    assert_eq!(t.head().unwrap().commit, None);
    assert!(t.compile().unwrap().messages().is_empty());
    assert!(t.branches().unwrap().iter().all(|b| b.name != "user-42"));
    let first = t.user("hello").unwrap();
    assert!(
        first.commit.parents.is_empty(),
        "a new branch starts a new history"
    );
    let listed = t.branches().unwrap();
    let mine = listed.iter().find(|b| b.name == "user-42").unwrap();
    assert!(mine.current && mine.head == first.id);
    // main did not move, and a second handle on the branch continues it.
    let main = Tract::open(&path).unwrap();
    assert_eq!(texts(&main), ["on main"]);
    let again = open_bound(&path, Bind::Branch(branch("user-42")));
    again.user("again").unwrap();
    assert_eq!(texts(&t), ["hello", "again"]);
}

#[test]
fn a_detached_handle_grows_alone_and_a_command_line_handle_moves_head() {
    let (_dir, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let a = t.user("one").unwrap();
    let b = t.user("two").unwrap();
    t.checkout(&Rev::from(a.id)).unwrap();
    let c = t.user("detached").unwrap();
    assert_eq!(t.head().unwrap().commit, Some(c.id));
    assert_eq!(t.head().unwrap().branch(), None);
    // Nothing in the store moved: main and HEAD are where they were.
    assert_eq!(t.store_head().unwrap().commit, Some(b.id));
    assert!(t.reflog("HEAD", None).unwrap().is_empty());
    // A command line's handle detaches the store's HEAD, and its appends move HEAD.
    let cli = open_bound(&path, Bind::StoreHead);
    cli.checkout(&Rev::from(a.id)).unwrap();
    let d = cli.user("from the terminal").unwrap();
    let head = cli.store_head().unwrap();
    assert_eq!((head.branch(), head.commit), (None, Some(d.id)));
    let reasons: Vec<String> = cli
        .reflog("HEAD", None)
        .unwrap()
        .into_iter()
        .map(|e| e.reason)
        .collect();
    assert_eq!(
        reasons,
        [
            "append",
            format!("checkout: detached at {}", a.id.short()).as_str()
        ]
    );
    // A compare-and-swap on the handle's own branch.
    t.switch("main").unwrap();
    let stale = AppendOptions {
        expected_head: Some(Some(a.id)),
        note: None,
    };
    let err = t
        .append_with(Message::text(Role::User, "late"), &stale)
        .unwrap_err();
    match err {
        Error::HeadMoved {
            branch,
            expected,
            actual,
        } => {
            assert_eq!(
                (branch.as_str(), expected, actual),
                ("main", Some(a.id), Some(b.id))
            );
        }
        other => panic!("{other}"),
    }
}

/// Checks that `branch` is one linear chain holding exactly `expected` (in any order).
fn assert_linear_with(path: &std::path::Path, name: &str, expected: &[String]) {
    let t = open_bound(path, Bind::Branch(branch(name)));
    let log = t.log(None, None).unwrap();
    for pair in log.windows(2) {
        assert_eq!(
            pair[0].commit.parents,
            vec![pair[1].id],
            "{name} is one linear chain"
        );
    }
    let mut got: Vec<String> = log
        .iter()
        .map(|i| i.message.as_ref().unwrap().content.text().into_owned())
        .collect();
    got.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert_eq!(got, want, "{name}: every message exactly once");
}

#[test]
fn many_threads_append_to_many_branches_and_to_one() {
    const THREADS: usize = 64;
    const EACH: usize = 200;
    let (_dir, path) = temp_store();
    // One handle per session, each on its own branch: one process, many sessions.
    std::thread::scope(|s| {
        for k in 0..THREADS {
            let path = &path;
            s.spawn(move || {
                let t = open_bound(path, Bind::Branch(branch(&format!("session-{k}"))));
                for i in 0..EACH {
                    t.user(format!("s{k} m{i}")).unwrap();
                }
            });
        }
    });
    for k in 0..THREADS {
        let want: Vec<String> = (0..EACH).map(|i| format!("s{k} m{i}")).collect();
        assert_linear_with(&path, &format!("session-{k}"), &want);
    }
    // Then all of them on one branch: half with handles of their own, half sharing one.
    let shared = open_bound(&path, Bind::Branch(branch("together")));
    std::thread::scope(|s| {
        for k in 0..THREADS {
            let (path, shared) = (&path, &shared);
            s.spawn(move || {
                let own;
                let t = if k % 2 == 0 {
                    own = open_bound(path, Bind::Branch(branch("together")));
                    &own
                } else {
                    shared
                };
                for i in 0..EACH {
                    t.user(format!("t{k} m{i}")).unwrap();
                }
            });
        }
    });
    let want: Vec<String> = (0..THREADS)
        .flat_map(|k| (0..EACH).map(move |i| format!("t{k} m{i}")))
        .collect();
    assert_linear_with(&path, "together", &want);
    // The shared handle's cached view kept up with every other writer.
    assert_eq!(shared.compile().unwrap().messages().len(), THREADS * EACH);
}

#[test]
fn a_refused_compare_and_swap_fails_alone_in_its_group() {
    let (_dir, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let first = t.user("first").unwrap();
    std::thread::scope(|s| {
        for k in 0..16 {
            let path = &path;
            s.spawn(move || {
                let t = Tract::open(path).unwrap();
                for i in 0..20 {
                    // Every other write expects a head long gone: refused, the rest unharmed.
                    let opts = AppendOptions {
                        expected_head: (i % 2 == 1).then_some(Some(first.id)),
                        note: None,
                    };
                    let r = t.append_with(Message::text(Role::User, format!("{k}.{i}")), &opts);
                    assert_eq!(r.is_ok(), i % 2 == 0, "{k}.{i}: {r:?}");
                }
            });
        }
    });
    let want: Vec<String> = std::iter::once("first".to_string())
        .chain((0..16).flat_map(|k| (0..20).step_by(2).map(move |i| format!("{k}.{i}"))))
        .collect();
    assert_linear_with(&path, "main", &want);
}

#[test]
fn a_fork_is_a_new_branch_and_a_handle_on_it() {
    let t = Tract::in_memory().unwrap();
    t.system("be brief").unwrap();
    let q = t.user("question").unwrap();
    let sub = t.fork(&branch("sub-agent"), None).unwrap();
    assert_eq!(sub.head().unwrap().branch(), Some("sub-agent"));
    assert_eq!(
        sub.head().unwrap().commit,
        Some(q.id),
        "nothing copied: the same commit"
    );
    sub.user("work on the side").unwrap();
    t.user("main goes on").unwrap();
    assert_eq!(texts(&sub), ["be brief", "question", "work on the side"]);
    assert_eq!(texts(&t), ["be brief", "question", "main goes on"]);
    // At an earlier commit, from a fork of a fork; the same store underneath.
    let early = sub
        .fork(&branch("early"), Some(&Rev::from(q.id).ancestor(1)))
        .unwrap();
    assert_eq!(texts(&early), ["be brief"]);
    assert_eq!(t.branches().unwrap().len(), 3);
    // A name in use, or a handle with nothing to fork yet: a clear error, nothing created.
    assert!(matches!(
        t.fork(&branch("sub-agent"), None),
        Err(Error::BranchExists { .. })
    ));
    let empty = t.fork(&branch("x"), Some(&Rev::from(q.id))).unwrap();
    let unborn = Tract::from_store(empty.store().clone(), &Bind::Branch(branch("new"))).unwrap();
    assert!(matches!(
        unborn.fork(&branch("y"), None),
        Err(Error::UnbornBranch { .. })
    ));
    assert!(t.branches().unwrap().iter().all(|b| b.name != "y"));
}

/// A main agent that delegated a task through tool call `task_1` and a sub-agent that worked
/// on it on its own branch.
fn delegated(t: &Tract) -> Tract {
    t.system("you are the main agent").unwrap();
    t.user("fix the failing test").unwrap();
    t.assistant("delegating", vec![call("task_1", "task")])
        .unwrap();
    let sub = t.fork(&branch("sub"), None).unwrap();
    sub.user("find why test_login fails").unwrap();
    sub.assistant("", vec![call("g1", "grep")]).unwrap();
    sub.tool_result("g1", "grep", "auth.py:12: token expiry off by one", false)
        .unwrap();
    sub.assistant("The expiry check in auth.py:12 is off by one.", vec![])
        .unwrap();
    sub
}

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
    assert_eq!(c.to_openai()[3]["tool_call_id"], "task_1");
    let anth = c.to_anthropic();
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
    let log: Vec<_> = t.log(None, None).unwrap().iter().map(|i| i.id).collect();
    assert_eq!(log.len(), 4);
    let graph = t.log_graph(None, None).unwrap();
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
    let side = t.fork(&branch("side"), None).unwrap();
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
    assert_eq!(t.find_tool_results(None, None, None).unwrap().len(), 1);
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
    let sub = t.fork(&branch("sub"), None).unwrap();
    sub.user("sub task").unwrap();
    let subsub = sub.fork(&branch("subsub"), None).unwrap();
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
    let found = t.find_tool_results(Some("grep"), None, None).unwrap();
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
        cold.log_graph(None, None).unwrap().len(),
        12,
        "6 + 4 + 2 commits"
    );
}

#[test]
fn a_compress_goes_on_top_of_appends_made_meanwhile_but_not_of_changed_sources() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let old: Vec<_> = (0..4)
        .map(|i| {
            t.user(format!("old message {i} with some detail to summarize"))
                .unwrap()
        })
        .collect();
    let sources: Vec<Rev> = old.iter().map(|c| Rev::from(c.id)).collect();
    // Another handle (an agent going on) appends while the summary is being written.
    let agent = open_bound(&path, Bind::Branch(branch("main")));
    let appending = tract_core::FnSummarizer::new("appending", move |_req| {
        agent.user("appended meanwhile")?;
        Ok("summary".to_string())
    });
    let req = tract_core::CompressRequest {
        commits: Some(sources.clone()),
        summarizer: Some(&appending),
        ..tract_core::CompressRequest::default()
    };
    let out = t.compress(&req).unwrap();
    assert_eq!(out.commits.len(), 1);
    assert_eq!(texts(&t), ["summary", "appended meanwhile"]);
    // One of the sources edited meanwhile: nothing committed.
    let t2 = open_bound(&path, Bind::Branch(branch("other")));
    let mine: Vec<_> = (0..3)
        .map(|i| t2.user(format!("message {i} of the other branch")).unwrap())
        .collect();
    let target = mine[1].id;
    let editor = open_bound(&path, Bind::Branch(branch("other")));
    let editing = tract_core::FnSummarizer::new("editing", move |_req| {
        editor.edit(target, Content::Text("changed meanwhile".into()))?;
        Ok("summary".to_string())
    });
    let req = tract_core::CompressRequest {
        commits: Some(mine.iter().map(|c| Rev::from(c.id)).collect()),
        summarizer: Some(&editing),
        ..tract_core::CompressRequest::default()
    };
    assert!(matches!(t2.compress(&req), Err(Error::HeadMoved { .. })));
    assert_eq!(texts(&t2)[1], "changed meanwhile");
    assert_eq!(texts(&t2).len(), 3);
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
    let quiet = t.fork(&branch("quiet"), None).unwrap();
    quiet.user("no answer here").unwrap();
    let e = t.merge(&branch("quiet"), &tool("task_1")).unwrap_err();
    assert!(e.to_string().contains("no assistant answer"), "{e}");
    let behind = t.fork(&branch("behind"), None).unwrap();
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
    assert!(t.log(None, None).unwrap().iter().all(|i| i.op() != "merge"));
}

#[test]
fn a_deleted_branch_keeps_its_tip_in_the_reflog_and_stops_its_handles() {
    let (_dir, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.user("root").unwrap();
    let agent = t.fork(&branch("agent"), None).unwrap();
    let tip = agent.user("work").unwrap().id;
    // Not the branch this handle or HEAD is on, not one that does not exist.
    for (who, name) in [(&t, "main"), (&agent, "agent")] {
        assert!(matches!(
            who.delete_branch(&branch(name)),
            Err(Error::InvalidOperation { .. })
        ));
    }
    assert!(matches!(
        t.delete_branch(&branch("nope")),
        Err(Error::UnknownBranch { .. })
    ));
    assert_eq!(t.delete_branch(&branch("agent")).unwrap(), tip);
    assert!(t.branches().unwrap().iter().all(|b| b.name != "agent"));
    let moved = &t.reflog("agent", Some(1)).unwrap()[0];
    assert_eq!((moved.old, moved.new), (Some(tip), None));
    assert_eq!(moved.reason, "branch: deleted");
    // A handle still bound to it neither reads an empty session nor starts a new history.
    assert!(matches!(
        agent.user("more"),
        Err(Error::BranchDeleted { .. })
    ));
    assert!(matches!(agent.compile(), Err(Error::BranchDeleted { .. })));
    assert!(t.branches().unwrap().iter().all(|b| b.name != "agent"));
    // A new session opened under the deleted name starts afresh there.
    let reuse = open_bound(&path, Bind::Branch(branch("agent")));
    assert!(texts(&reuse).is_empty());
    let fresh = reuse.user("new session").unwrap();
    assert!(fresh.commit.parents.is_empty());
    assert_eq!(texts(&reuse), ["new session"]);
    t.delete_branch(&branch("agent")).unwrap();
    // The old handle can leave, and the branch comes back from its reflog's tip.
    agent.switch("main").unwrap();
    t.create_branch(&branch("agent"), Some(&Rev::from(tip)))
        .unwrap();
    let back = open_bound(&path, Bind::Branch(branch("agent")));
    assert_eq!(texts(&back), ["root", "work"]);
}

#[test]
fn a_cleared_branch_is_empty_for_every_handle_and_its_tip_stays_in_the_reflog() {
    let (_dir, path) = temp_store();
    let one = open_bound(&path, Bind::Branch(branch("sessions/a")));
    let two = open_bound(&path, Bind::Branch(branch("sessions/a")));
    assert_eq!(one.clear_branch().unwrap(), None);
    one.user("first").unwrap();
    let tip = one.user("second").unwrap().id;
    assert_eq!(texts(&two), ["first", "second"]);
    assert_eq!(two.clear_branch().unwrap(), Some(tip));
    let moved = &one.reflog("sessions/a", Some(1)).unwrap()[0];
    assert_eq!((moved.old, moved.new), (Some(tip), None));
    // Both handles see a session started over (not a deleted branch) and go on from nothing.
    assert!(texts(&one).is_empty());
    assert!(
        one.branches()
            .unwrap()
            .iter()
            .all(|b| b.name != "sessions/a")
    );
    let again = one.user("again").unwrap();
    assert!(again.commit.parents.is_empty());
    assert_eq!(texts(&two), ["again"]);
    // What was cleared can be brought back from the reflog.
    two.reset(&Rev::from(tip)).unwrap();
    assert_eq!(texts(&one), ["first", "second"]);
    // A detached handle has no branch to clear.
    two.checkout(&Rev::from(tip)).unwrap();
    assert!(matches!(
        two.clear_branch(),
        Err(Error::InvalidOperation { .. })
    ));
}

#[test]
fn pop_takes_the_last_message_off_and_the_reflog_keeps_it() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("sessions/p")));
    assert!(t.pop().unwrap().is_none());
    t.user("one").unwrap();
    let two = t.user("two").unwrap();
    let three = t.user("three").unwrap();
    t.edit(two.id, Content::Text("two, edited".into())).unwrap();
    let tip = t.head().unwrap().commit.unwrap();
    // The last message goes, with what was committed after it (the edit of "two").
    assert_eq!(t.pop().unwrap().unwrap().content.text(), "three");
    assert_eq!(texts(&t), ["one", "two"]);
    assert_eq!(t.head().unwrap().commit, Some(two.id));
    let moved = &t.reflog("sessions/p", Some(1)).unwrap()[0];
    assert_eq!((moved.old, moved.new), (Some(tip), Some(two.id)));
    assert!(moved.reason.starts_with("pop: "));
    assert_eq!(t.get_commit(three.id).unwrap().id, three.id);
    t.pop().unwrap();
    // Popping the first message leaves the branch empty, not deleted.
    assert_eq!(t.pop().unwrap().unwrap().content.text(), "one");
    assert!(texts(&t).is_empty());
    assert!(t.pop().unwrap().is_none());
    t.user("again").unwrap();
    assert_eq!(texts(&t), ["again"]);
    // A summary at the end is not popped: going back before it would restore its sources.
    let ids = vec![
        Rev::from(t.user("a").unwrap().id),
        Rev::from(t.user("b").unwrap().id),
    ];
    let req = tract_core::CompressRequest {
        commits: Some(ids),
        summarizer: Some(&tract_core::Manual("a and b".into())),
        ..tract_core::CompressRequest::default()
    };
    t.compress(&req).unwrap();
    assert!(matches!(t.pop(), Err(Error::InvalidOperation { .. })));
    assert_eq!(texts(&t), ["again", "a and b"]);
}

/// Every branch's listed counts equal what a fresh handle's view of it holds.
fn assert_listing_matches_views(path: &std::path::Path, t: &Tract, step: &str) {
    for b in t.branches().unwrap() {
        let fresh = open_bound(path, Bind::Branch(branch(&b.name)));
        let s = fresh.status().unwrap();
        assert_eq!(
            (b.messages, b.token_count, b.head),
            (s.messages as u64, s.token_count, s.head.commit.unwrap()),
            "{step}: branch {}",
            b.name
        );
        let tip = fresh.get_commit(b.head).unwrap();
        assert_eq!(b.last_activity_us, tip.commit.timestamp_us, "{step}");
    }
}

#[test]
fn branch_counts_are_kept_exactly_as_branches_move() {
    use tract_core::{ClearOptions, CompressRequest, ToolPolicy};
    let (_dir, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let other = Tract::open(&path).unwrap(); // a second writer on main, with its own cache
    t.set_tool_policy(&ToolPolicy {
        instructions: [("grep".to_string(), "file names only".to_string())].into(),
        ..ToolPolicy::default()
    })
    .unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut calls = 0;
    for step in 0..160 {
        let who = if next(3) == 0 { &other } else { &t };
        let label = format!("step {step}");
        match next(11) {
            0 | 1 => {
                who.user(format!("question {step}")).unwrap();
            }
            2 | 3 => {
                calls += 1;
                let id = if next(8) == 0 {
                    "reused".to_string()
                } else {
                    format!("c{calls}")
                };
                let tool = ["grep", "bash"][next(2) as usize];
                who.assistant("", vec![call(&id, tool)]).unwrap();
                if next(4) != 0 {
                    // Through the policy: grep results are summarized as an edit in the chain.
                    let long = format!("{id} output line\n").repeat(1 + next(40) as usize);
                    who.tool_result(id.as_str(), tool, long, false).unwrap();
                }
            }
            4 => {
                who.tool_result("nobody", "grep", "a result for no call", false)
                    .unwrap();
            }
            5 => {
                let batch = vec![
                    Message::text(Role::User, format!("batch {step}")),
                    Message::text(Role::Assistant, "ok"),
                ];
                who.append_batch(batch).unwrap();
            }
            6 => {
                let results = who.find_tool_results(None, None, None).unwrap();
                if let Some(r) = results.get(next(results.len().max(1) as u64) as usize) {
                    who.edit(r.id, Content::Text(format!("edited at {step}")))
                        .unwrap();
                }
            }
            7 => {
                let turns = who.find_tool_turns(None).unwrap();
                if let Some(turn) = turns.first() {
                    let sel = [Rev::from(turn.call.id)];
                    let req = CompressRequest::default();
                    who.compress_tool_calls(Some(&sel), None, true, req)
                        .unwrap();
                }
            }
            8 => {
                let opts = ClearOptions {
                    keep: 1,
                    ..ClearOptions::default()
                };
                who.clear_tool_results(&opts).unwrap();
                who.repair().unwrap();
            }
            9 => {
                // A fork, written on by a handle of its own.
                let name = format!("fork-{step}");
                let f = who.fork(&branch(&name), None).unwrap();
                f.user("on the fork").unwrap();
            }
            _ => {
                // A reset makes the counts stale; the next write or listing counts again.
                if next(2) == 0 {
                    let back = Rev::head().ancestor(1);
                    if who.resolve(&back).is_ok() {
                        who.reset(&back).unwrap();
                    }
                }
            }
        }
        assert_listing_matches_views(&path, &t, &label);
    }
    // Deleting a branch removes its counts with it.
    let forks: Vec<String> = t
        .branches()
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .filter(|n| n.starts_with("fork-"))
        .collect();
    if let Some(name) = forks.first() {
        t.delete_branch(&branch(name)).unwrap();
    }
    assert_listing_matches_views(&path, &t, "after delete");
}

#[test]
fn cached_views_of_many_sessions_stay_within_the_process_budget() {
    let (_dir, path) = temp_store();
    let sessions: Vec<Tract> = (0..24)
        .map(|k| {
            let t = open_bound(&path, Bind::Branch(branch(&format!("s{k}"))));
            let batch = (0..150)
                .map(|i| {
                    Message::text(
                        Role::User,
                        format!("session {k} message {i} {}", "x".repeat(200)),
                    )
                })
                .collect();
            t.append_batch(batch).unwrap();
            t
        })
        .collect();
    // One view is about this big; allow a few of them.
    sessions[0].compile().unwrap();
    let one = sessions[0].cached_view_bytes();
    assert!(one > 0);
    let budget = 4 * one;
    tract_core::set_view_cache_budget(budget);
    for round in 0..3 {
        for (k, t) in sessions.iter().enumerate() {
            let compiled = t.compile().unwrap();
            assert_eq!(
                compiled.messages().len(),
                150 + round,
                "round {round}, session {k}"
            );
            t.user(format!("round {round}")).unwrap();
            // The views these sessions keep fit the budget (other tests of this binary, running
            // beside this one, only make them keep less).
            let kept: usize = sessions.iter().map(Tract::cached_view_bytes).sum();
            assert!(
                kept <= budget + one,
                "round {round}: {kept} bytes kept, budget {budget}"
            );
            assert!(
                t.cached_view_bytes() > 0,
                "the session in use keeps its view"
            );
        }
    }
    tract_core::set_view_cache_budget(tract_core::DEFAULT_VIEW_CACHE_BUDGET);
}

#[test]
fn parallel_results_follow_their_calls_in_call_order() {
    let t = Tract::in_memory().unwrap();
    t.system("sys").unwrap();
    t.user("go").unwrap();
    t.assistant("looking", vec![call("c1", "grep"), call("c2", "read_file")])
        .unwrap();
    // Results recorded out of order, with a user interjection in between.
    t.tool_result("c2", "read_file", "file body", false)
        .unwrap();
    t.tool_result("c1", "grep", "match", false).unwrap();
    t.assistant("done", vec![]).unwrap();
    let c = t.compile().unwrap();
    let anth = c.to_anthropic();
    assert_eq!(anth["system"], "sys");
    let msgs = anth["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4);
    let results = msgs[2]["content"].as_array().unwrap();
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(results.len(), 2, "parallel results share one user message");
    assert_eq!(results[0]["tool_use_id"], "c1");
    assert_eq!(results[1]["tool_use_id"], "c2");
    assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
    assert_eq!(msgs[1]["content"][1]["input"], json!({"q": "c1"}));
    let oai = c.to_openai();
    let roles: Vec<&str> = oai
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool", "assistant"]
    );
    assert_eq!(oai[3]["tool_call_id"], "c1");
    assert_eq!(oai[2]["tool_calls"][0]["type"], "function");
    assert_eq!(
        oai[2]["tool_calls"][0]["function"]["arguments"],
        r#"{"q":"c1"}"#
    );
}

#[test]
fn calls_without_results_get_one_synthetic_error_and_orphans_are_not_sent() {
    let t = Tract::in_memory().unwrap();
    t.user("go").unwrap();
    t.tool_result("ghost", "grep", "nobody asked", false)
        .unwrap();
    t.assistant("", vec![call("c1", "bash")]).unwrap();
    let c = t.compile().unwrap();
    let oai = c.to_openai();
    let arr = oai.as_array().unwrap();
    assert_eq!(
        arr.len(),
        3,
        "orphan result dropped, synthetic result added"
    );
    assert_eq!(arr[2]["role"], "tool");
    assert_eq!(arr[2]["tool_call_id"], "c1");
    assert!(arr[2]["content"].as_str().unwrap().starts_with("[tract]"));
    let anth = c.to_anthropic();
    assert_eq!(anth["messages"][2]["content"][0]["is_error"], true);
    assert_eq!(c.warnings().len(), 2);
    assert_eq!(t.status().unwrap().unanswered_calls, 1);
    // Token total is what is sent: the per-message counts plus reply priming.
    let per: u64 = c.messages().iter().map(|m| u64::from(m.tokens)).sum();
    assert_eq!(c.token_count(), per + 3);
}

/// Provider-native content: Anthropic thinking (with its signature), redacted thinking and
/// images go back to Anthropic exactly, first in their message; the OpenAI rendering leaves
/// out what OpenAI cannot take, with a warning, and keeps every call paired with its result.
#[test]
fn provider_native_parts_render_exactly_where_they_can_and_are_left_out_with_a_warning() {
    let t = Tract::in_memory().unwrap();
    let thinking = json!({"type": "thinking", "thinking": "grep first", "signature": "EqQBCkYIARgCIkD+/sig=="});
    let redacted = json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"});
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}});
    let user =
        json!({"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]});
    t.append(tract_core::json::message_from_json(&user).unwrap())
        .unwrap();
    let assistant = json!({"role": "assistant",
        "content": [thinking, redacted, {"type": "text", "text": "Let me look."}],
        "tool_calls": [{"id": "toolu_1", "name": "grep", "arguments": "{\"q\":\"x\"}"}]});
    t.append(tract_core::json::message_from_json(&assistant).unwrap())
        .unwrap();
    t.tool_result("toolu_1", "grep", "1 match", false).unwrap();
    // A Responses reasoning item neither provider's chat format takes.
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": []});
    t.append(Message {
        content: Content::Parts(vec![tract_core::ContentPart::Raw(reasoning.to_string())]),
        ..Message::text(Role::Assistant, "")
    })
    .unwrap();
    t.assistant("An image of a cat.", vec![]).unwrap();
    let c = t.compile().unwrap();

    let anth = c.to_anthropic();
    let msgs = anth["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["content"][1], image);
    assert_eq!(
        msgs[1]["content"],
        json!([thinking, redacted, {"type": "text", "text": "Let me look."},
               {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}}])
    );
    assert_eq!(msgs[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(
        msgs[3]["content"],
        json!([{"type": "text", "text": "An image of a cat."}])
    );
    assert_eq!(msgs.len(), 4);

    let oai = c.to_openai();
    let oai = oai.as_array().unwrap();
    assert_eq!(
        oai[0]["content"],
        json!([{"type": "text", "text": "what is this?"}])
    );
    assert_eq!(
        oai[1]["content"],
        json!([{"type": "text", "text": "Let me look."}])
    );
    assert_eq!(oai[1]["tool_calls"][0]["id"], "toolu_1");
    assert_eq!(oai[2]["tool_call_id"], "toolu_1");
    // The reasoning-only message is not sent at all; the next one follows.
    assert_eq!(oai[3]["content"], "An image of a cat.");
    assert_eq!(oai.len(), 4);
    let warnings = c.warnings();
    for wanted in [
        "a 'image' part is left out of the OpenAI rendering",
        "a 'thinking' part is left out of the OpenAI rendering",
        "a 'redacted_thinking' part is left out of the OpenAI rendering",
        "a 'reasoning' part is left out of the OpenAI rendering",
        "a 'reasoning' part is left out of the Anthropic rendering",
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(wanted)),
            "{wanted}: {warnings:?}"
        );
    }
    assert_eq!(warnings.len(), 5, "{warnings:?}");
}

/// A view as Responses items: the last `limit` of them are the tail of all of them, a call
/// with no result is followed by a marked error output, an orphan result is left out.
#[test]
fn a_view_renders_as_responses_items_whole_or_its_tail() {
    let t = Tract::in_memory().unwrap();
    let items = json!([
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "found"},
        {"type": "function_call", "call_id": "c2", "name": "grep", "arguments": "{}"},
    ]);
    let messages =
        tract_core::responses::messages_from_items(items.as_array().unwrap(), &Default::default())
            .unwrap();
    assert_eq!(messages[2].name.as_deref(), Some("grep"));
    t.append_batch(messages).unwrap();
    t.tool_result("nobody-called", "grep", "orphan", false)
        .unwrap();
    let c = t.compile().unwrap();
    let all = c.to_responses(None);
    let all = all.as_array().unwrap();
    assert_eq!(&all[..4], items.as_array().unwrap().as_slice());
    assert_eq!(all[4]["call_id"], "c2");
    assert_eq!(all[4]["output"], tract_core::view::SYNTHETIC_RESULT);
    assert_eq!(all.len(), 5);
    for n in 0..=7 {
        let tail = c.to_responses(Some(n));
        assert_eq!(
            tail.as_array().unwrap().as_slice(),
            &all[all.len().saturating_sub(n)..],
            "{n}"
        );
    }
}

#[test]
fn the_same_view_renders_to_the_same_bytes() {
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.user("hi").unwrap();
    t.assistant("", vec![call("c1", "grep"), call("c2", "grep")])
        .unwrap();
    t.tool_result("c1", "grep", "x", false).unwrap();
    let a = t.compile().unwrap().to_anthropic().to_string();
    let b = Tract::open_existing(&path)
        .unwrap()
        .compile()
        .unwrap()
        .to_anthropic()
        .to_string();
    assert_eq!(a, b);
    assert_eq!(a, t.compile().unwrap().to_anthropic().to_string());
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
    assert_eq!(t.log(None, None).unwrap().len(), 1);
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
fn prefixes_resolve_like_git() {
    let t = Tract::in_memory().unwrap();
    let msgs: Vec<Message> = (0..1500)
        .map(|i| Message::text(Role::User, format!("message {i}")))
        .collect();
    let infos = t.append_batch(msgs).unwrap();
    let one = &infos[0];
    assert_eq!(
        t.resolve(&Rev::parse(&one.id.short()).unwrap()).unwrap(),
        one.id
    );
    // With 1,500 commits two of them share a 4-digit prefix (birthday bound).
    let mut seen = std::collections::HashMap::new();
    let shared = infos
        .iter()
        .find_map(|i| {
            seen.insert(i.id.to_hex()[..4].to_string(), i.id)
                .map(|_| i.id.to_hex()[..4].to_string())
        })
        .unwrap();
    match t.resolve(&Rev::parse(&shared).unwrap()) {
        Err(Error::AmbiguousPrefix { candidates, .. }) => assert!(candidates.len() >= 2),
        other => panic!("expected ambiguity, got {other:?}"),
    }
    assert!(matches!(
        t.resolve(&Rev::parse(&"0".repeat(64)).unwrap()),
        Err(Error::UnknownRevision { .. })
    ));
    assert!(matches!(
        t.resolve(&Rev::parse("no-such-branch").unwrap()),
        Err(Error::UnknownRevision { .. })
    ));
    assert!(matches!(
        Rev::parse("abc").and_then(|r| t.resolve(&r)),
        Err(Error::InvalidRevision { .. })
    ));
}

#[test]
fn files_that_are_not_stores_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("notes.txt");
    std::fs::write(&junk, b"just some notes, not a database").unwrap();
    let err = Tract::open(&junk).unwrap_err();
    assert!(matches!(err, Error::NotAStore { .. }), "{err}");
    assert_eq!(
        std::fs::read(&junk).unwrap(),
        b"just some notes, not a database"
    );
    let empty = dir.path().join("empty.redb");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(Tract::open(&empty), Err(Error::NotAStore { .. })));
    let missing_dir = dir.path().join("no/such/dir/store.redb");
    assert!(matches!(Tract::open(&missing_dir), Err(Error::Io { .. })));
    assert!(!dir.path().join("no").exists());
    assert!(matches!(
        Tract::open_existing(dir.path().join("absent.redb")),
        Err(Error::Io { .. })
    ));
    assert!(matches!(
        Tract::open(dir.path()),
        Err(Error::NotAStore { .. })
    ));
}

#[test]
fn a_copy_of_a_store_file_opens_in_memory_and_damaged_copies_are_errors() {
    let (_dir, path) = file_store();
    let t = Tract::open(&path).unwrap();
    t.system("sys").unwrap();
    t.user("hello").unwrap();
    let expected = texts(&t);
    drop(t);
    let bytes = std::fs::read(&path).unwrap();
    let options = tract_core::StoreOptions::default();
    let store = tract_core::Store::from_bytes(&bytes, options).unwrap();
    let copy = Tract::from_store(store, &Bind::HeadAtOpen).unwrap();
    assert_eq!(texts(&copy), expected);
    copy.user("only in the copy").unwrap();
    assert_eq!(
        texts(&Tract::open(&path).unwrap()),
        expected,
        "the file is untouched"
    );
    assert!(matches!(
        tract_core::Store::from_bytes(b"not a store", options),
        Err(Error::NotAStore { .. })
    ));
    // Cut anywhere: an error or a store that opens, never a panic.
    for cut in [4, 100, 4096, bytes.len() / 2, bytes.len() - 1] {
        if let Ok(store) = tract_core::Store::from_bytes(&bytes[..cut], options) {
            let _ = Tract::from_store(store, &Bind::HeadAtOpen).and_then(|t| t.compile());
        }
    }
}

/// Replaces every occurrence of `from` in the file with `to` (same length), as a damaged disk
/// or a hand edit would (stale copies of a page, which the storage engine keeps until it reuses
/// the space, change too).
fn flip_in_file(path: &std::path::Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let mut bytes = std::fs::read(path).unwrap();
    let at: Vec<usize> = bytes
        .windows(from.len())
        .enumerate()
        .filter(|(_, w)| *w == from.as_bytes())
        .map(|(i, _)| i)
        .collect();
    assert!(!at.is_empty(), "'{from}' is not in the file");
    for i in at {
        bytes[i..i + to.len()].copy_from_slice(to.as_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_changed_byte_in_a_stored_message_is_never_served() {
    let (_dir, path) = file_store();
    let t = Tract::open(&path).unwrap();
    let batch = (0..2000)
        .map(|i| Message::text(Role::User, format!("msg {i:04}")))
        .collect();
    let infos = t.append_batch(batch).unwrap();
    let damaged = infos[1003].clone();
    let note = t
        .append_with(
            Message::text(Role::User, "last"),
            &AppendOptions {
                note: Some("note-QQQQ".into()),
                ..AppendOptions::default()
            },
        )
        .unwrap();
    drop(t);
    flip_in_file(&path, "msg 1003", "msg 1103");
    let t = Tract::open(&path).unwrap();
    let blob = damaged.commit.blob.unwrap().to_hex();
    let is_damaged_blob =
        |e: &Error| matches!(e, Error::CorruptObject { kind: "blob", id, .. } if *id == blob);
    let e = t.compile().unwrap_err();
    assert!(is_damaged_blob(&e), "{e}");
    assert!(e.to_string().contains(&blob[..10]), "{e}");
    assert!(is_damaged_blob(&t.get_commit(damaged.id).unwrap_err()));
    assert!(is_damaged_blob(&t.log(None, None).unwrap_err()));
    let q = SearchQuery {
        query: "msg 1103".into(),
        history: true,
        ..SearchQuery::default()
    };
    assert!(is_damaged_blob(&t.search(&q).unwrap_err()));
    // Other messages still read; appending the same message again repairs the stored copy.
    assert_eq!(t.get_commit(infos[5].id).unwrap().preview(), "msg 0005");
    t.user("msg 1003").unwrap();
    assert_eq!(texts(&t)[1003], "msg 1003");
    // A damaged commit record (its note changed) is refused the same way.
    drop(t);
    flip_in_file(&path, "note-QQQQ", "note-QQQR");
    let t = Tract::open(&path).unwrap();
    match t.get_commit(note.id) {
        Err(Error::CorruptObject {
            kind: "commit", id, ..
        }) => assert_eq!(id, note.id.to_hex()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn fsck_passes_a_sound_store_and_names_every_kind_of_damage() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let sub = delegated(&t);
    t.merge(
        &branch("sub"),
        &MergeRequest {
            strategy: MergeStrategy::ToolResult {
                call_id: "task_1".into(),
            },
            ..MergeRequest::default()
        },
    )
    .unwrap();
    let big = "line of a large tool output\n".repeat(60_000); // chunked: over 1 MiB
    t.assistant("", vec![call("b1", "cat")]).unwrap();
    let result = t.tool_result("b1", "cat", &big, false).unwrap();
    t.edit(result.id, Content::Text("shortened".into()))
        .unwrap();
    sub.user("more work on the side").unwrap();
    t.delete_branch(&branch("sub")).unwrap(); // its reflog keeps the tip reachable
    let report = t.fsck().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert!(
        report.chunks >= 2 && report.commits >= 12 && report.blobs >= 12,
        "{report:?}"
    );
    assert_eq!(report.counts_replayed, 1);
    assert!(report.unreachable_commits.is_empty() && report.unreachable_blobs.is_empty());
    assert!(report.unreachable_chunks.is_empty());

    // An object written but reached by nothing is listed, and is not a problem.
    let store = t.store().clone();
    let mut w = store.write().unwrap();
    let stray = Message::text(Role::User, "stray");
    let stray_id = w
        .objects()
        .unwrap()
        .put_blob(&stray.encode().unwrap(), 1)
        .unwrap();
    w.commit().unwrap();
    let report = t.fsck().unwrap();
    assert!(report.is_clean());
    assert_eq!(report.unreachable_blobs, [stray_id]);

    // Counts that differ from the view, a branch at a commit the store lacks, a commit whose
    // blob is missing: each named.
    let mut w = store.write().unwrap();
    let tip = w.branch("main").unwrap().unwrap();
    let mut stats = w.branch_stats("main").unwrap().unwrap();
    stats.tally.messages += 1;
    w.set_branch_stats("main", Some(&stats)).unwrap();
    w.set_branch("ghost", Some(tract_core::CommitId::of(b"nothing")), "test")
        .unwrap();
    let orphan = tract_core::Commit {
        parents: vec![tip],
        op: tract_core::Op::Append,
        blob: Some(tract_core::BlobId::of(b"no such blob")),
        timestamp_us: u64::MAX / 2,
        message: None,
    };
    let orphan_id = w.objects().unwrap().put_commit(&orphan).unwrap();
    w.commit().unwrap();
    let report = t.fsck().unwrap();
    let kinds: Vec<(&str, &str)> = report
        .problems
        .iter()
        .map(|p| (p.kind, p.subject.split(' ').next().unwrap_or_default()))
        .collect();
    assert!(
        kinds.contains(&("bookkeeping", "branch")),
        "{:?}",
        report.problems
    );
    assert!(kinds.contains(&("ref", "branch")), "{:?}", report.problems);
    assert!(kinds.contains(&("ref", "reflog")), "{:?}", report.problems);
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.kind == "missing" && p.subject == format!("commit {}", orphan_id.to_hex())),
        "{:?}",
        report.problems
    );
    assert!(!report.is_clean());
}

#[test]
fn fsck_finds_a_changed_byte_in_any_object() {
    let (_dir, path) = file_store();
    let t = Tract::open(&path).unwrap();
    let big = format!(
        "{}TARGET-CHUNK-BYTES{}",
        "a".repeat(600_000),
        "b".repeat(600_000)
    );
    t.user(big).unwrap();
    let m = t.user("msg 1003").unwrap();
    let noted = t
        .append_with(
            Message::text(Role::User, "x"),
            &AppendOptions {
                note: Some("note-QQQQ".into()),
                ..AppendOptions::default()
            },
        )
        .unwrap();
    drop(t);
    flip_in_file(&path, "msg 1003", "msg 1103");
    flip_in_file(&path, "note-QQQQ", "note-QQQR");
    flip_in_file(&path, "TARGET-CHUNK-BYTES", "TARGET-CHUNK-BYTEZ");
    let report = Tract::open(&path).unwrap().fsck().unwrap();
    let corrupt: Vec<&str> = report
        .problems
        .iter()
        .filter(|p| p.kind == "corrupt")
        .map(|p| p.subject.as_str())
        .collect();
    let blob = format!("blob {}", m.commit.blob.unwrap().to_hex());
    let commit = format!("commit {}", noted.id.to_hex());
    assert!(corrupt.contains(&blob.as_str()), "{corrupt:?}");
    assert!(corrupt.contains(&commit.as_str()), "{corrupt:?}");
    assert!(
        corrupt.iter().any(|s| s.starts_with("chunk ")),
        "{corrupt:?}"
    );
    // The big blob is damaged through its chunk: reported as such, once per object.
    assert_eq!(corrupt.len(), 4, "{:?}", report.problems);
}

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
    let side = t.fork(&branch("side"), None).unwrap();
    side.user("on the side").unwrap();
    let before = t.fsck().unwrap();
    assert!(before.is_clean() && before.chunks >= 2);
    let ids: Vec<_> = t.log(None, None).unwrap().iter().map(|i| i.id).collect();

    let r = t.redact(result.id, "an AWS key in a tool result").unwrap();
    assert_eq!((r.commit, r.blob), (result.id, result.commit.blob.unwrap()));
    let r2 = side
        .redact(big_result.id, "the same key in a build log")
        .unwrap();
    assert_eq!(r2.chunks_removed.len(), 2, "its chunks went with it");
    // Both handles (and a new one) see placeholders; pairing and requests stay valid.
    for h in [&t, &side, &open_bound(&path, Bind::Branch(branch("main")))] {
        let c = h.compile().unwrap();
        let oai = c.to_openai();
        let text = oai.to_string();
        assert!(!text.contains("AKIA"), "{text}");
        assert_eq!(oai[3]["role"], "tool");
        assert_eq!(oai[3]["tool_call_id"], "c1");
        assert_eq!(oai[3]["content"], tract_core::redact::REDACTED_TEXT);
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
    let after: Vec<_> = t.log(None, None).unwrap().iter().map(|i| i.id).collect();
    assert_eq!(after, ids);
    let call_message = t.get_commit(asked.id).unwrap().message.unwrap();
    assert_eq!(call_message.tool_calls[0].arguments, r#"{"path":".env"}"#);
    let shown = t.get_commit(result.id).unwrap();
    assert_eq!(shown.message.unwrap().tool_call_id.as_deref(), Some("c1"));
    // fsck: redacted, not corrupt; counts listed match the views again.
    let report = t.fsck().unwrap();
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
    let doomed = t.fork(&branch("doomed"), None).unwrap();
    doomed.user("only on the doomed branch").unwrap();
    doomed
        .user(format!("large {}", "z".repeat(2_000_000)))
        .unwrap();
    let kept = t.fork(&branch("kept"), None).unwrap();
    kept.user("on a kept branch").unwrap();
    drop(doomed);
    t.delete_branch(&branch("doomed")).unwrap();
    // Within the grace period the reflog keeps the deleted branch's commits.
    let first = t.gc(tract_core::gc::DEFAULT_GRACE).unwrap();
    assert_eq!((first.commits, first.blobs, first.chunks), (0, 0, 0));
    let report = t.fsck().unwrap();
    assert!(report.is_clean() && report.unreachable_commits.is_empty());
    // Pruning now: the deleted branch's two commits, blobs and chunks go; the rest stays.
    let pruned = t.gc(std::time::Duration::ZERO).unwrap();
    assert_eq!((pruned.commits, pruned.blobs), (2, 2), "{pruned:?}");
    assert!(pruned.chunks >= 2 && pruned.bytes > 0 && pruned.reflog_entries > 0);
    let report = t.fsck().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert!(report.unreachable_commits.is_empty() && report.unreachable_chunks.is_empty());
    assert_eq!(texts(&kept), ["shared", "on a kept branch"]);
    assert_eq!(texts(&t), ["shared"]);
    assert_eq!(
        t.gc(std::time::Duration::ZERO).unwrap(),
        tract_core::GcOutcome::default()
    );
}

#[test]
fn a_redb_file_without_tract_tables_is_not_a_store() {
    let (_d, path) = file_store();
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("other");
            txn.open_table(def).unwrap().insert("k", "v").unwrap();
        }
        txn.commit().unwrap();
    }
    assert!(matches!(Tract::open(&path), Err(Error::NotAStore { .. })));
}

#[test]
fn a_newer_format_is_a_clear_error() {
    let (_d, path) = file_store();
    Tract::open(&path).unwrap().user("kept").unwrap();
    {
        let mut b = redb::Database::builder();
        b.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
        let db = b.open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("meta");
            txn.open_table(def)
                .unwrap()
                .insert("format", 99u32.to_le_bytes().as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    match Tract::open(&path) {
        Err(Error::NewerFormat { found: 99, .. }) => {}
        other => panic!("expected NewerFormat, got {other:?}"),
    }
}

#[test]
fn large_payloads_are_chunked_and_deduplicated() {
    let (_d, path) = file_store();
    let t = Tract::open(&path).unwrap();
    // 6 MB of varied text: several chunks, poorly compressible.
    let mut big = String::with_capacity(6 << 20);
    let mut x: u64 = 0x9e3779b97f4a7c15;
    while big.len() < (6 << 20) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        big.push_str(&format!("{x:016x} "));
    }
    t.assistant("", vec![call("c1", "read_file")]).unwrap();
    t.tool_result("c1", "read_file", big.clone(), false)
        .unwrap();
    let size_once = std::fs::metadata(&path).unwrap().len();
    // The same output again (a second call reading the same file) adds almost nothing.
    t.assistant("", vec![call("c2", "read_file")]).unwrap();
    t.tool_result("c2", "read_file", big.clone(), false)
        .unwrap();
    drop(t);
    let size_twice = std::fs::metadata(&path).unwrap().len();
    // redb grows a small file by doubling regions; at 24 MB and up the file is within 8% of
    // the text (docs/performance.md). Without chunking, power-of-two rounding alone would
    // double the value.
    assert!(
        size_once <= (big.len() as u64) * 21 / 10,
        "store {size_once} for {} bytes",
        big.len()
    );
    assert!(
        size_twice < size_once + (1 << 20),
        "{size_once} -> {size_twice}"
    );
    let t = Tract::open_existing(&path).unwrap();
    let c = t.compile().unwrap();
    let text = c.messages()[1].message.content.text().into_owned();
    assert_eq!(text, big);
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

#[test]
fn a_cold_view_of_a_long_history_equals_the_incremental_one() {
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.compile().unwrap(); // start the cached view, so later appends extend it in place
    let mut msgs = Vec::new();
    for i in 0..1200 {
        msgs.push(Message::text(Role::User, format!("question {i}")));
        let mut a = Message::text(Role::Assistant, "");
        a.tool_calls = vec![call(&format!("c{i}"), "grep")];
        msgs.push(a);
        if i % 7 != 0 {
            msgs.push(Message::tool_result(
                format!("c{i}"),
                "grep",
                format!("hit {i}"),
                false,
            ));
        }
    }
    for chunk in msgs.chunks(500) {
        t.append_batch(chunk.to_vec()).unwrap();
    }
    let warm = t.compile().unwrap().to_openai().to_string();
    let cold = Tract::open_existing(&path)
        .unwrap()
        .compile()
        .unwrap()
        .to_openai()
        .to_string();
    assert_eq!(warm, cold);
    // Every seventh call never got a result.
    assert_eq!(t.status().unwrap().unanswered_calls, 1200_u64.div_ceil(7));
}

/// A session with parallel calls, an edited result, an error and a crashed call.
fn tool_session(t: &Tract) -> Vec<tract_core::CommitInfo> {
    vec![
        t.system("sys").unwrap(),
        t.user("find the config").unwrap(),
        t.assistant("", vec![call("g1", "grep"), call("r1", "read_file")])
            .unwrap(),
        t.tool_result("r1", "read_file", "file body", false)
            .unwrap(),
        t.tool_result(
            "g1",
            "grep",
            "config.py:42: DATABASE_URL\nother.py:1: x",
            false,
        )
        .unwrap(),
        t.assistant("", vec![call("b1", "bash")]).unwrap(),
        t.tool_result("b1", "bash", "exit 1: tests failed", true)
            .unwrap(),
        t.assistant("", vec![call("g2", "grep")]).unwrap(),
        t.tool_result("g2", "grep", "nothing", false).unwrap(),
        t.assistant("", vec![call("x1", "edit_file")]).unwrap(),
    ]
}

#[test]
fn tool_queries_follow_the_view() {
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let grep = t.find_tool_results(Some("grep"), None, None).unwrap();
    assert_eq!(
        grep.iter().map(|i| i.id).collect::<Vec<_>>(),
        [c[4].id, c[8].id]
    );
    assert_eq!(t.find_tool_results(None, None, None).unwrap().len(), 4);
    let after = t
        .find_tool_results(Some("grep"), Some(&Rev::from(c[4].id)), None)
        .unwrap();
    assert_eq!(after.len(), 1);
    let before = t
        .find_tool_results(None, None, Some(&Rev::from(c[6].id)))
        .unwrap();
    assert_eq!(before.len(), 2);
    assert!(
        t.find_tool_results(Some("nope"), None, None)
            .unwrap()
            .is_empty()
    );
    // An edited result is returned once, as its position, with the current version reachable.
    let e = t
        .edit_tool_result(c[4].id, "g1", "grep", Content::Text("config.py:42".into()))
        .unwrap();
    let grep = t.find_tool_results(Some("grep"), None, None).unwrap();
    assert_eq!(grep.len(), 2);
    assert_eq!(grep[0].id, c[4].id);
    let current = grep[0].current.as_ref().unwrap();
    assert_eq!(current.commit, e.id);
    assert_eq!(current.message.content.text(), "config.py:42");
    assert!(
        grep[0]
            .message
            .as_ref()
            .unwrap()
            .content
            .text()
            .starts_with("config.py:42: DATABASE_URL")
    );
    // After/before outside the view are errors.
    t.create_branch(&BranchName::new("side").unwrap(), Some(&Rev::from(c[1].id)))
        .unwrap();
    t.switch("side").unwrap();
    let other = t.user("elsewhere").unwrap();
    t.switch("main").unwrap();
    assert!(matches!(
        t.find_tool_results(None, Some(&Rev::from(other.id)), None),
        Err(Error::NotInView { .. })
    ));
    let calls = t.find_tool_calls(Some("grep")).unwrap();
    assert_eq!(
        calls.iter().map(|i| i.id).collect::<Vec<_>>(),
        [c[2].id, c[7].id]
    );
    assert_eq!(t.find_tool_calls(None).unwrap().len(), 4);
}

#[test]
fn turns_carry_results_in_call_order_and_lifecycle() {
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let turns = t.find_tool_turns(None).unwrap();
    assert_eq!(turns.len(), 4);
    let first = &turns[0];
    assert_eq!(first.call.id, c[2].id);
    assert_eq!(
        first.result_hashes(),
        [c[4].id, c[3].id],
        "call order, not record order"
    );
    assert_eq!(first.tool_names(), ["grep", "read_file"]);
    assert_eq!(first.all_hashes(), [c[2].id, c[4].id, c[3].id]);
    use tract_core::CallState;
    assert_eq!(first.calls[0].state, CallState::Ok);
    assert!(first.calls[0].duration_us.is_some());
    assert_eq!(first.calls[0].arguments, r#"{"q":"g1"}"#);
    assert_eq!(turns[1].calls[0].state, CallState::Error);
    assert_eq!(turns[3].calls[0].state, CallState::Pending);
    assert!(turns[3].results.is_empty());
    assert_eq!(t.find_tool_turns(Some("grep")).unwrap().len(), 2);
    assert!(t.find_tool_turns(Some("nope")).unwrap().is_empty());
}

#[test]
fn tool_result_edits_are_checked_and_keep_history() {
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let head = t.head().unwrap();
    let g1 = c[4].id;
    for (target, call_id, name) in [
        (Rev::from(c[1].id), "g1", "grep"), // not a tool result
        (Rev::from(g1), "r1", "grep"),      // another call's id
        (Rev::from(g1), "g1", "read_file"), // another tool
        (Rev::parse(&"f".repeat(20)).unwrap(), "g1", "grep"), // no such commit
    ] {
        assert!(
            t.edit_tool_result(target, call_id, name, Content::Text("x".into()))
                .is_err()
        );
    }
    assert_eq!(t.head().unwrap(), head, "refused edits commit nothing");
    let e1 = t
        .edit_tool_result(g1, "g1", "grep", Content::Text("v2".into()))
        .unwrap();
    let e2 = t
        .edit_tool_result(e1.id, "g1", "grep", Content::Text("v3".into()))
        .unwrap();
    let history = t.edit_history(e2.id).unwrap();
    assert_eq!(
        history.iter().map(|i| i.id).collect::<Vec<_>>(),
        [c[4].id, e1.id, e2.id]
    );
    assert_eq!(t.edit_history(g1).unwrap().len(), 3);
    let msgs = t.compile().unwrap();
    let shown: Vec<_> = msgs
        .messages()
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect();
    assert!(shown.contains(&"v3".to_string()));
}

#[test]
fn repair_answers_every_pending_call_once() {
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let c = tool_session(&t);
    t.assistant("", vec![call("p1", "bash"), call("p2", "grep")])
        .unwrap();
    assert_eq!(t.pending_tool_calls().unwrap().len(), 3);
    let repaired = t.repair().unwrap();
    assert_eq!(repaired.len(), 3);
    assert!(
        repaired
            .iter()
            .all(|r| r.message.as_ref().unwrap().is_error)
    );
    assert!(t.pending_tool_calls().unwrap().is_empty());
    assert!(t.repair().unwrap().is_empty(), "repair is idempotent");
    let reopened = Tract::open_existing(&path).unwrap();
    let compiled = reopened.compile().unwrap();
    assert!(compiled.warnings().is_empty(), "{:?}", compiled.warnings());
    let turns = reopened.find_tool_turns(Some("edit_file")).unwrap();
    assert_eq!(turns[0].results.len(), 1);
    assert_eq!(turns[0].calls[0].state, tract_core::CallState::Error);
    assert_eq!(turns[0].call.id, c[9].id);
}

#[test]
fn search_the_view_and_the_history() {
    use tract_core::SearchQuery;
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let q = |query: &str| SearchQuery {
        query: query.into(),
        ..SearchQuery::default()
    };
    let hits = t.search(&q("database_url")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].info.id, c[4].id);
    assert_eq!(hits[0].snippet, "config.py:42: DATABASE_URL");
    // Tool-call names and arguments are searched too.
    assert_eq!(t.search(&q(r#""q":"b1""#)).unwrap()[0].info.id, c[5].id);
    // Edit the result: the view no longer has it, the history does (original first).
    let e = t
        .edit_tool_result(c[4].id, "g1", "grep", Content::Text("trimmed".into()))
        .unwrap();
    assert!(t.search(&q("DATABASE_URL")).unwrap().is_empty());
    let mut hist = q("DATABASE_URL");
    hist.history = true;
    assert_eq!(t.search(&hist).unwrap()[0].info.id, c[4].id);
    assert_eq!(t.search(&q("trimmed")).unwrap()[0].info.id, e.id);
    let mut by_tool = q("config|nothing|file");
    by_tool.regex = true;
    by_tool.tool = Some("grep".into());
    by_tool.history = true;
    // The call that names read_file, the grep result's original, and the second grep result.
    let ids: Vec<_> = t
        .search(&by_tool)
        .unwrap()
        .iter()
        .map(|h| h.info.id)
        .collect();
    assert_eq!(ids, [c[2].id, c[4].id, c[8].id]);
    let mut by_role = q("edit_file");
    by_role.role = Some(Role::Assistant);
    assert_eq!(t.search(&by_role).unwrap().len(), 1);
    let mut bad = q("(");
    bad.regex = true;
    assert!(matches!(t.search(&bad), Err(Error::InvalidInput { .. })));
}

#[test]
fn clearing_old_tool_results_keeps_recent_turns_and_history() {
    use tract_core::ClearOptions;
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let mut results = Vec::new();
    for i in 0..5 {
        let tool = if i == 1 { "memory" } else { "grep" };
        t.assistant("", vec![call(&format!("c{i}"), tool)]).unwrap();
        results.push(
            t.tool_result(
                format!("c{i}"),
                tool,
                format!("match line {i}\n").repeat(100),
                false,
            )
            .unwrap(),
        );
    }
    let opts = ClearOptions {
        keep: 2,
        exclude_tools: vec!["memory".into()],
        ..ClearOptions::default()
    };
    let plan = t.plan_clear_tool_results(&opts).unwrap();
    assert_eq!(
        plan.candidates
            .iter()
            .map(|c| c.position)
            .collect::<Vec<_>>(),
        [results[0].id, results[2].id]
    );
    let head = t.head().unwrap();
    // Asking for more than it can free changes nothing.
    let greedy = ClearOptions {
        clear_at_least: 1_000_000,
        ..opts.clone()
    };
    assert!(t.clear_tool_results(&greedy).unwrap().cleared.is_empty());
    assert_eq!(t.head().unwrap(), head);
    let out = t.clear_tool_results(&opts).unwrap();
    assert_eq!(out.cleared.len(), 2);
    assert!(out.tokens_after < out.tokens_before);
    let compiled = t.compile().unwrap();
    let texts: Vec<String> = compiled
        .messages()
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect();
    let short = &results[0].id.to_hex()[..12];
    assert!(
        texts[1].starts_with("[tract] Cleared this grep result") && texts[1].contains(short),
        "{}",
        texts[1]
    );
    assert!(texts[3].starts_with("match line 1"), "excluded tool kept");
    assert!(texts[9].starts_with("match line 4"), "recent turns kept");
    // The originals stay in history; clearing again finds nothing new.
    assert!(
        t.get_commit(results[0].id)
            .unwrap()
            .message
            .unwrap()
            .content
            .text()
            .starts_with("match line 0")
    );
    assert!(t.clear_tool_results(&opts).unwrap().cleared.is_empty());
    // Durable: a new handle compiles the same bytes.
    let again = Tract::open_existing(&path)
        .unwrap()
        .compile()
        .unwrap()
        .to_anthropic()
        .to_string();
    assert_eq!(again, compiled.to_anthropic().to_string());
    let bad = ClearOptions {
        placeholder: Some("  ".into()),
        ..ClearOptions::default()
    };
    assert!(matches!(
        t.clear_tool_results(&bad),
        Err(Error::InvalidInput { .. })
    ));
}

#[test]
fn compress_replaces_runs_and_keeps_everything_else() {
    use tract_core::{CompressRequest, FnSummarizer, Manual, SummaryRequest};
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let c = tool_session(&t);
    let after = t.user("and now?").unwrap();
    // Edited content is what gets summarized.
    t.edit_tool_result(c[4].id, "g1", "grep", Content::Text("EDITED grep".into()))
        .unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let f = FnSummarizer::new("test", |req: &SummaryRequest| {
        seen.lock()
            .unwrap()
            .push(req.to_chat_messages().to_string());
        Ok(format!("summary of {} messages", req.messages.len()))
    });
    let ids = |r: std::ops::Range<usize>| c[r].iter().map(|i| Rev::from(i.id)).collect::<Vec<_>>();
    let before_len = t.compile().unwrap().messages().len();
    let out = t
        .compress(&CompressRequest {
            commits: Some(ids(1..7)),
            preserve: vec![Rev::from(c[5].id)],
            instructions: Some("keep paths".into()),
            target_tokens: NonZeroU32::new(50),
            summarizer: Some(&f),
            ..CompressRequest::default()
        })
        .unwrap();
    assert_eq!(
        out.commits.len(),
        2,
        "the preserved call splits the selection"
    );
    let prompts = seen.lock().unwrap().clone();
    assert!(prompts[0].contains("EDITED grep") && prompts[0].contains("keep paths"));
    assert!(prompts[0].contains("at most 50 tokens"));
    let compiled = t.compile().unwrap();
    let texts: Vec<String> = compiled
        .messages()
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect();
    assert_eq!(texts[0], "sys");
    assert_eq!(texts[1], "summary of 4 messages");
    // The preserved bash call stays; its result was summarized, so a synthetic result stands in.
    assert_eq!(compiled.messages()[2].position, Some(c[5].id));
    assert!(compiled.messages()[3].synthetic);
    assert_eq!(texts[4], "summary of 1 messages");
    assert_eq!(compiled.messages().len(), before_len - 6 + 3 + 1);
    assert_eq!(
        texts.last().unwrap(),
        "and now?",
        "commits after the range stay"
    );
    assert!(
        compiled
            .messages()
            .iter()
            .any(|m| m.position == Some(after.id))
    );
    // Provenance: the commit records sources, summarizer and parameters; originals remain.
    let info = &out.commits[0];
    assert_eq!(info.op(), "compress");
    assert_eq!(info.sources(), &[c[1].id, c[2].id, c[3].id, c[4].id]);
    assert_eq!(info.summarizer(), Some("callable:test"));
    assert!(t.get_commit(c[3].id).is_ok());
    // Durable and identical from a fresh handle.
    let again = Tract::open_existing(&path)
        .unwrap()
        .compile()
        .unwrap()
        .to_openai()
        .to_string();
    assert_eq!(again, compiled.to_openai().to_string());
    // A source is no longer in view: editing it is refused.
    assert!(t.edit(c[3].id, Content::Text("x".into())).is_err());
    // Manual content.
    let manual = Manual("by hand".into());
    t.compress(&CompressRequest {
        commits: Some(vec![Rev::from(after.id)]),
        summarizer: Some(&manual),
        ..CompressRequest::default()
    })
    .unwrap();
    assert_eq!(
        t.compile()
            .unwrap()
            .messages()
            .last()
            .unwrap()
            .message
            .content
            .text(),
        "by hand"
    );
}

#[test]
fn compress_refuses_bad_requests_and_failed_summaries_commit_nothing() {
    use tract_core::{CompressRequest, FnSummarizer, SummaryRequest};
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let head = t.head().unwrap();
    let sel = |i: usize| Some(vec![Rev::from(c[i].id)]);
    let failing = FnSummarizer::new("down", |_: &SummaryRequest| {
        Err(Error::Summarizer {
            summarizer: "callable:down".into(),
            reason: "503 from the model".into(),
        })
    });
    let bad = [
        CompressRequest {
            commits: Some(vec![]),
            ..CompressRequest::default()
        },
        CompressRequest {
            commits: Some(vec![Rev::parse(&"f".repeat(12)).unwrap()]),
            ..CompressRequest::default()
        },
        CompressRequest {
            commits: sel(1),
            preserve: vec![Rev::from(c[2].id)],
            ..CompressRequest::default()
        },
        CompressRequest {
            commits: sel(1),
            preserve: vec![Rev::from(c[1].id)],
            ..CompressRequest::default()
        },
        CompressRequest {
            commits: sel(1),
            summarizer: Some(&failing),
            ..CompressRequest::default()
        },
    ];
    for req in &bad {
        assert!(t.compress(req).is_err());
    }
    // A zero target length cannot be asked for: it is refused where a surface's number
    // becomes a target.
    assert!(tract_core::decision::target_tokens(0).is_err());
    assert_eq!(t.head().unwrap(), head, "nothing committed");
}

#[test]
fn compress_tool_calls_takes_whole_turns_and_keeps_the_answer() {
    use tract_core::CompressRequest;
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let answer = t.assistant("The config is in config.py.", vec![]).unwrap();
    // A summary shorter than any turn, so every selected run is replaced.
    let brief =
        tract_core::FnSummarizer::new("brief", |_: &tract_core::SummaryRequest| Ok("ok".into()));
    let req = || CompressRequest {
        summarizer: Some(&brief),
        ..CompressRequest::default()
    };
    // Naming only one result of the parallel turn takes the whole turn.
    let out = t
        .compress_tool_calls(
            Some(&[Rev::from(c[3].id), Rev::from(answer.id)]),
            None,
            true,
            req(),
        )
        .unwrap();
    assert_eq!(out.commits.len(), 1);
    assert_eq!(out.commits[0].sources(), &[c[2].id, c[3].id, c[4].id]);
    let params = match &out.commits[0].commit.op {
        tract_core::Op::Compress { params, .. } => params.clone(),
        _ => unreachable!(),
    };
    assert_eq!(params["system_prompt"], tract_core::TOOL_SUMMARIZE_SYSTEM);
    let compiled = t.compile().unwrap();
    assert!(
        compiled
            .messages()
            .iter()
            .any(|m| m.position == Some(answer.id)),
        "answer kept"
    );
    assert!(
        compiled.warnings().iter().all(|w| !w.contains("g1")),
        "{:?}",
        compiled.warnings()
    );
    // Every grep turn (none left but the second) by name.
    let out = t
        .compress_tool_calls(None, Some("grep"), true, req())
        .unwrap();
    assert_eq!(out.commits[0].sources(), &[c[7].id, c[8].id]);
    assert!(
        t.compress_tool_calls(None, Some("nope"), true, req())
            .is_err()
    );
}

#[test]
fn a_summary_no_shorter_than_its_run_leaves_the_run_as_it_is() {
    use tract_core::CompressRequest;
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let long = tract_core::FnSummarizer::new("wordy", |_: &tract_core::SummaryRequest| {
        Ok("a summary much longer than the run it replaces ".repeat(20))
    });
    let head = t.head().unwrap();
    let before = t.status().unwrap().token_count;
    let out = t
        .compress(&CompressRequest {
            commits: Some(vec![Rev::from(c[1].id)]),
            summarizer: Some(&long),
            ..CompressRequest::default()
        })
        .unwrap();
    assert!(out.commits.is_empty(), "nothing committed");
    assert_eq!(out.skipped.len(), 1);
    assert_eq!(out.skipped[0].sources, vec![c[1].id]);
    assert!(
        out.warnings[0].contains("not shorter"),
        "{:?}",
        out.warnings
    );
    assert_eq!((out.tokens_before, out.tokens_after), (before, before));
    assert_eq!(t.head().unwrap(), head);
    // A summary the caller wrote is taken as given, long or not.
    let manual = tract_core::Manual("written by hand, and long: ".repeat(20));
    let out = t
        .compress(&CompressRequest {
            commits: Some(vec![Rev::from(c[1].id)]),
            summarizer: Some(&manual),
            ..CompressRequest::default()
        })
        .unwrap();
    assert_eq!(out.commits.len(), 1);
    assert!(out.skipped.is_empty());
}

fn llm(url: &str) -> tract_core::OpenAiCompatible {
    let mut c = tract_core::OpenAiCompatible::new(url, "stub-model");
    c.api_key = Some("sk-test".into());
    c.timeout = std::time::Duration::from_millis(400);
    c.retries = 2;
    c.backoff = std::time::Duration::from_millis(10);
    c
}

#[test]
fn an_openai_compatible_server_summarizes_with_retries() {
    use tract_core::CompressRequest;
    use tract_stub_llm::{Reply, ok, serve};
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    t.edit_tool_result(c[4].id, "g1", "grep", Content::Text("EDITED grep".into()))
        .unwrap();
    let stub = serve(vec![
        Reply::Body(429, "{\"error\":\"slow down\"}".into()),
        ok("the summary"),
    ])
    .unwrap();
    let (url, seen) = (stub.url, stub.bodies);
    let client = llm(&url);
    let out = t
        .compress_tool_calls(
            Some(&[Rev::from(c[2].id)]),
            None,
            true,
            CompressRequest {
                instructions: Some("keep paths".into()),
                target_tokens: NonZeroU32::new(40),
                summarizer: Some(&client),
                ..CompressRequest::default()
            },
        )
        .unwrap();
    assert_eq!(
        out.commits[0].summarizer(),
        Some(format!("openai:stub-model@{url}").as_str())
    );
    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "429, then success");
    let body: serde_json::Value = serde_json::from_str(&bodies[1]).unwrap();
    assert_eq!(body["model"], "stub-model");
    assert_eq!(
        body["messages"][0]["content"],
        tract_core::TOOL_SUMMARIZE_SYSTEM
    );
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("keep paths") && prompt.contains("at most 40 tokens"));
    assert!(
        prompt.contains("EDITED grep"),
        "the current content is sent"
    );
    let shown = t.compile().unwrap();
    assert!(
        shown
            .messages()
            .iter()
            .any(|m| m.message.content.text() == "the summary")
    );
}

#[test]
fn llm_failures_are_clear_errors_and_commit_nothing() {
    use tract_core::CompressRequest;
    use tract_stub_llm::{Reply, serve};
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let head = t.head().unwrap();
    let try_with = |script: Vec<Reply>| {
        let client = llm(&serve(script).unwrap().url);
        t.compress(&CompressRequest {
            commits: Some(vec![Rev::from(c[3].id)]),
            summarizer: Some(&client),
            ..CompressRequest::default()
        })
        .unwrap_err()
        .to_string()
    };
    let e = try_with((0..3).map(|_| Reply::Body(500, "{}".into())).collect());
    assert!(e.contains("HTTP 500") && e.contains("after 3 tries"), "{e}");
    let e = try_with(
        (0..3)
            .map(|_| Reply::Hang(std::time::Duration::from_millis(700)))
            .collect(),
    );
    assert!(e.contains("no answer within 400 ms"), "{e}");
    let e = try_with(vec![Reply::Body(200, "{not json".into())]);
    assert!(e.contains("not JSON"), "{e}");
    let e = try_with(vec![Reply::Body(401, "{\"error\":\"bad key\"}".into())]);
    assert!(e.contains("HTTP 401") && e.contains("bad key"), "{e}");
    // Nothing listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let mut client = llm(&url);
    client.retries = 0;
    let e = t
        .compress(&CompressRequest {
            commits: Some(vec![Rev::from(c[3].id)]),
            summarizer: Some(&client),
            ..CompressRequest::default()
        })
        .unwrap_err();
    assert!(matches!(e, Error::Summarizer { .. }), "{e}");
    assert_eq!(t.head().unwrap(), head, "nothing committed");
}

#[test]
fn compressing_many_runs_matches_a_cold_rebuild() {
    use tract_core::{CompressRequest, Manual};
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.compile().unwrap();
    let mut msgs = Vec::new();
    for i in 0..300 {
        msgs.push(Message::text(Role::User, format!("question {i}")));
        let mut a = Message::text(Role::Assistant, "");
        a.tool_calls = vec![call(&format!("c{i}"), "grep")];
        msgs.push(a);
        msgs.push(Message::tool_result(
            format!("c{i}"),
            "grep",
            format!("hit {i}"),
            false,
        ));
        msgs.push(Message::text(Role::Assistant, format!("answer {i}")));
    }
    t.append_batch(msgs).unwrap();
    let manual = Manual("turn summary".into());
    let out = t
        .compress_tool_calls(
            None,
            None,
            true,
            CompressRequest {
                summarizer: Some(&manual),
                ..CompressRequest::default()
            },
        )
        .unwrap();
    assert_eq!(
        out.commits.len(),
        300,
        "one run per turn: questions and answers split them"
    );
    let warm = t.compile().unwrap();
    assert_eq!(warm.messages().len(), 900);
    assert!(warm.warnings().is_empty());
    let cold = Tract::open_existing(&path).unwrap().compile().unwrap();
    assert_eq!(warm.to_openai().to_string(), cold.to_openai().to_string());
    assert_eq!(t.find_tool_turns(None).unwrap().len(), 0);
}

/// A session up to a pending call of `name` with id `id`.
fn pending_call(t: &Tract, id: &str, name: &str) {
    t.user("find the config").unwrap();
    t.assistant("", vec![call(id, name)]).unwrap();
}

fn big_output(lines: usize) -> String {
    (0..lines)
        .map(|i| {
            format!("src/module_{i}.rs:{i}: let value_{i} = compute({i}); // filler text here")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_stored_policy_summarizes_per_tool_and_over_the_threshold() {
    use tract_core::{Decision, ToolPolicy};
    use tract_stub_llm::{ok, serve};
    let (_d, path) = temp_store();
    let setup = Tract::open(&path).unwrap();
    setup
        .set_tool_policy(&ToolPolicy {
            instructions: [("grep".to_string(), "only file names".to_string())].into(),
            auto_threshold: Some(200),
            default_instructions: None,
        })
        .unwrap();
    drop(setup);
    // Another handle (another process would do the same) applies the stored policy.
    let t = Tract::open(&path).unwrap();
    pending_call(&t, "g1", "grep");
    let stub = serve(vec![ok("grep found src/db.rs")]).unwrap();
    let client = llm(&stub.url);
    let out = t
        .record_tool_result(
            Message::tool_result("g1", "grep", big_output(40), false),
            None,
            Some(&client),
        )
        .unwrap();
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert!(matches!(out.decision, Decision::Summarize { .. }));
    let edit = out.replacement.expect("a summary edit");
    assert_eq!(edit.edit_target(), Some(out.original.id));
    assert_eq!(
        edit.commit.parents,
        vec![out.original.id],
        "original first, then its edit"
    );
    assert_eq!(
        out.original.message.as_ref().unwrap().content.text(),
        big_output(40)
    );
    let body: Value = serde_json::from_str(&stub.bodies.lock().unwrap()[0]).unwrap();
    assert_eq!(
        body["messages"][0]["content"],
        tract_core::TOOL_SUMMARIZE_SYSTEM
    );
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("only file names"), "{prompt}");
    assert!(
        prompt.contains("call g1 grep"),
        "the call is sent with its result"
    );
    // The model sees the summary; history keeps the original.
    let shown = t.compile().unwrap();
    let messages = shown.messages();
    assert_eq!(
        messages.last().unwrap().message.content.text(),
        "grep found src/db.rs"
    );
    assert_eq!(t.edit_history(out.original.id).unwrap().len(), 2);

    // Over the threshold without per-tool instructions: the extractive summarizer (offline).
    pending_call(&t, "b1", "bash");
    let info = t.tool_result("b1", "bash", big_output(200), false).unwrap();
    let shown = t.compile().unwrap();
    let messages = shown.messages();
    let text = messages.last().unwrap().message.content.text().into_owned();
    assert!(text.starts_with("[Summary of 2 messages]"), "{text}");
    assert_eq!(info.message.unwrap().content.text(), big_output(200));
    // Under it: unchanged, one commit.
    pending_call(&t, "b2", "bash");
    let before = t.log(None, None).unwrap().len();
    let out = t
        .record_tool_result(Message::tool_result("b2", "bash", "ok", false), None, None)
        .unwrap();
    assert!(out.replacement.is_none() && out.decision == Decision::Approve);
    assert_eq!(t.log(None, None).unwrap().len(), before + 1);
}

#[test]
fn a_policy_with_empty_instructions_is_refused_and_the_stored_one_kept() {
    use tract_core::ToolPolicy;
    let t = Tract::in_memory().unwrap();
    let good = ToolPolicy {
        auto_threshold: Some(10),
        ..ToolPolicy::default()
    };
    t.set_tool_policy(&good).unwrap();
    let bad = ToolPolicy {
        instructions: [("grep".to_string(), " ".to_string())].into(),
        ..ToolPolicy::default()
    };
    let e = t.set_tool_policy(&bad).unwrap_err();
    assert!(e.to_string().contains("'grep'"), "{e}");
    assert_eq!(t.tool_policy().unwrap(), good);
    t.set_tool_policy(&ToolPolicy::default()).unwrap();
    assert_eq!(t.tool_policy().unwrap(), ToolPolicy::default());
    assert!(tract_core::HookEvent::parse("tool_call").is_err());

    // A damaged policy is reported, and costs no tool result.
    let mut w = t.store().write().unwrap();
    w.set_setting("tool_summarization", Some(b"{not json".as_slice()))
        .unwrap();
    w.commit().unwrap();
    assert!(matches!(t.tool_policy(), Err(Error::Corrupt { .. })));
    pending_call(&t, "g1", "grep");
    let out = t
        .record_tool_result(
            Message::tool_result("g1", "grep", big_output(50), false),
            None,
            None,
        )
        .unwrap();
    assert!(out.replacement.is_none());
    assert!(
        out.warnings[0].contains("could not be read"),
        "{:?}",
        out.warnings
    );
    t.set_tool_policy(&good).unwrap();
    assert_eq!(t.tool_policy().unwrap(), good);
}

#[test]
fn a_handler_replaces_the_policy_and_decides() {
    use std::sync::Arc;
    use tract_core::{Decision, ToolPolicy};
    let t = Tract::in_memory().unwrap();
    t.set_tool_policy(&ToolPolicy {
        auto_threshold: Some(1),
        ..ToolPolicy::default()
    })
    .unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    t.on_tool_result(move |p| {
        log.lock()
            .unwrap()
            .push((p.tool_name.clone(), p.tool_call_id.clone(), p.token_count));
        match p.content.as_str() {
            "secret" => p.reject("contains a secret"),
            "noise" => p.edit("(noise dropped)"),
            "boom" => Err(tract_core::Error::handler("handler failed")),
            "twice" => {
                p.approve()?;
                p.approve()
            }
            "silent" => Ok(()),
            _ => p.approve(),
        }
    });
    pending_call(&t, "c1", "bash");
    let head = t.head().unwrap();
    let e = t.tool_result("c1", "bash", "secret", false).unwrap_err();
    assert!(matches!(e, Error::Rejected { .. }) && e.to_string().contains("contains a secret"));
    let e = t.tool_result("c1", "bash", "boom", false).unwrap_err();
    assert!(e.to_string().contains("handler failed"));
    let e = t.tool_result("c1", "bash", "twice", false).unwrap_err();
    assert!(e.to_string().contains("already decided"), "{e}");
    assert_eq!(t.head().unwrap(), head, "nothing committed");
    assert_eq!(seen.lock().unwrap()[0], ("bash".into(), "c1".into(), 1));

    // A long result passes through: the handler approves, the threshold is not consulted.
    let out = t
        .record_tool_result(
            Message::tool_result("c1", "bash", big_output(50), false),
            None,
            None,
        )
        .unwrap();
    assert!(out.replacement.is_none() && out.warnings.is_empty());
    pending_call(&t, "c2", "bash");
    let out = t
        .record_tool_result(
            Message::tool_result("c2", "bash", "noise", false),
            None,
            None,
        )
        .unwrap();
    assert_eq!(out.decision, Decision::Edit("(noise dropped)".into()));
    let edit = out.replacement.unwrap();
    assert_eq!(edit.edit_target(), Some(out.original.id));
    assert_eq!(
        edit.commit.message.as_deref(),
        Some("edited by the tool_result handler")
    );
    pending_call(&t, "c3", "bash");
    let out = t
        .record_tool_result(
            Message::tool_result("c3", "bash", "silent", false),
            None,
            None,
        )
        .unwrap();
    assert_eq!(out.decision, Decision::Approve);
    assert!(
        out.warnings[0].contains("decided nothing"),
        "{:?}",
        out.warnings
    );

    // Without the handler, the policy applies again.
    t.off_tool_result();
    pending_call(&t, "c4", "bash");
    let out = t
        .record_tool_result(
            Message::tool_result("c4", "bash", big_output(50), false),
            None,
            None,
        )
        .unwrap();
    assert!(out.replacement.is_some());
}

#[test]
fn a_failing_summarizer_keeps_the_original_and_warns() {
    use tract_core::{Decision, FnSummarizer, SummaryRequest};
    let t = Tract::in_memory().unwrap();
    pending_call(&t, "g1", "grep");
    let failing = FnSummarizer::new("down", |_: &SummaryRequest| {
        Err(tract_core::Error::Summarizer {
            summarizer: "callable:down".into(),
            reason: "HTTP 503 after 3 tries".into(),
        })
    });
    let summarize = Decision::Summarize {
        instructions: None,
        target_tokens: None,
    };
    let out = t
        .record_tool_result(
            Message::tool_result("g1", "grep", big_output(30), false),
            Some(summarize.clone()),
            Some(&failing),
        )
        .unwrap();
    assert!(out.replacement.is_none());
    assert!(out.warnings[0].contains("HTTP 503"), "{:?}", out.warnings);
    let shown = t.compile().unwrap();
    let messages = shown.messages();
    assert_eq!(
        messages.last().unwrap().message.content.text(),
        big_output(30)
    );
    // Nor is an empty summary.
    pending_call(&t, "g3", "grep");
    let empty = FnSummarizer::new("blank", |_: &SummaryRequest| Ok("  ".to_string()));
    let out = t
        .record_tool_result(
            Message::tool_result("g3", "grep", big_output(30), false),
            Some(summarize.clone()),
            Some(&empty),
        )
        .unwrap();
    assert!(out.replacement.is_none());
    assert!(
        out.warnings[0].contains("empty summary"),
        "{:?}",
        out.warnings
    );
    // A summary that is not shorter is not committed either.
    pending_call(&t, "g2", "grep");
    let out = t
        .record_tool_result(
            Message::tool_result("g2", "grep", "a.rs:1", false),
            Some(summarize),
            None,
        )
        .unwrap();
    assert!(out.replacement.is_none());
    assert!(
        out.warnings[0].contains("not shorter"),
        "{:?}",
        out.warnings
    );
    // Not a tool result.
    let e = t
        .record_tool_result(Message::text(Role::User, "hi"), None, None)
        .unwrap_err();
    assert!(e.to_string().contains("role tool"), "{e}");
}

#[test]
fn a_batch_applies_the_policy_to_each_result_in_one_transaction() {
    use tract_core::{FnSummarizer, SummaryRequest, ToolPolicy};
    let t = Tract::in_memory().unwrap();
    t.set_tool_policy(&ToolPolicy {
        instructions: [("grep".to_string(), "paths only".to_string())].into(),
        ..ToolPolicy::default()
    })
    .unwrap();
    let asked = std::sync::Mutex::new(Vec::new());
    let f = FnSummarizer::new("test", |req: &SummaryRequest| {
        asked
            .lock()
            .unwrap()
            .push(req.to_chat_messages().to_string());
        Ok("grep: src/a.rs".to_string())
    });
    let mut call_message = Message::text(Role::Assistant, "");
    call_message.tool_calls = vec![call("g1", "grep")];
    let batch = vec![
        Message::text(Role::User, "where?"),
        call_message,
        Message::tool_result("g1", "grep", big_output(30), false),
        Message::text(Role::Assistant, "in src/a.rs"),
    ];
    let reflog_before = t.reflog("main", None).unwrap().len();
    let out = t.append_batch_with_policy(batch.clone(), Some(&f)).unwrap();
    assert_eq!(out.len(), 4);
    assert!(out[2].replacement.is_some() && out[3].replacement.is_none());
    assert_eq!(
        t.reflog("main", None).unwrap().len(),
        reflog_before + 1,
        "one transaction"
    );
    // The call, made earlier in the same batch, is sent with its result.
    assert!(asked.lock().unwrap()[0].contains("call g1 grep"));
    let shown = t.compile().unwrap();
    let texts: Vec<String> = shown
        .messages()
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect();
    assert_eq!(texts[2], "grep: src/a.rs");

    // A rejection anywhere commits none of the batch.
    t.on_tool_result(|p| p.reject("no"));
    let head = t.head().unwrap();
    assert!(matches!(
        t.append_batch_with_policy(batch, Some(&f)).unwrap_err(),
        Error::Rejected { .. }
    ));
    assert_eq!(t.head().unwrap(), head);
}

/// The layers of tract-core, lowest first (docs/architecture.md). A module may use only
/// modules of lower layers: no cycles, and nothing low reaches up to operations or the handle.
const LAYERS: &[&[&str]] = &[
    &["clock", "id"],
    &["error"],
    &["object"],
    &["tokens", "json", "codec", "refs"],
    &["stats"],
    &["backend", "postgres_connect"],
    &["postgres_writes"],
    &["group", "redb_backend", "postgres_backend"],
    &["store"],
    &[
        "revision",
        "view",
        "info",
        "summarize",
        "decision",
        "ancestry",
    ],
    &["responses", "claude_code"],
    &["transcript"],
    &["llm", "cache", "compile"],
    &["repo"],
    &["txn"],
    &[
        "append", "edit", "branch", "history", "search", "policy", "merge", "fsck", "redact", "gc",
        "imports", "exports", "record",
    ],
    &["tools", "clear", "compress", "hooks", "sync"],
    &["page"],
    &["tract"],
    &["environment", "fuzzing", "capture"],
];

#[test]
fn modules_depend_only_on_lower_layers() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layer_of = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let module = path.file_stem().unwrap().to_str().unwrap().to_string();
        if module == "lib" {
            continue;
        }
        let layer = layer_of(&module)
            .unwrap_or_else(|| panic!("module {module} has no layer in LAYERS: place it"));
        let text = std::fs::read_to_string(&path).unwrap();
        // Unit tests may reach anywhere.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for dep in crate_uses(code) {
            if dep == module {
                continue;
            }
            if let Some(dl) = layer_of(dep) {
                assert!(
                    dl < layer,
                    "{module} (layer {layer}) uses {dep} (layer {dl}): dependencies point down"
                );
            }
        }
        seen.push(module);
    }
    let listed: usize = LAYERS.iter().map(|l| l.len()).sum();
    assert_eq!(
        seen.len(),
        listed,
        "LAYERS names a module that does not exist"
    );
}

/// The modules a crate's source names with `crate::...` (`crate::a::b`, `crate::{a, b::c}`).
fn crate_uses(code: &str) -> Vec<&str> {
    static USE_OF: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let use_of = USE_OF.get_or_init(|| regex::Regex::new(r"crate::(?:(\w+)|\{([^}]*)\})").unwrap());
    use_of
        .captures_iter(code)
        .flat_map(|cap| match (cap.get(1), cap.get(2)) {
            (Some(one), _) => vec![one.as_str()],
            (None, Some(group)) => group
                .as_str()
                .split(',')
                .filter_map(|p| p.trim().split("::").next())
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The other crates of the workspace have no cycle among their top-level modules either: each
/// module's `crate::...` uses (in its file, or in its folder for a module with submodules) form
/// a graph without a cycle.
#[test]
fn the_other_crates_modules_have_no_cycle() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["tract-cli", "tract-py", "tract-bench"] {
        let src = crates.join(krate).join("src");
        let mut deps: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            Default::default();
        let mut files = vec![src.clone()];
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            // The top-level module a file belongs to: its own name, or its folder's.
            let rel = path.strip_prefix(&src).unwrap();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_str()
                .unwrap();
            let module = first.trim_end_matches(".rs").to_string();
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            deps.entry(module.clone()).or_default().extend(
                crate_uses(code)
                    .into_iter()
                    .filter(|d| !d.is_empty() && *d != module)
                    .map(str::to_string),
            );
        }
        // Depth-first search: a module met again while on the current path closes a cycle.
        fn visit(
            m: &str,
            deps: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut std::collections::BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(i) = path.iter().position(|p| p == m) {
                let mut cycle = path[i..].to_vec();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            if done.contains(m) {
                return None;
            }
            path.push(m.to_string());
            for d in deps.get(m).into_iter().flatten() {
                if deps.contains_key(d)
                    && let Some(c) = visit(d, deps, path, done)
                {
                    return Some(c);
                }
            }
            path.pop();
            done.insert(m.to_string());
            None
        }
        let mut done = Default::default();
        for m in deps.keys() {
            if let Some(cycle) = visit(m, &deps, &mut Vec::new(), &mut done) {
                panic!("{krate}: modules in a cycle: {}", cycle.join(" -> "));
            }
        }
        assert!(!deps.is_empty(), "{krate}: no module found in {src:?}");
    }
}

/// The inputs of a fuzz target's corpus in `fuzz/corpus/` (the inputs that reached new code,
/// and every input that once failed), or none where the repository's fuzz folder is absent.
fn fuzz_corpus(target: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .map(|e| {
            let path = e.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            (path, data)
        })
        .collect()
}

/// The fuzz corpora replay as the targets run them (fuzz/fuzz_targets): nothing panics, what
/// decodes is canonical, parsed messages and revisions survive a round trip, and a damaged
/// store is an error. Nothing here touches a backend's server, so the PostgreSQL run of the
/// suite does not replay them again.
#[test]
fn fuzz_corpora_replay() {
    if postgres_url().is_some() {
        return;
    }
    for (path, data) in fuzz_corpus("object_decode") {
        if let Ok(m) = Message::decode(&data) {
            assert_eq!(m.encode().unwrap(), data, "{}", path.display());
        }
        if let Ok(c) = tract_core::Commit::decode(&data) {
            assert_eq!(c.encode().unwrap(), data, "{}", path.display());
        }
    }
    for (path, data) in fuzz_corpus("json_messages") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        for m in tract_core::json::messages_from_text(text).unwrap_or_default() {
            let back = tract_core::json::message_from_json(&tract_core::json::message_to_json(&m));
            assert_eq!(back.unwrap(), m, "{}", path.display());
        }
    }
    for (path, data) in fuzz_corpus("revision_parse") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        if let Ok(rev) = Rev::parse(text) {
            let again = Rev::parse(&rev.to_string()).unwrap();
            assert_eq!(again, rev, "{}", path.display());
        }
        let _ = BranchName::new(text);
        let _ = tract_core::HexPrefix::new(text);
    }
    for (path, data) in fuzz_corpus("transcript_parse") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        if let Err(broken) = tract_core::transcript::check_claude_code(text) {
            panic!("{}: {broken}", path.display());
        }
        let formats = std::iter::once(None).chain(
            tract_core::transcript::Format::ALL
                .iter()
                .map(|(_, f)| Some(*f)),
        );
        for format in formats {
            if let Ok(tract_core::transcript::Transcript::Steps { steps, .. }) =
                tract_core::transcript::parse(text, format)
            {
                for step in &steps {
                    if let tract_core::transcript::Step::Message { message, .. } = step {
                        let back = tract_core::json::message_from_json(
                            &tract_core::json::message_to_json(message),
                        )
                        .unwrap();
                        assert_eq!(&back, message, "{}", path.display());
                    }
                }
            }
        }
    }
    for (_, data) in fuzz_corpus("store_open") {
        let options = tract_core::StoreOptions::default();
        let Ok(store) = tract_core::Store::from_bytes(&data, options) else {
            continue;
        };
        let Ok(t) = Tract::from_store(store, &Bind::HeadAtOpen) else {
            continue;
        };
        let _ = t.compile();
        let _ = t.log(None, Some(50));
        let _ = t.branches();
        let _ = t.status();
        let _ = t.find_tool_turns(None);
        let _ = t.search(&SearchQuery {
            query: "e".into(),
            history: true,
            limit: Some(20),
            ..SearchQuery::default()
        });
        let _ = t.log_graph(None, Some(50));
    }
}

/// Found by fuzzing (store_open): a store whose allocator state is damaged opens and reads,
/// but redb panicked when the last handle closed it (it writes that state on close).
#[test]
fn a_damaged_store_closes_without_a_panic() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/store_open/crash-close-allocator-state");
    let data = std::fs::read(path).unwrap();
    let store = tract_core::Store::from_bytes(&data, tract_core::StoreOptions::default()).unwrap();
    let t = Tract::from_store(store, &Bind::HeadAtOpen).unwrap();
    let _ = t.log(None, Some(50));
    drop(t);
}

/// Found by fuzzing (store_open): a damaged page made redb panic in the middle of a read
/// (a value's bounds past its page) after the store had opened; reads are guarded as opening
/// is, so the damage is an error.
#[test]
fn a_damaged_page_read_after_opening_is_an_error() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/store_open/crash-read-value-out-of-bounds");
    let data = std::fs::read(path).unwrap();
    let store = tract_core::Store::from_bytes(&data, tract_core::StoreOptions::default()).unwrap();
    let t = Tract::from_store(store, &Bind::HeadAtOpen).unwrap();
    let compiled = t.compile();
    assert!(
        matches!(compiled, Err(Error::Corrupt { .. })),
        "{compiled:?}"
    );
    // Reads inside a write transaction and fsck's table scans are guarded the same way: an
    // error, never a panic.
    let appended = t.user("appended to a damaged store");
    assert!(appended.is_err(), "{appended:?}");
    let checked = t.fsck();
    assert!(
        checked.as_ref().map_or(true, |r| !r.is_clean()),
        "{checked:?}"
    );
}

/// Found by fuzzing (store_open): a damaged page made redb panic while opening checked the
/// format version (after the engine itself had opened the file).
#[test]
fn a_damaged_page_read_by_the_format_check_is_an_error() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/store_open/crash-format-check-page");
    let data = std::fs::read(path).unwrap();
    let opened = tract_core::Store::from_bytes(&data, tract_core::StoreOptions::default());
    assert!(matches!(opened, Err(Error::Corrupt { .. })), "{opened:?}");
}

/// Found by fuzzing (store_open): a damaged page of redb's freed-page table made its first
/// commit panic (a page in a region the file does not have), and finishing the table's
/// removals while that panic unwound panicked again, which aborts the process; it happened on
/// any append and on closing. The vendored redb skips that work while unwinding
/// (vendor/README.md): an append is an error and closing is quiet.
#[test]
fn a_damaged_freed_page_table_is_an_error_not_an_abort() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/store_open/crash-close-freed-pages-double-panic");
    let data = std::fs::read(path).unwrap();
    let store = tract_core::Store::from_bytes(&data, tract_core::StoreOptions::default()).unwrap();
    let t = Tract::from_store(store, &Bind::HeadAtOpen).unwrap();
    let _ = t.log(None, Some(50));
    let appended = t.user("appended to a damaged store");
    assert!(appended.is_err(), "{appended:?}");
    let _ = t.fsck();
    drop(t);
}

/// Found by fuzzing (store_open): a damaged page number claimed a page of 2 GiB (or 4 GiB),
/// which redb allocated and zeroed before reading it from a 57 KB file. The vendored redb
/// checks that a large page lies in the file first (vendor/README.md): opening is an error,
/// at once, and nothing near that size is allocated.
#[test]
fn a_page_claimed_past_the_end_of_the_file_is_an_error_without_the_allocation() {
    for name in ["oom-page-past-the-end-2GiB", "oom-page-past-the-end-4GiB"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/store_open")
            .join(name);
        let data = std::fs::read(path).unwrap();
        let opened = tract_core::Store::from_bytes(&data, tract_core::StoreOptions::default())
            .and_then(|s| Tract::from_store(s, &Bind::HeadAtOpen))
            .and_then(|t| t.compile().map(|_| t));
        assert!(
            matches!(opened, Err(Error::Corrupt { .. })),
            "{name}: {opened:?}"
        );
    }
    // This process's peak resident memory stays far below the pages claimed.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(peak_kib < 1_500_000, "peak RSS {peak_kib} KiB");
}

// ----- PostgreSQL: what only a database store has (the run with TRACT_TEST_POSTGRES) -----

/// A client on the database of a test store's URL, in the store's schema, to change rows as
/// nothing but SQL would. `None` in the run without a server.
/// A connection to the server itself (`TRACT_TEST_POSTGRES_DIRECT` when the store's URL goes
/// through a pooler), for the tests that look at or change rows behind tract's back.
fn sql_on(path: &std::path::Path) -> Option<postgres::Client> {
    postgres_url()?;
    let url = path.to_str().unwrap();
    let (base, schema) = url
        .rsplit_once("&schema=")
        .or_else(|| url.rsplit_once("?schema="))?;
    let direct = std::env::var("TRACT_TEST_POSTGRES_DIRECT").ok();
    let base = direct.as_deref().filter(|d| !d.is_empty()).unwrap_or(base);
    let mut client = postgres::Client::connect(base, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("SET search_path TO \"{schema}\""))
        .unwrap();
    Some(client)
}

#[test]
fn postgres_a_changed_row_is_never_served_and_fsck_names_it() {
    let (_d, path) = temp_store();
    let Some(mut sql) = sql_on(&path) else {
        return;
    };
    let t = Tract::open(&path).unwrap();
    t.system("be brief").unwrap();
    let kept = t.user("msg 1003").unwrap();
    t.assistant("ok", vec![]).unwrap();
    let blob = *kept.commit.blob.unwrap().as_bytes();
    // Change one byte of the record's payload, as a stray UPDATE would.
    let n = sql
        .execute(
            "UPDATE blobs SET record = set_byte(record, length(record) - 2, \
             get_byte(record, length(record) - 2) # 1) WHERE id = $1",
            &[&blob.as_slice()],
        )
        .unwrap();
    assert_eq!(n, 1);
    let cold = Tract::open_existing(&path).unwrap();
    match cold.compile() {
        Err(Error::CorruptObject {
            kind: "blob", id, ..
        }) => {
            assert_eq!(id, tract_core::BlobId::from_bytes(blob).to_hex())
        }
        other => panic!("expected CorruptObject, got {other:?}"),
    }
    let report = cold.fsck().unwrap();
    assert!(!report.is_clean());
    assert!(
        report.problems.iter().any(|p| p
            .subject
            .contains(&tract_core::BlobId::from_bytes(blob).to_hex()[..10])),
        "{report:?}"
    );
}

/// A branch moved behind a writer's back by something that takes no lock (a stray `UPDATE`):
/// the writer's move, held back until its commit, names the tip it replaces, so it is
/// `HeadMoved` and nothing of its transaction is committed.
#[test]
fn postgres_a_ref_moved_behind_the_lock_is_head_moved_and_commits_nothing() {
    let (_d, path) = temp_store();
    let Some(mut sql) = sql_on(&path) else {
        return;
    };
    let t = Tract::open(&path).unwrap();
    let first = t.user("one").unwrap();
    let second = t.user("two").unwrap();
    let reflog = |sql: &mut postgres::Client| -> i64 {
        sql.query_one("SELECT count(*) FROM reflog", &[])
            .unwrap()
            .get(0)
    };
    let logged = reflog(&mut sql);
    let store = t.store().clone();
    let mut w = store.write_refs(&["main"]).unwrap();
    assert_eq!(w.branch("main").unwrap(), Some(second.id));
    let n = sql
        .execute(
            "UPDATE refs SET tip = $1 WHERE name = 'main'",
            &[&first.id.as_bytes().as_slice()],
        )
        .unwrap();
    assert_eq!(n, 1);
    let stray = Message::text(Role::User, "stray");
    let blob = w
        .objects()
        .unwrap()
        .put_blob(&stray.encode().unwrap(), 1)
        .unwrap();
    // Read under the lock, the tip is still `second`: the move is accepted and held back.
    w.set_branch("branch-b", Some(second.id), "test").unwrap();
    w.set_branch("main", Some(first.id), "test").unwrap();
    match w.commit() {
        Err(Error::HeadMoved {
            branch,
            expected,
            actual,
        }) => {
            assert_eq!(branch, "main");
            assert_eq!(expected, Some(second.id));
            assert_eq!(actual, Some(first.id));
        }
        other => panic!("expected HeadMoved, got {other:?}"),
    }
    assert_eq!(reflog(&mut sql), logged, "no reflog entry committed");
    let found: i64 = sql
        .query_one(
            "SELECT count(*) FROM blobs WHERE id = $1",
            &[&blob.as_bytes().as_slice()],
        )
        .unwrap()
        .get(0);
    assert_eq!(found, 0, "no object committed");
    assert_eq!(
        Tract::open_existing(&path)
            .unwrap()
            .branches()
            .unwrap()
            .len(),
        1,
        "branch-b not created"
    );
}

/// Connections cut by the server in the middle of appends (an administrator's
/// `pg_terminate_backend`, a failover): each append either commits or is a `Database` error,
/// never another kind, the next append reconnects, and nothing acknowledged is lost.
#[test]
fn postgres_connections_cut_mid_append_are_database_errors_and_lose_nothing() {
    let (_d, path) = temp_store();
    let Some(mut sql) = sql_on(&path) else {
        return;
    };
    // The store's own connections carry a name, so only they are cut. Behind a pooler the
    // server's connections serve every client in turn, so cutting them would cut the other
    // tests' too: this test reaches the server directly.
    let tag = format!("tcut{}", std::process::id());
    let url = path.to_str().unwrap();
    let url = match std::env::var("TRACT_TEST_POSTGRES_DIRECT") {
        Ok(direct) if !direct.is_empty() => {
            let schema = url.rsplit_once("schema=").map_or("", |(_, s)| s);
            let sep = if direct.contains('?') { '&' } else { '?' };
            format!("{direct}{sep}schema={schema}")
        }
        _ => url.to_string(),
    };
    let tagged = format!("{url}&application_name={tag}");
    let t = Tract::open(&tagged).unwrap();
    let (acked, refused) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let (mut acked, mut refused) = (Vec::new(), 0);
            for i in 0..400 {
                let text = format!("m {i}");
                match t.user(&text) {
                    Ok(_) => acked.push(text),
                    Err(Error::Database { .. }) => refused += 1,
                    Err(other) => panic!("a cut connection is a Database error, not {other:?}"),
                }
            }
            (acked, refused)
        });
        while !writer.is_finished() {
            sql.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                &[&tag],
            )
            .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(40));
        }
        writer.join().unwrap()
    });
    assert!(refused > 0, "no append met a cut connection");
    assert!(
        acked.len() > 100,
        "appends reconnect: {} of 400",
        acked.len()
    );
    let cold = Tract::open_existing(&url).unwrap();
    let shown: Vec<String> = cold
        .compile()
        .unwrap()
        .to_openai()
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    // An append whose COMMIT reached the server just before its connection was cut may be
    // there without its acknowledgment; every acknowledged one is there, once and in order.
    let kept: Vec<&String> = shown.iter().filter(|c| acked.contains(c)).collect();
    assert_eq!(kept, acked.iter().collect::<Vec<_>>());
    assert!(shown.len() <= acked.len() + refused);
    assert!(cold.fsck().unwrap().is_clean());
}

#[test]
fn postgres_a_newer_schema_format_is_a_clear_error_and_changes_nothing() {
    let (_d, path) = temp_store();
    let Some(mut sql) = sql_on(&path) else {
        return;
    };
    Tract::open(&path).unwrap().user("kept").unwrap();
    sql.execute(
        "UPDATE meta SET value = $1 WHERE key = 'format'",
        &[&99u32.to_le_bytes().as_slice()],
    )
    .unwrap();
    match Tract::open(&path) {
        Err(Error::NewerFormat { found: 99, .. }) => {}
        other => panic!("expected NewerFormat, got {other:?}"),
    }
    let rows: i64 = sql
        .query_one("SELECT count(*) FROM commits", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 1);
}

#[test]
fn postgres_bad_urls_servers_and_credentials_are_clear_errors() {
    let Some(url) = postgres_url() else {
        return;
    };
    let (_d, path) = temp_store();
    // A schema with no store, opened as an existing store: not a store, nothing created.
    match Tract::open_existing(&path) {
        Err(Error::NotAStore { reason, .. }) => assert!(reason.contains("holds no tract store")),
        other => panic!("expected NotAStore, got {other:?}"),
    }
    // A scheme tract does not know.
    match Tract::open("mysql://root@localhost/db") {
        Err(Error::InvalidInput { message }) => assert!(message.contains("unknown store scheme")),
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    // A schema name that is not a plain name.
    assert!(matches!(
        Tract::open(format!("{url}?schema=Robert');DROP")),
        Err(Error::InvalidInput { .. })
    ));
    // Wrong credentials: the password never shows.
    let wrong = url.replacen(":tract-test-password@", ":not-the-Secret-42@", 1);
    assert_ne!(wrong, url, "the test server's URL carries its password");
    match Tract::open(&wrong) {
        Err(e @ Error::Database { .. }) => {
            let text = format!("{e} {e:?}");
            // The server's words, or a pooler's in front of it.
            assert!(
                text.contains("password authentication failed")
                    || text.contains("SASL authentication failed"),
                "{text}"
            );
            assert!(!text.contains("not-the-Secret-42"), "{text}");
        }
        other => panic!("expected Database, got {other:?}"),
    }
    // Nothing listens: an error within the connect timeout, not a hang.
    let start = std::time::Instant::now();
    match Tract::open("postgresql://tract:pw-Secret-7@127.0.0.1:1/tract") {
        Err(e @ Error::Database { .. }) => assert!(!e.to_string().contains("pw-Secret-7")),
        other => panic!("expected Database, got {other:?}"),
    }
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn postgres_stores_in_two_schemas_of_one_database_are_apart() {
    let (_d, a) = temp_store();
    let (_e, b) = temp_store();
    if postgres_url().is_none() {
        return;
    }
    let ta = Tract::open(&a).unwrap();
    let tb = Tract::open(&b).unwrap();
    ta.user("in a").unwrap();
    tb.user("in b").unwrap();
    tb.user("in b again").unwrap();
    assert_eq!(texts(&ta), vec!["in a"]);
    assert_eq!(texts(&tb), vec!["in b", "in b again"]);
    // Where the store is, for status and errors, never shows the password.
    let shown = ta.store().location().unwrap();
    assert!(
        shown.contains("schema=") && !shown.contains("tract-test-password"),
        "{shown}"
    );
}

// ----- sync: push, pull and clone by hash (on this run's backend, and across backends) -----

/// A store with the history sync must carry: tool calls and results, a large chunked result,
/// an edit, a sub-agent merged back, a compression and a redaction, on two branches.
fn rich_history(path: &std::path::Path) -> Tract {
    let t = open_bound(path, Bind::Branch(branch("main")));
    t.system("sys").unwrap();
    t.user("find the bug").unwrap();
    t.assistant("", vec![call("c1", "grep")]).unwrap();
    t.tool_result("c1", "grep", "x".repeat(3 << 20), false)
        .unwrap();
    let sub = t.fork(&branch("sub"), None).unwrap();
    sub.user("sub task").unwrap();
    sub.assistant("sub answer", vec![]).unwrap();
    t.user("meanwhile").unwrap();
    t.merge(&branch("sub"), &MergeRequest::default()).unwrap();
    let secret = t.user("my password is hunter2").unwrap();
    t.redact(secret.id, "a password").unwrap();
    t.assistant("", vec![call("c2", "read_file")]).unwrap();
    t.tool_result("c2", "read_file", "fn main() {}", false)
        .unwrap();
    let found = t.find_tool_results(Some("read_file"), None, None).unwrap();
    t.edit(
        found[0].id,
        Content::Text("fn main() { /* edited */ }".into()),
    )
    .unwrap();
    let ids: Vec<Rev> = t
        .find_tool_turns(Some("grep"))
        .unwrap()
        .iter()
        .flat_map(|turn| turn.all_hashes())
        .map(Rev::from)
        .collect();
    t.compress(&tract_core::CompressRequest {
        commits: Some(ids),
        summarizer: Some(&tract_core::Manual("grep found it".into())),
        ..tract_core::CompressRequest::default()
    })
    .unwrap();
    t.assistant("done", vec![]).unwrap();
    t
}

fn graph_ids(t: &Tract, name: &str) -> Vec<tract_core::CommitId> {
    t.log_graph(Some(&Rev::parse(name).unwrap()), None)
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect()
}

fn all_branches(t: &Tract) -> Vec<(String, tract_core::CommitId)> {
    t.branches()
        .unwrap()
        .into_iter()
        .map(|b| (b.name.to_string(), b.head))
        .collect()
}

#[test]
fn push_sends_only_what_the_receiver_lacks_and_clones_of_clones_keep_every_id() {
    let (_a, a) = temp_store();
    let (_b, b) = temp_store();
    let src = rich_history(&a);
    Tract::open(&b).unwrap();
    let options = tract_core::SyncOptions::default();
    let first = src.push(&b, &options).unwrap();
    let commits = src.log_graph(None, None).unwrap().len() as u64;
    assert_eq!(first.commits, commits, "every commit of both branches once");
    assert_eq!(first.branches.len(), 2);
    assert!(first.branches.iter().all(|s| s.old.is_none() && !s.forced));
    let dst = open_bound(&b, Bind::Branch(branch("main")));
    assert_eq!(all_branches(&dst), all_branches(&src));
    assert_eq!(graph_ids(&dst, "main"), graph_ids(&src, "main"));
    assert_eq!(
        dst.compile().unwrap().to_openai(),
        src.compile().unwrap().to_openai()
    );
    assert!(dst.fsck().unwrap().is_clean());
    // The redaction travelled as a tombstone: the text is nowhere in the receiver.
    let hits = dst
        .search(&SearchQuery {
            query: "hunter2".into(),
            history: true,
            ..SearchQuery::default()
        })
        .unwrap();
    assert!(hits.is_empty());
    // Nothing new: nothing travels.
    let again = src.push(&b, &options).unwrap();
    assert_eq!((again.commits, again.blobs), (0, 0));
    assert!(again.branches.iter().all(|s| s.up_to_date()));
    // Two new messages: two commits travel, and the branch fast-forwards.
    src.user("one more").unwrap();
    src.assistant("and done", vec![]).unwrap();
    let more = src.push(&b, &options).unwrap();
    assert_eq!((more.commits, more.blobs), (2, 2));
    assert_eq!(
        dst.compile().unwrap().to_openai(),
        src.compile().unwrap().to_openai()
    );
    // A clone of a clone has identical ids, branches, HEAD and view.
    let (_c, c) = temp_store();
    let (_d, d) = temp_store();
    let (cloned, _) = Tract::clone_store(&b, &c, tract_core::StoreOptions::default()).unwrap();
    let (twice, report) = Tract::clone_store(&c, &d, tract_core::StoreOptions::default()).unwrap();
    assert_eq!(report.commits, commits + 2);
    for t in [&cloned, &twice] {
        assert_eq!(all_branches(t), all_branches(&src));
        assert_eq!(graph_ids(t, "main"), graph_ids(&src, "main"));
        assert_eq!(
            t.store_head().unwrap().target,
            src.store_head().unwrap().target
        );
        assert!(t.fsck().unwrap().is_clean());
    }
    assert_eq!(
        twice.compile().unwrap().to_openai(),
        src.compile().unwrap().to_openai()
    );
}

#[test]
fn a_diverged_branch_is_refused_unless_forced_and_its_old_tip_stays_in_the_reflog() {
    let (_a, a) = temp_store();
    let (_b, b) = temp_store();
    let src = open_bound(&a, Bind::Branch(branch("main")));
    src.user("shared").unwrap();
    let (dst, _) = Tract::clone_store(&a, &b, tract_core::StoreOptions::default()).unwrap();
    let ours = dst.user("only in the receiver").unwrap().id;
    let theirs = src.user("only in the sender").unwrap().id;
    match src.push(&b, &tract_core::SyncOptions::default()) {
        Err(Error::Diverged {
            branch,
            receiver,
            sender,
        }) => assert_eq!((branch.as_str(), receiver, sender), ("main", ours, theirs)),
        other => panic!("expected Diverged, got {other:?}"),
    }
    assert_eq!(dst.resolve(&Rev::parse("main").unwrap()).unwrap(), ours);
    // The receiver pulling from the sender diverges the same way.
    assert!(matches!(
        dst.pull(&a, &tract_core::SyncOptions::default()),
        Err(Error::Diverged { .. })
    ));
    let forced = src
        .push(
            &b,
            &tract_core::SyncOptions {
                force: true,
                ..tract_core::SyncOptions::default()
            },
        )
        .unwrap();
    assert!(forced.branches[0].forced);
    let dst = Tract::open_existing(&b).unwrap();
    assert_eq!(dst.resolve(&Rev::parse("main").unwrap()).unwrap(), theirs);
    let moves = dst.reflog("main", None).unwrap();
    assert_eq!(
        moves[0].old,
        Some(ours),
        "the old tip is kept in the reflog"
    );
    assert!(dst.get_commit(ours).is_ok());
}

#[test]
fn pull_brings_chosen_branches_and_settings_and_refuses_bad_input() {
    let (_a, a) = temp_store();
    let (_b, b) = temp_store();
    let src = open_bound(&a, Bind::Branch(branch("main")));
    src.user("on main").unwrap();
    src.fork(&branch("side"), None)
        .unwrap()
        .user("on side")
        .unwrap();
    let policy = tract_core::ToolPolicy {
        auto_threshold: Some(500),
        ..tract_core::ToolPolicy::default()
    };
    src.set_tool_policy(&policy).unwrap();
    let dst = Tract::open(&b).unwrap();
    let only_side = tract_core::SyncOptions {
        branches: Some(vec![branch("side")]),
        settings: true,
        ..tract_core::SyncOptions::default()
    };
    let report = dst.pull(&a, &only_side).unwrap();
    assert!(report.settings);
    assert_eq!(
        all_branches(&dst)
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>(),
        ["side"]
    );
    assert_eq!(dst.tool_policy().unwrap(), policy);
    // A branch the sender does not have.
    let nope = tract_core::SyncOptions {
        branches: Some(vec![branch("nope")]),
        ..tract_core::SyncOptions::default()
    };
    assert!(matches!(
        dst.pull(&a, &nope),
        Err(Error::UnknownBranch { name, .. }) if name == "nope"
    ));
    // A receiver that is not a tract store, or not there at all: nothing is written.
    let dir = tempfile::tempdir().unwrap();
    let not_a_store = dir.path().join("notes.txt");
    std::fs::write(&not_a_store, "hello").unwrap();
    assert!(matches!(
        src.push(&not_a_store, &tract_core::SyncOptions::default()),
        Err(Error::NotAStore { .. })
    ));
    assert_eq!(std::fs::read_to_string(&not_a_store).unwrap(), "hello");
    let missing = dir.path().join("missing.redb");
    assert!(
        src.push(&missing, &tract_core::SyncOptions::default())
            .is_err()
    );
    assert!(!missing.exists());
    // Cloning into a store that already has branches.
    assert!(matches!(
        Tract::clone_store(&a, &b, tract_core::StoreOptions::default()),
        Err(Error::InvalidOperation { .. })
    ));
}

#[test]
fn sync_between_a_file_and_postgresql_in_both_directions_keeps_every_id() {
    if postgres_url().is_none() {
        return;
    }
    let (_a, pg) = temp_store();
    let (_f, file) = file_store();
    let (_g, back) = file_store();
    let src = rich_history(&file);
    let (on_pg, _) = Tract::clone_store(&file, &pg, tract_core::StoreOptions::default()).unwrap();
    let (again, _) = Tract::clone_store(&pg, &back, tract_core::StoreOptions::default()).unwrap();
    for t in [&on_pg, &again] {
        assert_eq!(all_branches(t), all_branches(&src));
        assert_eq!(graph_ids(t, "main"), graph_ids(&src, "main"));
        assert!(t.fsck().unwrap().is_clean());
    }
    src.user("later").unwrap();
    assert_eq!(
        src.push(&pg, &tract_core::SyncOptions::default())
            .unwrap()
            .commits,
        1
    );
    assert_eq!(
        again
            .pull(&pg, &tract_core::SyncOptions::default())
            .unwrap()
            .commits,
        1
    );
    assert_eq!(graph_ids(&again, "main"), graph_ids(&src, "main"));
}

// ----- transcripts: import -----

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

#[test]
fn a_claude_code_session_imports_with_its_thinking_tools_times_and_compaction() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("sessions/cc")));
    let file = fixture("claude-code-session.jsonl");
    let report = t.import_file(&file, None).unwrap();
    assert_eq!(
        report.format,
        Some(tract_core::transcript::Format::ClaudeCode)
    );
    assert_eq!((report.added, report.already), (10, 0));
    // The snapshot, the progress line and the summary line carry no message; the retry is
    // off the conversation's path.
    assert_eq!((report.skipped, report.off_path), (3, 1));
    // The view: the compaction replaced everything before it with its summary.
    assert_eq!(
        texts(&t),
        [
            "This session is being continued from a previous conversation. Summary: DATABASE_URL is read in config.py:42; one test fails.",
            "Fix the failing test.",
            "Fixed: the test expected the old URL."
        ]
    );
    // History keeps every message, one assistant message per API response, the thinking
    // block verbatim with its signature, tool results named after their calls.
    // The retry the reader leaves out is kept as a record, the line verbatim.
    let records = t.records(Some("claude_code.line"), None, None).unwrap();
    assert_eq!(records.len(), 1);
    assert!(
        records[0].data.contains("\"uuid\":\"r1\""),
        "{}",
        records[0].data
    );
    let log: Vec<_> = t
        .log(None, None)
        .unwrap()
        .into_iter()
        .filter(|c| c.op() != "record")
        .collect();
    assert_eq!(log.len(), 10);
    // Each commit names the lines it holds.
    assert_eq!(log[0].commit.message.as_deref(), Some("claude-code a6"));
    let first_answer = &log[8];
    let m = first_answer.message.as_ref().unwrap();
    let body = tract_core::json::message_to_json(m);
    assert_eq!(
        body["content"][0],
        json!({"type": "thinking", "thinking": "I should grep for it.", "signature": "EqQBCkYIBxgCKkB4c2lnbmF0dXJl"})
    );
    assert_eq!(
        body["content"][1],
        json!({"type": "text", "text": "Let me search."})
    );
    assert_eq!(m.tool_calls[0].name, "Grep");
    assert_eq!(
        m.tool_calls[0].arguments,
        r#"{"pattern":"DATABASE_URL","path":"."}"#
    );
    let results = t.find_tool_results(Some("Bash"), None, None).unwrap();
    assert!(results.is_empty(), "compressed out of view");
    let grep = log
        .iter()
        .find(|c| {
            c.message
                .as_ref()
                .is_some_and(|m| m.name.as_deref() == Some("Grep"))
        })
        .unwrap();
    assert_eq!(grep.message.as_ref().unwrap().role, Role::Tool);
    let failing = &log[3];
    assert!(failing.message.as_ref().unwrap().is_error);
    // Times are the transcript's.
    assert_eq!(log[9].commit.timestamp_us, 1_795_165_200_120_000);
    let compress = &log[2];
    assert_eq!(compress.op(), "compress");
    match &compress.commit.op {
        tract_core::Op::Compress {
            sources,
            summarizer,
            params,
            ..
        } => {
            assert_eq!(sources.len(), 7);
            assert_eq!(summarizer, "imported:claude-code");
            assert_eq!(
                params.get("trigger").map(String::as_str),
                Some("\"manual\"")
            );
        }
        other => panic!("{other:?}"),
    }
    // Importing it again adds nothing.
    let again = t.import_file(&file, None).unwrap();
    assert_eq!((again.added, again.already, again.recorded), (0, 10, 0));
    assert_eq!(t.log(None, None).unwrap().len(), 11);
}

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
    assert_eq!(first.format, Some(tract_core::transcript::Format::OpenAi));
    assert_eq!(first.added, 4);
    // Tool results take their call's tool name.
    assert_eq!(
        t.find_tool_results(Some("grep"), None, None).unwrap().len(),
        1
    );
    std::fs::write(&file, body(3)).unwrap();
    let grown = t.import_file(&file, None).unwrap();
    assert_eq!((grown.added, grown.already), (6, 4));
    assert_eq!(t.compile().unwrap().messages().len(), 10);
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
        Some(tract_core::transcript::Format::Anthropic)
    );
    let rendered = t.compile().unwrap().to_anthropic();
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

// ----- Claude Code sessions, keyed by line -----

/// A user line of a Claude Code session.
fn cc_user(uuid: &str, parent: Option<&str>, content: Value) -> String {
    json!({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "5e55e55e-0000-4000-8000-000000000001",
           "cwd": "/work/app", "isSidechain": false, "timestamp": "2026-11-20T10:00:00.000Z",
           "message": {"role": "user", "content": content}})
    .to_string()
}

/// An assistant line of a Claude Code session: one block of response `response`.
fn cc_assistant(uuid: &str, parent: &str, response: &str, block: Value) -> String {
    json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "5e55e55e-0000-4000-8000-000000000001",
           "cwd": "/work/app", "isSidechain": false, "timestamp": "2026-11-20T10:00:01.000Z",
           "message": {"id": response, "role": "assistant", "content": [block]}})
    .to_string()
}

/// A session with a response of two parallel tool calls whose results fan out.
fn cc_parallel_session() -> Vec<String> {
    let call =
        |id: &str| json!({"type": "tool_use", "id": id, "name": "Read", "input": {"file": id}});
    let result = |id: &str| json!([{"type": "tool_result", "tool_use_id": id, "content": format!("text of {id}")}]);
    vec![
        cc_user("u1", None, json!("Read both files.")),
        cc_assistant(
            "a1",
            "u1",
            "msg_1",
            json!({"type": "thinking", "thinking": "Both at once.", "signature": "c2ln"}),
        ),
        cc_assistant("a2", "a1", "msg_1", call("t1")),
        cc_assistant("a3", "a2", "msg_1", call("t2")),
        cc_user("r1", Some("a2"), result("t1")),
        cc_user("r2", Some("a3"), result("t2")),
        cc_assistant(
            "a4",
            "r2",
            "msg_2",
            json!({"type": "text", "text": "Both read."}),
        ),
    ]
}

#[test]
fn a_claude_code_session_imported_as_it_is_written_ends_as_one_import_of_the_whole_file() {
    let (dir, path) = temp_store();
    let lines = cc_parallel_session();
    let file = dir.path().join("s.jsonl");
    let live = open_bound(&path, Bind::Branch(branch("live")));
    let mut edited = 0;
    for k in 1..=lines.len() {
        std::fs::write(&file, lines[..k].join("\n") + "\n").unwrap();
        let r = live.import_file(&file, None).unwrap();
        edited += r.edited;
        // After every line, the view is what one import of the file so far makes.
        let once = open_bound(&path, Bind::Branch(branch(&format!("once-{k}"))));
        once.import_file(&file, None).unwrap();
        assert_eq!(texts(&live), texts(&once), "after line {k}");
    }
    // The response grew twice (its call lines came after its thinking line).
    assert_eq!(edited, 2);
    let view = live.compile().unwrap();
    let ms = view.messages();
    assert_eq!(ms.len(), 5);
    let joined = tract_core::json::message_to_json(&ms[1].message);
    assert_eq!(joined["content"][0]["signature"], "c2ln");
    assert_eq!(ms[1].message.tool_calls.len(), 2);
    assert_eq!(
        texts(&live)[2..],
        ["text of t1", "text of t2", "Both read."]
    );
    // Every line is in history once: a second import of the whole file adds nothing.
    let again = live.import_file(&file, None).unwrap();
    assert_eq!((again.added, again.edited, again.recorded), (0, 0, 0));
    assert!(live.fsck().unwrap().is_clean());
}

#[test]
fn a_rewound_conversation_moves_the_branch_and_the_old_path_stays_in_history() {
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("s")));
    let file = dir.path().join("s.jsonl");
    let mut lines = vec![
        cc_user("u1", None, json!("Name a colour.")),
        cc_assistant(
            "a1",
            "u1",
            "msg_1",
            json!({"type": "text", "text": "Blue."}),
        ),
        cc_user("u2", Some("a1"), json!("Another.")),
        cc_assistant(
            "a2",
            "u2",
            "msg_2",
            json!({"type": "text", "text": "Green."}),
        ),
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    t.import_file(&file, None).unwrap();
    let old_tip = t.head().unwrap().commit.unwrap();
    // The user goes back to after "Blue." and asks something else (Claude Code's rewind).
    lines.push(cc_user("u3", Some("a1"), json!("Why blue?")));
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let r = t.import_file(&file, None).unwrap();
    assert!(r.rewound);
    assert_eq!(r.added, 1);
    assert_eq!(texts(&t), ["Name a colour.", "Blue.", "Why blue?"]);
    // The old path is where the reflog says; its lines are not kept again as records.
    let moves = t.reflog("s", None).unwrap();
    assert!(moves.iter().any(|m| m.old == Some(old_tip)), "{moves:?}");
    assert!(
        t.records(Some("claude_code.line"), None, None)
            .unwrap()
            .is_empty()
    );
    let again = t.import_file(&file, None).unwrap();
    assert_eq!((again.added, again.recorded, again.rewound), (0, 0, false));
    // A file that holds less than the branch (pruned) moves nothing back.
    std::fs::write(&file, lines[..2].join("\n") + "\n").unwrap();
    let head = t.head().unwrap().commit;
    t.import_file(&file, None).unwrap();
    assert_eq!(t.head().unwrap().commit, head);
    assert!(t.fsck().unwrap().is_clean());
}

#[test]
fn a_redacted_line_is_never_imported_again() {
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("s")));
    let file = dir.path().join("s.jsonl");
    let lines = [
        cc_user("u1", None, json!("My key is sk-live-123.")),
        cc_assistant(
            "a1",
            "u1",
            "msg_1",
            json!({"type": "text", "text": "Noted."}),
        ),
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    t.import_file(&file, None).unwrap();
    let first = t
        .log(None, None)
        .unwrap()
        .into_iter()
        .find(|c| c.commit.message.as_deref() == Some("claude-code u1"))
        .unwrap();
    t.redact(first.id, "a secret").unwrap();
    let r = t.import_file(&file, None).unwrap();
    assert_eq!((r.added, r.already), (0, 2));
    assert!(t.fsck().unwrap().is_clean());
}

#[test]
fn capture_follows_a_projects_folder_line_by_line_and_resumes_from_the_store() {
    use std::io::Write as _;
    use tract_core::capture::Capture;
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let projects = dir.path().join("projects");
    let folder = projects.join("-work-app");
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join("5e55e55e-0000-4000-8000-000000000001.jsonl");
    let lines = cc_parallel_session();
    let mut capture = Capture::new(t.store().clone(), &projects).unwrap();
    let expected_branch = "claude/-work-app/5e55e55e-0000-4000-8000-000000000001";
    // A line being written waits for its end.
    let mut f = std::fs::File::create(&file).unwrap();
    write!(f, "{}\n{}", lines[0], &lines[1][..20]).unwrap();
    f.flush().unwrap();
    let pass = capture.pass().unwrap();
    assert_eq!(pass.imported.len(), 1);
    assert_eq!(pass.imported[0].branch, expected_branch);
    assert_eq!(pass.imported[0].report.added, 1);
    writeln!(f, "{}", &lines[1][20..]).unwrap();
    for l in &lines[2..4] {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
    let pass = capture.pass().unwrap();
    assert_eq!(pass.imported[0].report.added, 1);
    assert_eq!(pass.imported[0].report.edited, 0);
    // Nothing new: nothing imported.
    assert!(capture.pass().unwrap().imported.is_empty());
    // A new capture (a restart) resumes from what the store holds.
    for l in &lines[4..] {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
    let mut restarted = Capture::new(t.store().clone(), &projects).unwrap();
    let pass = restarted.pass().unwrap();
    assert_eq!(pass.imported[0].report.added, 3);
    assert_eq!(pass.imported[0].report.already, 2);
    assert_eq!(restarted.status().sessions, 1);
    let session = open_bound(&path, Bind::Branch(branch(expected_branch)));
    assert_eq!(
        texts(&session)[2..],
        ["text of t1", "text of t2", "Both read."]
    );
    // A file Claude Code deletes leaves the branch as it is.
    std::fs::remove_file(&file).unwrap();
    assert!(restarted.pass().unwrap().imported.is_empty());
    assert_eq!(texts(&session).len(), 5);
    // A branch deleted in tract is not brought back.
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    t.delete_branch(&branch(expected_branch)).unwrap();
    let mut third = Capture::new(t.store().clone(), &projects).unwrap();
    let pass = third.pass().unwrap();
    assert!(pass.imported.is_empty());
    assert_eq!(pass.deleted.len(), 1);
    assert!(
        !t.branches()
            .unwrap()
            .iter()
            .any(|b| b.name == expected_branch)
    );
    // A folder that is not there is an error.
    let missing = Capture::new(t.store().clone(), dir.path().join("nope"));
    assert!(
        matches!(missing, Err(Error::Io { .. })),
        "{:?}",
        missing.err()
    );
}

// ----- transcripts: export -----

#[test]
fn a_history_export_imports_back_to_identical_ids_and_the_view_exports_as_messages() {
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.import_file(fixture("claude-code-session.jsonl"), None)
        .unwrap();
    let last = t
        .log(None, None)
        .unwrap()
        .into_iter()
        .find(|c| c.op() == "append")
        .unwrap();
    t.edit(last.id, Content::Text("Fixed.".into())).unwrap();
    let sub = t.fork(&branch("sub"), None).unwrap();
    sub.user("sub-agent work").unwrap();
    t.merge(&branch("sub"), &MergeRequest::default()).unwrap();
    let history = t
        .export(tract_core::exports::ExportFormat::Jsonl, true)
        .unwrap();
    assert_eq!(
        history.lines().count(),
        t.log_graph(None, None).unwrap().len()
    );
    let file = dir.path().join("history.jsonl");
    std::fs::write(&file, &history).unwrap();

    let (_d2, other) = file_store();
    let copy = open_bound(&other, Bind::Branch(branch("copy")));
    let report = copy.import_file(&file, None).unwrap();
    assert_eq!(report.format, None);
    assert_eq!(report.tip, t.head().unwrap().commit);
    assert_eq!(copy.head().unwrap().commit, t.head().unwrap().commit);
    assert_eq!(texts(&copy), texts(&t));
    assert!(copy.fsck().unwrap().is_clean());
    // Again: nothing new.
    let again = copy.import_file(&file, None).unwrap();
    assert_eq!(again.added, 0);
    // A changed line is refused, naming it.
    let changed = history.replacen("sub-agent work", "other work", 1);
    std::fs::write(&file, changed).unwrap();
    let err = copy.import_file(&file, None).unwrap_err().to_string();
    assert!(err.contains("the line was changed"), "{err}");
    // A branch elsewhere is not moved backwards or sideways.
    let elsewhere = open_bound(&other, Bind::Branch(branch("elsewhere")));
    elsewhere.user("unrelated").unwrap();
    std::fs::write(&file, &history).unwrap();
    assert!(matches!(
        elsewhere.import_file(&file, None),
        Err(Error::Diverged { .. })
    ));

    // The view as messages: importing it into an empty branch gives the same view.
    let view = t
        .export(tract_core::exports::ExportFormat::Jsonl, false)
        .unwrap();
    let file = dir.path().join("view.jsonl");
    std::fs::write(&file, &view).unwrap();
    let fresh = open_bound(&other, Bind::Branch(branch("view")));
    assert_eq!(
        fresh.import_file(&file, None).unwrap().format,
        Some(tract_core::transcript::Format::Jsonl)
    );
    assert_eq!(texts(&fresh), texts(&t));
}

#[test]
fn markdown_and_request_body_exports() {
    let t = Tract::in_memory().unwrap();
    t.system("Be brief.").unwrap();
    t.user("Where is `DATABASE_URL` read?").unwrap();
    t.assistant(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "grep".into(),
            arguments: r#"{"q":"DATABASE_URL"}"#.into(),
        }],
    )
    .unwrap();
    t.tool_result("c1", "grep", "config.py:42: ```", false)
        .unwrap();
    t.assistant("In config.py.", vec![]).unwrap();
    let md = t
        .export(tract_core::exports::ExportFormat::Markdown, false)
        .unwrap();
    assert_eq!(
        md,
        "## System\n\nBe brief.\n\n## User\n\nWhere is `DATABASE_URL` read?\n\n## Assistant\n\n\
         ### Tool call: grep (c1)\n\n```json\n{\n  \"q\": \"DATABASE_URL\"\n}\n```\n\n\
         ## Tool result: grep (c1)\n\n````\nconfig.py:42: ```\n````\n\n## Assistant\n\nIn config.py.\n\n"
    );
    let history = t
        .export(tract_core::exports::ExportFormat::Markdown, true)
        .unwrap();
    assert_eq!(history.matches("· append").count(), 5);
    let openai: Value = serde_json::from_str(
        &t.export(tract_core::exports::ExportFormat::OpenAi, false)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(openai["messages"], t.compile().unwrap().to_openai());
    let anthropic: Value = serde_json::from_str(
        &t.export(tract_core::exports::ExportFormat::Anthropic, false)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(anthropic, t.compile().unwrap().to_anthropic());
    assert!(matches!(
        t.export(tract_core::exports::ExportFormat::OpenAi, true),
        Err(Error::InvalidInput { .. })
    ));
    assert!(tract_core::exports::ExportFormat::parse("yaml").is_err());
}

#[test]
fn claude_code_sub_agents_come_back_as_merged_branches_of_their_own() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("review")));
    let file = fixture("claude-code-agents.jsonl");
    let report = t.import_file(&file, None).unwrap();
    // One assistant message with both Task calls (one API response on two lines).
    assert_eq!(report.added, 5, "{report:?}");
    // The main view: the two Task results are the sub-agents' answers.
    assert_eq!(
        texts(&t),
        [
            "Review the auth module and the billing module.",
            "",
            "Auth: the session token is never rotated.",
            "Billing rounds cents down in refunds.\nagentId: b4 (for resuming)",
            "Two findings: token rotation (auth) and refund rounding (billing)."
        ]
    );
    // Each sub-agent's conversation is a branch of its own (from its file beside the
    // session, or from the session's own sidechain lines) forked at the calls, merged back
    // as the result.
    let auth = open_bound(&path, Bind::Branch(branch("review/agents/a1b2c3")));
    assert_eq!(auth.log(None, None).unwrap().len(), 2 + 4);
    assert_eq!(
        texts(&auth)[4..],
        [
            "Review src/auth for bugs.",
            "",
            "No matches found",
            "Auth: the session token is never rotated."
        ]
    );
    let billing = open_bound(&path, Bind::Branch(branch("review/agents/b4")));
    assert_eq!(
        texts(&billing).last().unwrap(),
        "Billing rounds cents down in refunds."
    );
    let merges: Vec<_> = t
        .log(None, None)
        .unwrap()
        .into_iter()
        .filter(|c| c.op() == "merge")
        .collect();
    assert_eq!(merges.len(), 2);
    assert!(
        t.search(&SearchQuery {
            query: "No matches".into(),
            history: true,
            ..SearchQuery::default()
        })
        .unwrap()
        .len()
            == 1
    );
    assert!(t.fsck().unwrap().is_clean());
    // Again: nothing new, on any branch.
    let again = t.import_file(&file, None).unwrap();
    assert_eq!((again.added, again.already), (0, 5));
}

#[test]
fn each_format_is_told_apart_and_read() {
    use tract_core::transcript::{Format, Transcript, parse};
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
    assert_eq!(c.to_anthropic()["messages"][0]["content"][0], block);
    assert_eq!(
        c.to_openai()[0]["content"][0],
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
    use tract_core::transcript::{Format, parse};
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

/// Found by fuzzing (transcript_parse): two lines of one API response repeating a tool call id
/// were joined into a message that could not be stored. Claude Code's reader shows both lines,
/// so each is a message of its own (a joined message must hold together).
#[test]
fn a_response_whose_lines_repeat_a_call_keeps_each_line_as_a_message() {
    let line = |uuid: &str, parent: Option<&str>| {
        json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "s",
               "message": {"id": "msg_1", "role": "assistant", "content": [
                   {"type": "tool_use", "id": "toolu_1", "name": "Task", "input": {}}]}})
        .to_string()
    };
    let text = format!("{}\n{}\n", line("a", None), line("b", Some("a")));
    let Ok(tract_core::transcript::Transcript::Steps { steps, .. }) =
        tract_core::transcript::parse(&text, None)
    else {
        panic!("not read");
    };
    let lines: Vec<&[String]> = steps.iter().map(|s| s.lines()).collect();
    assert_eq!(lines, [["a".to_string()], ["b".to_string()]]);
}

/// Found by fuzzing (transcript_parse): a Responses content part without a string `type` was
/// kept raw and then refused by the neutral form; every reader now makes its raw parts as the
/// neutral form reads them, so such a part is refused when read.
#[test]
fn a_responses_part_without_a_type_is_refused_when_read() {
    let items = json!([{"role": "assistant", "type": "message",
        "content": [{"t|pe": "output_text", "text": ":"}]}]);
    let err = tract_core::transcript::parse(
        &items.to_string(),
        Some(tract_core::transcript::Format::OpenAiResponses),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("in 'content': a content part needs a string 'type'"),
        "{err}"
    );
}

#[test]
fn records_stay_out_of_the_view_and_come_back_exactly() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("threads/t1")));
    t.user("hello").unwrap();
    let view_before = t.compile().unwrap().to_openai();
    let first = t
        .record(
            "langgraph.checkpoint",
            r#"{"step":1,"secret":"zebra"}"#,
            vec![],
        )
        .unwrap();
    assert_eq!(first.commit.op.name(), "record");
    assert_eq!(t.compile().unwrap().to_openai(), view_before);
    // Messages and a record in one write: the messages join the view, the record does not.
    let mut asking = Message::text(Role::Assistant, "");
    asking.tool_calls.push(call("c1", "grep"));
    let second = t
        .record(
            "langgraph.writes",
            "w1",
            vec![
                asking,
                Message::tool_result("c1", "grep", "found zebra", false),
            ],
        )
        .unwrap();
    assert_eq!(texts(&t), ["hello", "", "found zebra"]);
    let status = t.status().unwrap();
    assert_eq!(status.messages, 3);
    let listed = t.branches().unwrap();
    assert_eq!(listed[0].messages, 3, "stored counts skip records");
    // Newest first, filtered by kind and the kinds under it, paged with `before`.
    let all = t.records(None, None, None).unwrap();
    assert_eq!(
        all.iter().map(|r| r.data.as_str()).collect::<Vec<_>>(),
        ["w1", r#"{"step":1,"secret":"zebra"}"#]
    );
    assert_eq!(all[0].commit, second.id);
    assert_eq!(t.records(Some("langgraph"), None, None).unwrap().len(), 2);
    assert_eq!(
        t.records(Some("langgraph.checkpoint"), None, None).unwrap()[0].commit,
        first.id
    );
    assert!(t.records(Some("lang"), None, None).unwrap().is_empty());
    assert_eq!(t.records(None, Some(1), None).unwrap().len(), 1);
    let page = t.records(None, None, Some(&Rev::from(second.id))).unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].commit, first.id);
    assert_eq!(t.get_record(first.id).unwrap().kind, "langgraph.checkpoint");
    assert!(matches!(
        t.get_record(Rev::parse("HEAD~1").unwrap()),
        Err(Error::InvalidInput { .. })
    ));
    // Search looks at what was said, not at a record's data.
    let hits = t
        .search(&SearchQuery {
            query: "zebra".into(),
            history: true,
            ..SearchQuery::default()
        })
        .unwrap();
    assert_eq!(hits.len(), 1, "the tool result only");
    // Cold (a new handle builds the view from the store) and warm views agree.
    let cold = open_bound(&path, Bind::Branch(branch("threads/t1")));
    assert_eq!(
        cold.compile().unwrap().to_openai(),
        t.compile().unwrap().to_openai()
    );
    assert!(t.fsck().unwrap().is_clean());
    // A bad kind is refused and nothing is written, the messages with it included.
    let head = t.head().unwrap().commit;
    for bad in ["", "has space", ".x", "x."] {
        assert!(matches!(
            t.record(bad, "x", vec![Message::text(Role::User, "lost?")]),
            Err(Error::InvalidInput { .. })
        ));
    }
    assert_eq!(t.head().unwrap().commit, head);
}

#[test]
fn records_travel_through_push_history_export_and_redaction() {
    let (dir, a) = temp_store();
    let (_b, b) = temp_store();
    let t = open_bound(&a, Bind::Branch(branch("main")));
    t.user("hi").unwrap();
    let rec = t
        .record("claude.entries", r#"[{"uuid":"u1"}]"#, vec![])
        .unwrap();
    t.assistant("hello", vec![]).unwrap();
    Tract::open(&b).unwrap();
    t.push(&b, &tract_core::SyncOptions::default()).unwrap();
    let dst = open_bound(&b, Bind::Branch(branch("main")));
    assert_eq!(
        dst.records(None, None, None).unwrap(),
        t.records(None, None, None).unwrap()
    );
    // A history export names the record and imports back to identical ids.
    let history = t
        .export(tract_core::exports::ExportFormat::Jsonl, true)
        .unwrap();
    assert!(history.contains(r#""kind":"claude.entries""#), "{history}");
    let file = dir.path().join("history.jsonl");
    std::fs::write(&file, &history).unwrap();
    let (_c, c) = file_store();
    let copy = open_bound(&c, Bind::Branch(branch("copy")));
    copy.import_file(&file, None).unwrap();
    assert_eq!(copy.head().unwrap().commit, t.head().unwrap().commit);
    assert_eq!(copy.get_record(rec.id).unwrap().data, r#"[{"uuid":"u1"}]"#);
    // A record can be redacted like any blob: its data is gone, the ids stay valid.
    t.redact(rec.id, "personal data").unwrap();
    let redacted = t.get_record(rec.id).unwrap();
    assert!(!redacted.data.contains("u1"), "{}", redacted.data);
    let report = t.fsck().unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(texts(&t), ["hi", "hello"]);
}

/// A page of a view tells a viewer each call's state and result, what each content is, where
/// a compressed run and a merged sub-agent came from, and where other branches fork.
#[test]
fn a_view_page_shows_calls_versions_marks_summaries_merges_and_forks() {
    use tract_core::{ClearOptions, CompressRequest, Manual, Mark, ToolPolicy};
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let sub = delegated(&t); // system, user, a pending `task` call; `sub` forked there
    let merged = t
        .merge(
            &branch("sub"),
            &MergeRequest {
                strategy: MergeStrategy::ToolResult {
                    call_id: "task_1".into(),
                },
                ..MergeRequest::default()
            },
        )
        .unwrap();
    let early = [
        t.user("first aside").unwrap(),
        t.user("second aside").unwrap(),
    ];
    let summary = t
        .compress(&CompressRequest {
            commits: Some(early.iter().map(|c| Rev::from(c.id)).collect()),
            summarizer: Some(&Manual("two asides".into())),
            ..CompressRequest::default()
        })
        .unwrap()
        .commits[0]
        .id;
    t.assistant(
        "",
        vec![call("g", "grep"), call("r", "read"), call("p", "test")],
    )
    .unwrap();
    let grep = t
        .tool_result("g", "grep", "a.py:1 TODO\nb.py:2 TODO", false)
        .unwrap();
    t.tool_result("r", "read", "no such file", true).unwrap();
    let grep_edit = t
        .edit_tool_result(grep.id, "g", "grep", Content::Text("a.py:1".into()))
        .unwrap();
    // The policy summarizes the next grep; the one after is cleared, the last redacted.
    t.set_tool_policy(&ToolPolicy {
        instructions: [("ls".to_string(), "names only".to_string())].into(),
        ..ToolPolicy::default()
    })
    .unwrap();
    t.set_summarizer(Some(std::sync::Arc::new(Manual("src/".into()))));
    t.assistant("", vec![call("l", "ls")]).unwrap();
    t.tool_result("l", "ls", "src/\n".repeat(200), false)
        .unwrap();
    t.assistant("", vec![call("s", "secrets")]).unwrap();
    let secret = t.tool_result("s", "secrets", "KEY=hunter2", false).unwrap();
    t.redact(secret.id, "a leaked key").unwrap();
    t.assistant("", vec![call("big", "cat")]).unwrap();
    t.tool_result("big", "cat", "line\n".repeat(400), false)
        .unwrap();
    t.clear_tool_results(&ClearOptions {
        keep: 0,
        exclude_tools: vec![
            "grep".into(),
            "read".into(),
            "ls".into(),
            "secrets".into(),
            "task".into(),
        ],
        ..ClearOptions::default()
    })
    .unwrap();
    t.create_branch(&branch("review"), Some(&Rev::from(summary)))
        .unwrap();

    let page = t.view_page(None, 100).unwrap();
    assert_eq!(page.total, page.entries.len());
    assert_eq!(page.offset, 0);
    assert_eq!(page.token_count, t.compile().unwrap().token_count());
    let ops: Vec<&str> = page
        .entries
        .iter()
        .map(|e| match &e.entry.origin.op {
            tract_core::Op::Compress { .. } => "compress",
            tract_core::Op::Merge { .. } => "merge",
            _ => "append",
        })
        .collect();
    assert_eq!(
        &ops[..5],
        ["append", "append", "append", "merge", "compress"]
    );
    // The sub-agent's answer is the task call's result, given by the merge.
    let task = &page.entries[2].calls[0];
    assert_eq!(task.info.state.as_str(), "ok");
    assert_eq!(task.result.as_ref().unwrap().entry.position, merged.id);
    assert_eq!(page.entries[3].caller, Some(2));
    assert_eq!(
        t.compressed_sources(summary)
            .unwrap()
            .iter()
            .map(|c| c.id)
            .collect::<Vec<_>>(),
        early.iter().map(|c| c.id).collect::<Vec<_>>()
    );
    // Three parallel calls: ok (edited), error, pending (a synthetic result is sent).
    let calls = &page.entries[5].calls;
    let states: Vec<&str> = calls.iter().map(|c| c.info.state.as_str()).collect();
    assert_eq!(states, ["ok", "error", "pending"]);
    let g = calls[0].result.as_ref().unwrap();
    assert_eq!(g.entry.message.content.text(), "a.py:1");
    assert_eq!(g.entry.edits.len(), 1);
    assert_eq!(g.marks, [Mark::Edited]);
    assert!(calls[2].result.is_none() && calls[2].info.duration_us.is_none());
    assert!(calls[0].info.duration_us.is_some());
    let marks = |tool: &str| {
        let e = page
            .entries
            .iter()
            .find(|e| e.entry.message.name.as_deref() == Some(tool));
        e.unwrap().marks.clone()
    };
    assert_eq!(marks("ls"), [Mark::Edited, Mark::Summarized]);
    assert_eq!(marks("secrets"), [Mark::Redacted]);
    assert!(marks("cat").contains(&Mark::Cleared), "{:?}", marks("cat"));
    assert!(page.entries[0].calls.is_empty() && page.entries[0].marks.is_empty());
    // Pages: the last by default, an offset past the end is empty.
    let last = t.view_page(None, 3).unwrap();
    assert_eq!(last.offset, page.total - 3);
    assert_eq!(last.entries[0].index, page.total - 3);
    assert!(
        t.view_page(Some(page.total + 5), 3)
            .unwrap()
            .entries
            .is_empty()
    );
    // Where the other branches fork; indexes of commits in view.
    let forks = t.fork_points(0).unwrap();
    let at = |name: &str| forks.iter().find(|(n, _)| n == name).map(|(_, c)| *c);
    assert_eq!(at("review"), Some(summary));
    assert_eq!(at("sub"), Some(sub.head().unwrap().commit.unwrap()));
    // Only forks among recent commits: an older one is not looked for.
    let summary_time = t.get_commit(summary).unwrap().commit.timestamp_us;
    let recent = t.fork_points(summary_time + 1).unwrap();
    assert!(
        recent.iter().all(|(n, _)| n != "review" && n != "sub"),
        "{recent:?}"
    );
    assert_eq!(
        t.view_indexes([summary, early[0].id, grep.id, grep_edit.id])
            .unwrap(),
        [Some(4), None, None, Some(6)]
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
    let report = fresh.fsck().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
