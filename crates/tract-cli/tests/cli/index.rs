//! `tract index`: the search index brought up to date, or rebuilt; what fsck says of it.

use crate::common::{Project, a_session, exit, json};
use insta::assert_snapshot;

/// The bytes of the index's files, which differ from run to run (its metadata), shown as `[N]`
/// in this scope's snapshots.
#[must_use = "the filter holds until the guard is dropped"]
fn hide_bytes() -> insta::internals::SettingsBindDropGuard {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"(documents?) \(\d+ bytes\)", "$1 ([N] bytes)");
    settings.add_filter(r#""bytes": \d+"#, r#""bytes": [N]"#);
    settings.bind_to_scope()
}

/// The first run adds every commit, the next nothing; a new commit is added alone;
/// `--rebuild` builds it anew from every branch; `--json` says the same. fsck then checks every
/// document.
#[test]
fn index_adds_what_is_new_and_rebuilds() {
    let _bytes = hide_bytes();
    let p = a_session();
    assert_snapshot!(p.run(&["index"]), @"
    exit: 0
    --- stdout
    search index up to date: 4 commits added, 0 documents removed
    4 documents ([N] bytes) in [DIR]/.tract/store.redb-journal/index
    ");
    assert_snapshot!(p.run(&["index"]), @"
    exit: 0
    --- stdout
    search index up to date: 0 commits added, 0 documents removed
    4 documents ([N] bytes) in [DIR]/.tract/store.redb-journal/index
    ");
    p.ok(&["branch", "side"]);
    p.ok(&["--branch", "side", "add", "on the side"]);
    assert_snapshot!(p.run(&["index", "--json"]), @r#"
    exit: 0
    --- stdout
    {
      "added": 1,
      "removed": 0,
      "rebuilt": false,
      "documents": 5,
      "bytes": [N],
      "path": "[DIR]/.tract/store.redb-journal/index",
      "in_database": false
    }
    "#);
    assert_snapshot!(p.run(&["index", "--rebuild"]), @"
    exit: 0
    --- stdout
    search index rebuilt from every branch: 5 commits added, 5 documents removed
    5 documents ([N] bytes) in [DIR]/.tract/store.redb-journal/index
    ");
    let report = json(&p.ok(&["index", "--json"]));
    assert!(report["bytes"].as_u64().unwrap() > 0, "{report}");
    assert_snapshot!(p.run(&["fsck"]), @"
        exit: 0
        --- stdout
        checked 5 commits, 5 blobs, 0 chunks (566 bytes), 2 branches, 3 reflog entries; counts of 2 branches replayed
        the journal holds 3 frames not yet folded into the store file, each checked
        the search index holds 5 documents, each checked against the store
    ");
    assert_eq!(json(&p.ok(&["fsck", "--json"]))["index_documents"], 5);
    // A search sees what is indexed and what is not yet together: each commit once, with
    // the branches that hold it.
    assert_snapshot!(p.run(&["search", "config", "--all"]), @"
        exit: 0
        --- stdout
        9d6c995d1a user      -            Where is the config?  (main, side)
        501f6a52ff tool      grep         config.py:1: CFG=1 config.py:2: X=2  (main, side)
    ");
}

/// A redaction takes the text out of the index: the secret is found nowhere, before and after
/// the index is brought up to date.
#[test]
fn a_redacted_text_leaves_the_index() {
    let p = Project::new();
    p.ok(&["add", "the token is ghp_PLANTEDSECRET"]);
    p.ok(&["add", "the token was rotated"]);
    p.ok(&["index"]);
    let hits = p.ok(&["search", "ghp_PLANTEDSECRET", "--history", "--json"]);
    assert_eq!(json(&hits).as_array().unwrap().len(), 1);
    let secret = json(&hits)[0]["commit_hash"].as_str().unwrap()[..10].to_string();
    p.ok(&["redact", &secret, "--reason", "leaked token"]);
    let found = |p: &Project| {
        [
            p.run(&["search", "ghp_PLANTEDSECRET", "--history"]),
            p.run(&["search", "token", "--history"]),
        ]
        .map(|r| r.to_string())
        .join("")
    };
    let before = found(&p);
    assert_snapshot!(before, @"
        exit: 0
        exit: 0
        --- stdout
        1f81bc110f user      -            the token was rotated
    ");
    p.ok(&["index"]);
    assert_eq!(found(&p), before);
    let report = json(&p.ok(&["fsck", "--json"]));
    assert_eq!(report["clean"], true, "{report}");
}

/// An index that does not match its store (here another store's) is found by fsck, each
/// commit it should not hold named, with `tract index --rebuild` as the way out; searches
/// never show what the store does not hold; after the rebuild fsck is clean.
#[test]
fn a_wrong_index_is_found_by_fsck_and_rebuilt() {
    let _bytes = hide_bytes();
    let other = a_session();
    other.ok(&["index"]);
    let p = Project::new();
    p.ok(&["add", "where is the config?"]);
    let index = p.path().join(".tract/store.redb-journal/index");
    let _ = std::fs::remove_dir_all(&index);
    copy_dir(
        &other.path().join(".tract/store.redb-journal/index"),
        &index,
    );
    let fsck = p.run(&["fsck"]);
    assert_eq!(fsck.code, Some(1), "{fsck}");
    assert_snapshot!(fsck, @"
        exit: 1
        --- stdout
        checked 1 commit, 1 blob, 0 chunks (86 bytes), 1 branch, 1 reflog entry; counts of 1 branch replayed
        the journal holds 1 frame not yet folded into the store file, each checked
        the search index holds 4 documents, each checked against the store
        index       commit e12e09c5c712716f77fc0858d5ef3e6e2525d7d50ef791104211c43239ab17ca: the search index holds it and the store does not (a collection it missed, or another store's index): `tract index --rebuild` drops it
        index       commit 9d6c995d1a6037a270863a96c0b747342c2923d4c9a997158a110f85632416a6: the search index holds it and the store does not (a collection it missed, or another store's index): `tract index --rebuild` drops it
        index       commit 0b0f62b55f23def31d35316a4ba8cb04f8c359be01cd997fe70f61d8ed81be73: the search index holds it and the store does not (a collection it missed, or another store's index): `tract index --rebuild` drops it
        index       commit 501f6a52ffe0a11242de7104f848704a9938fd69d234e5aca7d636c87f0c3001: the search index holds it and the store does not (a collection it missed, or another store's index): `tract index --rebuild` drops it
        --- stderr
        error: fsck found 4 problems
        hint: keep a copy of the store file before changing anything
    ");
    assert_snapshot!(p.run(&["search", "config"]), @"
        exit: 0
        --- stdout
        78745c6ff8 user      -            where is the config?
    ");
    assert_snapshot!(p.run(&["index", "--rebuild"]), @"
        exit: 0
        --- stdout
        search index rebuilt from every branch: 1 commit added, 4 documents removed
        1 document ([N] bytes) in [DIR]/.tract/store.redb-journal/index
    ");
    assert_snapshot!(p.run(&["fsck"]), @"
        exit: 0
        --- stdout
        checked 1 commit, 1 blob, 0 chunks (86 bytes), 1 branch, 1 reflog entry; counts of 1 branch replayed
        the journal holds 1 frame not yet folded into the store file, each checked
        the search index holds 1 document, each checked against the store
    ");
    assert_eq!(p.run(&["index", "--nope"]).code, Some(exit::USAGE));
}

/// Copies the directory `from` to `to`, files only (an index is one flat directory).
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
