//! Which agent wrote each session: real Claude Code, Codex and Gemini CLI files imported side
//! by side, each branch naming its agent and version; another session under an id already
//! taken is refused; the agent goes with the branch (deleted, cloned, cleared).

use crate::support::{fixture, import_own_branch as import, open_bound, temp_store};
use serde_json::Value;
use std::collections::BTreeMap;
use tract_core::{AgentSession, Bind, BranchName, Tract};

const CODEX: &str =
    "codex-real/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl";
const CLAUDE: &str = "claude-code-real/v1.0.98-init-command.jsonl";
const GEMINI: &str = "gemini-real/legacy-v0.3x-toolcall-error-aim.json";

/// Every branch's agent, by branch, as `branches()` lists them.
fn agents_of(t: &Tract) -> BTreeMap<String, Option<AgentSession>> {
    t.branches()
        .unwrap()
        .into_iter()
        .map(|b| (b.name, b.agent))
        .collect()
}

/// The first line's `session_meta` payload of a rollout.
fn session_meta(text: &str) -> Value {
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["payload"].clone()
}

#[test]
fn each_agents_session_names_its_agent_and_version_beside_the_others() {
    let (_d, store) = temp_store();
    let (codex, _) = import(&store, &fixture(CODEX));
    let (claude, _) = import(&store, &fixture(CLAUDE));
    let (gemini, _) = import(&store, &fixture(GEMINI));
    let meta = session_meta(&std::fs::read_to_string(fixture(CODEX)).unwrap());
    let gemini_file: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(GEMINI)).unwrap()).unwrap();
    let name = |t: &Tract| t.head().unwrap().branch().unwrap().to_string();
    let listed = agents_of(&codex);
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(
        listed[&name(&codex)],
        Some(AgentSession {
            agent: "codex".into(),
            version: meta["cli_version"].as_str().map(str::to_string),
            started: meta["timestamp"].as_str().map(str::to_string),
        })
    );
    assert_eq!(
        listed[&name(&claude)],
        Some(AgentSession {
            agent: "claude-code".into(),
            version: Some("1.0.98".into()),
            started: None,
        })
    );
    assert_eq!(
        listed[&name(&gemini)],
        Some(AgentSession {
            agent: "gemini".into(),
            version: None,
            started: gemini_file["startTime"].as_str().map(str::to_string),
        })
    );
    assert_eq!(
        listed[&name(&codex)].as_ref().unwrap().label(),
        format!("codex {}", meta["cli_version"].as_str().unwrap())
    );
    // The same answer without counting any view.
    let agents = codex.agents().unwrap();
    assert_eq!(agents.len(), 3);
    // A branch written by hand holds no agent's session.
    let own = open_bound(&store, Bind::Branch(BranchName::new("notes").unwrap()));
    own.user("hello").unwrap();
    assert_eq!(agents_of(&own)["notes"], None);
}

#[test]
fn a_claude_code_session_continued_by_a_newer_version_names_the_newer_one() {
    let (_d, store) = temp_store();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let text = std::fs::read_to_string(fixture(CLAUDE)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let half = lines.len() / 2;
    std::fs::write(&path, lines[..half].join("\n") + "\n").unwrap();
    let (t, _) = import(&store, &path);
    let branch = t.head().unwrap().branch().unwrap().to_string();
    assert_eq!(
        t.agents().unwrap()[&branch].version.as_deref(),
        Some("1.0.98")
    );
    // The rest of the file, written by Claude Code after an update.
    let rest: Vec<String> = lines[half..]
        .iter()
        .map(|l| l.replace("\"version\":\"1.0.98\"", "\"version\":\"1.0.99\""))
        .collect();
    std::fs::write(&path, text_of(&lines[..half]) + &rest.join("\n") + "\n").unwrap();
    import(&store, &path);
    assert_eq!(
        t.agents().unwrap()[&branch].version.as_deref(),
        Some("1.0.99")
    );
}

fn text_of(lines: &[&str]) -> String {
    lines.join("\n") + "\n"
}

#[test]
fn another_session_under_a_taken_id_is_refused_and_changes_nothing() {
    let (_d, store) = temp_store();
    let (t, first) = import(&store, &fixture(CODEX));
    let branch = t.head().unwrap().branch().unwrap().to_string();
    let tip = t.head().unwrap().commit;
    // Another rollout giving the same thread id: the thread's first line says it started at
    // another time.
    let text = std::fs::read_to_string(fixture(CODEX)).unwrap();
    let started = session_meta(&text)["timestamp"]
        .as_str()
        .unwrap()
        .to_string();
    let other = text.replacen(&started, "2030-01-01T00:00:00.000Z", 1);
    assert_ne!(other, text);
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("rollout-2030-01-01T00-00-00-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl");
    std::fs::write(&path, &other).unwrap();
    let parsed = tract_core::formats::transcript::parse_file(&path, None).unwrap();
    assert_eq!(
        tract_core::formats::transcript::default_branch(&parsed, &path),
        branch
    );
    let h = open_bound(&store, Bind::Branch(BranchName::new(&branch).unwrap()));
    let e = h.import(parsed).unwrap_err();
    let said = e.to_string();
    assert!(said.contains(&branch), "{said}");
    assert!(
        said.contains(&started) && said.contains("2030-01-01"),
        "{said}"
    );
    assert!(said.contains("another session"), "{said}");
    assert_eq!(h.head().unwrap().commit, tip);
    assert_eq!(
        t.agents().unwrap()[&branch].started.as_deref(),
        Some(&*started)
    );
    assert!(first.added > 0);
    // Into a branch of its own it goes.
    let parsed = tract_core::formats::transcript::parse_file(&path, None).unwrap();
    let own = open_bound(
        &store,
        Bind::Branch(BranchName::new("codex/second").unwrap()),
    );
    own.import(parsed).unwrap();
    assert_eq!(
        own.agents().unwrap()["codex/second"].started.as_deref(),
        Some("2030-01-01T00:00:00.000Z")
    );
    // The same file again is no other session.
    let (_, again) = import(&store, &fixture(CODEX));
    assert_eq!(again.added, 0);
}

#[test]
fn the_agent_goes_with_its_branch_deleted_cleared_and_cloned() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("a.redb");
    let (codex, _) = import(&store, &fixture(CODEX));
    let (gemini, _) = import(&store, &fixture(GEMINI));
    let codex_branch = codex.head().unwrap().branch().unwrap().to_string();
    let gemini_branch = gemini.head().unwrap().branch().unwrap().to_string();
    drop(codex);
    // A clone keeps which agent wrote each session.
    let copy = dir.path().join("b.redb");
    let (cloned, _) =
        Tract::clone_store(&store, &copy, tract_core::StoreOptions::default()).unwrap();
    assert_eq!(cloned.agents().unwrap(), gemini.agents().unwrap());
    drop(cloned);
    // Deleted, the branch's agent goes; a branch made again under its name holds none.
    gemini
        .delete_branch(&BranchName::new(&codex_branch).unwrap())
        .unwrap();
    assert!(!gemini.agents().unwrap().contains_key(&codex_branch));
    let again = open_bound(
        &store,
        Bind::Branch(BranchName::new(&codex_branch).unwrap()),
    );
    again.user("by hand").unwrap();
    assert_eq!(agents_of(&again)[&codex_branch], None);
    // Cleared, it is a new session.
    gemini.clear_branch().unwrap();
    assert!(!gemini.agents().unwrap().contains_key(&gemini_branch));
}

#[test]
fn capture_refuses_a_second_rollout_under_a_taken_thread_id_once_until_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, t, mut capture) = crate::support::capture_in(dir.path());
    let day = dir.path().join("sessions/2026/05/11");
    std::fs::create_dir_all(&day).unwrap();
    capture.follow_codex(dir.path().join("sessions")).unwrap();
    let text = std::fs::read_to_string(fixture(CODEX)).unwrap();
    let name = CODEX.rsplit('/').next().unwrap();
    std::fs::write(day.join(name), &text).unwrap();
    let pass = capture.pass().unwrap();
    assert!(pass.failed.is_empty(), "{:?}", pass.failed);
    assert_eq!(pass.imported.len(), 1);
    let tip = t.branches().unwrap();
    // A copy of the thread under another start (a file Codex did not write).
    let started = session_meta(&text)["timestamp"]
        .as_str()
        .unwrap()
        .to_string();
    let copy = day.join(name.replace("11T11", "11T12"));
    std::fs::write(
        &copy,
        text.replacen(&started, "2030-01-01T00:00:00.000Z", 1),
    )
    .unwrap();
    let pass = capture.pass().unwrap();
    assert_eq!(pass.failed.len(), 1, "{:?}", pass.failed);
    assert_eq!(pass.failed[0].0, copy);
    assert!(tract_core::capture::refused(&pass.failed[0].1));
    assert!(pass.imported.is_empty());
    assert_eq!(t.branches().unwrap(), tip);
    // Not said again on every pass: only once the file changes.
    assert!(capture.pass().unwrap().failed.is_empty());
    let mut grown = std::fs::OpenOptions::new()
        .append(true)
        .open(&copy)
        .unwrap();
    std::io::Write::write_all(&mut grown, b"\n").unwrap();
    drop(grown);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(capture.pass().unwrap().failed.len(), 1);
}

/// What a file says of its agent is kept beside the refs, where no scrubbing reaches: a
/// version the store's scrubber would scrub is not kept (the line itself is, scrubbed, in
/// history).
#[test]
fn a_version_that_holds_a_credential_is_not_kept_beside_the_refs() {
    let token: String = format!("ghp_{}", "00000000aB3dE5gH7jK9mN1pQ3sT5vW7yZ1b");
    let text = std::fs::read_to_string(fixture(CODEX)).unwrap();
    let version = session_meta(&text)["cli_version"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout.jsonl");
    std::fs::write(
        &path,
        text.replacen(
            &format!("\"cli_version\":\"{version}\""),
            &format!("\"cli_version\":\"{token}\""),
            1,
        ),
    )
    .unwrap();
    let (_d, store) = temp_store();
    let (t, _) = import(&store, &path);
    let branch = t.head().unwrap().branch().unwrap().to_string();
    let kept = &t.agents().unwrap()[&branch];
    assert_eq!(kept.agent, "codex");
    assert_eq!(kept.version, None);
    assert!(kept.started.is_some());
}
