//! Hostile files and full disks: a store cut short at any point, an empty file, a file that
//! grows past what the system allows during an append or a batch. Each is one clear error
//! line (never a panic), and what was committed stays as it was; once there is room again the
//! store works and fsck is clean.

use crate::common::{Project, Run, command, exit};
use insta::assert_snapshot;

/// `tract ARGS` in `p` with the file size limited to `kib` KiB (the limit a full disk imposes,
/// without needing one): writing past it fails with EFBIG instead of killing the process.
fn limited(p: &Project, kib: u64, args: &[&str], stdin: &str) -> Run {
    let tract = command(p.path(), args);
    let program = tract.get_program().to_string_lossy().into_owned();
    let quoted: Vec<String> = args
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let mut sh = std::process::Command::new("bash");
    sh.arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {kib}; exec '{program}' {}",
            quoted.join(" ")
        ))
        .current_dir(p.path())
        .env_clear()
        .env("TRACT_TIMESTAMP", crate::common::TIMESTAMP);
    let mut run = Run::of(sh, Some(stdin));
    run.args = args.iter().map(|a| a.to_string()).collect();
    run
}

/// A store with a few messages; returns the project and the file's size in KiB.
fn small_store() -> (Project, u64) {
    let p = Project::new();
    p.ok(&["add", "--role", "system", "be brief"]);
    p.ok(&["add", "before the disk filled"]);
    let kib = std::fs::metadata(p.store()).unwrap().len() / 1024;
    (p, kib)
}

/// Random-looking text that does not compress, `n` bytes long.
fn incompressible(n: usize) -> String {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect()
}

#[test]
fn an_append_that_does_not_fit_changes_nothing_and_fits_later() {
    let (p, kib) = small_store();
    let before = p.state();
    let big = incompressible(512 << 10);
    let run = limited(&p, kib + 64, &["add", "-"], &big);
    assert_snapshot!(run, @"
    exit: 7
    --- stderr
    error: [DIR]/.tract/store.redb-journal/0000000000000001: File too large (os error 27)
    hint: the file reached the size the system allows it: nothing was committed
    ");
    assert_eq!(p.state(), before, "nothing committed");
    p.ok(&["fsck"]);
    // A batch that does not fit: none of it.
    let batch: String = (0..20)
        .map(|i| {
            format!(
                "{{\"role\":\"user\",\"content\":\"{i} {}\"}}\n",
                incompressible(20_000)
            )
        })
        .collect();
    let run = limited(&p, kib + 64, &["add", "--json", "-"], &batch);
    assert_eq!(run.code, Some(exit::UNAVAILABLE), "{run}");
    assert_eq!(run.stderr.lines().count(), 2, "{run}");
    assert_eq!(p.state(), before, "nothing of the batch committed");
    // With room again, the same writes go through and the store is sound.
    p.ok_in(&["add", "-"], &big);
    p.ok_in(&["add", "--json", "-"], &batch);
    assert_eq!(p.log_len(), 2 + 1 + 20);
    p.ok(&["fsck"]);
}

#[test]
fn a_fold_that_does_not_fit_loses_nothing_and_folds_later() {
    let (p, kib) = small_store();
    // In the journal; folding it into the store file needs room the limit does not leave.
    p.ok_in(&["add", "-"], &incompressible(200 << 10));
    let before = p.state();
    let run = limited(&p, kib + 64, &["fold"], "");
    assert_eq!(run.code, Some(exit::UNAVAILABLE), "{run}");
    assert!(run.stderr.contains("File too large"), "{run}");
    assert_eq!(p.state(), before, "nothing lost, nothing moved");
    p.ok(&["fsck"]);
    // With room, the fold goes through and the file holds everything.
    assert_snapshot!(p.run(&["fold"]), @"
    exit: 0
    --- stdout
    the store file holds every commit
    ");
    assert_eq!(p.state(), before);
    p.ok(&["fsck"]);
}

/// `tract checkpoint` folded the journal while `checkpoint_views()` made the views'
/// checkpoints: one word for two things. The fold is `tract fold`; the old name still folds,
/// saying so, and is not listed.
#[test]
fn checkpoint_is_now_fold() {
    let (p, _) = small_store();
    p.ok(&["add", "in the journal"]);
    assert_snapshot!(p.run(&["checkpoint"]), @"
    exit: 0
    --- stdout
    the store file holds every commit
    --- stderr
    note: `tract checkpoint` is now `tract fold` (checkpoints are the views' own)
    ");
    let help = p.ok(&["--help"]);
    assert!(help.contains("\n  fold "), "{help}");
    assert!(!help.contains("checkpoint"), "{help}");
    p.ok(&["fsck"]);
}

#[test]
fn a_store_cut_short_anywhere_is_one_error_line_and_stays_as_it_is() {
    let (p, _) = small_store();
    let bytes = std::fs::read(p.store()).unwrap();
    let cut_store = p.path().join("cut.redb");
    let cut_path = cut_store.to_string_lossy().into_owned();
    for cut in [
        0,
        3,
        100,
        511,
        4096,
        bytes.len() / 3,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        std::fs::write(&cut_store, &bytes[..cut]).unwrap();
        for args in [
            vec!["--store", &cut_path, "log"],
            vec!["--store", &cut_path, "add", "x"],
            vec!["--store", &cut_path, "fsck"],
        ] {
            let run = p.run(&args);
            assert_ne!(run.code, Some(0), "cut at {cut}: {run}");
            assert!(!run.stderr.contains("panicked"), "cut at {cut}: {run}");
            let first = run.stderr.lines().next().unwrap_or_default();
            assert!(first.starts_with("error: "), "cut at {cut}: {run}");
            assert!(run.stderr.lines().count() <= 2, "cut at {cut}: {run}");
        }
        assert_eq!(
            std::fs::read(&cut_store).unwrap(),
            &bytes[..cut],
            "cut at {cut}: untouched"
        );
    }
    std::fs::write(&cut_store, &bytes[..100]).unwrap();
    assert_snapshot!(p.run(&["--store", "cut.redb", "log"]), @"
        exit: 6
        --- stderr
        error: corrupt store: cut.redb is truncated: it ends inside its header
        hint: the file is damaged; keep a copy before trying anything else
        ");
    std::fs::write(&cut_store, &bytes[..4096]).unwrap();
    // A read and a write alike find the pages past the end as they first read: the storage
    // engine opens the file to write (where it checks the length against its layout) only at
    // the first write.
    assert_snapshot!(p.run(&["--store", "cut.redb", "log"]), @"
    exit: 6
    --- stderr
    error: corrupt store: cut.redb: the file is truncated: it ends before pages it records
    hint: the file is damaged; keep a copy before trying anything else
    ");
    assert_snapshot!(p.run(&["--store", "cut.redb", "add", "one more"]), @"
    exit: 6
    --- stderr
    error: corrupt store: cut.redb: the file is truncated: it ends before pages it records
    hint: the file is damaged; keep a copy before trying anything else
    ");
}

#[test]
fn a_journal_damaged_before_its_last_frame_is_salvaged_up_to_the_damage() {
    let p = Project::new();
    for i in 0..5 {
        p.ok(&["add", &format!("message {i}")]);
    }
    // The third frame of the journal's segment, changed in its middle.
    let journal = p.store().with_file_name("store.redb-journal");
    let mut names: Vec<_> = std::fs::read_dir(&journal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|f| f.file_name().unwrap().len() == 16)
        .collect();
    names.sort();
    let seg = names.pop().unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let mut at = 64;
    for _ in 0..2 {
        at += 20 + u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    }
    bytes[at + 30] ^= 0x41;
    std::fs::write(&seg, &bytes).unwrap();
    let run = p.fails(&["log"]);
    assert_snapshot!(run, @"
    exit: 6
    --- stderr
    error: corrupt journal [DIR]/.tract/store.redb-journal/0000000000000001: the frame at offset 824 is damaged (it does not check, and it was made durable) and frames follow it
    hint: a store is its file and its journal together; keep a copy of both, then `tract fold --salvage` keeps every frame before the damage
    ");
    // Salvaged: the frames before the damage are kept, the segment is set aside whole.
    let run = p.run(&["fold", "--salvage"]);
    let seconds = regex::Regex::new(r"set-aside-\d+").unwrap();
    let shown = seconds
        .replace_all(&run.to_string(), "set-aside-[SECONDS]")
        .into_owned();
    assert_snapshot!(shown, @"
    exit: 0
    --- stdout
    the frame at offset 824 of [DIR]/.tract/store.redb-journal/0000000000000001 is damaged (its check does not match)
    kept the 2 frames before it: the store is as it was when the last of them was written
    left out 1 segment from the damaged one on, copied to [DIR]/.tract/store.redb-journal/set-aside-[SECONDS]
    ");
    assert_snapshot!(p.ok(&["log", "--oneline"]), @"
    7c67ac046d message 1
    e6a03973ad message 0
    ");
    p.ok(&["fsck"]);
    p.ok(&["add", "after the salvage"]);
    assert_snapshot!(p.run(&["fold", "--salvage"]), @"
    exit: 0
    --- stdout
    no frame of the journal is damaged: nothing to salvage
    ");
    assert_eq!(p.log_len(), 3);
}
