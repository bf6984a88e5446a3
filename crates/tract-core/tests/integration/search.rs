//! Ranked search end to end: BM25 order, the syntax, filters, paging, the branches a hit is
//! in, what is not indexed yet, and the index's upkeep after redaction and gc.

use crate::support::{branch, call, temp_store};
use tract_core::{
    Content, Error, OpenOptions, Rev, Role, SearchHit, SearchQuery, SearchScope, StoreOptions,
    Tract, update_index,
};

fn q(query: &str) -> SearchQuery {
    SearchQuery {
        query: query.into(),
        ..SearchQuery::default()
    }
}

fn ids(hits: &[SearchHit]) -> Vec<tract_core::CommitId> {
    hits.iter().map(|h| h.info.id).collect()
}

/// A store whose handles index every `batch` commits they write (0: never; searches do).
fn open(path: &std::path::Path, batch: u64) -> Tract {
    let options = OpenOptions {
        store: StoreOptions {
            index_batch: batch,
            ..StoreOptions::default()
        },
        ..OpenOptions::default()
    };
    Tract::open_with(path, &options).unwrap()
}

/// Filler an agent might have seen: many messages that share the common words.
fn filler(t: &Tract, n: usize) {
    for i in 0..n {
        t.user(format!("please look at the build log number {i}"))
            .unwrap();
        t.assistant(format!("the build log {i} shows the tests ran"), vec![])
            .unwrap();
    }
}

#[test]
fn hits_are_ranked_best_first() {
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    filler(&t, 50);
    let needle = t
        .user("the flaky test is in payment_gateway_retry, see the retry logic")
        .unwrap();
    let once = t.user("retry once and move on").unwrap();
    filler(&t, 50);
    // The rare identifier: one hit, first.
    let hits = t.search(&q("payment_gateway_retry")).unwrap();
    assert_eq!(ids(&hits), [needle.id]);
    // A word in two messages: the one saying it twice, in fewer words, first.
    let hits = t.search(&q("retry")).unwrap();
    assert_eq!(ids(&hits), [needle.id, once.id]);
    assert!(hits[0].score > hits[1].score);
    // Every required word; the common ones do not outweigh the rare one.
    let hits = t.search(&q("build retry")).unwrap();
    assert!(hits.is_empty(), "no message has both");
    let hits = t.search(&q("log 7")).unwrap();
    assert_eq!(
        hits.len(),
        4,
        "the user's and the assistant's message about log 7, twice"
    );
    // The whole index again, after a batch: the same answers.
    update_index(t.store(), false).unwrap();
    assert_eq!(ids(&t.search(&q("retry")).unwrap()), [needle.id, once.id]);
    // The best one alone, when only one is asked for.
    let best = SearchQuery {
        limit: Some(1),
        ..q("retry")
    };
    assert_eq!(ids(&t.search(&best).unwrap()), [needle.id]);
}

#[test]
fn the_syntax_phrases_exclusions_or_and_identifiers() {
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    let a = t.user("connection refused by the database").unwrap();
    let b = t.user("the database refused the connection").unwrap();
    let c = t.user("call getUserName before saving").unwrap();
    let d = t.user("src/store/mod.rs:42 panicked").unwrap();
    let e = t.user("Датабаза недоступна, 数据库连接失败").unwrap();
    let by_id = |query: &str| {
        let mut found = ids(&t.search(&q(query)).unwrap());
        found.sort();
        found
    };
    let sorted = |mut v: Vec<tract_core::CommitId>| {
        v.sort();
        v
    };
    // Matched as they are (nothing indexed yet), then by the index.
    for indexed in [false, true] {
        if indexed {
            update_index(t.store(), false).unwrap();
        }
        assert_eq!(by_id(r#""connection refused""#), [a.id]);
        assert_eq!(by_id("connection refused"), sorted(vec![a.id, b.id]));
        assert_eq!(by_id("database -connection"), Vec::new());
        assert_eq!(by_id("refused -\"refused the\""), [a.id]);
        assert_eq!(by_id("panicked OR getUserName"), sorted(vec![c.id, d.id]));
        // Typed in small letters, an identifier is found whole.
        assert_eq!(by_id("getusername"), [c.id]);
        assert_eq!(by_id("GETUSERNAME"), [c.id]);
        // Identifiers and paths match their parts, in order.
        assert_eq!(by_id("user name"), [c.id]);
        assert_eq!(by_id("get_user_name"), [c.id]);
        assert_eq!(by_id("store/mod.rs"), [d.id]);
        assert_eq!(by_id("mod 42"), [d.id]);
        assert_eq!(by_id("недоступна"), [e.id]);
        assert_eq!(by_id("数据库"), [e.id]);
        assert_eq!(by_id("据数"), Vec::new(), "ideographs in order");
    }
    // A snippet keeps its words whole, punctuation included, and marks the matches.
    let f = t.user("config: DATABASE_URL = env()").unwrap();
    let hit = t.search(&q("database url")).unwrap().remove(0);
    assert_eq!(hit.info.id, f.id);
    assert_eq!(hit.snippet, "config: DATABASE_URL = env()");
    let marked: Vec<&str> = hit
        .highlights
        .iter()
        .map(|&(a, b)| &hit.snippet[a..b])
        .collect();
    assert_eq!(marked, ["DATABASE", "URL"]);
    let hit = t.search(&q("getusername")).unwrap().remove(0);
    let marked: Vec<&str> = hit
        .highlights
        .iter()
        .map(|&(a, b)| &hit.snippet[a..b])
        .collect();
    assert_eq!(marked, ["getUserName"]);
    for bad in ["", "   ", "---", "-connection", "a OR", r#""open"#] {
        assert!(
            matches!(t.search(&q(bad)), Err(Error::InvalidInput { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn filters_role_tool_operation_errors_and_time() {
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    let c = crate::support::tool_session(&t);
    let search = |f: &dyn Fn(&mut SearchQuery)| {
        let mut query = q("grep OR tests OR config");
        query.history = true;
        f(&mut query);
        ids(&t.search(&query).unwrap())
    };
    // Matched as they are (nothing indexed yet), then by the index.
    for indexed in [false, true] {
        if indexed {
            update_index(t.store(), false).unwrap();
        }
        let mut all = search(&|_| {});
        all.sort();
        assert!(all.len() >= 3);
        assert_eq!(
            search(&|s| s.tool = Some("bash".into())),
            [c[6].id],
            "the bash result (the call to bash says none of the words)"
        );
        assert_eq!(search(&|s| s.errors = true), [c[6].id]);
        let mut grep = search(&|s| s.tool = Some("grep".into()));
        grep.sort();
        let mut want = vec![c[2].id, c[4].id, c[7].id];
        want.sort();
        assert_eq!(grep, want, "grep's calls and results");
        assert_eq!(search(&|s| s.role = Some(Role::User)), [c[1].id]);
        assert!(search(&|s| s.op = Some("edit".into())).is_empty());
    }
    let e = t
        .edit_tool_result(
            c[4].id,
            "g1",
            "grep",
            Content::Text("config trimmed".into()),
        )
        .unwrap();
    // Time: the edit is the newest commit.
    let at = e.commit.timestamp_us;
    for indexed in [false, true] {
        if indexed {
            update_index(t.store(), false).unwrap();
        }
        assert_eq!(search(&|s| s.op = Some("edit".into())), [e.id]);
        assert_eq!(search(&|s| s.since_us = Some(at)), [e.id]);
        assert!(!search(&|s| s.until_us = Some(at)).contains(&e.id));
    }
    let bad = |f: &dyn Fn(&mut SearchQuery)| {
        let mut query = q("grep");
        f(&mut query);
        matches!(t.search(&query), Err(Error::InvalidInput { .. }))
    };
    assert!(bad(&|s| s.op = Some("record".into())));
    assert!(bad(&|s| {
        s.since_us = Some(10);
        s.until_us = Some(5);
    }));
    assert!(bad(&|s| {
        s.regex = true;
        s.scope = SearchScope::All;
    }));
}

#[test]
fn paging_is_stable_and_whole() {
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    filler(&t, 40);
    // Matched as they are (nothing indexed yet), then by the index.
    for indexed in [false, true] {
        if indexed {
            update_index(t.store(), false).unwrap();
        }
        let all = ids(&t.search(&q("log")).unwrap());
        assert_eq!(all.len(), 80);
        let mut paged = Vec::new();
        for page in 0..9 {
            let mut query = q("log");
            query.offset = page * 10;
            query.limit = Some(10);
            paged.extend(ids(&t.search(&query).unwrap()));
        }
        assert_eq!(paged, all);
    }
    let mut none = q("log");
    none.limit = Some(0);
    assert!(t.search(&none).unwrap().is_empty());
}

#[test]
fn the_view_or_the_history_of_one_branch_or_every_branch() {
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    t.system("you are a coding agent").unwrap();
    let shared = t
        .user("the migration script fails on null columns")
        .unwrap();
    let fork = t.fork(&branch("retry"), &Rev::head()).unwrap();
    let main_only = t.user("main tries the migration with a default").unwrap();
    let fork_only = fork
        .user("the fork tries the migration in batches")
        .unwrap();
    let other = t.fork(&branch("other"), &Rev::from(shared.id)).unwrap();
    drop(other);

    let hits = |scope: SearchScope, history: bool| {
        let mut query = q("migration");
        query.scope = scope;
        query.history = history;
        t.search(&query).unwrap()
    };
    let sorted = |mut v: Vec<tract_core::CommitId>| {
        v.sort();
        v
    };
    // Every branch: each commit once, naming every branch whose history holds it; as
    // matched before the index holds them, then by the index.
    let before = hits(SearchScope::All, true);
    update_index(t.store(), false).unwrap();
    let every = hits(SearchScope::All, true);
    let names = |hs: &[SearchHit]| {
        let mut v: Vec<_> = hs.iter().map(|h| (h.info.id, h.branches.clone())).collect();
        v.sort();
        v
    };
    assert_eq!(names(&before), names(&every));
    assert_eq!(
        sorted(ids(&every)),
        sorted(vec![shared.id, main_only.id, fork_only.id])
    );
    let branches_of = |id| {
        every
            .iter()
            .find(|h| h.info.id == id)
            .map(|h| h.branches.clone())
            .unwrap()
    };
    assert_eq!(branches_of(shared.id), ["main", "other", "retry"]);
    assert_eq!(branches_of(main_only.id), ["main"]);
    assert_eq!(branches_of(fork_only.id), ["retry"]);
    // One branch, by name; the handle's own by default.
    assert_eq!(
        sorted(ids(&hits(SearchScope::Branch("retry".into()), true))),
        sorted(vec![shared.id, fork_only.id])
    );
    assert_eq!(
        sorted(ids(&hits(SearchScope::Here, true))),
        sorted(vec![shared.id, main_only.id])
    );
    assert!(matches!(
        t.search(&SearchQuery {
            scope: SearchScope::Branch("nope".into()),
            ..q("migration")
        }),
        Err(Error::UnknownBranch { .. })
    ));
    // The view: an edited message is found by its version in view; the original only in
    // history.
    let edited = t
        .edit(
            main_only.id,
            Content::Text("main uses a default value".into()),
        )
        .unwrap();
    assert_eq!(ids(&hits(SearchScope::Here, false)), [shared.id]);
    assert!(ids(&hits(SearchScope::Here, true)).contains(&main_only.id));
    let mut by_edit = q("default value");
    by_edit.scope = SearchScope::Here;
    assert_eq!(ids(&t.search(&by_edit).unwrap()), [edited.id]);
    // Every branch's view, before and after the edit is indexed.
    for indexed in [false, true] {
        if indexed {
            update_index(t.store(), false).unwrap();
        }
        assert_eq!(
            sorted(ids(&hits(SearchScope::All, false))),
            sorted(vec![shared.id, fork_only.id])
        );
        assert_eq!(ids(&t.search(&by_edit).unwrap()), [edited.id]);
    }
}

#[test]
fn what_was_just_written_is_found_before_and_after_a_batch_once() {
    let (_d, path) = temp_store();
    // A batch every 64 commits, in the background.
    let t = open(&path, 64);
    filler(&t, 100);
    let fresh = t.user("a brand new observation about zebras").unwrap();
    assert_eq!(ids(&t.search(&q("zebras")).unwrap()), [fresh.id]);
    let report = update_index(t.store(), false).unwrap();
    assert_eq!(report.documents, 201);
    assert_eq!(ids(&t.search(&q("zebras")).unwrap()), [fresh.id]);
    // Another handle, another process's view of the same store, finds each once.
    drop(t);
    let again = open(&path, 0);
    assert_eq!(again.search(&q("log")).unwrap().len(), 200);
    let later = again.user("zebras again").unwrap();
    let mut found = ids(&again.search(&q("zebras")).unwrap());
    found.sort();
    let mut want = vec![fresh.id, later.id];
    want.sort();
    assert_eq!(found, want);
    // A rebuild holds the same.
    let rebuilt = update_index(again.store(), true).unwrap();
    assert!(rebuilt.rebuilt);
    assert_eq!(rebuilt.documents, 202);
    assert_eq!(again.search(&q("zebras")).unwrap().len(), 2);
}

/// The index directory of the store file at `path`: in its journal directory.
fn index_dir(path: &std::path::Path) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push("-journal");
    path.with_file_name(name).join("index")
}

/// Whether the index holds `word` anywhere: in a store file's, any segment's term
/// dictionary (a deleted document's words stay there until its segment is written again); in
/// PostgreSQL, any row of the `search` table.
fn index_has_word(path: &std::path::Path, word: &str) -> bool {
    if let Some(mut sql) = crate::support::sql_on(path) {
        let n: i64 = sql
            .query_one(
                "SELECT count(*) FROM search WHERE words @@ $1::text::tsquery \
                 OR words::text LIKE '%' || $1 || '%'",
                &[&word],
            )
            .unwrap()
            .get(0);
        return n > 0;
    }
    let index = tantivy::Index::open_in_dir(index_dir(path)).unwrap();
    let text = index.schema().get_field("text").unwrap();
    let reader = index
        .reader_builder()
        .reload_policy(tantivy::ReloadPolicy::Manual)
        .try_into()
        .unwrap();
    let searcher: tantivy::Searcher = reader.searcher();
    searcher.segment_readers().iter().any(|seg| {
        let inverted = seg.inverted_index(text).unwrap();
        inverted.terms().get(word.as_bytes()).unwrap().is_some()
    })
}

#[test]
fn redacted_and_collected_text_leaves_the_index_for_good() {
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    filler(&t, 10);
    let secret = t.user("my key is zqxwvsecretvalue keep it").unwrap();
    let report = update_index(t.store(), false).unwrap();
    match crate::support::postgres_url() {
        // In the database, beside the store's tables.
        Some(_) => assert_eq!(report.path, None),
        None => assert_eq!(report.path, Some(index_dir(&path))),
    }
    assert!(report.bytes > 0);
    assert!(index_has_word(&path, "zqxwvsecretvalue"));
    assert_eq!(t.search(&q("zqxwvsecretvalue")).unwrap().len(), 1);
    t.redact(secret.id, "a key").unwrap();
    assert!(t.search(&q("zqxwvsecretvalue")).unwrap().is_empty());
    assert!(
        !index_has_word(&path, "zqxwvsecretvalue"),
        "the redacted word is gone from the index's files"
    );
    // The placeholder is searchable by what the view shows, the commit keeps its place.
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());

    // A branch whose commits gc collects.
    let side = t.fork(&branch("side"), &Rev::head()).unwrap();
    side.user("ephemeral qwpfgjluy notes").unwrap();
    update_index(t.store(), false).unwrap();
    assert!(index_has_word(&path, "qwpfgjluy"));
    drop(side);
    t.delete_branch(&branch("side")).unwrap();
    let gc = tract_core::gc(t.store(), std::time::Duration::ZERO).unwrap();
    assert!(gc.commits >= 1);
    assert!(t.search(&q("qwpfgjluy")).unwrap().is_empty());
    assert!(!index_has_word(&path, "qwpfgjluy"));
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(
        report.index_documents, 21,
        "20 of filler and the redacted one"
    );
    // Compaction rewrites the database's tables, the index's too, leaving no old row versions.
    if crate::support::postgres_url().is_some() {
        t.into_store().compact().unwrap();
        let t = open(&path, 0);
        assert!(tract_core::fsck(t.store()).unwrap().is_clean());
        assert_eq!(t.search(&q("log")).unwrap().len(), 20);
    }
}

#[test]
fn fsck_finds_an_index_behind_on_a_redaction_and_a_catch_up_mends_it() {
    if crate::support::postgres_url().is_some() {
        return postgres_index_behind_on_a_redaction();
    }
    let (_d, path) = crate::support::file_store();
    let t = open(&path, 0);
    let secret = t.user("hunter2hunter2 is the password").unwrap();
    update_index(t.store(), false).unwrap();
    // The index's state as it was before the redaction: as if the process died between the
    // redaction's commit and the index's upkeep.
    let dir = index_dir(&path);
    let saved = tempfile::tempdir().unwrap();
    copy_dir(&dir, saved.path());
    t.redact(secret.id, "password").unwrap();
    drop(t);
    std::fs::remove_dir_all(&dir).unwrap();
    copy_dir(saved.path(), &dir);
    let t = open(&path, 0);
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.kind == "index" && p.detail.contains("redactions")),
        "{:?}",
        report.problems
    );
    // `tract index` (as the next batch would) applies the redaction it missed.
    update_index(t.store(), false).unwrap();
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
    assert!(t.search(&q("hunter2hunter2")).unwrap().is_empty());
    assert!(!index_has_word(&path, "hunter2hunter2"));
}

/// The database's index as it was before a redaction (its state and the redacted row's
/// words put back, as if the process died between the redaction's commit and the index's
/// upkeep): fsck names it, a catch-up applies it.
fn postgres_index_behind_on_a_redaction() {
    let (_d, path) = temp_store();
    let mut sql = crate::support::sql_on(&path).unwrap();
    let t = open(&path, 0);
    let secret = t.user("hunter2hunter2 is the password").unwrap();
    update_index(t.store(), false).unwrap();
    let row = sql
        .query_one(
            "SELECT (SELECT value FROM search_state), words::text FROM search WHERE id = $1",
            &[&secret.id.as_bytes().as_slice()],
        )
        .unwrap();
    let (state, words): (Vec<u8>, String) = (row.get(0), row.get(1));
    t.redact(secret.id, "password").unwrap();
    assert!(!index_has_word(&path, "hunter2hunter2"));
    sql.execute("UPDATE search_state SET value = $1", &[&state])
        .unwrap();
    sql.execute(
        "UPDATE search SET words = $1::text::tsvector WHERE id = $2",
        &[&words, &secret.id.as_bytes().as_slice()],
    )
    .unwrap();
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.kind == "index" && p.detail.contains("redactions")),
        "{:?}",
        report.problems
    );
    update_index(t.store(), false).unwrap();
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
    assert!(t.search(&q("hunter2hunter2")).unwrap().is_empty());
    assert!(!index_has_word(&path, "hunter2hunter2"));
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn regex_scans_still_work_and_list_branches() {
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    crate::support::tool_session(&t);
    let mut re = q(r"DATABASE_\w+");
    re.regex = true;
    let hits = t.search(&re).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].score, None);
    assert_eq!(hits[0].branches, ["main"]);
    let (a, b) = hits[0].highlights[0];
    assert_eq!(&hits[0].snippet[a..b], "DATABASE_URL");
    // Tool calls' arguments are scanned too.
    t.assistant("", vec![call("z9", "grep_everything")])
        .unwrap();
    let mut args = q("grep_every");
    args.regex = true;
    assert_eq!(t.search(&args).unwrap().len(), 1);
}

/// Set for a child process of `processes_writing_side_by_side_keep_one_index`: the store's
/// path and the branch it writes.
const CHILD: &str = "TRACT_TEST_SEARCH_CHILD";

#[test]
fn processes_writing_side_by_side_keep_one_index() {
    if let Ok(spec) = std::env::var(CHILD) {
        let (path, name) = spec.split_once('|').unwrap();
        let options = OpenOptions {
            store: StoreOptions {
                index_batch: 40,
                ..StoreOptions::default()
            },
            bind: tract_core::Bind::Branch(branch(name)),
            ..OpenOptions::default()
        };
        let t = Tract::open_with(path, &options).unwrap();
        for i in 0..150 {
            t.user(format!("{name} step {i} touches file{i}.rs"))
                .unwrap();
            // Each process finds what it just wrote, whoever indexed what.
            if i % 50 == 49 {
                let mut query = q(&format!("{name} step {i}"));
                query.scope = SearchScope::Here;
                assert_eq!(t.search(&query).unwrap().len(), 1, "{name} {i}");
            }
        }
        return;
    }
    // One index file shared by the processes, or the database's tables.
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    t.system("shared start").unwrap();
    for name in ["alpha", "bravo", "charlie"] {
        t.create_branch(&branch(name), &Rev::head()).unwrap();
    }
    let children: Vec<_> = ["alpha", "bravo", "charlie"]
        .iter()
        .map(|name| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "search::processes_writing_side_by_side_keep_one_index",
                    "--nocapture",
                ])
                .env(CHILD, format!("{}|{name}", path.display()))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let report = update_index(t.store(), false).unwrap();
    assert_eq!(report.documents, 451, "every commit once");
    let fsck = tract_core::fsck(t.store()).unwrap();
    assert!(fsck.is_clean(), "{:?}", fsck.problems);
    let mut all = q("step");
    all.scope = SearchScope::All;
    all.history = true;
    let hits = t.search(&all).unwrap();
    assert_eq!(hits.len(), 450);
    let mut shared = q("shared start");
    shared.scope = SearchScope::All;
    shared.history = true;
    let hit = t.search(&shared).unwrap();
    assert_eq!(hit.len(), 1);
    assert_eq!(hit[0].branches, ["alpha", "bravo", "charlie", "main"]);
}

#[test]
fn batches_are_merged_into_few_segments() {
    if crate::support::postgres_url().is_some() {
        return; // the files of a store file's index
    }
    let (_d, path) = crate::support::file_store();
    let t = open(&path, 0);
    for _ in 0..40 {
        filler(&t, 10);
        update_index(t.store(), false).unwrap();
    }
    let index = tantivy::Index::open_in_dir(index_dir(&path)).unwrap();
    let segments = index.searchable_segment_ids().unwrap().len();
    assert!(segments <= 16, "{segments} segments for 40 batches");
    assert_eq!(t.search(&q("log")).unwrap().len(), 800);
}

#[test]
fn a_long_message_shows_the_passage_around_its_match() {
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    let before = "lorem ipsum dolor sit amet ".repeat(40);
    let after = " consectetur adipiscing elit".repeat(40);
    let m = t
        .user(format!("{before}the needle_in_haystack(42) is here{after}"))
        .unwrap();
    let hit = t.search(&q("needle in haystack")).unwrap().remove(0);
    assert_eq!(hit.info.id, m.id);
    assert!(
        hit.snippet.starts_with('…') && hit.snippet.ends_with('…'),
        "{}",
        hit.snippet
    );
    assert!(
        hit.snippet.chars().count() <= 160 + 2 * 24 + 2,
        "{}",
        hit.snippet
    );
    assert!(
        hit.snippet.contains("needle_in_haystack(42)"),
        "{}",
        hit.snippet
    );
    let marked: Vec<&str> = hit
        .highlights
        .iter()
        .map(|&(a, b)| &hit.snippet[a..b])
        .collect();
    assert_eq!(marked, ["needle", "in", "haystack"]);
    // A page far out asks for no more hits than there are.
    let mut far = q("needle");
    far.offset = 1 << 20;
    far.limit = Some(10);
    assert!(t.search(&far).unwrap().is_empty());
    far.offset = 0;
    far.limit = Some(usize::MAX);
    assert_eq!(t.search(&far).unwrap().len(), 1);
}

#[test]
fn a_closed_handle_leaves_no_batch_running() {
    if crate::support::postgres_url().is_some() {
        return; // compaction of a file
    }
    let (_d, path) = crate::support::file_store();
    for _ in 0..5 {
        let t = open(&path, 8);
        filler(&t, 20);
        // The batches' thread is done with the store once the handle is closed: it is the
        // only handle, so the file can be compacted at once.
        t.into_store().compact().unwrap();
    }
    let t = open(&path, 0);
    assert_eq!(t.search(&q("log")).unwrap().len(), 200);
}

#[test]
fn a_search_past_a_batch_of_unindexed_commits_indexes_them_first() {
    // A store in PostgreSQL gets the index's tables then.
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    filler(&t, 600);
    // 1,200 commits no process indexed: the search indexes them, then searches the index.
    assert_eq!(t.search(&q("log 599")).unwrap().len(), 2);
    assert_eq!(update_index(t.store(), false).unwrap().added, 0);
    // A few more are matched as they are, and left to the next batch.
    t.user("one more about the zebra crossing").unwrap();
    assert_eq!(t.search(&q("zebra")).unwrap().len(), 1);
    assert_eq!(update_index(t.store(), false).unwrap().added, 1);
}

#[test]
fn many_branches_and_one_left_behind() {
    // Seventy forks, each a lane of its own, indexed, then one deleted: every branch's history
    // no longer reaches every indexed commit, so the search bounds each lane.
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    t.system("shared start of the kestrel project").unwrap();
    let mut kept = Vec::new();
    for i in 0..70 {
        let fork = t.fork(&branch(&format!("b{i:02}")), &Rev::head()).unwrap();
        let c = fork.user(format!("kestrel note {i}")).unwrap();
        if i != 33 {
            kept.push(c.id);
        }
    }
    update_index(t.store(), false).unwrap();
    t.delete_branch(&branch("b33")).unwrap();
    let mut all = q("kestrel note");
    all.scope = SearchScope::All;
    all.history = true;
    let mut found = ids(&t.search(&all).unwrap());
    found.sort();
    kept.sort();
    assert_eq!(found, kept, "the deleted branch's note is in no branch");
    let mut one = q("kestrel");
    one.scope = SearchScope::Branch("b07".into());
    one.history = true;
    let hits = t.search(&one).unwrap();
    assert_eq!(hits.len(), 2, "the shared start and b07's note");
}

#[test]
fn postgres_one_connection_is_enough_to_search_index_and_check() {
    if crate::support::postgres_url().is_none() {
        return;
    }
    // The index's rows are read in the store's own transaction and written in one that also
    // reads the store: a pool of one connection searches, indexes and checks.
    let (_d, path) = temp_store();
    let url = std::path::PathBuf::from(format!("{}&pool_size=1", path.display()));
    let t = open(&url, 0);
    filler(&t, 600);
    assert_eq!(t.search(&q("log 599")).unwrap().len(), 2);
    t.user("one more about the zebra crossing").unwrap();
    assert_eq!(t.search(&q("zebra")).unwrap().len(), 1);
    let report = update_index(t.store(), false).unwrap();
    assert!(report.in_database && report.documents == 1201);
    let fsck = tract_core::fsck(t.store()).unwrap();
    assert!(fsck.is_clean(), "{:?}", fsck.problems);
    assert_eq!(fsck.index_documents, 1201);
    // Redaction and gc read only in their write transaction (a redaction used to wait for a
    // second connection while its write held the only one, and time out).
    let zebra = t.search(&q("zebra")).unwrap()[0].info.id;
    t.redact(zebra, "a test").unwrap();
    assert!(t.search(&q("zebra")).unwrap().is_empty());
    tract_core::gc(t.store(), std::time::Duration::ZERO).unwrap();
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
}

#[test]
fn postgres_ranks_a_common_query_among_its_newest_matches() {
    // The best match of `zebra` is the oldest of 1,051; in PostgreSQL a query matching more
    // than 1,000 commits is ranked among its newest 1,000 (a store file ranks them all).
    let (_d, path) = temp_store();
    let t = open(&path, 0);
    let oldest = t.user("zebra zebra zebra zebra, the oldest zebra").unwrap();
    for i in 0..1_050 {
        t.user(format!(
            "a zebra crossing, number {i}, among many other words"
        ))
        .unwrap();
    }
    update_index(t.store(), false).unwrap();
    let on_postgres = crate::support::postgres_url().is_some();
    let page = |query: &str, scope: SearchScope, limit: Option<usize>| {
        let q = SearchQuery {
            scope,
            history: true,
            limit,
            ..q(query)
        };
        t.search(&q).unwrap()
    };
    // The lanes' join (one branch), then the words' or the time index (every branch), before
    // and after the table has statistics.
    let analyze = || {
        if let Some(mut sql) = crate::support::sql_on(&path) {
            sql.batch_execute("ANALYZE search").unwrap();
        }
    };
    for scope in [SearchScope::Here, SearchScope::All, SearchScope::All] {
        let top = page("zebra", scope.clone(), Some(10));
        assert_eq!(top.len(), 10);
        assert_eq!(
            top.iter().any(|h| h.info.id == oldest.id),
            !on_postgres,
            "the oldest match is ranked only on a store file"
        );
        // Every match, when every hit is asked for.
        let all = page("zebra", scope.clone(), None);
        assert_eq!(all.len(), 1_051);
        assert_eq!(all[0].info.id, oldest.id);
        // A query matching few commits ranks all of them.
        let rare = page("zebra oldest", scope.clone(), Some(10));
        assert_eq!(ids(&rare), [oldest.id]);
        // A page past the newest 1,000 ranks as many as it reaches.
        let far = page("zebra", scope, Some(1_051));
        assert_eq!(far[0].info.id, oldest.id);
        analyze();
    }
}
