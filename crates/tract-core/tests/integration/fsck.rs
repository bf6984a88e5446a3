//! Integrity: a changed byte in a stored object is never served, and fsck names every kind of
//! damage. The damage is done through the backend (`faults::Damage`), so each test runs on
//! every backend; one changes the bytes of a real file.

use crate::support::{branch, call, delegated, file_store, open_bound, temp_store, texts};
use tract_core::storage::store::faults::Object;
use tract_core::{
    AppendOptions, Bind, Content, Error, MergeRequest, MergeStrategy, Message, Role, SearchQuery,
    Tract,
};

#[test]
fn a_changed_byte_in_a_stored_message_is_never_served() {
    let (_dir, path) = temp_store();
    let t = Tract::open(&path).unwrap();
    let batch = (0..20)
        .map(|i| Message::text(Role::User, format!("msg {i:04}")))
        .collect();
    let infos = t.append_batch(batch).unwrap();
    let damaged = infos[13].clone();
    let note = t
        .append_with(
            Message::text(Role::User, "last"),
            &AppendOptions {
                note: Some("note-QQQQ".into()),
                ..AppendOptions::default()
            },
        )
        .unwrap();
    let blob_id = damaged.commit.blob.unwrap();
    let mut d = t.store().damage().unwrap();
    d.flip_byte(Object::Blob(blob_id), 1).unwrap();
    d.commit().unwrap();
    // A handle opened afterwards has nothing cached: every read goes to the damaged record.
    drop(t);
    let t = Tract::open(&path).unwrap();
    let blob = blob_id.to_hex();
    let is_damaged_blob =
        |e: &Error| matches!(e, Error::CorruptObject { kind: "blob", id, .. } if *id == blob);
    // A compile holds what each message is (from the branch's checkpoint, which keeps no
    // text); rendering reads the text, and refuses the damaged one.
    let e = t
        .compile()
        .and_then(|c| c.messages().map(|_| ()))
        .unwrap_err();
    assert!(is_damaged_blob(&e), "{e}");
    assert!(e.to_string().contains(&blob[..10]), "{e}");
    assert!(is_damaged_blob(&t.get_commit(damaged.id).unwrap_err()));
    assert!(is_damaged_blob(
        &t.log(&tract_core::LogQuery::default()).unwrap_err()
    ));
    let q = SearchQuery {
        query: "msg".into(),
        history: true,
        ..SearchQuery::default()
    };
    assert!(is_damaged_blob(&t.search(&q).unwrap_err()));
    // Other messages still read; appending the same message again repairs the stored copy.
    assert_eq!(t.get_commit(infos[5].id).unwrap().preview(), "msg 0005");
    t.user("msg 0013").unwrap();
    assert_eq!(texts(&t)[13], "msg 0013");
    // A damaged commit record (a byte of its note changed) is refused the same way.
    let mut d = t.store().damage().unwrap();
    d.flip_byte(Object::Commit(note.id), 1).unwrap();
    d.commit().unwrap();
    drop(t);
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
    let report = tract_core::fsck(t.store()).unwrap();
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
    let mut d = store.damage().unwrap();
    let stray_id = d.put_blob(&Message::text(Role::User, "stray"), 1).unwrap();
    d.commit().unwrap();
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean());
    assert_eq!(report.unreachable_blobs, [stray_id]);

    // Counts that differ from the view, a branch at a commit the store lacks, a commit whose
    // blob is missing: each named.
    let mut d = store.damage().unwrap();
    let tip = d.tip("main").unwrap().unwrap();
    let mut stats = d.branch_stats("main").unwrap().unwrap();
    stats.tally.messages += 1;
    d.set_branch_stats("main", Some(&stats)).unwrap();
    d.set_branch("ghost", Some(tract_core::CommitId::of(b"nothing")), "test")
        .unwrap();
    let orphan = tract_core::Commit {
        parents: vec![tip],
        op: tract_core::Op::Append,
        blob: Some(tract_core::BlobId::of(b"no such blob")),
        timestamp_us: u64::MAX / 2,
        message: None,
    };
    let orphan_id = d.put_commit(&orphan).unwrap();
    d.commit().unwrap();
    let report = tract_core::fsck(t.store()).unwrap();
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

/// The bytes of the file itself changed, every copy of them (the storage engine keeps stale
/// copies of a page until it reuses the space): the objects read from the file are checked,
/// whatever page they come from.
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
    // In a pack, not in the journal's frames.
    t.store().fold_journal().unwrap();
    drop(t);
    let clean = tract_core::fsck(Tract::open(&path).unwrap().store()).unwrap();
    assert!(clean.problems.is_empty(), "{:?}", clean.problems);
    let objects = clean.commits + clean.blobs + clean.chunks;
    // Every 5th byte of every record changed: the records of a pack lie between its 64-byte
    // header and its index, whose offset the footer's first 8 bytes hold.
    let journal = path.with_file_name("store.redb-journal");
    let packs: Vec<_> = std::fs::read_dir(&journal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pack-")
        })
        .collect();
    assert_eq!(packs.len(), 1, "{packs:?}");
    let mut bytes = std::fs::read(&packs[0]).unwrap();
    let footer = bytes.len() - 64;
    let index = u64::from_le_bytes(bytes[footer..footer + 8].try_into().unwrap()) as usize;
    for at in (64..index).step_by(5) {
        bytes[at] ^= 0x20;
    }
    std::fs::write(&packs[0], bytes).unwrap();
    let t = Tract::open(&path).unwrap();
    let blob = m.commit.blob.unwrap();
    let e = t.compile().unwrap_err();
    assert!(
        matches!(e, Error::CorruptObject { .. }),
        "never served: {e}"
    );
    let report = tract_core::fsck(t.store()).unwrap();
    let corrupt: Vec<&str> = report
        .problems
        .iter()
        .filter(|p| p.kind == "corrupt")
        .map(|p| p.subject.as_str())
        .collect();
    let blob = format!("blob {}", blob.to_hex());
    let commit = format!("commit {}", noted.id.to_hex());
    assert!(corrupt.contains(&blob.as_str()), "{corrupt:?}");
    assert!(corrupt.contains(&commit.as_str()), "{corrupt:?}");
    assert!(
        corrupt.iter().any(|s| s.starts_with("chunk ")),
        "{corrupt:?}"
    );
    // The pack, and each object once (the big blob through its chunks).
    let pack = format!("pack {}", packs[0].file_name().unwrap().to_string_lossy());
    assert!(corrupt.contains(&pack.as_str()), "{corrupt:?}");
    assert!(corrupt.len() as u64 >= objects - 1, "{:?}", report.problems);
}
