//! Diffs: two views compared by their ids (where they part, what only one holds, what was
//! edited), what one commit did to its view, two histories, and `NAME@{N}` revisions.

use crate::support::{branch, open_bound, temp_store};
use tract_core::storage::store::faults::Object;
use tract_core::{
    Bind, ClearOptions, CommitId, CompressRequest, Content, Error, Manual, Rev, ToolCall, Tract,
};

/// The texts of a diff's messages.
fn texts(entries: &[tract_core::PageEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e.message.content.text().into_owned())
        .collect()
}

fn rev(text: &str) -> Rev {
    Rev::parse(text).unwrap()
}

/// What a diff says, by index, commit and text (not how its revisions were named): two
/// diffs alike say the same.
type Summary = (
    (Option<CommitId>, usize, u64),
    (Option<CommitId>, usize, u64),
    (usize, usize),
    Vec<(usize, CommitId, String)>,
    Vec<(usize, CommitId, String)>,
    Vec<(usize, usize, CommitId, CommitId)>,
);

fn summary(d: &tract_core::ViewDiff) -> Summary {
    let ids = |es: &[tract_core::PageEntry]| -> Vec<(usize, CommitId, String)> {
        es.iter()
            .map(|e| {
                (
                    e.index,
                    e.entry.commit,
                    e.message.content.text().into_owned(),
                )
            })
            .collect()
    };
    let side = |s: &tract_core::DiffSide| (s.commit, s.messages, s.token_count);
    (
        side(&d.a),
        side(&d.b),
        (d.shared_prefix, d.shared),
        ids(&d.only_a),
        ids(&d.only_b),
        d.changed
            .iter()
            .map(|(x, y)| (x.index, y.index, x.entry.commit, y.entry.commit))
            .collect(),
    )
}

/// Message `k` of a conversation of questions, tool calls and their results.
fn turn(t: &Tract, k: usize) -> CommitId {
    match k % 3 {
        0 => t.user(format!("question {k}")).unwrap().id,
        1 => {
            let call = ToolCall {
                id: format!("call_{k}"),
                name: "read".into(),
                arguments: format!("{{\"k\":{k}}}"),
            };
            t.assistant("", vec![call]).unwrap().id
        }
        _ => {
            t.tool_result(
                format!("call_{}", k - 1),
                "read",
                format!("result {k}"),
                false,
            )
            .unwrap()
            .id
        }
    }
}

/// Damages every checkpoint chunk: views are then built whole, by a replay.
fn damage_chunks(t: &Tract) {
    let mut d = t.store().damage().unwrap();
    for key in d.meta_keys("checkpoint-chunk.").unwrap() {
        d.set_meta(&key, Some(b"damaged")).unwrap();
    }
    d.commit().unwrap();
}

#[test]
fn two_views_part_where_they_differ_and_an_edit_is_a_change() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.system("Be brief.").unwrap();
    let ids: Vec<CommitId> = (0..6)
        .map(|k| t.user(format!("message {k}")).unwrap().id)
        .collect();
    let side = t.fork(&branch("side"), &Rev::from(ids[4])).unwrap();
    t.user("main's own 1").unwrap();
    t.user("main's own 2").unwrap();
    side.edit(ids[2], Content::Text("message 2, edited".into()))
        .unwrap();
    side.user("side's own").unwrap();

    let d = t.diff(&rev("main"), &rev("side")).unwrap();
    assert_eq!((d.a.messages, d.b.messages), (9, 7));
    // The system prompt and messages 0 and 1 are alike; message 2 was edited on side.
    assert_eq!(d.shared_prefix, 3);
    assert_eq!(d.shared, 3 + 2, "messages 3 and 4 are alike after the edit");
    assert_eq!(
        texts(&d.only_a),
        ["message 5", "main's own 1", "main's own 2"]
    );
    assert_eq!(texts(&d.only_b), ["side's own"]);
    assert_eq!(d.changed.len(), 1);
    let (a, b) = &d.changed[0];
    assert_eq!((a.entry.position, b.entry.position), (ids[2], ids[2]));
    assert_eq!(b.message.content.text(), "message 2, edited");
    assert_eq!(b.index, 3);
    assert!(d.commit.is_none());

    // Turned around, the same diff from the other side; a view against itself is empty.
    let back = t.diff(&rev("side"), &rev("main")).unwrap();
    assert_eq!(texts(&back.only_b), texts(&d.only_a));
    let same = t.diff(&rev("main"), &rev("HEAD")).unwrap();
    assert_eq!(same.shared_prefix, 9);
    assert!(same.only_a.is_empty() && same.only_b.is_empty() && same.changed.is_empty());

    // Their histories: the commits each holds alone, and where they meet.
    let h = t.diff_history(&rev("main"), &rev("side")).unwrap();
    assert_eq!(h.merge_base, Some(ids[4]));
    assert_eq!(h.only_a.len(), 3, "message 5 and main's two");
    assert_eq!(h.only_b.len(), 2, "the edit and side's own");
    assert!(h.only_a[0].commit.timestamp_us > h.only_a[2].commit.timestamp_us);

    // Bad input: an unknown revision is the usual error; nothing is written.
    assert!(matches!(
        t.diff(&rev("main"), &rev("nope")),
        Err(Error::UnknownRevision { .. })
    ));
}

#[test]
fn what_a_compression_and_a_clear_did_to_the_view() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.system("Be brief.").unwrap();
    let first = t.user("Find the config.").unwrap();
    let call = ToolCall {
        id: "c1".into(),
        name: "grep".into(),
        arguments: "{\"q\":\"config\"}".into(),
    };
    t.assistant("", vec![call]).unwrap();
    let result: String = (0..40).map(|n| format!("a.py:{n}: x\n")).collect();
    t.tool_result("c1", "grep", result.clone(), false).unwrap();
    let last = t.assistant("It is in a.py.", Vec::new()).unwrap();
    t.user("Thanks.").unwrap();

    let cleared = t
        .clear_tool_results(&ClearOptions {
            keep: 0,
            ..ClearOptions::default()
        })
        .unwrap();
    let d = t.diff_commit(&Rev::from(cleared.cleared[0].id)).unwrap();
    assert_eq!(d.changed.len(), 1);
    assert_eq!(d.changed[0].0.message.content.text(), result);
    assert!(d.changed[0].1.marks.contains(&tract_core::Mark::Cleared));

    let manual = Manual("The config is in a.py.".into());
    let positions = t
        .positions_between(&Rev::from(first.id), &Rev::from(last.id))
        .unwrap();
    let compress = t
        .compress(&CompressRequest {
            commits: Some(positions.iter().map(Rev::from).collect()),
            summarizer: Some(&manual),
            ..CompressRequest::default()
        })
        .unwrap()
        .commits[0]
        .id;
    let d = t.diff_commit(&rev("HEAD")).unwrap();
    assert_eq!(d.commit.as_ref().unwrap().id, compress);
    assert_eq!(d.a.rev, "HEAD~1");
    // What it took out of view, with the text it had (the cleared placeholder), and what
    // replaced it.
    assert_eq!(d.only_a.len(), 4);
    assert_eq!(d.only_a[0].message.content.text(), "Find the config.");
    assert!(
        d.only_a[2]
            .message
            .content
            .text()
            .starts_with("[tract] Cleared")
    );
    assert_eq!(texts(&d.only_b), ["The config is in a.py."]);
    assert_eq!(d.shared_prefix, 1);
    assert_eq!(d.shared, 2, "the system prompt and the last message");
    assert!(d.b.token_count < d.a.token_count);

    // A first commit's diff starts from the empty view.
    let root = t.log(&tract_core::LogQuery::default()).unwrap();
    let root = root.last().unwrap().id;
    let d = t.diff_commit(&Rev::from(root)).unwrap();
    assert_eq!((d.a.commit, d.a.messages), (None, 0));
    assert_eq!(texts(&d.only_b), ["Be brief."]);
}

#[test]
fn reflog_revisions_name_where_a_ref_was() {
    let t = Tract::in_memory().unwrap();
    let one = t.user("one").unwrap().id;
    let two = t.user("two").unwrap().id;
    t.reset(&Rev::from(one)).unwrap();
    let three = t.user("three").unwrap().id;
    // main: three (now), one (the reset), two, one.
    assert_eq!(t.resolve(&rev("main@{0}")).unwrap(), three);
    assert_eq!(t.resolve(&rev("main@{1}")).unwrap(), one);
    assert_eq!(t.resolve(&rev("main@{2}")).unwrap(), two);
    assert_eq!(t.resolve(&rev("main@{2}~1")).unwrap(), one);
    let d = t.diff(&rev("main@{2}"), &rev("main")).unwrap();
    assert_eq!(texts(&d.only_a), ["two"]);
    assert_eq!(texts(&d.only_b), ["three"]);
    match t.resolve(&rev("main@{9}")) {
        Err(e @ Error::ReflogTooShort { .. }) => {
            assert_eq!(
                e.to_string(),
                "'main@{9}' not found: the reflog of main has 4 entries (NAME@{0} to NAME@{3})"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        t.resolve(&rev("nope@{1}")),
        Err(Error::UnknownRevision { .. })
    ));
}

/// A diff reads the text of what differs only: a message both views share, damaged in the
/// store, does not stop it (the views come from their checkpoints, which hold no text).
#[test]
fn a_diff_reads_no_shared_text() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let shared = t.user("a message both views share").unwrap();
    for k in 0..300 {
        t.user(format!("shared {k}")).unwrap();
    }
    let side = t.fork(&branch("side"), &rev("HEAD")).unwrap();
    t.user("main's").unwrap();
    side.user("side's").unwrap();
    t.checkpoint_views().unwrap();
    let mut d = t.store().damage().unwrap();
    let blob = *t
        .get_commit(shared.id)
        .unwrap()
        .commit
        .blob
        .as_ref()
        .unwrap();
    d.flip_byte(Object::Blob(blob), 3).unwrap();
    d.commit().unwrap();
    let fresh = Tract::open(&path).unwrap();
    let d = fresh.diff(&rev("main"), &rev("side")).unwrap();
    assert_eq!(d.shared_prefix, 301);
    assert_eq!(texts(&d.only_a), ["main's"]);
    assert_eq!(texts(&d.only_b), ["side's"]);
    // Reading the damaged message itself is refused, as ever.
    assert!(fresh.get_commit(shared.id).is_err());
}

/// Two branch tips compared from their checkpoints (the chunks both begin with not read) say
/// what the whole views compared say: the same diff by branch names and by commit ids, with
/// messages appended after each checkpoint, tool calls answered on either side of it, and an
/// edit of a message both views hold.
#[test]
fn branch_tips_compared_from_their_checkpoints_are_the_whole_views_compared() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let ids: Vec<CommitId> = (0..300).map(|k| turn(&t, k)).collect();
    let side = t.fork(&branch("side"), &Rev::from(ids[250])).unwrap();
    side.edit(ids[240], Content::Text("question 240, edited".into()))
        .unwrap();
    for k in 0..20 {
        side.user(format!("side {k}")).unwrap();
        t.user(format!("main {k}")).unwrap();
    }
    t.checkpoint_views().unwrap();
    // After the checkpoints: more appends, a call on main answered after them.
    let call = ToolCall {
        id: "late".into(),
        name: "read".into(),
        arguments: "{}".into(),
    };
    t.assistant("", vec![call]).unwrap();
    t.tool_result("late", "read", "late result", false).unwrap();
    side.user("side, after its checkpoint").unwrap();

    let fresh = Tract::open(&path).unwrap();
    let by_name = fresh.diff(&rev("main"), &rev("side")).unwrap();
    let tips = (
        fresh.resolve(&rev("main")).unwrap(),
        fresh.resolve(&rev("side")).unwrap(),
    );
    let by_id = fresh.diff(&Rev::from(tips.0), &Rev::from(tips.1)).unwrap();
    assert_eq!(summary(&by_name), summary(&by_id));
    assert_eq!(by_name.shared_prefix, 240);
    assert_eq!(by_name.changed.len(), 1);
    assert_eq!(
        by_name.only_b.last().unwrap().message.content.text(),
        "side, after its checkpoint"
    );
    assert_eq!(
        by_name.only_a.last().unwrap().message.content.text(),
        "late result"
    );
    // A checkpoint's chunk damaged: the views are built whole, and the diff is the same.
    damage_chunks(&fresh);
    let again = Tract::open(&path)
        .unwrap()
        .diff(&rev("main"), &rev("side"))
        .unwrap();
    assert_eq!(summary(&again), summary(&by_name));
}

/// A conversation checkpointed, then a call answered past the checkpoint, a compression of a
/// run near its end (checkpointed as it is written), a clear of old results, and appends.
fn compressed_and_cleared(t: &Tract) -> (CommitId, CommitId) {
    let ids: Vec<CommitId> = (0..300).map(|k| turn(t, k)).collect();
    t.checkpoint_views().unwrap();
    turn(t, 300);
    turn(t, 301);
    turn(t, 302);
    let manual = Manual("Questions 279 to 290 were read.".into());
    let positions = t
        .positions_between(&Rev::from(ids[279]), &Rev::from(ids[290]))
        .unwrap();
    let compress = t
        .compress(&CompressRequest {
            commits: Some(positions.iter().map(Rev::from).collect()),
            summarizer: Some(&manual),
            ..CompressRequest::default()
        })
        .unwrap()
        .commits[0]
        .id;
    t.user("after the compress").unwrap();
    t.clear_tool_results(&ClearOptions {
        keep: 90,
        ..ClearOptions::default()
    })
    .unwrap();
    t.user("after the clear").unwrap();
    (ids[0], compress)
}

/// What each commit did, told from the checkpoints of its view and its parent's where they
/// serve (a compression, the appends around it), is what the whole views compared say.
#[test]
fn a_commits_diff_from_checkpoints_is_the_whole_views_diff() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    compressed_and_cleared(&t);
    let fresh = Tract::open(&path).unwrap();
    let newest: Vec<CommitId> = fresh
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .iter()
        .take(40)
        .map(|c| c.id)
        .collect();
    let diffs = |t: &Tract| -> Vec<Summary> {
        newest
            .iter()
            .map(|id| summary(&t.diff_commit(&Rev::from(*id)).unwrap()))
            .collect()
    };
    let from_checkpoints = diffs(&fresh);
    assert!(
        from_checkpoints
            .iter()
            .any(|s| s.4.len() == 1 && s.4[0].2 == "Questions 279 to 290 were read."),
        "the compression is among them"
    );
    damage_chunks(&fresh);
    assert_eq!(diffs(&Tract::open(&path).unwrap()), from_checkpoints);
}

/// What a compression did is told from the checkpoints of its view and its parent's: the
/// messages before the run it replaced are not read, nor replayed, even where building either
/// view would have to replay them.
#[test]
fn a_compressions_diff_reads_nothing_before_the_run() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let (first, compress) = compressed_and_cleared(&t);
    let expected = summary(&t.diff_commit(&Rev::from(compress)).unwrap());
    // No branch names a checkpoint (a view is then replayed), and the first message is
    // damaged.
    let mut d = t.store().damage().unwrap();
    for key in d.meta_keys("checkpoint-at.").unwrap() {
        d.set_meta(&key, None).unwrap();
    }
    let blob = *t.get_commit(first).unwrap().commit.blob.as_ref().unwrap();
    d.flip_byte(Object::Blob(blob), 3).unwrap();
    d.commit().unwrap();
    let fresh = Tract::open(&path).unwrap();
    assert!(
        fresh.compile().is_err(),
        "a replay reads the damaged message"
    );
    let d = fresh.diff_commit(&Rev::from(compress)).unwrap();
    assert_eq!(summary(&d), expected);
    assert_eq!(d.only_a.len(), 12);
    assert_eq!(d.shared_prefix, 279);
}
