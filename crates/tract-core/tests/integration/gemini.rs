//! Gemini CLI sessions: the real files in tests/fixtures/gemini-real and the JSON-lines files
//! written by Gemini CLI's rules in tests/fixtures/gemini-written (what a resumed session holds
//! is checked against a port of Gemini CLI's reader in tests/python/test_gemini_reader.py).

use crate::support::{branch, import_own_branch as import, open_bound, temp_store};
use std::path::PathBuf;
use tract_core::formats::transcript::{self, Format};
use tract_core::{Bind, Tract};

/// A session of tests/fixtures/`folder`.
fn fixture(folder: &str, name: &str) -> PathBuf {
    crate::support::fixture(&format!("{folder}/{name}"))
}

#[test]
fn a_real_session_imports_once_and_keeps_what_a_resumed_session_leaves_out() {
    let (_d, store) = temp_store();
    let path = fixture(
        "gemini-real",
        "legacy-v0.3x-slash-info-error-cancelled-aim.json",
    );
    let (t, report) = import(&store, &path);
    assert_eq!(report.format, Some(Format::Gemini));
    assert!(
        t.head()
            .unwrap()
            .branch()
            .unwrap()
            .ends_with("/b26e4930-a5eb-4800-bed1-3d8b7929eddf")
    );
    // The `/` commands, `info` and `error` records are in history, out of view.
    let records = t
        .records(&tract_core::RecordQuery {
            kind: Some(transcript::GEMINI_RECORD.into()),
            ..Default::default()
        })
        .unwrap();
    assert!(records.iter().any(|r| r.data.contains("\"type\":\"info\"")));
    assert!(
        records
            .iter()
            .any(|r| r.data.contains("\"type\":\"error\""))
    );
    let view = t.compile().unwrap().messages().unwrap();
    assert!(
        view.iter()
            .all(|m| !m.message.content.text().starts_with('/'))
    );
    // Each answer's tokens are its usage: the file's sums, the cached part taken out of the
    // input, thoughts counted as output.
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let (mut input, mut cached, mut output) = (0, 0, 0);
    for m in file["messages"].as_array().unwrap() {
        if m["type"] == "gemini" && m["tokens"].is_object() {
            let n = |k: &str| m["tokens"][k].as_u64().unwrap_or(0);
            input += n("input");
            cached += n("cached");
            output += n("output") + n("thoughts");
        }
    }
    assert!(output > 0);
    let totals = t
        .usage(None, &tract_core::UsageOptions::default())
        .unwrap()
        .ledger
        .totals;
    assert_eq!(
        (
            totals.input_tokens + totals.cache_read_input_tokens,
            totals.cache_read_input_tokens,
            totals.output_tokens
        ),
        (input, cached, output)
    );
    // Again: nothing new. The same session continued as JSON lines (as Gemini CLI continues a
    // resumed legacy session): nothing new either.
    assert_eq!(
        t.import(transcript::parse_file(&path, None).unwrap())
            .unwrap()
            .added,
        0
    );
    let migrated = fixture("gemini-written", "migrated-from-legacy-v0.3x-aim.jsonl");
    let (_, again) = import(&store, &migrated);
    assert_eq!((again.added, again.rewound), (0, false));
}

#[test]
fn a_replaced_record_moves_the_branch_to_the_session_as_gemini_cli_reads_it() {
    let (_d, store) = temp_store();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session-2026-08-01T00-00-abcd1234.jsonl");
    let lines = [
        r#"{"sessionId":"abcd1234-0000","projectHash":"p1","startTime":"2026-08-01T00:00:00.000Z"}"#,
        r#"{"id":"u1","timestamp":"2026-08-01T00:00:01.000Z","type":"user","content":[{"text":"list files"}]}"#,
        r#"{"id":"g1","timestamp":"2026-08-01T00:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"ls","args":{},"status":"executing"}]}"#,
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (t, _) = import(&store, &path);
    assert_eq!(t.pending_tool_calls().unwrap().len(), 1);
    // Gemini CLI writes the call's result by writing its record again.
    let done = r#"{"id":"g1","timestamp":"2026-08-01T00:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"ls","args":{},"status":"success","result":"a.txt b.txt"}]}"#;
    std::fs::write(&path, format!("{}\n{done}\n", lines.join("\n"))).unwrap();
    let report = t
        .import(transcript::parse_file(&path, None).unwrap())
        .unwrap();
    assert!(report.rewound);
    assert!(t.pending_tool_calls().unwrap().is_empty());
    let view = t.compile().unwrap().messages().unwrap();
    assert_eq!(view.last().unwrap().message.content.text(), "a.txt b.txt");
}

#[test]
fn capture_follows_gemini_sessions_appended_and_rewritten_whole() {
    use tract_core::capture::Capture;
    let (_d, store) = temp_store();
    let dir = tempfile::tempdir().unwrap();
    let projects = dir.path().join("claude-projects");
    let tmp = dir.path().join("gemini-home/.gemini/tmp");
    let chats = tmp.join("my-app/chats");
    std::fs::create_dir_all(&projects).unwrap();
    std::fs::create_dir_all(&chats).unwrap();
    let t = open_bound(&store, Bind::Branch(branch("main")));
    let mut capture = Capture::new(t.store().clone(), &projects).unwrap();
    capture.follow_gemini(&tmp).unwrap();
    // A JSON-lines session written line by line, a line cut in two.
    let written = fixture("gemini-written", "migrated-from-legacy-v0.3x-aim.jsonl");
    let text = std::fs::read_to_string(&written).unwrap();
    let jsonl = chats.join("session-2026-03-18T01-58-b26e4930.jsonl");
    let mut added = 0;
    for cut in [text.len() / 3, text.len() / 2 + 7, text.len()] {
        std::fs::write(&jsonl, &text[..cut]).unwrap();
        let pass = capture.pass().unwrap();
        assert!(pass.failed.is_empty(), "{:?}", pass.failed);
        added += pass.imported.iter().map(|i| i.report.added).sum::<usize>();
    }
    let branch_name = "gemini/my-app/b26e4930-a5eb-4800-bed1-3d8b7929eddf";
    assert!(
        Tract::open(&store)
            .unwrap()
            .branches()
            .unwrap()
            .iter()
            .any(|b| b.name == branch_name)
    );
    // A single-object session caught mid-rewrite keeps what the store holds, then is read
    // whole once complete.
    let legacy = fixture("gemini-real", "legacy-v0.3x-toolcall-error-aim.json");
    let whole = std::fs::read_to_string(&legacy).unwrap();
    let json = chats.join("session-2026-03-18T01-46-50316244.json");
    std::fs::write(&json, &whole[..whole.len() / 2]).unwrap();
    let pass = capture.pass().unwrap();
    assert!(
        pass.failed.is_empty() && pass.imported.is_empty(),
        "{pass:?}"
    );
    std::fs::write(&json, &whole).unwrap();
    let pass = capture.pass().unwrap();
    assert_eq!(pass.imported.len(), 1, "{:?}", pass.failed);
    // The same views as imports of the whole files.
    let (_d2, other) = temp_store();
    let (a, report) = import(&other, &written);
    assert_eq!(added, report.added);
    let captured = open_bound(&store, Bind::Branch(branch(branch_name)));
    assert_eq!(
        captured.compile().unwrap().to_openai().unwrap(),
        a.compile().unwrap().to_openai().unwrap()
    );
}

/// A legacy session and the JSON lines that continue it (one session id, one start), found
/// together by a first pass: imported one after the other onto their one branch, neither
/// finding it moved by the other.
#[test]
fn capture_imports_a_legacy_session_and_its_continuation_in_one_pass() {
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let (_d, t, mut capture) = crate::support::capture_in(dir.path());
        let tmp = dir.path().join("gemini-home/.gemini/tmp");
        let chats = tmp.join("aim/chats");
        std::fs::create_dir_all(&chats).unwrap();
        std::fs::copy(
            fixture(
                "gemini-real",
                "legacy-v0.3x-slash-info-error-cancelled-aim.json",
            ),
            chats.join("session-2026-03-18T01-58-b26e4930.json"),
        )
        .unwrap();
        std::fs::copy(
            fixture("gemini-written", "migrated-from-legacy-v0.3x-aim.jsonl"),
            chats.join("session-2026-03-18T01-58-b26e4930.jsonl"),
        )
        .unwrap();
        capture.follow_gemini(&tmp).unwrap();
        let pass = capture.pass().unwrap();
        assert!(pass.failed.is_empty(), "{:?}", pass.failed);
        assert!(!pass.imported.is_empty());
        let names: Vec<String> = t.branches().unwrap().into_iter().map(|b| b.name).collect();
        assert_eq!(names, ["gemini/aim/b26e4930-a5eb-4800-bed1-3d8b7929eddf"]);
    }
}
