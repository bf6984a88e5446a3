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

/// `tract init` started in `p`, once the first file of its store (under any name) is in
/// `.tract/`, or once it ended without one.
fn init_making_its_store(p: &Project) -> std::process::Child {
    let dot = p.path().join(".tract");
    let mut child = p
        .cmd(&["init"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let appeared = || {
        std::fs::read_dir(&dot).is_ok_and(|mut d| {
            d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().contains("store.redb")))
        })
    };
    while !appeared() && child.try_wait().unwrap().is_none() {
        std::hint::spin_loop();
    }
    child
}

/// `tract init` SIGKILLed at moments spread over the making of its store (from the first file
/// of it to the end of the process): the next `tract init` makes the store, or opens the one the
/// killed process finished, and the store takes an append and reads it back. A kill never
/// leaves a file every later open refuses as "not a tract store" (9 to 20 of these 30 kills
/// did, in four runs, when the file was made under its own name).
#[test]
fn init_killed_while_it_makes_the_store_leaves_none_or_a_whole_one() {
    const TRIES: u32 = 30;
    // How long the making takes here, from the first file to the end of the process: the
    // shortest of three, so that a slow one (a busy machine) does not put most kills after it.
    let span = (0..3)
        .map(|_| {
            let p = Project::empty();
            let mut child = init_making_its_store(&p);
            let appeared = std::time::Instant::now();
            assert!(child.wait().unwrap().success());
            appeared.elapsed()
        })
        .min()
        .unwrap();
    let mut failures = Vec::new();
    let mut killed = 0;
    for i in 0..TRIES {
        let p = Project::empty();
        let mut child = init_making_its_store(&p);
        let delay = span * i / TRIES;
        std::thread::sleep(delay);
        let _ = child.kill();
        killed += u32::from(child.wait().unwrap().code().is_none());
        let runs = [
            p.run(&["init"]),
            p.run(&["add", "after the kill"]),
            p.run(&["log", "--oneline"]),
        ];
        let whole = runs.iter().all(|r| r.code == Some(0))
            && runs[2].stdout.lines().count() == 1
            && runs[2].stdout.contains("after the kill");
        if !whole {
            let shown: Vec<String> = runs
                .iter()
                .map(|r| format!("{}\n{r}", r.command_line()))
                .collect();
            failures.push(format!(
                "killed {delay:?} after the first file:\n{}",
                shown.join("\n")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {TRIES} kills ({killed} before init ended; the making took {span:?}) left no \
         store to open:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Kills that all came after the process ended would have tested nothing.
    assert!(
        killed >= TRIES / 3,
        "{killed} of {TRIES} kills came before init ended"
    );
}
