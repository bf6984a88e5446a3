//! A store the user may read and not write (another user's, a backup, a read-only mount): every
//! read command works, a write is refused in one line and changes nothing, and no read changes
//! a byte of any store.

use crate::common::{Project, Run, TIMESTAMP, a_session, assert_run_snapshot};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// The commands that only read, as a user runs them.
const READS: &[&[&str]] = &[
    &["log"],
    &["show", "HEAD"],
    &["status"],
    &["compile"],
    &["export"],
    &["fsck"],
    &["reflog"],
    &["tools", "turns"],
    &["search", "config"],
    &["diff", "HEAD~2", "HEAD"],
    &["diff", "HEAD"],
    &["cache"],
    &["usage"],
    &["export", "--format", "claude-code"],
];

/// `chmod -R` of the project's `.tract/`: `a-w` or `u+w`.
fn chmod(p: &Project, mode: &str) {
    let ok = Command::new("chmod")
        .args(["-R", mode])
        .arg(p.path().join(".tract"))
        .status()
        .unwrap()
        .success();
    assert!(ok, "chmod {mode}");
}

/// The files that differ between two listings.
fn changed(a: &BTreeMap<PathBuf, Vec<u8>>, b: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<PathBuf> {
    let mut names: Vec<&PathBuf> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| a.get(*n) != b.get(*n))
        .cloned()
        .collect()
}

#[test]
fn no_read_changes_a_byte_of_the_store() {
    let p = a_session();
    let before = p.files();
    // A search keeps its index's catch-up where it may write, and fsck opens as a write would
    // to check that index on disk (derived data): not reads here.
    for args in READS.iter().filter(|a| a[0] != "search" && a[0] != "fsck") {
        p.ok(args);
        let now = p.files();
        assert!(
            now == before,
            "tract {} changed {:?}",
            args.join(" "),
            changed(&before, &now)
        );
    }
}

/// Runs `tract ARGS` as a user who may read the store and not write it.
type Reader<'a> = Box<dyn Fn(&[&str]) -> Run + 'a>;

/// How this test runs `tract` as a user who may not write the store: itself, when it is not
/// root (which writes whatever the permissions say); else as `nobody` through `setpriv`, with a
/// copy of the binary that user may run. `None` (the test skipped, saying why) when neither.
fn as_a_reader(p: &Project) -> Option<Reader<'_>> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some(Box::new(move |args: &[&str]| p.run(args)));
    }
    // The project directory (mode 700 as made) is opened to the other user, and the binary
    // put in it: the target directory may be where that user cannot go.
    let bin = p.path().join("tract");
    std::fs::copy(env!("CARGO_BIN_EXE_tract"), &bin).unwrap();
    let opened = Command::new("chmod")
        .args(["a+rx"])
        .arg(p.path())
        .arg(&bin)
        .status()
        .unwrap()
        .success();
    assert!(opened);
    let run = move |args: &[&str]| {
        let mut setpriv = Command::new("setpriv");
        setpriv
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .args(args)
            .current_dir(p.path())
            .env_clear()
            .env("TRACT_TIMESTAMP", TIMESTAMP);
        let mut r = Run::of(setpriv, None);
        r.args = args.iter().map(|a| a.to_string()).collect();
        r
    };
    let probe = run(&["--version"]);
    if probe.code != Some(0) {
        eprintln!(
            "skipped: running as root, and `setpriv` could not run tract as nobody: {}",
            probe.stderr.trim()
        );
        return None;
    }
    Some(Box::new(run))
}

#[test]
fn a_store_the_user_may_only_read_is_read_and_a_write_is_refused_in_one_line() {
    let p = a_session();
    let owner: Vec<String> = READS.iter().map(|a| p.ok(a)).collect();
    let before = p.files();
    chmod(&p, "a-w");
    let Some(reader) = as_a_reader(&p) else {
        chmod(&p, "u+w");
        return;
    };
    for (args, owned) in READS.iter().zip(&owner) {
        let r = reader(args);
        assert_eq!(r.code, Some(0), "tract {}: {}", args.join(" "), r.stderr);
        assert_eq!(&r.stdout, owned, "tract {} reads otherwise", args.join(" "));
    }
    let refused = reader(&["add", "--role", "user", "one more"]);
    assert_run_snapshot!("readonly_add_refused", refused);
    for args in [
        &["branch", "other"][..],
        &["edit", "HEAD", "changed"],
        &["fold"],
        &["gc"],
    ] {
        let r = reader(args);
        assert_eq!(
            r.code,
            refused.code,
            "tract {}: {}",
            args.join(" "),
            r.stderr
        );
        assert!(
            r.stderr.starts_with("error: store ") && r.stderr.contains(" is read-only: "),
            "tract {}: {}",
            args.join(" "),
            r.stderr
        );
    }
    let now = p.files();
    assert!(
        now == before,
        "the store changed: {:?}",
        changed(&before, &now)
    );
    chmod(&p, "u+w");
}

/// The store's directory mounted read-only over itself in a mount namespace of its own: the
/// reads work, a write is refused naming the read-only file system. Skipped, saying why, where
/// the machine allows no such mount (not root, or no mount namespaces).
#[test]
fn a_store_on_a_read_only_mount_is_read() {
    let p = a_session();
    let log = p.ok(&["log"]);
    let dot = p.path().join(".tract");
    let in_mount = |args: &[&str]| -> Run {
        let mut c = Command::new("unshare");
        c.args(["-m", "sh", "-c"])
            .arg(r#"mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@""#)
            .arg("sh")
            .arg(&dot)
            .arg(env!("CARGO_BIN_EXE_tract"))
            .args(args)
            .current_dir(p.path())
            .env_clear()
            .env("TRACT_TIMESTAMP", TIMESTAMP);
        Run::of(c, None)
    };
    let first = in_mount(&["log"]);
    if first.code != Some(0) && first.stdout.is_empty() && !first.stderr.contains("error: ") {
        eprintln!("skipped: no read-only mount here: {}", first.stderr.trim());
        return;
    }
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert_eq!(first.stdout, log);
    let refused = in_mount(&["add", "--role", "user", "one more"]);
    assert_eq!(refused.code, Some(5), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("is read-only: it is on a read-only file system; nothing was written"),
        "{}",
        refused.stderr
    );
    assert_eq!(p.ok(&["log"]), log);
}
