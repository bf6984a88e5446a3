//! Sync: push, pull and clone by hash (on this run's backend, and across backends).

use crate::support::{branch, call, file_store, open_bound, postgres_url, temp_store};
use tract_core::{
    Bind, BranchSpec, Content, Error, MergeRequest, Refusal, RefusedBranch, Rev, SearchQuery,
    SyncProgress, Tract,
};

/// A store with the history sync must carry: tool calls and results, a large chunked result,
/// an edit, a sub-agent merged back, a compression and a redaction, on two branches.
fn rich_history(path: &std::path::Path) -> Tract {
    let t = open_bound(path, Bind::Branch(branch("main")));
    t.system("sys").unwrap();
    t.user("find the bug").unwrap();
    t.assistant("", vec![call("c1", "grep")]).unwrap();
    t.tool_result("c1", "grep", "x".repeat(3 << 20), false)
        .unwrap();
    let sub = t.fork(&branch("sub"), &tract_core::Rev::head()).unwrap();
    sub.user("sub task").unwrap();
    sub.assistant("sub answer", vec![]).unwrap();
    t.user("meanwhile").unwrap();
    t.merge(&branch("sub"), &MergeRequest::default()).unwrap();
    let secret = t.user("my password is hunter2").unwrap();
    t.redact(secret.id, "a password").unwrap();
    t.assistant("", vec![call("c2", "read_file")]).unwrap();
    t.tool_result("c2", "read_file", "fn main() {}", false)
        .unwrap();
    let found = t
        .find_tool_results(&tract_core::ResultQuery {
            name: Some("read_file".into()),
            ..Default::default()
        })
        .unwrap();
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
    t.log(&tract_core::LogQuery {
        start: Some(Rev::parse(name).unwrap()),
        graph: true,
        ..Default::default()
    })
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
    let first = tract_core::push(src.store(), &b, &options).unwrap();
    let commits = src
        .log(&tract_core::LogQuery {
            graph: true,
            ..Default::default()
        })
        .unwrap()
        .len() as u64;
    assert_eq!(first.commits, commits, "every commit of both branches once");
    assert_eq!(first.branches.len(), 2);
    assert!(first.branches.iter().all(|s| s.old.is_none() && !s.forced));
    let dst = open_bound(&b, Bind::Branch(branch("main")));
    assert_eq!(all_branches(&dst), all_branches(&src));
    assert_eq!(graph_ids(&dst, "main"), graph_ids(&src, "main"));
    assert_eq!(
        dst.compile().unwrap().to_openai().unwrap(),
        src.compile().unwrap().to_openai().unwrap()
    );
    assert!(tract_core::fsck(dst.store()).unwrap().is_clean());
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
    let again = tract_core::push(src.store(), &b, &options).unwrap();
    assert_eq!((again.commits, again.blobs), (0, 0));
    assert!(again.branches.iter().all(|s| s.up_to_date()));
    // Two new messages: two commits travel, and the branch fast-forwards.
    src.user("one more").unwrap();
    src.assistant("and done", vec![]).unwrap();
    let more = tract_core::push(src.store(), &b, &options).unwrap();
    assert_eq!((more.commits, more.blobs), (2, 2));
    assert_eq!(
        dst.compile().unwrap().to_openai().unwrap(),
        src.compile().unwrap().to_openai().unwrap()
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
        assert!(tract_core::fsck(t.store()).unwrap().is_clean());
    }
    assert_eq!(
        twice.compile().unwrap().to_openai().unwrap(),
        src.compile().unwrap().to_openai().unwrap()
    );
    // A clone holds counts for every tip it received, the sender's where it keeps them, and
    // a checkpoint of each branch at its tip: listing the copy's branches replays no view, and
    // a cold read walks no commit.
    let (_e, e) = temp_store();
    let (copy, _) = Tract::clone_store(&a, &e, tract_core::StoreOptions::default()).unwrap();
    let (theirs, ours) = (src.store().read().unwrap(), copy.store().read().unwrap());
    assert!(theirs.branch_stats("main").unwrap().is_some());
    for (name, tip) in all_branches(&src) {
        let counted = ours
            .branch_stats(&name)
            .unwrap()
            .expect("counted at the clone");
        assert_eq!(counted.tip, tip, "{name}");
        // `sub` has none since the redaction: the copy counted it.
        if let Some(kept) = theirs.branch_stats(&name).unwrap() {
            assert_eq!(counted.tally, kept.tally, "{name}");
        }
    }
    let report = tract_core::fsck(copy.store()).unwrap();
    assert!(
        report.past_checkpoint.iter().all(|(_, n)| *n == 0),
        "{:?}",
        report.past_checkpoint
    );
    assert!(tract_core::fsck(copy.store()).unwrap().is_clean());
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
    let refused = tract_core::push(src.store(), &b, &tract_core::SyncOptions::default()).unwrap();
    assert!(!refused.is_complete());
    assert!(refused.branches.is_empty());
    assert_eq!(
        refused.refused,
        [RefusedBranch {
            name: "main".into(),
            source: "main".into(),
            receiver: ours,
            sender: theirs,
            reason: Refusal::Diverged,
        }]
    );
    // Its history was not sent (as git's push): the receiver does not hold the sender's tip.
    assert_eq!((refused.commits, refused.blobs), (0, 0));
    assert!(dst.get_commit(theirs).is_err());
    assert_eq!(dst.resolve(&Rev::parse("main").unwrap()).unwrap(), ours);
    // The receiver pulling from the sender diverges the same way.
    let pulled = tract_core::pull(dst.store(), &a, &tract_core::SyncOptions::default()).unwrap();
    assert_eq!(pulled.refused.len(), 1);
    assert_eq!(
        (pulled.refused[0].receiver, pulled.refused[0].sender),
        (ours, theirs)
    );
    let forced = tract_core::push(
        src.store(),
        &b,
        &tract_core::SyncOptions {
            force: true,
            ..tract_core::SyncOptions::default()
        },
    )
    .unwrap();
    assert!(forced.is_complete());
    assert!(forced.branches[0].forced);
    let dst = Tract::open_existing(&b).unwrap();
    assert_eq!(dst.resolve(&Rev::parse("main").unwrap()).unwrap(), theirs);
    let moves = dst.reflog("main", usize::MAX).unwrap();
    assert_eq!(
        moves[0].old,
        Some(ours),
        "the old tip is kept in the reflog"
    );
    assert!(dst.get_commit(ours).is_ok());
}

/// Two stores where `main` has diverged (a message on each side) and `side` moved on only in
/// the first: (first, second, first's main tip, second's main tip, first's side tip).
fn diverged_pair() -> (
    [tempfile::TempDir; 2],
    [std::path::PathBuf; 2],
    tract_core::CommitId,
    tract_core::CommitId,
    tract_core::CommitId,
) {
    let (da, a) = temp_store();
    let (db, b) = temp_store();
    let src = open_bound(&a, Bind::Branch(branch("main")));
    src.user("shared").unwrap();
    src.fork(&branch("side"), &Rev::head()).unwrap();
    let _ = Tract::clone_store(&a, &b, tract_core::StoreOptions::default()).unwrap();
    let theirs = open_bound(&b, Bind::Branch(branch("main")))
        .user("only in the second")
        .unwrap()
        .id;
    let ours = src.user("only in the first").unwrap().id;
    let side = open_bound(&a, Bind::Branch(branch("side")))
        .user("more on side")
        .unwrap()
        .id;
    ([da, db], [a, b], ours, theirs, side)
}

#[test]
fn a_push_moves_every_branch_that_fast_forwards_and_refuses_only_the_diverged_one() {
    let (_dirs, [a, b], ours, theirs, side) = diverged_pair();
    let src = Tract::open_existing(&a).unwrap();
    let report = tract_core::push(src.store(), &b, &tract_core::SyncOptions::default()).unwrap();
    let moved: Vec<(&str, tract_core::CommitId)> = report
        .branches
        .iter()
        .map(|s| (s.name.as_str(), s.new))
        .collect();
    assert_eq!(moved, [("side", side)]);
    assert_eq!(report.refused.len(), 1);
    let r = &report.refused[0];
    assert_eq!(
        (r.name.as_str(), r.receiver, r.sender, r.reason),
        ("main", theirs, ours, Refusal::Diverged)
    );
    // Only side's new commit travelled; main's did not.
    assert_eq!((report.commits, report.blobs), (1, 1));
    assert_eq!(
        report.refusal_message().unwrap(),
        format!(
            "branch 'main' has diverged: the receiver is at {} and the sender at {}; neither \
             contains the other",
            theirs.short(),
            ours.short()
        )
    );
    let dst = Tract::open_existing(&b).unwrap();
    assert_eq!(dst.resolve(&Rev::parse("side").unwrap()).unwrap(), side);
    assert_eq!(dst.resolve(&Rev::parse("main").unwrap()).unwrap(), theirs);
    assert!(dst.get_commit(ours).is_err());
    assert!(tract_core::fsck(dst.store()).unwrap().is_clean());
}

#[test]
fn a_branch_pulled_under_another_name_merges_and_then_fast_forwards() {
    let (_dirs, [a, b], ours, theirs, _) = diverged_pair();
    // The second store takes the first's main as theirs/main, merges it, and pushes main back.
    let second = open_bound(&b, Bind::Branch(branch("main")));
    let spec = BranchSpec::parse("main:theirs/main").unwrap();
    assert_eq!(spec, BranchSpec::new(branch("main"), branch("theirs/main")));
    assert_eq!(spec.to_string(), "main:theirs/main");
    let options = tract_core::SyncOptions {
        branches: Some(vec![spec]),
        ..tract_core::SyncOptions::default()
    };
    let pulled = tract_core::pull(second.store(), &a, &options).unwrap();
    assert!(pulled.is_complete());
    assert_eq!(pulled.branches.len(), 1);
    let b0 = &pulled.branches[0];
    assert_eq!(
        (b0.name.as_str(), b0.source.as_str(), b0.old, b0.new),
        ("theirs/main", "main", None, ours)
    );
    assert_eq!(pulled.commits, 1, "only the first's new commit");
    assert_eq!(
        second.resolve(&Rev::parse("main").unwrap()).unwrap(),
        theirs,
        "main itself is untouched"
    );
    second
        .merge(&branch("theirs/main"), &MergeRequest::default())
        .unwrap();
    let merged = second.resolve(&Rev::parse("main").unwrap()).unwrap();
    // Pulling again: the second's main contains the first's, so it stays (no refusal).
    let again = tract_core::pull(second.store(), &a, &tract_core::SyncOptions::default()).unwrap();
    assert!(again.is_complete(), "{:?}", again.refused);
    let main = again.branches.iter().find(|s| s.name == "main").unwrap();
    assert_eq!(
        (main.old, main.new, main.ahead_of),
        (Some(merged), merged, Some(ours))
    );
    assert!(main.up_to_date());
    let only_main = tract_core::SyncOptions {
        branches: Some(vec![branch("main").into()]),
        ..tract_core::SyncOptions::default()
    };
    let pushed = tract_core::push(second.store(), &a, &only_main).unwrap();
    assert!(pushed.is_complete());
    assert_eq!(
        (pushed.branches[0].old, pushed.branches[0].new),
        (Some(ours), merged)
    );
    let first = Tract::open_existing(&a).unwrap();
    assert_eq!(first.resolve(&Rev::parse("main").unwrap()).unwrap(), merged);
    // A push under another name works the same way, into the receiver.
    let renamed = tract_core::SyncOptions {
        branches: Some(vec![BranchSpec::parse("side:from-second/side").unwrap()]),
        ..tract_core::SyncOptions::default()
    };
    let sent = tract_core::push(second.store(), &a, &renamed).unwrap();
    assert_eq!(sent.branches[0].name, "from-second/side");
    assert_eq!(sent.peer.as_deref(), first.store().location().as_deref());
}

#[test]
fn branch_specs_refuse_what_git_would_mean_differently() {
    for bad in ["+main", "+main:x", ":main", "main:", "a:b:c", "main:HEAD"] {
        let e = BranchSpec::parse(bad).unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidInput { .. } | Error::InvalidBranchName { .. }
            ),
            "{bad}: {e}"
        );
    }
    assert!(
        BranchSpec::parse("+main")
            .unwrap_err()
            .to_string()
            .contains("force the whole transfer")
    );
    let (_a, a) = temp_store();
    let (_b, b) = temp_store();
    let src = open_bound(&a, Bind::Branch(branch("main")));
    src.user("x").unwrap();
    src.fork(&branch("side"), &Rev::head()).unwrap();
    let dst = Tract::open(&b).unwrap();
    let clash = tract_core::SyncOptions {
        branches: Some(vec![
            BranchSpec::parse("main:x").unwrap(),
            BranchSpec::parse("side:x").unwrap(),
        ]),
        ..tract_core::SyncOptions::default()
    };
    let e = tract_core::pull(dst.store(), &a, &clash).unwrap_err();
    assert!(e.to_string().contains("two branches sent as 'x'"), "{e}");
    assert!(dst.branches().unwrap().is_empty(), "nothing moved");
    // The same branch twice is sent once.
    let twice = tract_core::SyncOptions {
        branches: Some(vec![branch("main").into(), branch("main").into()]),
        ..tract_core::SyncOptions::default()
    };
    assert_eq!(
        tract_core::pull(dst.store(), &a, &twice)
            .unwrap()
            .branches
            .len(),
        1
    );
}

#[test]
fn a_receiver_branch_moved_during_the_transfer_is_judged_again_where_it_is() {
    let (_a, a) = temp_store();
    let (_b, b) = temp_store();
    let src = open_bound(&a, Bind::Branch(branch("main")));
    src.user("shared").unwrap();
    src.fork(&branch("side"), &Rev::head()).unwrap();
    let _ = Tract::clone_store(&a, &b, tract_core::StoreOptions::default()).unwrap();
    src.user("new on main").unwrap();
    let side_tip = open_bound(&a, Bind::Branch(branch("side")))
        .user("new on side")
        .unwrap()
        .id;
    let writer = open_bound(&b, Bind::Branch(branch("main")));
    let moved = std::sync::Mutex::new(None);
    // Once the objects are stored, another writer appends to the receiver's main.
    let progress = |p: SyncProgress| {
        if let SyncProgress::Sending { done, total } = p
            && done == total
        {
            let mut moved = moved.lock().unwrap();
            if moved.is_none() {
                *moved = Some(writer.user("meanwhile in the receiver").unwrap().id);
            }
        }
    };
    let options = tract_core::SyncOptions {
        on_progress: Some(&progress),
        ..tract_core::SyncOptions::default()
    };
    let report = tract_core::push(src.store(), &b, &options).unwrap();
    let meanwhile = moved.lock().unwrap().expect("the writer ran");
    // main is refused from where the other writer left it; side still moves.
    assert_eq!(report.refused.len(), 1);
    assert_eq!(
        (report.refused[0].name.as_str(), report.refused[0].receiver),
        ("main", meanwhile)
    );
    assert_eq!(report.branches.len(), 1);
    assert_eq!(
        (report.branches[0].name.as_str(), report.branches[0].new),
        ("side", side_tip)
    );
    let dst = Tract::open_existing(&b).unwrap();
    assert_eq!(
        dst.resolve(&Rev::parse("main").unwrap()).unwrap(),
        meanwhile
    );
    assert!(tract_core::fsck(dst.store()).unwrap().is_clean());
}

#[test]
fn a_transfer_reports_its_progress_finding_then_sending_every_commit() {
    let (_a, a) = temp_store();
    let (_b, b) = temp_store();
    let src = open_bound(&a, Bind::Branch(branch("main")));
    let messages: Vec<tract_core::Message> = (0..150)
        .map(|i| tract_core::Message::text(tract_core::Role::User, format!("message {i}")))
        .collect();
    src.append_batch(messages).unwrap();
    Tract::open(&b).unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let progress = |p: SyncProgress| seen.lock().unwrap().push(p);
    let options = tract_core::SyncOptions {
        on_progress: Some(&progress),
        ..tract_core::SyncOptions::default()
    };
    let report = tract_core::push(src.store(), &b, &options).unwrap();
    assert_eq!(report.commits, 150);
    let seen = seen.into_inner().unwrap();
    let finding: Vec<u64> = seen
        .iter()
        .filter_map(|p| match p {
            SyncProgress::Finding { commits } => Some(*commits),
            _ => None,
        })
        .collect();
    let sending: Vec<(u64, u64)> = seen
        .iter()
        .filter_map(|p| match p {
            SyncProgress::Sending { done, total } => Some((*done, *total)),
            _ => None,
        })
        .collect();
    assert_eq!(
        finding,
        [64, 128, 150],
        "every few dozen commits, then the count"
    );
    assert_eq!(sending, [(64, 150), (128, 150), (150, 150)]);
    let last_finding = seen
        .iter()
        .rposition(|p| matches!(p, SyncProgress::Finding { .. }));
    let first_sending = seen
        .iter()
        .position(|p| matches!(p, SyncProgress::Sending { .. }));
    assert!(last_finding < first_sending, "finding, then sending");
}

#[test]
fn pull_brings_chosen_branches_and_settings_and_refuses_bad_input() {
    let (_a, a) = temp_store();
    let (_b, b) = temp_store();
    let src = open_bound(&a, Bind::Branch(branch("main")));
    src.user("on main").unwrap();
    src.fork(&branch("side"), &tract_core::Rev::head())
        .unwrap()
        .user("on side")
        .unwrap();
    let policy = tract_core::ToolPolicy {
        auto_threshold: Some(500),
        ..tract_core::ToolPolicy::default()
    };
    src.set_tool_policy(&policy).unwrap();
    let retention = tract_core::RetentionPolicy {
        rules: vec![tract_core::RetentionRule {
            name: "idle".into(),
            branches: vec!["claude/*".into()],
            replace_tool_results: None,
            delete_idle_branches: Some(tract_core::DeleteIdleBranches { idle_days: 90 }),
        }],
        pinned: vec!["main".into()],
    };
    src.set_retention_policy(&retention).unwrap();
    let dst = Tract::open(&b).unwrap();
    let only_side = tract_core::SyncOptions {
        branches: Some(vec![branch("side").into()]),
        settings: true,
        ..tract_core::SyncOptions::default()
    };
    let report = tract_core::pull(dst.store(), &a, &only_side).unwrap();
    assert!(report.settings);
    assert_eq!(
        all_branches(&dst)
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>(),
        ["side"]
    );
    assert_eq!(dst.tool_policy().unwrap(), policy);
    assert_eq!(dst.retention_policy().unwrap(), retention);
    // A branch the sender does not have.
    let nope = tract_core::SyncOptions {
        branches: Some(vec![branch("nope").into()]),
        ..tract_core::SyncOptions::default()
    };
    assert!(matches!(
        tract_core::pull(dst.store(), &a, &nope),
        Err(Error::UnknownBranch { name, .. }) if name == "nope"
    ));
    // A receiver that is not a tract store, or not there at all: nothing is written.
    let dir = tempfile::tempdir().unwrap();
    let not_a_store = dir.path().join("notes.txt");
    std::fs::write(&not_a_store, "hello").unwrap();
    assert!(matches!(
        tract_core::push(
            src.store(),
            &not_a_store,
            &tract_core::SyncOptions::default()
        ),
        Err(Error::NotAStore { .. })
    ));
    assert_eq!(std::fs::read_to_string(&not_a_store).unwrap(), "hello");
    let missing = dir.path().join("missing.redb");
    assert!(tract_core::push(src.store(), &missing, &tract_core::SyncOptions::default()).is_err());
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
        assert!(tract_core::fsck(t.store()).unwrap().is_clean());
    }
    src.user("later").unwrap();
    assert_eq!(
        tract_core::push(src.store(), &pg, &tract_core::SyncOptions::default())
            .unwrap()
            .commits,
        1
    );
    assert_eq!(
        tract_core::pull(again.store(), &pg, &tract_core::SyncOptions::default())
            .unwrap()
            .commits,
        1
    );
    assert_eq!(graph_ids(&again, "main"), graph_ids(&src, "main"));
}
