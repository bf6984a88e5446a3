//! Secrets scrubbed as they are written, on every write path, and what a store holds already
//! found and scrubbed where it is (DESIGN §16).

use crate::support::{branch, file_store, open_bound, postgres_url, temp_store, texts};
use tract_core::{
    Bind, Content, FnSummarizer, Message, Role, ScanOptions, SecretsPolicy, ToolCall, Tract,
};

/// A GitHub token of the real shape (fake: made from `seed`), distinct per seed.
fn token(seed: u32) -> String {
    let body: String = format!("{seed:08}")
        .chars()
        .chain("aB3dE5gH7jK9mN1pQ3sT5vW7yZ1bC".chars())
        .take(36)
        .collect();
    format!("ghp_{body}")
}

/// The scrubs a stored message lists.
fn scrubs(m: &Message) -> Vec<tract_core::Scrub> {
    m.metadata
        .get(tract_core::SCRUBBED_METADATA_KEY)
        .map(|v| serde_json::from_str(v).unwrap())
        .unwrap_or_default()
}

/// Every byte `path`'s store keeps: the files of its directory (a store file, its journal,
/// packs and search index) or, in PostgreSQL, what `pg_dump` prints of its schema.
fn stored_bytes(dir: &std::path::Path, path: &std::path::Path) -> Vec<u8> {
    if postgres_url().is_some() {
        let url = path.to_str().unwrap();
        let (base, schema) = url
            .rsplit_once("&schema=")
            .or_else(|| url.rsplit_once("?schema="))
            .unwrap();
        let direct = std::env::var("TRACT_TEST_POSTGRES_DIRECT").ok();
        let base = direct.as_deref().filter(|d| !d.is_empty()).unwrap_or(base);
        let out = std::process::Command::new("pg_dump")
            .args(["--schema", schema, "--dbname", base])
            .output()
            .expect("pg_dump runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.len() > 1000, "pg_dump printed the schema");
        return out.stdout;
    }
    let mut all = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                all.extend(std::fs::read(&p).unwrap());
            }
        }
    }
    all
}

/// Whether `haystack` holds `needle` as text, or as the hex a `pg_dump` prints a `bytea` in.
fn contains(haystack: &[u8], needle: &str) -> bool {
    let hex: String = needle.bytes().map(|b| format!("{b:02x}")).collect();
    [needle.as_bytes(), hex.as_bytes()]
        .iter()
        .any(|n| haystack.windows(n.len()).any(|w| w == *n))
}

#[test]
fn a_secret_written_by_any_path_reaches_no_byte_of_the_store() {
    // The control: with scrubbing off, the same writes leave the secrets in the bytes looked
    // at (so their absence below means something).
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let on = t.secrets_policy().unwrap().unwrap();
    t.set_secrets_policy(&SecretsPolicy {
        enabled: false,
        ..on
    })
    .unwrap();
    let planted: Vec<String> = (101..=109).map(token).collect();
    write_everything(&t, &path, &planted);
    t.store().fold_journal().ok();
    let bytes = stored_bytes(dir.path(), &path);
    assert!(
        contains(&bytes, &planted[0]),
        "an unscrubbed secret is found where this test looks"
    );

    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let planted: Vec<String> = (1..=9).map(token).collect();
    let imported = write_everything(&t, &path, &planted);
    t.store().fold_journal().ok();
    let data = t.records(&tract_core::RecordQuery::default()).unwrap()[0]
        .data
        .clone();
    assert_eq!(data, RECORD_DATA, "a record's data is kept byte for byte");

    let shown = [texts(&t), texts(&imported)].concat().join("\n");
    assert!(shown.contains("[REDACTED:github-pat:"), "{shown}");
    let bytes = stored_bytes(dir.path(), &path);
    for (k, secret) in planted.iter().enumerate() {
        assert!(!shown.contains(secret.as_str()), "secret {k} is in a view");
        assert!(
            !contains(&bytes, secret),
            "secret {k} reached the store's bytes"
        );
    }
    // The search index never held them: the marker is found, the secret is not.
    for history in [false, true] {
        let q = tract_core::SearchQuery {
            query: planted[0].clone(),
            history,
            scope: tract_core::SearchScope::All,
            ..Default::default()
        };
        assert!(t.search(&q).unwrap().is_empty());
    }
    // The commit says what was scrubbed, never the value; the fingerprint is the marker's.
    let first = t.log(&tract_core::LogQuery::default()).unwrap();
    let m = t
        .get_commit(first.last().unwrap().id)
        .unwrap()
        .message
        .unwrap();
    let s = scrubs(&m);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(
        (s[0].rule.as_str(), s[0].field.as_str()),
        ("github-pat", "content")
    );
    let marker = format!("[REDACTED:github-pat:{}]", s[0].fingerprint);
    assert_eq!(
        &m.content.text()[s[0].offset..s[0].offset + marker.len()],
        marker
    );
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
}

/// A framework's record data (kept as written).
const RECORD_DATA: &str = r#"{"checkpoint":"gAN9cQAoWAIAAABpZHEBWA"}"#;

/// Writes each of `planted` through a write path (a summarizer repeats `token(6)`): returns
/// the handle an import wrote with.
fn write_everything(t: &Tract, path: &std::path::Path, planted: &[String]) -> Tract {
    // append, batch, tool call arguments, a tool result through the hooks, a merge's result.
    t.user(format!("my token is {}", planted[0])).unwrap();
    t.append_batch(vec![Message::text(
        Role::User,
        format!("GITHUB_TOKEN={}", planted[1]),
    )])
    .unwrap();
    let args = serde_json::json!({"cmd": format!("gh auth login --with-token {}", planted[2])});
    t.assistant(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: args.to_string(),
        }],
    )
    .unwrap();
    let result = t
        .tool_result("c1", "bash", format!("export GH={}\nok", planted[3]), false)
        .unwrap();
    // An edit, and a summary that echoes a secret.
    t.edit(result.id, Content::Text(format!("edited: {}", planted[4])))
        .unwrap();
    let echo = FnSummarizer::new("echo", |_r: &tract_core::SummaryRequest| {
        Ok(format!("the summary repeats {}", token(6)))
    });
    let first = t.log(&tract_core::LogQuery::default()).unwrap();
    let oldest: Vec<tract_core::Rev> = first.iter().rev().take(2).map(|i| i.id.into()).collect();
    t.compress(&tract_core::CompressRequest {
        commits: Some(oldest),
        summarizer: Some(&echo),
        ..tract_core::CompressRequest::default()
    })
    .unwrap();
    // An import of another tool's transcript.
    let chat = serde_json::json!([
        {"role": "user", "content": format!("deploy with {}", planted[7])},
        {"role": "assistant", "content": "done"},
    ])
    .to_string();
    let imported = open_bound(path, Bind::Branch(branch("imported")));
    imported
        .import(tract_core::formats::transcript::parse(&chat, None).unwrap())
        .unwrap();
    // A framework's record is kept as written (its encoded state must not change); the
    // messages written with it are scrubbed.
    t.record(
        "langgraph.checkpoint",
        RECORD_DATA,
        vec![Message::text(Role::User, format!("with {}", planted[8]))],
    )
    .unwrap();
    imported
}

#[test]
fn one_secret_has_one_marker_across_messages_and_fields_and_another_store_another() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let secret = token(42);
    t.user(format!("the token {secret} in prose")).unwrap();
    let args = serde_json::json!({"env": format!("TOKEN={secret}")}).to_string();
    let call = t
        .assistant(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: args,
            }],
        )
        .unwrap();
    let prose = texts(&t)[0].clone();
    let stored_args = call.message.unwrap().tool_calls[0].arguments.clone();
    let marker = prose
        .split_whitespace()
        .find(|w| w.starts_with("[REDACTED:"))
        .unwrap()
        .to_string();
    assert!(
        stored_args.contains(&marker),
        "{stored_args} lacks {marker}"
    );
    let v: serde_json::Value = serde_json::from_str(&stored_args).unwrap();
    assert_eq!(v["env"], format!("TOKEN={marker}"), "JSON stays valid");
    // Another store has another key: the same secret, another fingerprint.
    let (_dir2, path2) = temp_store();
    let other = open_bound(&path2, Bind::Branch(branch("main")));
    other.user(format!("the token {secret} in prose")).unwrap();
    assert_ne!(texts(&other)[0], prose);
    assert!(texts(&other)[0].starts_with("the token [REDACTED:github-pat:"));
}

#[test]
fn scrubbing_off_stores_messages_as_they_are_and_a_scan_finds_and_scrubs_them_in_place() {
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let on = t
        .secrets_policy()
        .unwrap()
        .expect("a new store has a policy");
    assert!(on.enabled);
    t.set_secrets_policy(&SecretsPolicy {
        enabled: false,
        ..on.clone()
    })
    .unwrap();
    let secret = token(7);
    t.user("read the env file").unwrap();
    t.assistant("", vec![crate::support::call("c1", "cat")])
        .unwrap();
    let result = t
        .tool_result("c1", "cat", format!("DEBUG=1\nGH_TOKEN={secret}\n"), false)
        .unwrap();
    // A summary made from it that repeats it: followed by the scrub.
    let echo = FnSummarizer::new("echo", move |_r: &tract_core::SummaryRequest| {
        Ok(format!("the env holds {}", token(7)))
    });
    let summary = t
        .compress(&tract_core::CompressRequest {
            commits: Some(vec![result.id.into()]),
            summarizer: Some(&echo),
            ..tract_core::CompressRequest::default()
        })
        .unwrap();
    t.user("thanks").unwrap();
    assert!(texts(&t).join("\n").contains(&secret), "scrubbing was off");
    let report = tract_core::fsck(t.store()).unwrap();
    assert_eq!(report.secrets_in_view, [("main".to_string(), 1)]);

    let found = t.scan_secrets(&ScanOptions::default()).unwrap();
    assert_eq!(found.len(), 1, "the view shows the summary: {found:?}");
    assert_eq!(found[0].commit, summary.commits[0].id);
    let everywhere = t
        .scan_secrets(&ScanOptions {
            history: true,
            all: true,
        })
        .unwrap();
    assert_eq!(everywhere.len(), 2, "{everywhere:?}");
    assert!(everywhere.iter().all(|f| f.rule == "github-pat"
        && f.branch.as_deref() == Some("main")
        && f.fingerprint.is_some()));
    let ids: Vec<_> = t
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .iter()
        .map(|i| i.id)
        .collect();

    let r = t.redact_secrets(&everywhere).unwrap();
    assert_eq!(r.findings, 2);
    assert_eq!(r.scrubbed.len(), 2);
    assert!(
        t.scan_secrets(&ScanOptions {
            history: true,
            all: true
        })
        .unwrap()
        .is_empty()
    );
    // Ids stay valid; views and every version show the markers; the store is clean.
    let after: Vec<_> = t
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(ids, after);
    let shown = texts(&open_bound(&path, Bind::Branch(branch("main")))).join("\n");
    assert!(shown.contains("[REDACTED:github-pat:"), "{shown}");
    assert!(!shown.contains(&secret));
    let original = t.get_commit(result.id).unwrap().message.unwrap();
    assert!(
        original
            .content
            .text()
            .contains("GH_TOKEN=[REDACTED:github-pat:")
    );
    assert_eq!(original.tool_call_id.as_deref(), Some("c1"));
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert!(report.secrets_in_view.is_empty());
    let q = tract_core::SearchQuery {
        query: secret.clone(),
        history: true,
        scope: tract_core::SearchScope::All,
        ..Default::default()
    };
    assert!(t.search(&q).unwrap().is_empty(), "the index forgot it");
    t.into_store().compact().ok();
    assert!(!contains(&stored_bytes(dir.path(), &path), &secret));
}

#[test]
fn a_reimport_holds_what_was_stored_scrubbed_or_not() {
    let (_dir, path) = temp_store();
    let secret = token(3);
    let turns = |n: usize| {
        let all = [
            serde_json::json!({"role": "user", "content": format!("use {secret}")}),
            serde_json::json!({"role": "assistant", "content": "ok"}),
            serde_json::json!({"role": "user", "content": "next"}),
        ];
        serde_json::Value::Array(all[..n].to_vec()).to_string()
    };
    let parse = |s: &str| tract_core::formats::transcript::parse(s, None).unwrap();
    // Scrubbed as imported; the same file again adds nothing; a grown one only its new part.
    let t = open_bound(&path, Bind::Branch(branch("a")));
    assert_eq!(t.import(parse(&turns(2))).unwrap().added, 2);
    assert_eq!(t.import(parse(&turns(2))).unwrap().added, 0);
    let r = t.import(parse(&turns(3))).unwrap();
    assert_eq!((r.already, r.added), (2, 1));
    // Stored as it was while scrubbing was off: still held after it is turned on.
    let u = open_bound(&path, Bind::Branch(branch("b")));
    let policy = u.secrets_policy().unwrap().unwrap();
    u.set_secrets_policy(&SecretsPolicy {
        enabled: false,
        ..policy.clone()
    })
    .unwrap();
    u.import(parse(&turns(2))).unwrap();
    assert!(texts(&u)[0].contains(&secret));
    u.set_secrets_policy(&policy).unwrap();
    let r = u.import(parse(&turns(3))).unwrap();
    assert_eq!((r.already, r.added), (2, 1));
}

#[test]
fn a_commit_export_holding_a_secret_is_refused_by_a_store_that_scrubs() {
    let (_dir, path) = temp_store();
    let src = open_bound(&path, Bind::Branch(branch("src")));
    let on = src.secrets_policy().unwrap().unwrap();
    src.set_secrets_policy(&SecretsPolicy {
        enabled: false,
        ..on.clone()
    })
    .unwrap();
    src.user(format!("token {}", token(5))).unwrap();
    let export = src
        .export(tract_core::formats::exports::ExportFormat::Jsonl, true)
        .unwrap();
    let (_dir2, path2) = temp_store();
    let dst = open_bound(&path2, Bind::Branch(branch("main")));
    let err = dst
        .import(tract_core::formats::transcript::parse(&export, None).unwrap())
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("github-pat") && text.contains("without --history"),
        "{text}"
    );
    assert!(
        !text.contains(&token(5)),
        "the error never holds the secret"
    );
    assert!(
        dst.log(&tract_core::LogQuery::default())
            .unwrap()
            .is_empty()
    );
    // Its messages alone go in, scrubbed.
    let export = src
        .export(tract_core::formats::exports::ExportFormat::Jsonl, false)
        .unwrap();
    dst.import(tract_core::formats::transcript::parse(&export, None).unwrap())
        .unwrap();
    assert!(texts(&dst)[0].starts_with("token [REDACTED:github-pat:"));
}

#[test]
fn a_clone_keeps_the_key_and_a_push_of_the_settings_the_policy_alone() {
    let (dir, path) = file_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let mut policy = t.secrets_policy().unwrap().unwrap();
    policy.disabled.insert("github-pat".to_string());
    t.set_secrets_policy(&policy).unwrap();
    policy.disabled.clear();
    t.set_secrets_policy(&policy).unwrap();
    t.user(format!("token {}", token(9))).unwrap();
    let marker = texts(&t)[0].clone();
    let clone = dir.path().join("clone.redb");
    let (store, _) =
        tract_core::clone_store(&path, &clone, tract_core::StoreOptions::default()).unwrap();
    drop(store);
    let c = open_bound(&clone, Bind::Branch(branch("other")));
    c.user(format!("token {}", token(9))).unwrap();
    assert_eq!(texts(&c)[0], marker, "the clone fingerprints as its source");
    assert_eq!(c.secrets_policy().unwrap(), Some(policy.clone()));
    // A push of the settings carries the policy, not the key.
    let peer = dir.path().join("peer.redb");
    let p = open_bound(&peer, Bind::Branch(branch("mine")));
    p.set_secrets_policy(&SecretsPolicy {
        enabled: false,
        ..policy.clone()
    })
    .unwrap();
    let options = tract_core::SyncOptions {
        settings: true,
        ..Default::default()
    };
    let _ = tract_core::push(t.store(), &peer, &options).unwrap();
    assert_eq!(p.secrets_policy().unwrap(), Some(policy));
    p.user(format!("token {}", token(9))).unwrap();
    assert_ne!(texts(&p)[0], marker, "its own key");
}
