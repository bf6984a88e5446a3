//! Several `tract` processes on one store at once.

use crate::common::{Project, Run, command, json};
use std::path::Path;

/// `tract --store STORE ARGS` run from `dir`, which must succeed; returns its output.
fn tract_ok(dir: &Path, store: &Path, args: &[&str]) -> String {
    let mut all = vec!["--store", store.to_str().unwrap()];
    all.extend_from_slice(args);
    let run = Run::of(command(dir, &all), None);
    assert_eq!(run.code, Some(0), "tract {all:?}:\n{run}");
    run.stdout
}

/// Two writer processes and a reader at once: every append lands on one linear chain and in
/// the reflog, each writer's messages in its own order, and the reader never sees history
/// shrink. (Which writer wins each race varies, so this compares counts and order, not
/// snapshots.)
#[test]
fn concurrent_writers_and_a_reader() {
    let p = Project::new();
    const EACH: usize = 25;
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (dir, store) = (p.path().to_path_buf(), p.store());
            std::thread::spawn(move || {
                for i in 0..EACH {
                    tract_ok(&dir, &store, &["add", &format!("writer {w} message {i}")]);
                }
            })
        })
        .collect();
    let (dir, store) = (p.path().to_path_buf(), p.store());
    let reader = std::thread::spawn(move || {
        let mut seen = 0;
        for _ in 0..20 {
            let n = tract_ok(&dir, &store, &["log", "--oneline"])
                .lines()
                .count();
            assert!(n >= seen, "a reader never sees history shrink");
            seen = n;
        }
    });
    for w in writers {
        w.join().unwrap();
    }
    reader.join().unwrap();
    let entries = json(&p.ok(&["log", "--json"]));
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 2 * EACH, "every append is on the branch");
    for pair in entries.windows(2) {
        assert_eq!(
            pair[0]["parents"][0], pair[1]["commit_hash"],
            "one linear chain"
        );
    }
    for w in 0..2 {
        let mine: Vec<_> = entries
            .iter()
            .rev()
            .filter_map(|e| e["message"]["content"].as_str())
            .filter(|c| c.starts_with(&format!("writer {w} ")))
            .collect();
        let expected: Vec<String> = (0..EACH)
            .map(|i| format!("writer {w} message {i}"))
            .collect();
        assert_eq!(mine, expected, "each writer's messages in its own order");
    }
    let reflog = p.ok(&["reflog", "main"]);
    assert_eq!(
        reflog.lines().count(),
        2 * EACH,
        "every move is in the reflog"
    );
}
