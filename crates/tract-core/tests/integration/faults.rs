//! Storage that fails: a backend call that fails in the middle of a write (an append, an import,
//! a merge) commits nothing, leaves the handle's view as it was, and the next write works. The
//! faults are injected into the store's backend (`faults::Faults`), so this runs on every
//! backend.

use crate::support::{branch, call, open_bound, temp_store, texts};
use serde_json::json;
use std::path::Path;
use tract_core::storage::store::faults::{Call, Fault};
use tract_core::{Bind, CommitId, Error, MergeRequest, Message, Role, Tract};

/// What a write that failed must leave as it was: every branch's tip, the objects and reflog
/// entries stored (and that they are sound), and the handle's view.
#[derive(Debug, PartialEq)]
struct State {
    tips: Vec<(String, CommitId)>,
    stored: [u64; 4],
    problems: usize,
    view: Vec<String>,
}

fn state(t: &Tract) -> State {
    let report = tract_core::fsck(t.store()).unwrap();
    State {
        tips: t
            .branches()
            .unwrap()
            .into_iter()
            .map(|b| (b.name, b.head))
            .collect(),
        stored: [
            report.commits,
            report.blobs,
            report.chunks,
            report.reflog_entries,
        ],
        problems: report.problems.len(),
        view: texts(t),
    }
}

/// Runs `write` once for each call of each kind it makes of the backend, that call failing
/// (with each kind of fault in turn), on a store of its own that `setup` fills each time. A
/// write that fails returns the injected error, leaves everything as it was, and then succeeds
/// on the same handle; a write may go round a failed read (the cached view it extends inside
/// the transaction is dropped and the view built there instead), never round a failed write.
/// Either way, the handle's view is then the one a new handle builds from the store. Returns
/// how many faults failed the write, and how many it went round.
fn fails_cleanly_at_every_call(
    setup: impl Fn(&Path) -> Tract,
    write: impl Fn(&Tract) -> tract_core::Result<()>,
) -> (usize, usize) {
    let kinds = [Fault::Io, Fault::Storage, Fault::Database];
    let (mut attempt, mut failed, mut around) = (0, 0, 0);
    for call in Call::ALL {
        for n in 1.. {
            attempt += 1;
            let (_d, path) = temp_store();
            let t = setup(&path);
            let before = state(&t);
            let faults = t.store().faults();
            faults.fail(call, n, kinds[attempt % kinds.len()]);
            let result = write(&t);
            if faults.pending() > 0 {
                // The write makes fewer calls of this kind: it ran without a fault.
                result.unwrap_or_else(|e| panic!("{call:?}: a write without a fault: {e}"));
                break;
            }
            match result {
                Err(e) => {
                    assert!(
                        e.to_string().contains("fault injected"),
                        "{call:?} #{n}: {e}"
                    );
                    assert_eq!(state(&t), before, "{call:?} #{n} failed");
                    write(&t).unwrap_or_else(|e| panic!("{call:?} #{n}: the next write: {e}"));
                    failed += 1;
                }
                Ok(()) => {
                    let written = Call::WRITES.contains(&call) || call == Call::BeginWrite;
                    assert!(
                        !written,
                        "{call:?} #{n} failed, and the write still succeeded"
                    );
                    around += 1;
                }
            }
            let after = state(&t);
            assert_eq!(after.problems, 0, "{call:?} #{n}");
            assert_ne!(after.view, before.view, "{call:?} #{n}: nothing written");
            let cold = open_bound(&path, Bind::Branch(branch(SESSION)));
            assert_eq!(texts(&cold), after.view, "{call:?} #{n}");
        }
    }
    (failed, around)
}

/// The branch each attempt writes on.
const SESSION: &str = "session";

/// A session: a branch with a system prompt and a question.
fn session(path: &Path) -> Tract {
    let t = open_bound(path, Bind::Branch(branch(SESSION)));
    t.system("be brief").unwrap();
    t.user("where is the config?").unwrap();
    t
}

#[test]
fn a_storage_error_at_any_call_of_an_append_commits_nothing_and_the_next_append_works() {
    let (failed, _) = fails_cleanly_at_every_call(session, |t| {
        let batch = vec![
            Message {
                tool_calls: vec![call("c1", "grep")],
                ..Message::text(Role::Assistant, "")
            },
            Message::tool_result("c1", "grep", "config.py:42", false),
            Message::text(Role::Assistant, "in config.py"),
        ];
        t.append_batch(batch).map(drop)
    });
    assert!(failed >= 5, "only {failed} calls failed");
}

#[test]
fn a_storage_error_at_any_call_of_an_import_commits_nothing_and_the_next_import_works() {
    let body = json!({"model": "gpt-test", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "r"},
    ]})
    .to_string();
    let (failed, _) = fails_cleanly_at_every_call(
        |path| open_bound(path, Bind::Branch(branch(SESSION))),
        |t| {
            let transcript = tract_core::formats::transcript::parse(&body, None)?;
            t.import(transcript).map(drop)
        },
    );
    assert!(failed >= 5, "only {failed} calls failed");
}

#[test]
fn a_storage_error_at_any_call_of_a_merge_commits_nothing_and_the_next_merge_works() {
    let (failed, _) = fails_cleanly_at_every_call(
        |path| {
            let t = session(path);
            let side = t.fork(&branch("side"), &tract_core::Rev::head()).unwrap();
            side.user("a question on the side").unwrap();
            side.assistant("its answer", vec![]).unwrap();
            t
        },
        |t| t.merge(&branch("side"), &MergeRequest::default()).map(drop),
    );
    assert!(failed >= 5, "only {failed} calls failed");
}

/// A commit that fails after the write extended the handle's cached view inside its
/// transaction: the view is the one before, for this handle and any other, and the next append
/// goes on from the tip before.
#[test]
fn a_failed_commit_leaves_the_view_unchanged_and_the_next_append_works() {
    let (_d, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    t.system("be brief").unwrap();
    let tip = t.user("hello").unwrap();
    let before = texts(&t);
    let faults = t.store().faults();
    faults.fail(Call::Commit, 1, Fault::Io);
    match t.user("lost") {
        Err(Error::Io { source, .. }) => assert!(source.to_string().contains("fault injected")),
        other => panic!("expected the injected I/O error, got {other:?}"),
    }
    assert_eq!(faults.pending(), 0);
    assert_eq!(texts(&t), before);
    assert_eq!(t.head().unwrap().commit, Some(tip.id));
    assert_eq!(texts(&Tract::open(&path).unwrap()), before);
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean() && report.unreachable_blobs.is_empty());
    let next = t.user("again").unwrap();
    assert_eq!(next.commit.parents, [tip.id]);
    assert_eq!(texts(&t), ["be brief", "hello", "again"]);
}
