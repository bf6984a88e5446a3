//! Branches: time travel and reset with the reflog, forks, deleting, clearing and popping, and
//! the counts kept for each branch as it moves.

use crate::support::{
    assert_listing_matches_views, assert_listing_matches_views_of, branch, call, open_bound,
    temp_store, texts,
};
use tract_core::{Bind, BranchName, Content, Error, Message, Rev, Role, Tract};

#[test]
fn branches_time_travel_and_reset_with_reflog() {
    let t = Tract::in_memory().unwrap();
    let a = t.user("one").unwrap();
    let b = t.user("two").unwrap();
    // Fork at the first commit and grow there.
    let alt = BranchName::new("alt").unwrap();
    t.create_branch(&alt, &Rev::from(a.id)).unwrap();
    t.switch("alt").unwrap();
    t.user("two, differently").unwrap();
    assert_eq!(t.compile().unwrap().messages().unwrap().len(), 2);
    assert_eq!(
        t.compile().unwrap().messages().unwrap()[1]
            .message
            .content
            .text(),
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
    assert_eq!(t.compile().unwrap().messages().unwrap().len(), 1);
    let log = t.reflog("main", 1).unwrap();
    assert_eq!(log[0].old, Some(b.id));
    t.reset(&Rev::from(b.id)).unwrap();
    assert_eq!(t.compile().unwrap().messages().unwrap().len(), 2);
    assert!(
        t.create_branch(&alt, &tract_core::Rev::head()).is_err(),
        "no silent overwrite"
    );
    assert!(BranchName::new("bad name").is_err());
    assert!(matches!(t.switch("nope"), Err(Error::UnknownBranch { .. })));
    assert_eq!(t.resolve(&Rev::parse("main~1").unwrap()).unwrap(), a.id);
}

#[test]
fn a_fork_is_a_new_branch_and_a_handle_on_it() {
    let t = Tract::in_memory().unwrap();
    t.system("be brief").unwrap();
    let q = t.user("question").unwrap();
    let sub = t
        .fork(&branch("sub-agent"), &tract_core::Rev::head())
        .unwrap();
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
        .fork(&branch("early"), &Rev::from(q.id).ancestor(1))
        .unwrap();
    assert_eq!(texts(&early), ["be brief"]);
    assert_eq!(t.branches().unwrap().len(), 3);
    // A name in use, or a handle with nothing to fork yet: a clear error, nothing created.
    assert!(matches!(
        t.fork(&branch("sub-agent"), &tract_core::Rev::head()),
        Err(Error::BranchExists { .. })
    ));
    let empty = t.fork(&branch("x"), &Rev::from(q.id)).unwrap();
    let unborn = Tract::from_store(empty.store().clone(), &Bind::Branch(branch("new"))).unwrap();
    assert!(matches!(
        unborn.fork(&branch("y"), &tract_core::Rev::head()),
        Err(Error::UnbornBranch { .. })
    ));
    assert!(t.branches().unwrap().iter().all(|b| b.name != "y"));
}

#[test]
fn a_deleted_branch_keeps_its_tip_in_the_reflog_and_stops_its_handles() {
    let (_dir, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.user("root").unwrap();
    let agent = t.fork(&branch("agent"), &tract_core::Rev::head()).unwrap();
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
    let moved = &t.reflog("agent", 1).unwrap()[0];
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
    t.create_branch(&branch("agent"), &Rev::from(tip)).unwrap();
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
    let moved = &one.reflog("sessions/a", 1).unwrap()[0];
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
    let tip = t.head().unwrap().commit.unwrap();
    assert_eq!(t.pop().unwrap().unwrap().content.text(), "three");
    assert_eq!(texts(&t), ["one", "two"]);
    assert_eq!(t.head().unwrap().commit, Some(two.id));
    let moved = &t.reflog("sessions/p", 1).unwrap()[0];
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

#[test]
fn pop_takes_only_the_last_message_and_keeps_what_was_committed_after_it() {
    use tract_core::{CompressRequest, Manual};
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("sessions/q")));
    let other = open_bound(&path, Bind::Branch(branch("sessions/q")));
    let sys = t.system("be brief").unwrap();
    let a = t.user("a").unwrap();
    let b = t.user("b").unwrap();
    t.user("question").unwrap();
    t.assistant("", vec![call("c1", "grep")]).unwrap();
    let result = t
        .tool_result("c1", "grep", "a long grep output", false)
        .unwrap();
    let answer = t.assistant("the answer", Vec::new()).unwrap();
    // After the answer: an edit of the tool result and an edit of that edit, a compression
    // of two earlier messages, a record, and an edit of the answer itself.
    let first = t.edit(result.id, Content::Text("short".into())).unwrap();
    t.edit(first.id, Content::Text("shorter".into())).unwrap();
    let req = CompressRequest {
        commits: Some(vec![Rev::from(a.id), Rev::from(b.id)]),
        summarizer: Some(&Manual("a and b".into())),
        ..CompressRequest::default()
    };
    t.compress(&req).unwrap();
    t.record("app.state", "{\"step\": 3}", Vec::new()).unwrap();
    t.edit(answer.id, Content::Text("the answer, edited".into()))
        .unwrap();
    let tip = t.head().unwrap().commit.unwrap();
    let popped = t.pop().unwrap().unwrap();
    assert_eq!(popped.content.text(), "the answer, edited");
    assert_eq!(
        texts(&t),
        ["be brief", "a and b", "question", "", "shorter"],
        "only the answer left the view"
    );
    assert_eq!(
        texts(&other),
        texts(&t),
        "another handle on the branch sees the same"
    );
    // The commits written again carry what they carried, in order, on the answer's parent;
    // the edit of the edit names the new first edit.
    let log = t.log(&tract_core::LogQuery::default()).unwrap();
    let ops: Vec<&str> = log.iter().take(4).map(|c| c.commit.op.name()).collect();
    assert_eq!(ops, ["record", "compress", "edit", "edit"]);
    let tract_core::Op::Edit { target } = &log[2].commit.op else {
        panic!("an edit")
    };
    assert_eq!(*target, log[3].id);
    assert_eq!(log[3].commit.parents, vec![answer.commit.parents[0]]);
    assert_eq!(
        t.records(&tract_core::RecordQuery::default())
            .unwrap()
            .len(),
        1
    );
    // The reflog keeps the old tip: a reset brings everything back.
    let moved = &t.reflog("sessions/q", 1).unwrap()[0];
    assert_eq!(moved.old, Some(tip));
    assert!(moved.reason.starts_with("pop: "));
    assert_listing_matches_views(&path, &t, "after a pop that wrote commits again");
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
    t.reset(&Rev::from(tip)).unwrap();
    assert_eq!(
        texts(&t).last().map(String::as_str),
        Some("the answer, edited")
    );
    assert_eq!(t.get_commit(sys.id).unwrap().id, sys.id);
    // A message merged in is refused, and nothing moves.
    let side = BranchName::new("sessions/q-side").unwrap();
    t.create_branch(&side, &Rev::from(tip)).unwrap();
    let s = open_bound(&path, Bind::Branch(side.clone()));
    s.user("from the side").unwrap();
    t.merge(&side, &tract_core::MergeRequest::default())
        .unwrap();
    let before = t.head().unwrap().commit;
    assert!(matches!(t.pop(), Err(Error::InvalidOperation { .. })));
    assert_eq!(t.head().unwrap().commit, before);
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
                let results = who
                    .find_tool_results(&tract_core::ResultQuery::default())
                    .unwrap();
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
                    who.compress_tool_calls(
                        &tract_core::ToolTurns {
                            commits: Some(sel.to_vec()),
                            name: None,
                            preserve_answer: true,
                        },
                        req,
                    )
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
                let f = who.fork(&branch(&name), &tract_core::Rev::head()).unwrap();
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
        // Every step moves main (both handles write there) or makes a fork; every branch is
        // checked every eighth step and at the end.
        let fork = format!("fork-{step}");
        assert_listing_matches_views_of(&path, &t, &label, |name| {
            step % 8 == 7 || name == "main" || name == fork
        });
    }
    assert_listing_matches_views(&path, &t, "at the end");
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
