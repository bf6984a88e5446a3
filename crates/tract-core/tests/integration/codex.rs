//! Codex CLI rollouts: the real files in tests/fixtures/codex-real imported as Codex reads
//! them (compaction, interrupted turns, usage), and variants of them made here as Codex makes
//! them (a rollback, a fork, a file that grew, a compressed file, damage).

use crate::support::{branch, import_own_branch as import, open_bound, temp_store, texts};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use tract_core::formats::transcript::{self, Format, Transcript};
use tract_core::{Bind, Role, Tract};

/// A real rollout of tests/fixtures/codex-real.
fn fixture(name: &str) -> PathBuf {
    crate::support::fixture(&format!("codex-real/{name}"))
}

const COMPACTED: &str = "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl";
const INTERRUPTED: &str = "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl";
const CLI: &str = "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl";
const UNFINISHED: &str = "rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl";

/// The file's lines as JSON.
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Whether a response item reaches the model (Codex sends every item but system messages and
/// ghost snapshots).
fn sent(item: &Value) -> bool {
    let kind = item["type"].as_str().unwrap_or_default();
    kind != "ghost_snapshot" && !(kind == "message" && item["role"] == "system")
}

/// The view's length as Codex rebuilds it from the file: the newest replacement history and
/// the items after it (no rollback in these files).
fn codex_history_len(lines: &[Value]) -> usize {
    let start = lines
        .iter()
        .rposition(|l| l["type"] == "compacted" && l["payload"]["replacement_history"].is_array());
    let base = start.map_or(0, |k| {
        lines[k]["payload"]["replacement_history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| sent(i))
            .count()
    });
    let after = start.map_or(0, |k| k + 1);
    base + lines[after..]
        .iter()
        .filter(|l| l["type"] == "response_item" && sent(&l["payload"]))
        .count()
}

#[test]
fn every_real_rollout_is_read_as_codex_resumes_it_and_keeps_every_line() {
    let (_d, store) = temp_store();
    for name in [COMPACTED, INTERRUPTED, CLI, UNFINISHED] {
        let path = fixture(name);
        let file = lines(&path);
        let (t, report) = import(&store, &path);
        assert_eq!(report.format, Some(Format::Codex), "{name}");
        assert_eq!(report.skipped, 0, "{name}: {:?}", report.warnings);
        let meta = &file[0]["payload"];
        let key: String = meta["cwd"]
            .as_str()
            .unwrap()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let head = t.head().unwrap();
        assert_eq!(
            head.branch(),
            Some(format!("codex/{key}/{}", meta["id"].as_str().unwrap()).as_str())
        );
        // The view is the history Codex resumes with.
        let status = t.status().unwrap();
        assert_eq!(status.messages, codex_history_len(&file), "{name}");
        // Every line is in the history: each commit names the lines it holds (a message, a
        // record, an answer with the line of its usage).
        let held: std::collections::HashSet<String> = t
            .log(&tract_core::LogQuery::default())
            .unwrap()
            .iter()
            .filter_map(|c| c.commit.message.clone())
            .flat_map(|note| {
                note.split(' ')
                    .skip(1)
                    .map(|id| id.split('/').next().unwrap_or_default().to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(held.len(), file.len(), "{name}");
        // What each answer cost, once: the token counts whose totals moved, cached input
        // taken out of the input, sum to the file's last totals.
        let last_total = file
            .iter()
            .rev()
            .find_map(|l| {
                l["payload"]["info"]["total_token_usage"]
                    .as_object()
                    .cloned()
            })
            .unwrap();
        let usage = t
            .usage(None, &tract_core::UsageOptions::default())
            .unwrap()
            .ledger
            .totals;
        let n = |k: &str| last_total[k].as_u64().unwrap();
        assert_eq!(
            (
                usage.input_tokens + usage.cache_read_input_tokens,
                usage.cache_read_input_tokens,
                usage.output_tokens
            ),
            (
                n("input_tokens"),
                n("cached_input_tokens"),
                n("output_tokens")
            ),
            "{name}"
        );
    }
    // One branch per rollout.
    assert_eq!(Tract::open(&store).unwrap().branches().unwrap().len(), 4);
}

#[test]
fn a_compaction_replaces_the_view_and_history_keeps_what_it_replaced() {
    let (_d, store) = temp_store();
    let path = fixture(COMPACTED);
    let file = lines(&path);
    let (t, _) = import(&store, &path);
    let k = file.iter().position(|l| l["type"] == "compacted").unwrap();
    let replacement = file[k]["payload"]["replacement_history"]
        .as_array()
        .unwrap();
    let view = t.compile().unwrap().messages().unwrap();
    // The view opens with the replacement, item for item: the last one, Codex's opaque
    // compaction item, kept verbatim as a raw part.
    let first_texts: Vec<String> = view[..replacement.len()]
        .iter()
        .map(|m| m.message.content.text().into_owned())
        .collect();
    let want: Vec<String> = replacement
        .iter()
        .map(|i| {
            i["content"]
                .as_array()
                .map(|parts| {
                    parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        first_texts[..replacement.len() - 1],
        want[..replacement.len() - 1]
    );
    let opaque = serde_json::to_value(&view[replacement.len() - 1].message.content).unwrap();
    assert!(
        opaque.to_string().contains(
            replacement.last().unwrap()["encrypted_content"]
                .as_str()
                .unwrap()
        ),
        "the compaction item is kept verbatim"
    );
    // What the compaction replaced is in history, behind the compress commit.
    let compress = t
        .log(&tract_core::LogQuery::default())
        .unwrap()
        .into_iter()
        .find(|c| matches!(c.commit.op, tract_core::Op::Compress { .. }))
        .expect("a compress commit");
    let sources = t.compressed_sources(compress.id).unwrap();
    let before = file[..k]
        .iter()
        .filter(|l| l["type"] == "response_item" && sent(&l["payload"]))
        .count();
    assert_eq!(sources.len(), before);
}

#[test]
fn an_interrupted_call_is_answered_by_the_marked_synthetic_result() {
    let (_d, store) = temp_store();
    let (t, _) = import(&store, &fixture(INTERRUPTED));
    let pending = t.pending_tool_calls().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call_id, "call_UtYwHmwWekzvq83m8Rb9K8jJ");
    let sent = t.compile().unwrap().to_openai().unwrap();
    let last = sent.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_UtYwHmwWekzvq83m8Rb9K8jJ");
}

/// The 0.125 session with a rollback of its last turn appended, as Codex writes one.
fn rolled_back(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(fixture(CLI)).unwrap();
    let line = json!({
        "timestamp": "2026-05-11T09:00:00.000Z",
        "type": "event_msg",
        "payload": {"type": "thread_rolled_back", "num_turns": 1},
    });
    let path = dir.join(CLI);
    std::fs::write(&path, format!("{text}{line}\n")).unwrap();
    path
}

#[test]
fn a_rollback_takes_the_last_turn_out_of_view_and_keeps_it_in_history() {
    let (_d, store) = temp_store();
    let dir = tempfile::tempdir().unwrap();
    let file = lines(&fixture(CLI));
    // Where the last user's turn starts: its user message (not Codex's context).
    let turn = file
        .iter()
        .rposition(|l| {
            l["type"] == "response_item"
                && l["payload"]["role"] == "user"
                && !l["payload"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with('<')
        })
        .unwrap();
    let kept = file[..turn]
        .iter()
        .filter(|l| l["type"] == "response_item" && sent(&l["payload"]))
        .count();
    // Imported as it was, then again once the rollback was written: the branch moves back.
    let (t, _) = import(&store, &fixture(CLI));
    let before = t.status().unwrap().messages;
    let path = rolled_back(dir.path());
    let again = t
        .import(transcript::parse_file(&path, None).unwrap())
        .unwrap();
    assert!(again.rewound);
    let after = t.status().unwrap().messages;
    assert!(after < before);
    // Codex's cut goes back over the context it wrote just before the turn.
    assert!(after <= kept, "{after} in view, {kept} before the turn");
    // A fresh import of the file with the rollback gives the same view.
    let (_d2, other) = temp_store();
    let (fresh, _) = import(&other, &path);
    assert_eq!(texts(&fresh), texts(&t));
    // What was rolled back is still in history, as records.
    let records = fresh
        .records(&tract_core::RecordQuery {
            kind: Some(transcript::CODEX_LINE_RECORD.into()),
            ..Default::default()
        })
        .unwrap();
    let last_user = file[turn]["payload"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(records.iter().any(|r| r.data.contains(last_user)));
}

/// A rollback of more turns than follow the real compaction: Codex cuts into the
/// replacement's first item, which tract's view keeps (a compression's result stays); the
/// import says so at the rollback's line, and keeps every other item Codex drops out of view.
#[test]
fn a_rollback_into_a_compactions_first_item_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture(COMPACTED)).unwrap();
    let line = json!({
        "timestamp": "2026-02-23T13:00:00.000Z",
        "type": "event_msg",
        "payload": {"type": "thread_rolled_back", "num_turns": 10_000},
    });
    let path = dir.path().join(COMPACTED);
    std::fs::write(&path, format!("{text}{line}\n")).unwrap();
    let rollback_line = text.lines().count() + 1;
    let (_d, store) = temp_store();
    let (t, report) = import(&store, &path);
    let said: Vec<&(usize, String)> = report
        .warnings
        .iter()
        .filter(|(_, w)| w.contains("compaction's first item"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", report.warnings);
    assert_eq!(said[0].0, rollback_line);
    // Only the compression's result is left in view.
    assert_eq!(t.status().unwrap().messages, 1);
}

#[test]
fn a_fork_shares_its_parents_commits_up_to_the_fork() {
    let (_d, store) = temp_store();
    let dir = tempfile::tempdir().unwrap();
    let parent_file = lines(&fixture(CLI));
    let parent_id = parent_file[0]["payload"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let child_id = "019e2000-0000-7000-8000-000000000001";
    // Codex's fork: its own session_meta naming the parent, the parent's lines up to the fork
    // point (the first half here), then its own turn.
    let mut meta = parent_file[0].clone();
    meta["payload"]["id"] = json!(child_id);
    meta["payload"]["forked_from_id"] = json!(parent_id);
    let cut = parent_file.len() / 2;
    let mut child: Vec<Value> = vec![meta];
    child.extend(parent_file[..cut].iter().cloned());
    child.push(
        json!({"timestamp": "2026-05-12T10:00:00.000Z", "type": "response_item",
        "payload": {"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": "And now in Rust?"}]}}),
    );
    child.push(
        json!({"timestamp": "2026-05-12T10:00:05.000Z", "type": "response_item",
        "payload": {"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "In Rust it is shorter."}]}}),
    );
    let name = format!("rollout-2026-05-12T10-00-00-{child_id}.jsonl");
    let path = dir.path().join(&name);
    let text: String = child.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();

    let (p, _) = import(&store, &fixture(CLI));
    let (c, report) = import(&store, &path);
    let parent_branch = p.head().unwrap().branch().unwrap().to_string();
    let child_branch = c.head().unwrap().branch().unwrap().to_string();
    assert!(child_branch.ends_with(child_id));
    // Only the fork's own lines were written: the rest is the parent's commits.
    assert!(report.already > 0 && report.added <= 4, "{report:?}");
    let d = p
        .diff_history(
            &tract_core::Rev::parse(&parent_branch).unwrap(),
            &tract_core::Rev::parse(&child_branch).unwrap(),
        )
        .unwrap();
    assert!(d.merge_base.is_some());
    let view = c.compile().unwrap().messages().unwrap();
    assert_eq!(
        view.last().unwrap().message.content.text(),
        "In Rust it is shorter."
    );
}

#[test]
fn a_file_that_grew_adds_only_what_is_new() {
    let (_d, store) = temp_store();
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture(COMPACTED)).unwrap();
    let all: Vec<&str> = text.lines().collect();
    let path = dir.path().join(COMPACTED);
    // Cut before the compaction, then after it.
    for cut in [1500, 2000, all.len()] {
        std::fs::write(&path, format!("{}\n", all[..cut].join("\n"))).unwrap();
        let (t, report) = import(&store, &path);
        assert!(!report.rewound);
        if cut == all.len() {
            assert!(report.already > 0);
            assert_eq!(
                t.status().unwrap().messages,
                codex_history_len(&lines(&path))
            );
        }
    }
    // The same as one import of the whole file.
    let (_d2, other) = temp_store();
    let (whole, _) = import(&other, &fixture(COMPACTED));
    let (grown, _) = import(&store, &fixture(COMPACTED));
    assert_eq!(
        grown.compile().unwrap().to_openai().unwrap(),
        whole.compile().unwrap().to_openai().unwrap()
    );
    // Each answer's cost counted once, wherever the file was cut.
    let totals = |t: &Tract| {
        t.usage(None, &tract_core::UsageOptions::default())
            .unwrap()
            .ledger
            .totals
    };
    assert_eq!(totals(&grown), totals(&whole));
}

#[test]
fn compressed_damaged_and_foreign_lines_are_read_as_codex_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture(INTERRUPTED)).unwrap();
    // A .jsonl.zst reads as the file it compresses.
    let zst = dir.path().join(format!("{INTERRUPTED}.zst"));
    std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
    let plain = transcript::parse_file(&fixture(INTERRUPTED), None).unwrap();
    assert_eq!(transcript::parse_file(&zst, None).unwrap(), plain);
    // Cut short: one clear error naming the file.
    let bytes = std::fs::read(&zst).unwrap();
    std::fs::write(&zst, &bytes[..bytes.len() / 2]).unwrap();
    let e = transcript::parse_file(&zst, None).unwrap_err().to_string();
    assert!(
        e.contains("does not decompress whole") && e.contains(".zst"),
        "{e}"
    );

    // Lines that are not JSON, of a type Codex does not know, or without a timestamp are
    // skipped and counted, as Codex skips them; the rest reads the same.
    let mut noisy: Vec<String> = text.lines().map(str::to_string).collect();
    noisy.insert(3, "{not json".into());
    noisy.insert(
        5,
        r#"{"timestamp":"2026-02-23T12:19:43.000Z","type":"future_kind","payload":{}}"#.into(),
    );
    noisy.insert(
        7,
        r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#
            .into(),
    );
    let path = dir.path().join("noisy.jsonl");
    std::fs::write(&path, noisy.join("\n")).unwrap();
    let Transcript::Steps { skipped, steps, .. } = transcript::parse_file(&path, None).unwrap()
    else {
        panic!("steps");
    };
    assert_eq!(skipped, 3);
    let Transcript::Steps { steps: clean, .. } = plain else {
        panic!("steps");
    };
    assert_eq!(steps.len(), clean.len());

    // No session_meta: refused, as Codex refuses it, naming the file; no branch is made.
    let headless: Vec<&str> = text.lines().skip(1).collect();
    let path = dir.path().join("headless.jsonl");
    std::fs::write(&path, headless.join("\n")).unwrap();
    let e = transcript::parse_file(&path, Some(Format::Codex))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("session_meta is missing") && e.contains("headless.jsonl"),
        "{e}"
    );

    // The newest line types, upstream's trimmed sample: read, what does not read kept.
    let Transcript::Steps {
        steps, warnings, ..
    } = transcript::parse_file(&fixture("agent-sessions-stage0-small.jsonl"), None).unwrap()
    else {
        panic!("steps");
    };
    assert!(!steps.is_empty());
    assert!(warnings.iter().any(|(_, w)| w.contains("kept as a record")));
    let roles: Vec<Role> = steps
        .iter()
        .filter_map(|s| match s {
            tract_core::formats::transcript::Step::Message { message, .. } => Some(message.role),
            _ => None,
        })
        .collect();
    assert!(roles.contains(&Role::Assistant));
}

/// The fork of [`CLI`] made as Codex makes one: its own `session_meta` naming the parent, the
/// parent's first `cut` lines, then its own turn.
fn fork_of_cli(cut: usize) -> (String, String) {
    let parent = lines(&fixture(CLI));
    let child_id = "019e2000-0000-7000-8000-000000000002";
    let mut meta = parent[0].clone();
    meta["payload"]["id"] = json!(child_id);
    meta["payload"]["forked_from_id"] = parent[0]["payload"]["id"].clone();
    let mut child = vec![meta];
    child.extend(parent[..cut].iter().cloned());
    child.push(
        json!({"timestamp": "2026-05-12T10:00:00.000Z", "type": "response_item",
        "payload": {"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": "A fork's own question"}]}}),
    );
    let name = format!("rollout-2026-05-12T10-00-00-{child_id}.jsonl");
    (name, child.iter().map(|l| format!("{l}\n")).collect())
}

#[test]
fn capture_follows_codex_rollouts_as_they_are_written_and_forks_after_their_parents() {
    use tract_core::capture::Capture;
    let dir = tempfile::tempdir().unwrap();
    let (_d, t, mut capture) = crate::support::capture_in(dir.path());
    let projects = dir.path().join("claude-projects");
    let sessions = dir.path().join("codex-home/sessions");
    let day = sessions.join("2026/05/11");
    std::fs::create_dir_all(&day).unwrap();
    capture.follow_codex(&sessions).unwrap();
    // The 0.125 session written a few lines at a time, a line cut in two now and then.
    let text = std::fs::read_to_string(fixture(CLI)).unwrap();
    let path = day.join(CLI);
    let mut written = 0;
    let mut file = std::fs::File::create(&path).unwrap();
    let mut imported = 0;
    while written < text.len() {
        let step = (written + 9_000).min(text.len());
        use std::io::Write;
        file.write_all(&text.as_bytes()[written..step]).unwrap();
        file.flush().unwrap();
        written = step;
        let pass = capture.pass().unwrap();
        assert!(pass.failed.is_empty(), "{:?}", pass.failed);
        imported += pass.imported.iter().map(|i| i.report.added).sum::<usize>();
    }
    // A capture started anew finds nothing more to import.
    let mut again = Capture::new(t.store().clone(), &projects).unwrap();
    again.follow_codex(&sessions).unwrap();
    assert!(again.pass().unwrap().imported.is_empty());
    // The same as one import of the whole file: every line once.
    let (_d2, other) = temp_store();
    let (whole, report) = import(&other, &fixture(CLI));
    assert_eq!(imported, report.added);
    let branch_name = whole.head().unwrap().branch().unwrap().to_string();
    let captured =
        Tract::from_store(t.store().clone(), &Bind::Branch(branch(&branch_name))).unwrap();
    // The two stores scrub with keys of their own: their markers differ in fingerprint only.
    assert_eq!(
        unkeyed(&captured.compile().unwrap().to_openai().unwrap().to_string()),
        unkeyed(&whole.compile().unwrap().to_openai().unwrap().to_string())
    );

    // A fork written beside its parent, both new to a store: one pass imports the parent
    // first, and the fork shares its commits.
    let (_d3, fresh) = temp_store();
    let (name, fork) = fork_of_cli(100);
    std::fs::write(day.join(&name), fork).unwrap();
    let t = open_bound(&fresh, Bind::Branch(branch("main")));
    let mut capture = Capture::new(t.store().clone(), &projects).unwrap();
    capture.follow_codex(&sessions).unwrap();
    let pass = capture.pass().unwrap();
    assert_eq!(pass.imported.len(), 2, "{:?}", pass.failed);
    let child = pass
        .imported
        .iter()
        .find(|i| i.branch.ends_with("000000000002"))
        .unwrap();
    assert!(child.report.already > 0, "{:?}", child.report);
}

/// `text` with each scrubbed value's marker without its store's keyed fingerprint.
fn unkeyed(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("[REDACTED:") {
        let (before, marker) = rest.split_at(at);
        out.push_str(before);
        let end = marker.find(']').map_or(marker.len(), |e| e + 1);
        let inner = &marker[..end];
        out.push_str(inner.rsplit_once(':').map_or(inner, |(rule, _)| rule));
        rest = &marker[end..];
    }
    out.push_str(rest);
    out
}

/// Sessions of both agents side by side: a search of every branch for a file's name finds it
/// in the Claude Code session and in the Codex rollout that name it.
#[test]
fn a_search_of_every_branch_finds_a_file_in_sessions_of_both_agents() {
    let (_d, store) = temp_store();
    import(&store, &fixture(CLI));
    let claude = crate::support::fixture("claude-code-real/v1.0.98-init-command.jsonl");
    import(&store, &claude);
    let t = Tract::open(&store).unwrap();
    let hits = t
        .search(&tract_core::SearchQuery {
            query: "README.md".into(),
            history: true,
            scope: tract_core::SearchScope::All,
            limit: Some(500),
            ..Default::default()
        })
        .unwrap();
    let agents: std::collections::BTreeSet<&str> = hits
        .iter()
        .flat_map(|h| h.branches.iter())
        .filter_map(|b| b.split('/').next())
        .collect();
    assert_eq!(agents, ["claude", "codex"].into_iter().collect());
}
