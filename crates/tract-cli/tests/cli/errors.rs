//! What goes wrong: bad references, files that are not stores, a store from a newer tract,
//! usage errors and a bad environment. Errors are one `error:` line, often with a `hint:`
//! line, and exit with their category's code (usage errors exit 2); nothing a failing command
//! was given is committed.

use crate::common::{Project, exit};
use insta::assert_snapshot;

/// A commit or branch that does not exist: one error line and a hint, and nothing changes.
#[test]
fn bad_references_are_one_line_errors() {
    let p = Project::new();
    p.ok(&["add", "x"]);
    let before = p.state();
    let err = p.fails(&["show", "ffffffffff"]);
    assert_snapshot!(err, @"
        exit: 3
        --- stderr
        error: commit or branch 'ffffffffff' not found
        hint: `tract log` lists commits; `tract branch` lists branches
        ");
    assert_eq!(
        err.stderr.lines().count(),
        2,
        "one error line and one hint: {err}"
    );
    assert!(err.stderr.contains("not found"), "{err}");
    assert_snapshot!(p.fails(&["edit", "ffffffffff", "x"]), @"
        exit: 3
        --- stderr
        error: commit or branch 'ffffffffff' not found
        hint: `tract log` lists commits; `tract branch` lists branches
        ");
    assert_snapshot!(p.fails(&["show", "nobranch"]), @"
        exit: 3
        --- stderr
        error: commit or branch 'nobranch' not found
        hint: `tract log` lists commits; `tract branch` lists branches
        ");
    assert_snapshot!(p.fails(&["show", "HEAD~5"]), @"
        exit: 3
        --- stderr
        error: 'HEAD~5' not found: the history is shorter
        hint: `tract log` lists commits; `tract branch` lists branches
        ");
    assert!(p.state() == before, "failed commands change nothing");
}

/// A file that is not a tract store is refused and left as it was.
#[test]
fn a_file_that_is_not_a_store_is_refused() {
    let p = Project::new();
    std::fs::write(p.path().join("junk.bin"), b"hello").unwrap();
    let err = p.fails(&["--store", "junk.bin", "log"]);
    assert_snapshot!(err, @"
        exit: 4
        --- stderr
        error: junk.bin is not a tract store: the file does not start with a redb header
        hint: pass --store with a tract store (a file or a postgresql:// URL), or run `tract init`
        ");
    assert!(err.stderr.contains("not a tract store"), "{err}");
    assert_eq!(std::fs::read(p.path().join("junk.bin")).unwrap(), b"hello");
}

/// A store written by a newer tract (a higher format number) is refused for reading and for
/// writing, with a hint to upgrade.
#[test]
fn a_newer_store_format_is_refused() {
    let p = Project::new();
    p.ok(&["add", "x"]);
    {
        let mut b = redb::Database::builder();
        b.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
        let db = b.open(p.store()).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("meta");
            txn.open_table(def)
                .unwrap()
                .insert("format", 7u32.to_le_bytes().as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let err = p.fails(&["log"]);
    assert_snapshot!(err, @"
    exit: 4
    --- stderr
    error: store format version 7 is newer than this tract supports (5); upgrade tract
    ");
    assert!(err.stderr.contains("newer"), "{err}");
    assert_snapshot!(p.fails(&["add", "y"]), @"
    exit: 4
    --- stderr
    error: store format version 7 is newer than this tract supports (5); upgrade tract
    ");
}

/// A new store has no commit at HEAD: commands that need one say so.
#[test]
fn an_empty_branch_has_no_head_commit() {
    let p = Project::new();
    assert_snapshot!(p.fails(&["show"]), @"
        exit: 3
        --- stderr
        error: HEAD has no commit yet: branch 'main' is empty
        hint: add a message first (`tract add`), or `tract switch` to a branch with commits
        ");
}

/// Usage errors (an unknown flag, a missing argument) exit 2 with clap's message.
#[test]
fn usage_errors_exit_2() {
    let p = Project::new();
    let run = p.run(&["log", "--bogus"]);
    assert_snapshot!(run, @"
        exit: 2
        --- stderr
        error: unexpected argument '--bogus' found

          tip: to pass '--bogus' as a value, use '-- --bogus'

        Usage: tract log [OPTIONS] [REV]

        For more information, try '--help'.
        ");
    assert_eq!(run.code, Some(exit::USAGE));
    let run = p.run(&["add"]);
    assert_snapshot!(run, @"
        exit: 2
        --- stderr
        error: the following required arguments were not provided:
          <TEXT>

        Usage: tract add <TEXT>

        For more information, try '--help'.
        ");
    assert_eq!(run.code, Some(exit::USAGE));
}

/// A `TRACT_TIMESTAMP` that is not an RFC 3339 time is an error, and nothing is committed.
#[test]
fn a_bad_timestamp_is_refused() {
    let p = Project::new();
    let run = p.run_env(&["add", "x"], None, &[("TRACT_TIMESTAMP", "yesterday")]);
    assert_snapshot!(run, @"
        exit: 4
        --- stderr
        error: invalid input: TRACT_TIMESTAMP='yesterday' is not an RFC 3339 time: timestamp format is invalid
        ");
    assert_eq!(run.code, Some(exit::INVALID_INPUT));
    assert_eq!(p.log_len(), 0);
}

/// Every category of error exits with its own code (docs/cli.md, "Exit codes"), so a script
/// tells what to do from the code alone: name something else, fix the input, read again,
/// restore, retry later, or look closer.
#[test]
fn each_category_of_error_exits_with_its_own_code() {
    let p = Project::new();
    p.ok(&["add", "hello"]);
    p.ok(&["branch", "alt"]);
    let code = |args: &[&str]| {
        let run = p.run(args);
        assert!(run.stderr.starts_with("error: "), "{run}");
        run.code
    };
    assert_eq!(code(&["show", "ffffffff"]), Some(exit::NOT_FOUND));
    assert_eq!(code(&["show", "HEAD~x"]), Some(exit::INVALID_INPUT));
    assert_eq!(code(&["branch", "alt"]), Some(exit::CONFLICT));
    assert_eq!(code(&["log", "--bogus"]), Some(exit::USAGE));

    std::fs::copy(p.store(), p.path().join("cut.redb")).unwrap();
    let cut = std::fs::OpenOptions::new()
        .write(true)
        .open(p.path().join("cut.redb"))
        .unwrap();
    cut.set_len(100).unwrap();
    assert_eq!(code(&["--store", "cut.redb", "log"]), Some(exit::CORRUPT));
    // Nothing listens on port 1: the database cannot be reached.
    assert_eq!(
        code(&["--store", "postgresql://u@127.0.0.1:1/db", "log"]),
        Some(exit::UNAVAILABLE)
    );
    // A directory the store cannot be created in (root ignores permission bits; sysfs refuses
    // new files even to root): an OS error of no other category.
    let ro = p.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o500)).unwrap();
    let target = if std::fs::write(ro.join("probe"), b"").is_ok() {
        std::path::PathBuf::from("/sys/tract-test-store.redb")
    } else {
        ro.join("store.redb")
    };
    let target = target.to_str().unwrap();
    assert_eq!(code(&["--store", target, "init"]), Some(exit::INTERNAL));
}
