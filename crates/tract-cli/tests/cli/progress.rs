//! Long commands at a terminal: a search that indexes a store first, an import of many
//! files and a push show how far they got on standard error, and nothing of it reaches piped
//! output. A message too large for any model is said when it is written and compiled.

use crate::common::{Project, at_terminal};

/// A store holding `n` user messages, added in one batch.
fn many_messages(n: usize) -> Project {
    let p = Project::new();
    let lines: String = (0..n)
        .map(|i| {
            format!(
                "{{\"role\":\"user\",\"content\":\"message {i}: the build of module {} failed with error E{} in step {}\"}}\n",
                i % 97,
                i % 13,
                i % 7
            )
        })
        .collect();
    p.ok_in(&["add", "--json", "-"], &lines);
    p
}

/// The first search of a store builds its index; at a terminal it counts the commits it has
/// indexed, then clears the line; piped, nothing but the hits.
#[test]
fn the_first_search_at_a_terminal_shows_the_index_being_built() {
    let p = many_messages(15_000);
    let piped = p.run(&["search", "module"]);
    assert_eq!(piped.code, Some(0), "{piped}");
    assert!(!piped.stderr.contains("indexing"), "{piped}");
    // A new index: the store's own folder, built again by the next search.
    std::fs::remove_dir_all(p.path().join(".tract/store.redb-journal/index")).unwrap();
    let shown = at_terminal(p.path(), "search module");
    assert!(shown.contains("indexing for search: "), "{shown}");
    assert!(shown.contains("commits"), "{shown}");
    assert!(shown.contains("message "), "the hits follow: {shown}");
}

/// An import of many files shows the files read, then imported, at a terminal.
#[test]
fn an_import_of_many_files_at_a_terminal_shows_how_far_it_got() {
    let p = Project::new();
    let mut files = Vec::new();
    for i in 0..150 {
        let name = format!("t{i:03}.json");
        std::fs::write(
            p.path().join(&name),
            format!(r#"[{{"role":"user","content":"hello {i}"}},{{"role":"assistant","content":"hi {i}"}}]"#),
        )
        .unwrap();
        files.push(name);
    }
    let shown = at_terminal(p.path(), &format!("import {}", files.join(" ")));
    assert!(shown.contains("importing"), "{shown}");
    assert!(shown.contains("/150 files"), "{shown}");
    // Piped, the same import says nothing on standard error.
    let q = Project::new();
    for f in &files {
        std::fs::copy(p.path().join(f), q.path().join(f)).unwrap();
    }
    let args: Vec<&str> = std::iter::once("import")
        .chain(files.iter().map(String::as_str))
        .collect();
    let piped = q.run(&args);
    assert_eq!(piped.code, Some(0), "{piped}");
    assert!(piped.stderr.is_empty(), "{piped}");
}

/// A message over a million tokens gets a warning naming its size, when it is added and
/// whenever it is compiled.
#[test]
fn a_message_over_a_million_tokens_is_said() {
    let p = Project::new();
    let huge = "word ".repeat(1_100_000);
    let run = p.run_in(
        &[
            "add",
            "--role",
            "tool",
            "--tool-call-id",
            "c1",
            "--name",
            "cat",
            "-",
        ],
        &huge,
    );
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stderr
            .contains(" tokens, more than the largest model context windows take"),
        "{run}"
    );
    p.ok(&["add", "a small one"]);
    let compiled = p.run(&["compile"]);
    assert!(
        compiled
            .stderr
            .contains("tokens, more than the largest model context windows take"),
        "{compiled}"
    );
}

/// A capture pass over many sessions shows the sessions read, then imported, at a terminal.
#[test]
fn a_capture_of_many_sessions_at_a_terminal_shows_how_far_it_got() {
    let p = Project::new();
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/claude-code-real/v1.0.98-init-command.jsonl");
    let folder = p.path().join("projects/-home-USER-spotter");
    std::fs::create_dir_all(&folder).unwrap();
    // One real session, as 200 sessions of their own (each its own id, so its own branch).
    let text = std::fs::read_to_string(&real).unwrap();
    let id = "1af7fc5e-8455-4414-9ccd-011d40f70b2a";
    assert!(text.contains(id));
    for i in 0..200 {
        let session = format!("{i:08}-0000-4000-8000-000000000000");
        std::fs::write(
            folder.join(format!("{session}.jsonl")),
            text.replace(id, &session),
        )
        .unwrap();
    }
    let shown = at_terminal(
        p.path(),
        "--store .tract/store.redb capture --once projects",
    );
    assert!(shown.contains("/200 sessions"), "{shown}");
    assert!(
        shown.contains("200 sessions, "),
        "the totals follow: {shown}"
    );
}
