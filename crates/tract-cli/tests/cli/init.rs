//! `tract init`, and how every other command finds the store: `--store`, `TRACT_STORE`, or
//! `.tract/store.redb` here or in a parent directory.

use crate::common::{Project, Run, command};
use insta::assert_snapshot;

/// `tract init` creates `.tract/store.redb` in the current directory and says so; running it
/// again keeps the store and says that instead.
#[test]
fn init_creates_a_store_here_once() {
    let p = Project::empty();
    assert_snapshot!(p.run(&["init"]), @"
        exit: 0
        --- stdout
        Initialized empty tract store in ./.tract/store.redb
        ");
    assert!(p.store().is_file());
    p.ok(&["add", "kept"]);
    assert_snapshot!(p.run(&["init"]), @"
        exit: 0
        --- stdout
        Reinitialized existing tract store in ./.tract/store.redb
        ");
    assert_eq!(p.log_len(), 1, "a second init keeps the history");
}

/// `tract init DIR` creates the store under DIR; `--store PATH init` creates exactly that file
/// (its directory must exist); both at once is refused.
#[test]
fn init_takes_a_directory_or_a_store_file() {
    let p = Project::empty();
    std::fs::create_dir(p.path().join("proj")).unwrap();
    assert_snapshot!(p.run(&["init", "proj"]), @"
        exit: 0
        --- stdout
        Initialized empty tract store in proj/.tract/store.redb
        ");
    assert!(p.path().join("proj/.tract/store.redb").is_file());
    assert_snapshot!(p.run(&["--store", "mine.redb", "init"]), @"
        exit: 0
        --- stdout
        Initialized empty tract store in mine.redb
        ");
    assert!(p.path().join("mine.redb").is_file());
    assert_snapshot!(p.fails(&["--store", "other.redb", "init", "proj"]), @"
        exit: 4
        --- stderr
        error: invalid input: give either --store or a directory, not both
        ");
    assert_snapshot!(p.fails(&["--store", "/no/such/dir/s.redb", "init"]), @"
        exit: 3
        --- stderr
        error: /no/such/dir: directory does not exist
        ");
    assert!(!p.path().join("other.redb").exists());
}

/// Commands find the store from a subdirectory, like git; `TRACT_STORE` names it like
/// `--store`; with neither and no store up the tree, the error says to run `tract init`.
#[test]
fn commands_find_the_store_upward_or_by_name() {
    let p = Project::new();
    p.ok(&["add", "x"]);
    let sub = p.path().join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    assert_snapshot!(Run::of(command(&sub, &["status"]), None), @"
        exit: 0
        --- stdout
        On branch main
        head      ab63fd05f9
        messages  1
        tokens    7
        store     [DIR]/.tract/store.redb
        ");

    let elsewhere = Project::empty();
    let mut c = command(elsewhere.path(), &["log", "--oneline"]);
    c.env("TRACT_STORE", p.store());
    assert_snapshot!(Run::of(c, None), @"
        exit: 0
        --- stdout
        ab63fd05f9 x
        ");
    let err = elsewhere.fails(&["log"]);
    assert!(err.stderr.contains("tract init"), "{err}");
    assert_snapshot!(err, @"
        exit: 3
        --- stderr
        error: no tract store found: none named (--store, TRACT_STORE), no .tract/store.redb in [DIR] or any parent directory, and no per-user store (neither XDG_DATA_HOME nor HOME is set)
        hint: run `tract init` to create one here, or pass --store PATH|URL
        ");
}
