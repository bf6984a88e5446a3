//! PostgreSQL: what only a database store has (the run with TRACT_TEST_POSTGRES; in the run on
//! files these tests return at once).

use crate::support::{postgres_url, sql_on, temp_store, texts};
use tract_core::{Error, Message, Role, Tract};

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
    let report = tract_core::fsck(cold.store()).unwrap();
    assert!(!report.is_clean());
    assert!(
        report.problems.iter().any(|p| p
            .subject
            .contains(&tract_core::BlobId::from_bytes(blob).to_hex()[..10])),
        "{report:?}"
    );
}

/// A branch moved behind a write transaction's back by something that takes no lock (a stray
/// `UPDATE`): the transaction's move (a raw one, through the backend), held back until its
/// commit, names the tip it replaces, so it is `HeadMoved` and nothing of it is committed.
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
    let mut w = store.damage_refs(&["main"]).unwrap();
    assert_eq!(w.tip("main").unwrap(), Some(second.id));
    let n = sql
        .execute(
            "UPDATE refs SET tip = $1 WHERE name = 'main'",
            &[&first.id.as_bytes().as_slice()],
        )
        .unwrap();
    assert_eq!(n, 1);
    let stray = Message::text(Role::User, "stray");
    let blob = w.put_blob(&stray, 1).unwrap();
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
    // The cuts follow the writer's progress, not a clock: a cut, then three more acknowledged
    // appends before the next, so a loaded machine (a TLS handshake per reconnect) changes how
    // long the test takes, never what it shows.
    let progress = std::sync::atomic::AtomicUsize::new(0);
    let (acked, refused, cuts) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let (mut acked, mut refused) = (Vec::new(), 0);
            for i in 0..400 {
                let text = format!("m {i}");
                match t.user(&text) {
                    Ok(_) => {
                        acked.push(text);
                        progress.store(acked.len(), std::sync::atomic::Ordering::SeqCst);
                    }
                    Err(Error::Database { .. }) => refused += 1,
                    Err(other) => panic!("a cut connection is a Database error, not {other:?}"),
                }
            }
            (acked, refused)
        });
        let (mut cuts, mut cut_at) = (0, 0);
        while !writer.is_finished() {
            let now = progress.load(std::sync::atomic::Ordering::SeqCst);
            if now >= cut_at + 3 {
                sql.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                    &[&tag],
                )
                .unwrap();
                (cuts, cut_at) = (cuts + 1, now);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let (acked, refused) = writer.join().unwrap();
        (acked, refused, cuts)
    });
    assert!(refused > 0, "no append met a cut connection ({cuts} cuts)");
    // A cut costs the appends that meet a dead connection (the one in flight, and one per
    // pooled connection not yet seen closed); the next one reconnects and commits, or the cuts,
    // which wait for commits, would have stopped.
    assert!(
        cuts >= 20 && acked.len() >= 200,
        "appends reconnect: {} acknowledged, {refused} refused, {cuts} cuts",
        acked.len()
    );
    let cold = Tract::open_existing(&url).unwrap();
    let shown: Vec<String> = cold
        .compile()
        .unwrap()
        .to_openai()
        .unwrap()
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
    assert!(tract_core::fsck(cold.store()).unwrap().is_clean());
}

#[test]
fn postgres_a_cold_read_takes_the_same_few_round_trips_whatever_the_history() {
    use tract_core::{Bind, BranchName, OpenOptions};
    let (_d, path) = temp_store();
    if postgres_url().is_none() {
        return;
    }
    let on = |name: &str| {
        let options = OpenOptions {
            bind: Bind::Branch(BranchName::new(name).unwrap()),
            ..OpenOptions::default()
        };
        Tract::open_with(&path, &options).unwrap()
    };
    for turns in [10, 300] {
        let name = format!("t{turns}");
        // Written as a logger writes, by a handle that never compiles.
        let writer = on(&name);
        for i in 0..turns {
            writer.user(format!("question {i}")).unwrap();
            writer.assistant(format!("answer {i}"), vec![]).unwrap();
        }
        drop(writer);
        let cold = on(&name);
        let trips = || cold.store().round_trips().unwrap();
        let before = trips();
        let compiled = cold.compile().unwrap();
        let compile = trips() - before;
        let messages = compiled.messages().unwrap();
        let render = trips() - before - compile;
        assert_eq!(messages.len(), 2 * turns, "{turns} turns");
        // The tip, pointer and manifest; the walk back to the checkpoint with its chunks; the
        // messages after it. Then every message's text with the redaction count.
        assert!(
            compile <= 3,
            "{turns} turns: compile() took {compile} round trips"
        );
        assert_eq!(
            render, 1,
            "{turns} turns: the texts took {render} round trips"
        );
    }
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
