//! Stores opened to read only: every read works, nothing of the store changes (not a byte of
//! its files, not its format), and a write is `Error::ReadOnly`, changing nothing. (A store
//! the process may not write opens this way by itself: tested as another user by the CLI's
//! suite, since the tests may run as root.)

use crate::support::{file_store, postgres_url, sql_on, temp_store, texts};
use std::collections::BTreeMap;
use std::path::Path;
use tract_core::{
    Bind, BranchName, Content, Error, LogQuery, OpenMode, OpenOptions, Rev, SearchQuery, Tract,
};

/// Every file of the store at `path` (the file, and its journal directory's), with its bytes.
fn files(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut dirs = vec![path.parent().unwrap().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                all.insert(p.display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    all
}

fn read_only(path: &Path) -> Tract {
    let options = OpenOptions {
        mode: OpenMode::ReadOnly,
        bind: Bind::StoreHead,
        ..OpenOptions::default()
    };
    Tract::open_with(path, &options).unwrap()
}

fn refused<T: std::fmt::Debug>(what: &str, r: tract_core::Result<T>) {
    match r {
        Err(Error::ReadOnly { reason, .. }) => {
            assert_eq!(reason, "it was opened to read", "{what}")
        }
        other => panic!("{what}: expected ReadOnly, got {other:?}"),
    }
}

#[test]
fn a_store_opened_to_read_is_read_whole_and_keeps_every_byte() {
    let (_d, path) = file_store();
    let writer = Tract::open(&path).unwrap();
    writer.system("be brief").unwrap();
    writer.user("why does the retry loop spin").unwrap();
    let last = writer.assistant("it never sleeps", vec![]).unwrap();
    writer
        .fork(&BranchName::new("side").unwrap(), &Rev::head())
        .unwrap()
        .user("on the side")
        .unwrap();
    // Closed with its commits in the journal, not folded into the file.
    drop(writer);
    let before = files(&path);

    let t = read_only(&path);
    assert_eq!(t.store().read_only(), Some("it was opened to read"));
    assert_eq!(t.log(&LogQuery::default()).unwrap()[0].id, last.id);
    assert_eq!(texts(&t).len(), 3);
    let hits = t
        .search(&SearchQuery {
            query: "retry".into(),
            ..SearchQuery::default()
        })
        .unwrap();
    assert_eq!(hits.len(), 1, "searched from an index in memory");
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let nothing = t.store().upgrade().unwrap();
    assert_eq!((nothing.from, nothing.to), (5, 5));

    refused("an append", t.user("no"));
    refused("an edit", t.edit(last.id, Content::Text("changed".into())));
    refused(
        "a branch",
        t.create_branch(&BranchName::new("b").unwrap(), &Rev::head()),
    );
    refused("a fold", t.store().fold_journal());
    refused("a gc", tract_core::gc(t.store(), std::time::Duration::ZERO));
    drop(t);
    assert_eq!(files(&path), before, "a file changed, or one was made");
}

/// A store opened to write (the default) that is only read is left as it was, byte for byte:
/// the storage engine is opened to write on the first write, not by the open. That write then
/// works, and a later open reads it.
#[test]
fn a_store_opened_to_write_and_only_read_keeps_every_byte_until_it_writes() {
    let (_d, path) = file_store();
    let writer = Tract::open(&path).unwrap();
    writer.user("why does the retry loop spin").unwrap();
    let last = writer.assistant("it never sleeps", vec![]).unwrap();
    drop(writer);
    let before = files(&path);

    let t = Tract::open(&path).unwrap();
    assert_eq!(t.store().read_only(), None);
    assert_eq!(t.log(&LogQuery::default()).unwrap()[0].id, last.id);
    assert_eq!(texts(&t).len(), 2);
    drop(t);
    assert_eq!(files(&path), before, "a read changed a file, or made one");

    let t = Tract::open(&path).unwrap();
    assert_eq!(texts(&t).len(), 2);
    t.user("and now?").unwrap();
    t.store().fold_journal().unwrap();
    drop(t);
    assert_eq!(texts(&Tract::open(&path).unwrap()).len(), 3);
}

/// A handle opened to read beside one that writes, in one process: each is what it was opened
/// as, and the reader sees what the writer commits.
#[test]
fn a_reader_beside_a_writer_sees_its_commits_and_still_may_not_write() {
    let (_d, path) = temp_store();
    let first = Tract::open(&path).unwrap();
    first.user("one").unwrap();
    drop(first);
    let reader = read_only(&path);
    let writer = Tract::open(&path).unwrap();
    let two = writer.user("two").unwrap();
    assert_eq!(reader.log(&LogQuery::default()).unwrap()[0].id, two.id);
    refused("an append", reader.user("three"));
    assert_eq!(texts(&writer), ["one", "two"]);
}

/// A store of an older format opened to read is read as it is and left at its format: the
/// next open for writing still upgrades it.
#[test]
fn an_older_store_opened_to_read_is_read_in_its_own_format() {
    for (fixture, from, tip) in [
        ("store-format-1.redb", 1, "9d5481c641"),
        ("store-format-2.redb", 2, "d8f27c58b1"),
        ("store-format-3/store.redb", 3, "e50a6d8aee"),
        ("store-format-4/store.redb", 4, "0251b0d2c5"),
    ] {
        let (_d, path) = crate::upgrade::copy_fixture(&format!(
            "{}/../../tests/fixtures/{fixture}",
            env!("CARGO_MANIFEST_DIR")
        ));
        let before = files(&path);
        let t = read_only(&path);
        let log = t.log(&LogQuery::default()).unwrap();
        assert_eq!(log.len(), 11, "format {from}");
        assert!(log[0].id.to_hex().starts_with(tip), "format {from}");
        assert_eq!(texts(&t).len(), 11, "format {from}");
        refused("an upgrade", t.store().upgrade());
        drop(t);
        assert_eq!(files(&path), before, "format {from}: a file changed");
        let upgraded = Tract::open(&path).unwrap().store().upgrade().unwrap();
        assert_eq!((upgraded.from, upgraded.to), (from, 5));
    }
}

/// A store file copied while a writer had it open is as a writer killed in the middle of its
/// work leaves it: the storage engine must recover it before it is read, which only an open to
/// write does. An open to read of a file it may write does that once, then reads it.
#[test]
fn a_store_a_writer_left_mid_write_is_recovered_then_read() {
    let (_d, path) = file_store();
    let writer = Tract::open(&path).unwrap();
    for i in 0..20 {
        writer.user(format!("message {i}")).unwrap();
    }
    let (_copy_dir, copy) = crate::upgrade::copy_fixture(path.to_str().unwrap());
    drop(writer);
    let t = read_only(&copy);
    assert_eq!(texts(&t).len(), 20);
    assert_eq!(texts(&t)[19], "message 19");
    refused("an append", t.user("no"));
}

#[test]
fn a_missing_store_is_not_made_by_an_open_to_read() {
    let (_d, path) = file_store();
    let options = OpenOptions {
        mode: OpenMode::ReadOnly,
        ..OpenOptions::default()
    };
    match Tract::open_with(&path, &options) {
        Err(Error::Io { source, .. }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound)
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert!(!path.exists());
    assert_eq!(
        std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
        0
    );
}

/// A role that may only read the store's tables, and a database whose transactions are
/// read-only: the store opens, reads, and a write is refused saying which.
#[test]
fn postgres_a_store_the_server_lets_only_read_opens_for_reading() {
    let (_d, path) = temp_store();
    let Some(mut sql) = sql_on(&path) else {
        return;
    };
    // The server itself: a pooler in front knows only its own users.
    let Some(url) = std::env::var("TRACT_TEST_POSTGRES_DIRECT")
        .ok()
        .filter(|u| !u.is_empty())
        .or_else(postgres_url)
    else {
        return;
    };
    let t = Tract::open(&path).unwrap();
    t.user("kept").unwrap();
    drop(t);
    let schema = path
        .to_str()
        .unwrap()
        .rsplit_once("schema=")
        .unwrap()
        .1
        .to_string();
    let role = format!("reader_{schema}");
    sql.batch_execute(&format!(
        "CREATE ROLE \"{role}\" LOGIN PASSWORD 'reader-password';
         GRANT USAGE ON SCHEMA \"{schema}\" TO \"{role}\";
         GRANT SELECT ON ALL TABLES IN SCHEMA \"{schema}\" TO \"{role}\";"
    ))
    .unwrap();
    // The run's URL with the reader's name and password.
    let (scheme, rest) = url.split_once("://").unwrap();
    let host = rest.split_once('@').unwrap().1;
    let sep = if host.contains('?') { '&' } else { '?' };
    let as_reader = format!("{scheme}://{role}:reader-password@{host}{sep}schema={schema}");
    let reader = Tract::open(&as_reader).unwrap();
    assert_eq!(texts(&reader), ["kept"]);
    match reader.user("no") {
        Err(Error::ReadOnly { store, reason }) => {
            assert!(reason.contains("may not write its tables"), "{reason}");
            assert!(reason.contains(&role), "{reason}");
            assert!(!store.contains("reader-password"), "{store}");
        }
        other => panic!("expected ReadOnly, got {other:?}"),
    }
    drop(reader);
    sql.batch_execute(&format!(
        "GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA \"{schema}\" TO \"{role}\";
         ALTER ROLE \"{role}\" SET default_transaction_read_only = on;"
    ))
    .unwrap();
    let reader = Tract::open(&as_reader).unwrap();
    assert_eq!(texts(&reader), ["kept"]);
    match reader.user("no") {
        Err(Error::ReadOnly { reason, .. }) => {
            assert!(reason.contains("default_transaction_read_only"), "{reason}")
        }
        other => panic!("expected ReadOnly, got {other:?}"),
    }
    drop(reader);
    sql.batch_execute(&format!("DROP OWNED BY \"{role}\"; DROP ROLE \"{role}\";"))
        .unwrap();
    assert_eq!(texts(&Tract::open(&path).unwrap()), ["kept"]);
}
