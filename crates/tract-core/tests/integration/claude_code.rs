//! Claude Code sessions, keyed by line: imported whole or as they are written, rewound,
//! redacted, followed by capture, and their sub-agents brought back as merged branches.

use crate::support::{branch, file_store, fixture, open_bound, temp_store, texts};
use serde_json::{Value, json};
use tract_core::{Bind, Error, Role, SearchQuery};

#[test]
fn a_claude_code_session_imports_with_its_thinking_tools_times_and_compaction() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("sessions/cc")));
    let file = fixture("claude-code-session.jsonl");
    let report = t.import_file(&file, None).unwrap();
    assert_eq!(
        report.format,
        Some(tract_core::formats::transcript::Format::ClaudeCode)
    );
    assert_eq!((report.added, report.already), (10, 0));
    // The snapshot, the progress line and the summary line carry no message; the retry is
    // off the conversation's path.
    assert_eq!((report.skipped, report.off_path), (3, 1));
    // The view: the compaction replaced everything before it with its summary.
    assert_eq!(
        texts(&t),
        [
            "This session is being continued from a previous conversation. Summary: DATABASE_URL is read in config.py:42; one test fails.",
            "Fix the failing test.",
            "Fixed: the test expected the old URL."
        ]
    );
    // History keeps every message, one assistant message per API response, the thinking
    // block verbatim with its signature, tool results named after their calls.
    // The retry the reader leaves out is kept as a record, the line verbatim.
    let records = t
        .records(&tract_core::RecordQuery {
            kind: Some("claude_code.line".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(records.len(), 1);
    assert!(
        records[0].data.contains("\"uuid\":\"r1\""),
        "{}",
        records[0].data
    );
    let log: Vec<_> = t
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .into_iter()
        .filter(|c| c.op() != "record")
        .collect();
    assert_eq!(log.len(), 10);
    // Each commit names the lines it holds.
    assert_eq!(log[0].commit.message.as_deref(), Some("claude-code a6"));
    let first_answer = &log[8];
    let m = first_answer.message.as_ref().unwrap();
    let body = tract_core::json::message_to_json(m);
    assert_eq!(
        body["content"][0],
        json!({"type": "thinking", "thinking": "I should grep for it.", "signature": "EqQBCkYIBxgCKkB4c2lnbmF0dXJl"})
    );
    assert_eq!(
        body["content"][1],
        json!({"type": "text", "text": "Let me search."})
    );
    assert_eq!(m.tool_calls[0].name, "Grep");
    assert_eq!(
        m.tool_calls[0].arguments,
        r#"{"pattern":"DATABASE_URL","path":"."}"#
    );
    let results = t
        .find_tool_results(&tract_core::ResultQuery {
            name: Some("Bash".into()),
            ..Default::default()
        })
        .unwrap();
    assert!(results.is_empty(), "compressed out of view");
    let grep = log
        .iter()
        .find(|c| {
            c.message
                .as_ref()
                .is_some_and(|m| m.name.as_deref() == Some("Grep"))
        })
        .unwrap();
    assert_eq!(grep.message.as_ref().unwrap().role, Role::Tool);
    let failing = &log[3];
    assert!(failing.message.as_ref().unwrap().is_error);
    // Times are the transcript's.
    assert_eq!(log[9].commit.timestamp_us, 1_795_165_200_120_000);
    let compress = &log[2];
    assert_eq!(compress.op(), "compress");
    match &compress.commit.op {
        tract_core::Op::Compress {
            sources,
            summarizer,
            params,
            ..
        } => {
            assert_eq!(sources.len(), 7);
            assert_eq!(summarizer, "imported:claude-code");
            assert_eq!(
                params.get("trigger").map(String::as_str),
                Some("\"manual\"")
            );
        }
        other => panic!("{other:?}"),
    }
    // Importing it again adds nothing.
    let again = t.import_file(&file, None).unwrap();
    assert_eq!((again.added, again.already, again.recorded), (0, 10, 0));
    assert_eq!(t.log(&tract_core::LogQuery::default()).unwrap().len(), 11);
}

/// A user line of a Claude Code session.
fn cc_user(uuid: &str, parent: Option<&str>, content: Value) -> String {
    json!({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "5e55e55e-0000-4000-8000-000000000001",
           "cwd": "/work/app", "isSidechain": false, "timestamp": "2026-11-20T10:00:00.000Z",
           "message": {"role": "user", "content": content}})
    .to_string()
}

/// An assistant line of a Claude Code session: one block of response `response`.
fn cc_assistant(uuid: &str, parent: &str, response: &str, block: Value) -> String {
    json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "5e55e55e-0000-4000-8000-000000000001",
           "cwd": "/work/app", "isSidechain": false, "timestamp": "2026-11-20T10:00:01.000Z",
           "message": {"id": response, "role": "assistant", "content": [block]}})
    .to_string()
}

/// A session with a response of two parallel tool calls whose results fan out.
fn cc_parallel_session() -> Vec<String> {
    let call =
        |id: &str| json!({"type": "tool_use", "id": id, "name": "Read", "input": {"file": id}});
    let result = |id: &str| json!([{"type": "tool_result", "tool_use_id": id, "content": format!("text of {id}")}]);
    vec![
        cc_user("u1", None, json!("Read both files.")),
        cc_assistant(
            "a1",
            "u1",
            "msg_1",
            json!({"type": "thinking", "thinking": "Both at once.", "signature": "c2ln"}),
        ),
        cc_assistant("a2", "a1", "msg_1", call("t1")),
        cc_assistant("a3", "a2", "msg_1", call("t2")),
        cc_user("r1", Some("a2"), result("t1")),
        cc_user("r2", Some("a3"), result("t2")),
        cc_assistant(
            "a4",
            "r2",
            "msg_2",
            json!({"type": "text", "text": "Both read."}),
        ),
    ]
}

#[test]
fn a_claude_code_session_imported_as_it_is_written_ends_as_one_import_of_the_whole_file() {
    let (dir, path) = temp_store();
    let lines = cc_parallel_session();
    let file = dir.path().join("s.jsonl");
    let live = open_bound(&path, Bind::Branch(branch("live")));
    let mut edited = 0;
    for k in 1..=lines.len() {
        std::fs::write(&file, lines[..k].join("\n") + "\n").unwrap();
        let r = live.import_file(&file, None).unwrap();
        edited += r.edited;
        // After every line, the view is what one import of the file so far makes.
        let once = open_bound(&path, Bind::Branch(branch(&format!("once-{k}"))));
        once.import_file(&file, None).unwrap();
        assert_eq!(texts(&live), texts(&once), "after line {k}");
    }
    // The response grew twice (its call lines came after its thinking line).
    assert_eq!(edited, 2);
    let view = live.compile().unwrap();
    let ms = view.messages().unwrap();
    assert_eq!(ms.len(), 5);
    let joined = tract_core::json::message_to_json(&ms[1].message);
    assert_eq!(joined["content"][0]["signature"], "c2ln");
    assert_eq!(ms[1].message.tool_calls.len(), 2);
    assert_eq!(
        texts(&live)[2..],
        ["text of t1", "text of t2", "Both read."]
    );
    // Every line is in history once: a second import of the whole file adds nothing.
    let again = live.import_file(&file, None).unwrap();
    assert_eq!((again.added, again.edited, again.recorded), (0, 0, 0));
    assert!(tract_core::fsck(live.store()).unwrap().is_clean());
}

#[test]
fn a_rewound_conversation_moves_the_branch_and_the_old_path_stays_in_history() {
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("s")));
    let file = dir.path().join("s.jsonl");
    let mut lines = vec![
        cc_user("u1", None, json!("Name a colour.")),
        cc_assistant(
            "a1",
            "u1",
            "msg_1",
            json!({"type": "text", "text": "Blue."}),
        ),
        cc_user("u2", Some("a1"), json!("Another.")),
        cc_assistant(
            "a2",
            "u2",
            "msg_2",
            json!({"type": "text", "text": "Green."}),
        ),
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    t.import_file(&file, None).unwrap();
    let old_tip = t.head().unwrap().commit.unwrap();
    // The user goes back to after "Blue." and asks something else (Claude Code's rewind).
    lines.push(cc_user("u3", Some("a1"), json!("Why blue?")));
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let r = t.import_file(&file, None).unwrap();
    assert!(r.rewound);
    assert_eq!(r.added, 1);
    assert_eq!(texts(&t), ["Name a colour.", "Blue.", "Why blue?"]);
    // The old path is where the reflog says; its lines are not kept again as records.
    let moves = t.reflog("s", usize::MAX).unwrap();
    assert!(moves.iter().any(|m| m.old == Some(old_tip)), "{moves:?}");
    assert!(
        t.records(&tract_core::RecordQuery {
            kind: Some("claude_code.line".into()),
            ..Default::default()
        })
        .unwrap()
        .is_empty()
    );
    let again = t.import_file(&file, None).unwrap();
    assert_eq!((again.added, again.recorded, again.rewound), (0, 0, false));
    // A file that holds less than the branch (pruned) moves nothing back.
    std::fs::write(&file, lines[..2].join("\n") + "\n").unwrap();
    let head = t.head().unwrap().commit;
    t.import_file(&file, None).unwrap();
    assert_eq!(t.head().unwrap().commit, head);
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
}

#[test]
fn a_redacted_line_is_never_imported_again() {
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("s")));
    let file = dir.path().join("s.jsonl");
    let lines = [
        cc_user("u1", None, json!("My key is sk-live-123.")),
        cc_assistant(
            "a1",
            "u1",
            "msg_1",
            json!({"type": "text", "text": "Noted."}),
        ),
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    t.import_file(&file, None).unwrap();
    let first = t
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .into_iter()
        .find(|c| c.commit.message.as_deref() == Some("claude-code u1"))
        .unwrap();
    t.redact(first.id, "a secret").unwrap();
    let r = t.import_file(&file, None).unwrap();
    assert_eq!((r.added, r.already), (0, 2));
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
}

#[test]
fn capture_never_brings_back_a_session_retention_deleted() {
    use tract_core::capture::Capture;
    use tract_core::{
        Clock, DeleteIdleBranches, GcOptions, OpenOptions, RetentionPolicy, RetentionRule,
        StoreOptions, Tract,
    };
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.user("kept").unwrap();
    let projects = dir.path().join("projects");
    let folder = projects.join("-work-app");
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join("5e55e55e-0000-4000-8000-000000000002.jsonl");
    let lines = cc_parallel_session();
    std::fs::write(&file, lines[..4].join("\n") + "\n").unwrap();
    let mut capture = Capture::new(t.store().clone(), &projects).unwrap();
    assert_eq!(capture.pass().unwrap().imported.len(), 1);
    // A hundred days on, a rule deletes the sessions idle for ninety; gc collects them at once.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let options = OpenOptions {
        bind: Bind::Branch(branch("main")),
        store: StoreOptions {
            clock: Clock::Fixed(now + 100 * 24 * 3600 * 1_000_000),
            ..StoreOptions::default()
        },
        ..OpenOptions::default()
    };
    let later = Tract::open_with(&path, &options).unwrap();
    later
        .set_retention_policy(&RetentionPolicy {
            rules: vec![RetentionRule {
                name: "sessions".into(),
                branches: vec!["claude/*".into()],
                replace_tool_results: None,
                delete_idle_branches: Some(DeleteIdleBranches { idle_days: 90 }),
            }],
            pinned: vec![],
        })
        .unwrap();
    let gc = GcOptions {
        grace: std::time::Duration::ZERO,
        dry_run: false,
    };
    let out = tract_core::gc_with(later.store(), &gc).unwrap();
    assert_eq!(out.retention[0].deleted.len(), 1);
    assert!(out.commits >= 2, "{out:?}");
    // The file is still there and grows: capture, running or restarted, leaves it deleted.
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let mut restarted = Capture::new(t.store().clone(), &projects).unwrap();
    for c in [&mut capture, &mut restarted] {
        let pass = c.pass().unwrap();
        assert!(pass.imported.is_empty(), "{:?}", pass.imported);
        assert_eq!(pass.deleted.len(), 1);
    }
    assert_eq!(t.branches().unwrap().len(), 1, "main alone");
    // Its deletion outlives any later collection.
    tract_core::gc_with(later.store(), &gc).unwrap();
    assert!(
        Capture::new(t.store().clone(), &projects)
            .unwrap()
            .pass()
            .unwrap()
            .imported
            .is_empty()
    );
}

#[test]
fn capture_follows_a_projects_folder_line_by_line_and_resumes_from_the_store() {
    use std::io::Write as _;
    use tract_core::capture::Capture;
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let projects = dir.path().join("projects");
    let folder = projects.join("-work-app");
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join("5e55e55e-0000-4000-8000-000000000001.jsonl");
    let lines = cc_parallel_session();
    let mut capture = Capture::new(t.store().clone(), &projects).unwrap();
    let expected_branch = "claude/-work-app/5e55e55e-0000-4000-8000-000000000001";
    // A line being written waits for its end.
    let mut f = std::fs::File::create(&file).unwrap();
    write!(f, "{}\n{}", lines[0], &lines[1][..20]).unwrap();
    f.flush().unwrap();
    let pass = capture.pass().unwrap();
    assert_eq!(pass.imported.len(), 1);
    assert_eq!(pass.imported[0].branch, expected_branch);
    assert_eq!(pass.imported[0].report.added, 1);
    writeln!(f, "{}", &lines[1][20..]).unwrap();
    for l in &lines[2..4] {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
    let pass = capture.pass().unwrap();
    assert_eq!(pass.imported[0].report.added, 1);
    assert_eq!(pass.imported[0].report.edited, 0);
    // Nothing new: nothing imported.
    assert!(capture.pass().unwrap().imported.is_empty());
    // A new capture (a restart) resumes from what the store holds.
    for l in &lines[4..] {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
    let mut restarted = Capture::new(t.store().clone(), &projects).unwrap();
    let pass = restarted.pass().unwrap();
    assert_eq!(pass.imported[0].report.added, 3);
    assert_eq!(pass.imported[0].report.already, 2);
    assert_eq!(restarted.status().sessions, 1);
    let session = open_bound(&path, Bind::Branch(branch(expected_branch)));
    assert_eq!(
        texts(&session)[2..],
        ["text of t1", "text of t2", "Both read."]
    );
    // A file Claude Code deletes leaves the branch as it is.
    std::fs::remove_file(&file).unwrap();
    assert!(restarted.pass().unwrap().imported.is_empty());
    assert_eq!(texts(&session).len(), 5);
    // A branch deleted in tract is not brought back.
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    t.delete_branch(&branch(expected_branch)).unwrap();
    let mut third = Capture::new(t.store().clone(), &projects).unwrap();
    let pass = third.pass().unwrap();
    assert!(pass.imported.is_empty());
    assert_eq!(pass.deleted.len(), 1);
    assert!(
        !t.branches()
            .unwrap()
            .iter()
            .any(|b| b.name == expected_branch)
    );
    // A folder that is not there is an error.
    let missing = Capture::new(t.store().clone(), dir.path().join("nope"));
    assert!(
        matches!(missing, Err(Error::Io { .. })),
        "{:?}",
        missing.err()
    );
}

/// The real session whose line 161 is a meta line (the caveat Claude Code writes just before
/// a local command's lines: line 162 continues from it), whose parent is line 159.
const META_SESSION: &str = "claude-code-real/v2.1.37-interrupt-resume-branch.jsonl";

/// Its branch.
const META_SESSION_BRANCH: &str =
    "claude/-Users-soph-Work-entire-devenv-cli/e5fcdc73-b9fc-4991-b532-6bf8440fd12d";

/// The transcript lines each commit of `t`'s branch names in its note, an edit's left out (an
/// edit of a response that grew names the lines it joined again).
fn lines_named(t: &tract_core::Tract) -> Vec<String> {
    t.log(&tract_core::LogQuery::default())
        .unwrap()
        .into_iter()
        .filter(|c| !matches!(c.commit.op, tract_core::Op::Edit { .. }))
        .filter_map(|c| c.commit.message.clone())
        .flat_map(|note| {
            note.split(' ')
                .skip(1)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The lines named more than once.
fn named_twice(named: &[String]) -> Vec<&String> {
    let mut seen = std::collections::HashSet::new();
    named.iter().filter(|l| !seen.insert(*l)).collect()
}

#[test]
fn a_file_caught_on_a_meta_line_is_not_settled_until_the_next_line() {
    use tract_core::formats::transcript::{Format, Transcript, parse_session};
    let real = std::fs::read_to_string(fixture(META_SESSION)).unwrap();
    let lines: Vec<&str> = real.lines().collect();
    let unsettled = |n: usize| {
        let text = lines[..n].join("\n") + "\n";
        match parse_session(
            std::path::Path::new("s.jsonl"),
            &text,
            Some(Format::ClaudeCode),
        ) {
            Ok(Transcript::Steps { unsettled, .. }) => unsettled,
            other => panic!("{other:?}"),
        }
    };
    // Ending on line 161, the reader passes over its parent chain for the leaf of line 147
    // (a progress line ends there): lines 150 to 159 are newer than every line it takes.
    assert_eq!(unsettled(161), Some(150));
    assert_eq!(unsettled(160), None);
    assert_eq!(unsettled(162), None);
    // Line 196 is another such meta line, after lines 188 to 191.
    assert_eq!(unsettled(196), Some(188));
    assert_eq!(unsettled(lines.len()), None);
}

/// Where Claude Code keeps the meta-line session under `dir/projects` (its folder made).
fn meta_session_file(dir: &std::path::Path) -> std::path::PathBuf {
    let folder = dir.join("projects").join("-work");
    std::fs::create_dir_all(&folder).unwrap();
    folder.join("e5fcdc73-b9fc-4991-b532-6bf8440fd12d.jsonl")
}

#[test]
fn capture_waits_for_the_line_after_a_meta_line_and_imports_each_line_once() {
    use tract_core::capture::Capture;
    let real = std::fs::read_to_string(fixture(META_SESSION)).unwrap();
    let lines: Vec<&str> = real.lines().collect();
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let file = meta_session_file(dir.path());
    let write = |n: usize| std::fs::write(&file, lines[..n].join("\n") + "\n").unwrap();
    let mut capture = Capture::new(t.store().clone(), dir.path().join("projects")).unwrap();
    write(149);
    assert_eq!(
        capture.pass().unwrap().imported[0].branch,
        META_SESSION_BRANCH
    );
    let session = open_bound(&path, Bind::Branch(branch(META_SESSION_BRANCH)));
    // Caught on line 161: the pass waits, rather than keep lines 150 to 159 as records that
    // the next line puts back on the conversation.
    write(161);
    let pass = capture.pass().unwrap();
    assert!(pass.imported.is_empty(), "{:?}", pass.imported);
    assert!(pass.failed.is_empty(), "{:?}", pass.failed);
    // Nothing changed: not read again.
    assert!(capture.pass().unwrap().imported.is_empty());
    write(lines.len());
    assert_eq!(capture.pass().unwrap().imported.len(), 1);
    let named = lines_named(&session);
    assert_eq!(named_twice(&named), Vec::<&String>::new());
    // What one import of the whole file makes.
    let once = open_bound(&path, Bind::Branch(branch("once")));
    once.import_file(&file, None).unwrap();
    let mut all: Vec<String> = named.clone();
    all.sort();
    let mut expected = lines_named(&once);
    expected.sort();
    assert_eq!(all, expected);
    assert_eq!(texts(&session), texts(&once));
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
}

#[test]
fn a_capture_started_at_any_line_of_a_real_session_imports_each_line_once() {
    use tract_core::capture::Capture;
    let real = std::fs::read_to_string(fixture(META_SESSION)).unwrap();
    let lines: Vec<&str> = real.lines().collect();
    // Around both meta lines (161 and 196): a capture that starts (or comes back after a
    // gap) there, then sees the whole file. What is tried is capture's reading, the same on
    // every backend: a store file each.
    for start in (145..=165).chain(184..=lines.len()) {
        let (dir, path) = file_store();
        let t = open_bound(&path, Bind::Branch(branch("main")));
        let file = meta_session_file(dir.path());
        std::fs::write(&file, lines[..start].join("\n") + "\n").unwrap();
        let mut capture = Capture::new(t.store().clone(), dir.path().join("projects")).unwrap();
        capture.pass().unwrap();
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        capture.pass().unwrap();
        let session = open_bound(&path, Bind::Branch(branch(META_SESSION_BRANCH)));
        let named = lines_named(&session);
        assert_eq!(
            named_twice(&named),
            Vec::<&String>::new(),
            "a capture that started at line {start}"
        );
    }
}

#[test]
fn a_file_that_stays_caught_on_a_meta_line_is_imported_once_quiet() {
    use tract_core::capture::{Capture, SETTLE};
    let real = std::fs::read_to_string(fixture(META_SESSION)).unwrap();
    let lines: Vec<&str> = real.lines().collect();
    let (dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let file = meta_session_file(dir.path());
    std::fs::write(&file, lines[..161].join("\n") + "\n").unwrap();
    let mut capture = Capture::new(t.store().clone(), dir.path().join("projects")).unwrap();
    assert!(capture.pass().unwrap().imported.is_empty());
    // Not written to for longer than capture waits: the session ended there, and is imported
    // as it is, as `tract import` reads it (lines 150 to 161 kept as records).
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - SETTLE - std::time::Duration::from_secs(1))
        .unwrap();
    let pass = capture.pass().unwrap();
    assert_eq!(pass.imported.len(), 1);
    let once = open_bound(&path, Bind::Branch(branch("once")));
    let report = once.import_file(&file, None).unwrap();
    assert_eq!(pass.imported[0].report.recorded, report.recorded);
    assert_eq!(pass.imported[0].report.added, report.added);
}

#[test]
fn a_rewind_names_the_lines_kept_as_records_on_the_path_it_leaves() {
    let real = std::fs::read_to_string(fixture(META_SESSION)).unwrap();
    let lines: Vec<&str> = real.lines().collect();
    let (dir, path) = temp_store();
    let file = dir.path().join("s.jsonl");
    let live = open_bound(&path, Bind::Branch(branch("live")));
    // Up to line 163 the conversation runs through line 161 (a meta line, kept as a record);
    // line 165 leaves that path at line 155, and the branch moves back there.
    std::fs::write(&file, lines[..163].join("\n") + "\n").unwrap();
    live.import_file(&file, None).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    assert!(live.import_file(&file, None).unwrap().rewound);
    // Line 161 is still named on the branch's line (by the rewind's record), as one import of
    // the whole file names it (as a line off the path), and no line is named twice.
    let named = lines_named(&live);
    assert!(
        named
            .iter()
            .any(|l| l == "4afedd80-df95-4aa9-9fd9-828d2f2f21a1")
    );
    assert_eq!(named_twice(&named), Vec::<&String>::new());
    let once = open_bound(&path, Bind::Branch(branch("once")));
    once.import_file(&file, None).unwrap();
    let set = |v: Vec<String>| v.into_iter().collect::<std::collections::BTreeSet<_>>();
    assert_eq!(set(named), set(lines_named(&once)));
    // Imported again, nothing is kept again.
    let again = live.import_file(&file, None).unwrap();
    assert_eq!((again.added, again.recorded, again.rewound), (0, 0, false));
}

#[test]
fn claude_code_sub_agents_come_back_as_merged_branches_of_their_own() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("review")));
    let file = fixture("claude-code-agents.jsonl");
    let report = t.import_file(&file, None).unwrap();
    // One assistant message with both Task calls (one API response on two lines).
    assert_eq!(report.added, 5, "{report:?}");
    // The main view: the two Task results are the sub-agents' answers.
    assert_eq!(
        texts(&t),
        [
            "Review the auth module and the billing module.",
            "",
            "Auth: the session token is never rotated.",
            "Billing rounds cents down in refunds.\nagentId: b4 (for resuming)",
            "Two findings: token rotation (auth) and refund rounding (billing)."
        ]
    );
    // Each sub-agent's conversation is a branch of its own (from its file beside the
    // session, or from the session's own sidechain lines) forked at the calls, merged back
    // as the result.
    let auth = open_bound(&path, Bind::Branch(branch("review/agents/a1b2c3")));
    assert_eq!(
        auth.log(&tract_core::LogQuery::default()).unwrap().len(),
        2 + 4
    );
    assert_eq!(
        texts(&auth)[4..],
        [
            "Review src/auth for bugs.",
            "",
            "No matches found",
            "Auth: the session token is never rotated."
        ]
    );
    let billing = open_bound(&path, Bind::Branch(branch("review/agents/b4")));
    assert_eq!(
        texts(&billing).last().unwrap(),
        "Billing rounds cents down in refunds."
    );
    let merges: Vec<_> = t
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .into_iter()
        .filter(|c| c.op() == "merge")
        .collect();
    assert_eq!(merges.len(), 2);
    assert!(
        t.search(&SearchQuery {
            query: "No matches".into(),
            history: true,
            ..SearchQuery::default()
        })
        .unwrap()
        .len()
            == 1
    );
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
    // Again: nothing new, on any branch.
    let again = t.import_file(&file, None).unwrap();
    assert_eq!((again.added, again.already), (0, 5));
}

/// Found by fuzzing (transcript_parse): two lines of one API response repeating a tool call id
/// were joined into a message that could not be stored. Claude Code's reader shows both lines,
/// so each is a message of its own (a joined message must hold together).
#[test]
fn a_response_whose_lines_repeat_a_call_keeps_each_line_as_a_message() {
    let line = |uuid: &str, parent: Option<&str>| {
        json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "s",
               "message": {"id": "msg_1", "role": "assistant", "content": [
                   {"type": "tool_use", "id": "toolu_1", "name": "Task", "input": {}}]}})
        .to_string()
    };
    let text = format!("{}\n{}\n", line("a", None), line("b", Some("a")));
    let Ok(tract_core::formats::transcript::Transcript::Steps { steps, .. }) =
        tract_core::formats::transcript::parse(&text, None)
    else {
        panic!("not read");
    };
    let lines: Vec<&[String]> = steps.iter().map(|s| s.lines()).collect();
    assert_eq!(lines, [["a".to_string()], ["b".to_string()]]);
}
