//! Handles as sessions: each keeps its own position, binds to a branch or to the store's HEAD,
//! and many of them write at once, from many threads, within the process's view cache budget.

use crate::support::{branch, open_bound, temp_store, texts};
use tract_core::{AppendOptions, Bind, Error, Message, Rev, Role, Tract};

#[test]
fn each_handle_keeps_its_own_position() {
    let (_dir, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.user("root").unwrap();
    t.create_branch(&branch("session-b"), &tract_core::Rev::head())
        .unwrap();
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
    let moves = t.reflog("HEAD", usize::MAX).unwrap();
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
    assert!(t.compile().unwrap().messages().unwrap().is_empty());
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
    assert!(t.reflog("HEAD", usize::MAX).unwrap().is_empty());
    // A command line's handle detaches the store's HEAD, and its appends move HEAD.
    let cli = open_bound(&path, Bind::StoreHead);
    cli.checkout(&Rev::from(a.id)).unwrap();
    let d = cli.user("from the terminal").unwrap();
    let head = cli.store_head().unwrap();
    assert_eq!((head.branch(), head.commit), (None, Some(d.id)));
    let reasons: Vec<String> = cli
        .reflog("HEAD", usize::MAX)
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
    let log = t.log(&tract_core::LogQuery::default()).unwrap();
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
    // Sixty-four writers at once, as many sessions as the group-commit figures use; the long
    // runs are the soak's (scripts/soak.sh).
    const THREADS: usize = 64;
    const EACH: usize = 60;
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
    assert_eq!(
        shared.compile().unwrap().messages().unwrap().len(),
        THREADS * EACH
    );
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
fn cached_views_of_many_sessions_stay_within_the_process_budget() {
    // The budget is the process's: the check runs in a process of its own, this test run again
    // by name, so the views other tests' handles keep (any writer keeps one) do not take it.
    const CHILD: &str = "TRACT_TEST_BUDGET_CHILD";
    if std::env::var_os(CHILD).is_none() {
        crate::support::passes_alone(
            "sessions::cached_views_of_many_sessions_stay_within_the_process_budget",
            CHILD,
            "1",
        );
        return;
    }
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
                compiled.messages().unwrap().len(),
                150 + round,
                "round {round}, session {k}"
            );
            t.user(format!("round {round}")).unwrap();
            // The views these sessions keep fit the budget.
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
