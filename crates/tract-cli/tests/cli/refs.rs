//! Branches and HEAD: `tract branch`, `switch`, `checkout`, `reset` and `reflog`.

use crate::common::Project;
use insta::assert_snapshot;

/// Two commits on main, `one` then `two` (added at once); returns their short ids.
fn two_commits() -> (Project, String, String) {
    let p = Project::new();
    let ids = p.ok(&[
        "add",
        "--json",
        r#"[{"role":"user","content":"one"},{"role":"user","content":"two"}]"#,
    ]);
    let [a, b] = [0, 1].map(|i| ids.lines().nth(i).unwrap().to_string());
    (p, a, b)
}

/// `branch NAME REV` forks at any commit; `branch` lists branches with the current one
/// starred; `switch` moves to a branch, where new messages grow from its head; `checkout` of a
/// branch switches too.
#[test]
fn branches_fork_and_grow_apart() {
    let (p, a, b) = two_commits();
    assert_snapshot!(p.run(&["branch", "alt", &a]), @"
        exit: 0
        --- stdout
        created branch alt at 94f93972ff
        ");
    let branches = p.run(&["branch"]);
    assert_snapshot!(branches, @"
        exit: 0
        --- stdout
          alt  94f93972ff      1 msg         7 tok  2026-01-01T00:00:00Z
        * main 32e07835af      2 msgs       11 tok  2026-01-01T00:00:00Z
        ");
    assert!(
        branches.stdout.contains("* main") && branches.stdout.contains("  alt"),
        "{branches}"
    );
    assert_snapshot!(p.run(&["switch", "alt"]), @"
        exit: 0
        --- stdout
        switched to branch alt
        ");
    p.ok(&["add", "two on alt"]);
    assert_eq!(p.log_len(), 2);
    assert_snapshot!(p.run(&["log", "--oneline"]), @"
        exit: 0
        --- stdout
        936e8a627e two on alt
        94f93972ff one
        ");
    assert_snapshot!(p.run(&["checkout", "main"]), @"
        exit: 0
        --- stdout
        switched to branch main
        ");
    let log = p.ok(&["log", "-n", "1"]);
    assert!(log.starts_with(&b), "{log}");
    assert_snapshot!(p.run(&["branch"]), @"
        exit: 0
        --- stdout
          alt  936e8a627e      2 msgs       13 tok  2026-01-01T00:00:00Z
        * main 32e07835af      2 msgs       11 tok  2026-01-01T00:00:00Z
        ");
}

/// `checkout` of a commit detaches HEAD there and says how to keep new messages;
/// `status` says HEAD is detached; `switch -c` makes a branch of it, and `switch` goes back.
#[test]
fn checkout_a_commit_detaches_head() {
    let (p, a, b) = two_commits();
    let out = p.run(&["checkout", &a]);
    assert_snapshot!(out, @"
        exit: 0
        --- stdout
        HEAD detached at 94f93972ff; new messages grow from here (`tract switch -c NAME` keeps them on a branch)
        ");
    assert!(out.stdout.contains("detached"), "{out}");
    let status = p.run(&["status"]);
    assert_snapshot!(status, @"
        exit: 0
        --- stdout
        HEAD detached at 94f93972ff
        head      94f93972ff
        messages  1
        tokens    7
        store     [DIR]/.tract/store.redb
        ");
    assert!(status.stdout.contains(&format!("HEAD detached at {a}")));
    assert_snapshot!(p.run(&["switch", "-c", "rescue"]), @"
        exit: 0
        --- stdout
        switched to branch rescue
        ");
    assert_snapshot!(p.run(&["branch"]), @"
        exit: 0
        --- stdout
          main   32e07835af      2 msgs       11 tok  2026-01-01T00:00:00Z
        * rescue 94f93972ff      1 msg         7 tok  2026-01-01T00:00:00Z
        ");
    assert_snapshot!(p.run(&["switch", "main"]), @"
        exit: 0
        --- stdout
        switched to branch main
        ");
    assert!(p.ok(&["log", "-n", "1"]).starts_with(&b));
    assert_snapshot!(p.run(&["reflog"]), @"
        exit: 0
        --- stdout
        32e07835af main@{0}: append (was (none))
        32e07835af HEAD@{0}: switch: to main (was 94f93972ff)
        94f93972ff HEAD@{1}: switch: to rescue (was 94f93972ff)
        94f93972ff HEAD@{2}: checkout: detached at 94f93972ff (was 32e07835af)
        ");
}

/// `reset` moves the current branch and names the old head, which the reflog keeps, so a
/// second reset can go back.
#[test]
fn reset_moves_the_branch_and_the_reflog_keeps_the_old_head() {
    let (p, a, b) = two_commits();
    let out = p.run(&["reset", &a]);
    assert_snapshot!(out, @"
        exit: 0
        --- stdout
        main now at 94f93972ff (was 32e07835af; `tract reflog main` keeps the old head)
        ");
    assert!(out.stdout.contains(&format!("was {b}")), "{out}");
    assert_eq!(p.log_len(), 1);
    let reflog = p.run(&["reflog", "main"]);
    assert_snapshot!(reflog, @"
        exit: 0
        --- stdout
        94f93972ff main@{0}: reset: moving to 94f93972ff (was 32e07835af)
        32e07835af main@{1}: append (was (none))
        ");
    assert!(reflog.stdout.lines().next().unwrap().contains("reset"));
    assert_snapshot!(p.run(&["reset", &b]), @"
        exit: 0
        --- stdout
        main now at 32e07835af (was 94f93972ff; `tract reflog main` keeps the old head)
        ");
    assert_eq!(p.log_len(), 2);
    assert_snapshot!(p.run(&["reflog", "main", "-n", "2"]), @"
        exit: 0
        --- stdout
        32e07835af main@{0}: reset: moving to 32e07835af (was 94f93972ff)
        94f93972ff main@{1}: reset: moving to 94f93972ff (was 32e07835af)
        ");
}

/// Switching to a branch that does not exist, or creating one that does, is an error that
/// changes nothing.
#[test]
fn bad_branch_commands_change_nothing() {
    let (p, a, _) = two_commits();
    p.ok(&["branch", "alt", &a]);
    let before = p.state();
    assert_snapshot!(p.fails(&["switch", "nope"]), @"
        exit: 3
        --- stderr
        error: branch 'nope' not found
        hint: `tract branch` lists branches
        ");
    assert_snapshot!(p.fails(&["branch", "alt"]), @"
        exit: 5
        --- stderr
        error: invalid operation: branch 'alt' already exists
        ");
    assert_snapshot!(p.fails(&["switch", "-c", "alt"]), @"
        exit: 5
        --- stderr
        error: invalid operation: branch 'alt' already exists
        ");
    assert!(p.state() == before, "failed commands change nothing");
}

/// `--branch NAME` (or `TRACT_BRANCH`) works on that branch, creating it with its first
/// message, while HEAD stays where it is; a bad name is refused and changes nothing.
#[test]
fn the_branch_option_works_on_a_session_branch_and_leaves_head() {
    let p = Project::new();
    p.ok(&["add", "on main"]);
    assert_snapshot!(p.run(&["--branch", "agent-1", "add", "hello"]), @"
        exit: 0
        --- stdout
        9c8b24491c
        --- stderr
        note: created branch 'agent-1'
        ");
    assert_snapshot!(p.run(&["--branch", "agent-1", "add", "--role", "assistant", "hi"]), @"
        exit: 0
        --- stdout
        76c2f56c25
        ");
    assert_snapshot!(p.run(&["--branch", "agent-1", "log"]), @"
        exit: 0
        --- stdout
        76c2f56c25 append assistant -                 4  hi
        9c8b24491c append user      -                 4  hello
        ");
    assert_snapshot!(p.run_env(&["status"], None, &[("TRACT_BRANCH", "agent-1")]), @"
        exit: 0
        --- stdout
        On branch agent-1
        head      76c2f56c25
        messages  2
        tokens    11
        store     [DIR]/.tract/store.redb
        ");
    // HEAD did not move: the current branch is still main, with its one message.
    assert_snapshot!(p.run(&["status"]), @"
        exit: 0
        --- stdout
        On branch main
        head      5eb413233c
        messages  1
        tokens    8
        store     [DIR]/.tract/store.redb
        ");
    assert_snapshot!(p.run(&["branch"]), @"
        exit: 0
        --- stdout
          agent-1 76c2f56c25      2 msgs       11 tok  2026-01-01T00:00:00Z
        * main    5eb413233c      1 msg         8 tok  2026-01-01T00:00:00Z
        ");
    let before = p.state();
    assert_snapshot!(p.fails(&["--branch", "a b", "add", "x"]), @"
        exit: 4
        --- stderr
        error: invalid input: 'a b' is not a valid branch name (letters, digits, - _ . /; not HEAD, not 64 hex digits)
        ");
    assert_eq!(p.state(), before);
}

/// Main, and three sessions on branches of their own.
fn sessions() -> Project {
    let p = Project::new();
    p.ok(&["add", "on main"]);
    for b in ["session-1", "session-2", "session-10"] {
        p.ok(&["--branch", b, "add", "hello"]);
    }
    p
}

/// Every command that reads the branch fails when `--branch` names one that does not exist,
/// naming the closest that do: one error line and a hint, nothing on standard output, and
/// nothing changes.
#[test]
fn reading_a_branch_that_does_not_exist_is_an_error() {
    let p = sessions();
    let before = p.state();
    assert_snapshot!(p.fails(&["--branch", "sesion-1", "export"]), @"
        exit: 3
        --- stderr
        error: branch 'sesion-1' not found; did you mean 'session-1', 'session-10' or 'session-2'?
        hint: `tract branch` lists branches
        ");
    let reads: &[&[&str]] = &[
        &["export"],
        &["export", "--format", "markdown", "--history"],
        &["log"],
        &["log", "--graph"],
        &["log", "--json", "main"],
        &["compile"],
        &["compile", "--format", "anthropic"],
        &["search", "hello"],
        &["search", "--history", "hello"],
        &["show"],
        &["status"],
        &["status", "--json"],
        &["tools", "calls"],
        &["tools", "results"],
        &["tools", "turns", "--json"],
    ];
    for read in reads {
        let args = [&["--branch", "sesion-1"], *read].concat();
        let run = p.fails(&args);
        assert_eq!(
            run.to_string(),
            "exit: 3\n--- stderr\n\
             error: branch 'sesion-1' not found; did you mean 'session-1', 'session-10' or 'session-2'?\n\
             hint: `tract branch` lists branches\n",
            "tract {}",
            args.join(" ")
        );
    }
    // Nothing close: no suggestion. `TRACT_BRANCH` names a branch as `--branch` does.
    assert_snapshot!(p.fails(&["--branch", "nope", "log"]), @"
        exit: 3
        --- stderr
        error: branch 'nope' not found
        hint: `tract branch` lists branches
        ");
    assert_snapshot!(p.run_env(&["status"], None, &[("TRACT_BRANCH", "Session-2")]), @"
        exit: 3
        --- stderr
        error: branch 'Session-2' not found; did you mean 'session-2'?
        hint: `tract branch` lists branches
        ");
    // A name cut short, or a session id without its prefix.
    assert_snapshot!(p.fails(&["--branch", "sess", "compile"]), @"
        exit: 3
        --- stderr
        error: branch 'sess' not found; did you mean 'session-1', 'session-2' or 'session-10'?
        hint: `tract branch` lists branches
        ");
    assert_eq!(p.state(), before, "failed reads change nothing");
    // A write still creates the branch, which can be read from then on.
    assert_snapshot!(p.run(&["--branch", "session-3", "add", "hi"]), @"
        exit: 0
        --- stdout
        99f39a9894
        --- stderr
        warning: created branch 'session-3'; did you mean 'session-1', 'session-2' or 'session-10'?
        ");
    assert_snapshot!(p.run(&["--branch", "session-3", "log", "--oneline"]), @"
        exit: 0
        --- stdout
        99f39a9894 hi
        ");
}

/// The current branch of a new store has no commits yet: reading it, named or not, shows an
/// empty history, as without `--branch`; another name is an error.
#[test]
fn the_current_branch_of_a_new_store_reads_as_empty() {
    let p = Project::new();
    for args in [
        &["log"][..],
        &["--branch", "main", "log"],
        &["--branch", "main", "export"],
    ] {
        assert_eq!(
            p.run(args).to_string(),
            "exit: 0\n",
            "tract {}",
            args.join(" ")
        );
    }
    assert_snapshot!(p.run(&["--branch", "main", "status"]), @"
        exit: 0
        --- stdout
        On branch main
        head      (no commits yet)
        messages  0
        tokens    3
        store     [DIR]/.tract/store.redb
        ");
    assert_snapshot!(p.fails(&["--branch", "mian", "log"]), @"
        exit: 3
        --- stderr
        error: branch 'mian' not found
        hint: `tract branch` lists branches
        ");
}

/// The commands that take a branch by name say which are close when it does not exist.
#[test]
fn switch_merge_and_delete_name_the_close_branches() {
    let p = sessions();
    let before = p.state();
    assert_snapshot!(p.fails(&["switch", "session-20"]), @"
        exit: 3
        --- stderr
        error: branch 'session-20' not found; did you mean 'session-10', 'session-2' or 'session-1'?
        hint: `tract branch` lists branches
        ");
    assert_snapshot!(p.fails(&["merge", "sesion-2"]), @"
        exit: 3
        --- stderr
        error: branch 'sesion-2' not found; did you mean 'session-2' or 'session-1'?
        hint: `tract branch` lists branches
        ");
    assert_snapshot!(p.fails(&["branch", "-d", "mainn"]), @"
        exit: 3
        --- stderr
        error: branch 'mainn' not found; did you mean 'main'?
        hint: `tract branch` lists branches
        ");
    assert_eq!(p.state(), before);
}

/// `branch -d NAME` deletes a branch that is not the current one; the reflog keeps its tip.
#[test]
fn branch_delete_keeps_the_tip_in_the_reflog() {
    let (p, a, _) = two_commits();
    p.ok(&["branch", "alt", &a]);
    let before = p.state();
    assert_snapshot!(p.fails(&["branch", "-d", "main"]), @"
        exit: 5
        --- stderr
        error: invalid operation: branch 'main' is the current branch; switch to another one first
        ");
    assert_snapshot!(p.fails(&["branch", "-d", "nope"]), @"
        exit: 3
        --- stderr
        error: branch 'nope' not found
        hint: `tract branch` lists branches
        ");
    assert_eq!(p.state(), before);
    assert_snapshot!(p.run(&["branch", "-d", "alt"]), @"
        exit: 0
        --- stdout
        deleted branch alt (was 94f93972ff; `tract reflog alt` keeps it)
        ");
    assert_snapshot!(p.run(&["branch"]), @"
        exit: 0
        --- stdout
        * main 32e07835af      2 msgs       11 tok  2026-01-01T00:00:00Z
        ");
    assert_snapshot!(p.run(&["reflog", "alt"]), @"
        exit: 0
        --- stdout
        (none) alt@{0}: branch: deleted (was 94f93972ff)
        94f93972ff alt@{1}: branch: created at 94f93972ff (was (none))
        ");
    // Reading it is an error now; a session of that name starts afresh.
    assert_snapshot!(p.fails(&["--branch", "alt", "log"]), @"
        exit: 3
        --- stderr
        error: branch 'alt' not found
        hint: `tract branch` lists branches
        ");
    assert_snapshot!(p.run(&["--branch", "alt", "add", "new"]), @"
        exit: 0
        --- stdout
        7e472435fe
        --- stderr
        note: created branch 'alt'
        ");
    assert_snapshot!(p.run(&["--branch", "alt", "log"]), @"
        exit: 0
        --- stdout
        7e472435fe append user      -                 4  new
        ");
}

/// `branch --json` lists every branch with its tip, messages, tokens in view and last
/// activity, as kept while the branches moved.
#[test]
fn branch_json_lists_sessions_with_their_counts() {
    let (p, a, _) = two_commits();
    p.ok(&["--branch", "agent", "add", "one message on its own"]);
    p.ok(&["branch", "alt", &a]);
    assert_snapshot!(p.run(&["branch", "--json"]), @r#"
        exit: 0
        --- stdout
        [
          {
            "name": "agent",
            "head": "322175938d243af90d46b26dba7129d38a813d6967d7a74b9623f0c51ec97cf1",
            "current": false,
            "messages": 1,
            "token_count": 11,
            "last_activity": "2026-01-01T00:00:00.000000Z",
            "last_activity_us": 1767225600000000,
            "agent": null,
            "agent_version": null
          },
          {
            "name": "alt",
            "head": "94f93972ff51786d0659ea73366b71f6474f221eedb748f5c698a9f6e4ee7a6b",
            "current": false,
            "messages": 1,
            "token_count": 7,
            "last_activity": "2026-01-01T00:00:00.000000Z",
            "last_activity_us": 1767225600000000,
            "agent": null,
            "agent_version": null
          },
          {
            "name": "main",
            "head": "32e07835af7cb809ddd5aac37c3bb85b3ba121a7373727c86001805f4b60fc10",
            "current": true,
            "messages": 2,
            "token_count": 11,
            "last_activity": "2026-01-01T00:00:00.000001Z",
            "last_activity_us": 1767225600000001,
            "agent": null,
            "agent_version": null
          }
        ]
        "#);
}

/// A write that creates a branch says so on standard error: a note, or a warning naming the
/// close ones when there are (the did-you-mean of a read: the name may be a typo). Writing to
/// a branch that has commits, or to the current branch of a new store, says nothing.
#[test]
fn a_write_that_creates_a_branch_says_so() {
    let p = sessions();
    assert_snapshot!(p.run(&["--branch", "sesion-1", "add", "hi"]), @"
        exit: 0
        --- stdout
        99f39a9894
        --- stderr
        warning: created branch 'sesion-1'; did you mean 'session-1', 'session-10' or 'session-2'?
        ");
    assert_snapshot!(p.run(&["--branch", "sesion-1", "add", "again"]), @"
        exit: 0
        --- stdout
        d7355f89c2
        ");
    assert_snapshot!(p.run_env(&["add", "hi"], None, &[("TRACT_BRANCH", "review")]), @"
        exit: 0
        --- stdout
        99f39a9894
        --- stderr
        note: created branch 'review'
        ");
    assert_snapshot!(p.run(&["--branch", "session-1", "add", "more"]), @"
        exit: 0
        --- stdout
        216df610f4
        ");
    let (q, a, _) = two_commits();
    assert_snapshot!(q.run(&["--branch", "mian", "reset", &a]), @"
        exit: 0
        --- stdout
        mian now at 94f93972ff (was (none); `tract reflog mian` keeps the old head)
        --- stderr
        warning: created branch 'mian'; did you mean 'main'?
        ");
    assert!(
        Project::new()
            .run(&["--branch", "main", "add", "x"])
            .stderr
            .is_empty()
    );
}

/// `--branch` where it means nothing is refused, as a usage error, and changes nothing;
/// `TRACT_BRANCH` (a session's) is ignored there, so `tract init` works beside it.
#[test]
fn branch_is_refused_where_it_means_nothing() {
    let p = Project::empty();
    assert_snapshot!(p.run(&["init", "--branch", "sesion-1"]), @"
        exit: 2
        --- stderr
        error: --branch cannot be used with `tract init`: it makes a store; a branch is made by its first message

        Usage: tract [OPTIONS] <COMMAND>

        For more information, try '--help'.
        ");
    assert!(!p.path().join(".tract").exists());
    assert_snapshot!(p.run_env(&["init"], None, &[("TRACT_BRANCH", "session-1")]), @"
        exit: 0
        --- stdout
        Initialized empty tract store in ./.tract/store.redb
        ");
    assert_snapshot!(p.run(&["--branch", "x", "capture", "--once", "projects"]), @"
        exit: 2
        --- stderr
        error: --branch cannot be used with `tract capture`: each session goes onto its own branch

        Usage: tract [OPTIONS] <COMMAND>

        For more information, try '--help'.
        ");
    let p = sessions();
    let before = p.state();
    let refused: &[&[&str]] = &[
        &["capture", "--once"],
        &["clone", "a", "b"],
        &["push", "other.redb"],
        &["pull", "other.redb"],
        &["switch", "session-1"],
        &["checkout", "session-1"],
        &["config", "show"],
        &["index"],
        &["fsck"],
        &["gc", "--dry-run"],
        &["upgrade"],
        &["checkpoint"],
        &["serve", "--port", "0"],
        &["mcp"],
        &["demo", "demo-dir"],
    ];
    for args in refused {
        let run = p.run(&[&["--branch", "session-1"], *args].concat());
        assert_eq!(
            run.code,
            Some(2),
            "tract --branch session-1 {}: {run}",
            args.join(" ")
        );
        assert!(
            run.stderr.starts_with(&format!(
                "error: --branch cannot be used with `tract {}`",
                args[0]
            )),
            "{run}"
        );
    }
    assert_eq!(p.state(), before);
    // The environment's is ignored: `fsck` checks the store, `switch` moves HEAD.
    let env = [("TRACT_BRANCH", "nope")];
    assert_eq!(p.run_env(&["fsck"], None, &env).code, Some(0));
    assert_snapshot!(p.run_env(&["switch", "session-2"], None, &env), @"
        exit: 0
        --- stdout
        switched to branch session-2
        ");
}

/// `tract reflog` with no argument shows the current branch's moves and HEAD's, merged by
/// time, newest first (as `git reflog` shows HEAD's); NAME, or `--branch`, shows one ref's.
#[test]
fn reflog_without_a_name_shows_the_current_branch_and_head() {
    let p = Project::new();
    let at = |t: &str| format!("2026-01-01T00:00:0{t}Z");
    let step = |args: &[&str], t: &str| {
        let run = p.run_env(args, None, &[("TRACT_TIMESTAMP", &at(t))]);
        assert_eq!(run.code, Some(0), "{run}");
    };
    step(&["add", "one"], "1");
    step(&["switch", "-c", "side"], "2");
    step(&["add", "on side"], "3");
    step(&["switch", "main"], "4");
    step(&["add", "two"], "5");
    step(&["reset", "HEAD~1"], "6");
    assert_snapshot!(p.run(&["reflog"]), @"
        exit: 0
        --- stdout
        d357f5615b main@{0}: reset: moving to d357f5615b (was ce0a81049a)
        ce0a81049a main@{1}: append (was d357f5615b)
        d357f5615b HEAD@{0}: switch: to main (was 58bb814bf3)
        d357f5615b HEAD@{1}: switch: to side (was d357f5615b)
        d357f5615b main@{2}: append (was (none))
        ");
    assert_snapshot!(p.run(&["reflog", "-n", "3"]), @"
        exit: 0
        --- stdout
        d357f5615b main@{0}: reset: moving to d357f5615b (was ce0a81049a)
        ce0a81049a main@{1}: append (was d357f5615b)
        d357f5615b HEAD@{0}: switch: to main (was 58bb814bf3)
        ");
    assert_snapshot!(p.run(&["reflog", "HEAD"]), @"
        exit: 0
        --- stdout
        d357f5615b HEAD@{0}: switch: to main (was 58bb814bf3)
        d357f5615b HEAD@{1}: switch: to side (was d357f5615b)
        ");
    assert_snapshot!(p.run(&["--branch", "side", "reflog"]), @"
        exit: 0
        --- stdout
        58bb814bf3 side@{0}: append (was d357f5615b)
        d357f5615b side@{1}: branch: created at d357f5615b (was (none))
        ");
    assert_snapshot!(p.run(&["--branch", "side", "reflog", "main"]), @"
        exit: 4
        --- stderr
        error: invalid input: --branch and NAME both name the ref to show: give one of them
        ");
}

/// `checkout` of a name that is neither a branch nor a commit names the close branches, as
/// `switch` does.
#[test]
fn checkout_names_the_close_branches() {
    let p = sessions();
    let before = p.state();
    assert_snapshot!(p.fails(&["checkout", "sesion-1"]), @"
        exit: 3
        --- stderr
        error: branch 'sesion-1' not found; did you mean 'session-1', 'session-10' or 'session-2'?
        hint: `tract branch` lists branches
        ");
    assert_snapshot!(p.fails(&["checkout", "nope"]), @"
        exit: 3
        --- stderr
        error: commit or branch 'nope' not found
        hint: `tract log` lists commits; `tract branch` lists branches
        ");
    assert_eq!(p.state(), before);
}

/// `switch -c NAME` on a new store (no commit yet) puts HEAD on NAME, which the first message
/// creates; an existing name is refused.
#[test]
fn switch_create_works_on_a_new_store() {
    let p = Project::new();
    assert_snapshot!(p.run(&["switch", "-c", "session-1"]), @"
        exit: 0
        --- stdout
        switched to branch session-1
        ");
    assert_snapshot!(p.run(&["status"]), @"
        exit: 0
        --- stdout
        On branch session-1
        head      (no commits yet)
        messages  0
        tokens    3
        store     [DIR]/.tract/store.redb
        ");
    assert_snapshot!(p.run(&["add", "hi"]), @"
        exit: 0
        --- stdout
        99f39a9894
        ");
    assert_snapshot!(p.run(&["branch"]), @"
        exit: 0
        --- stdout
        * session-1 99f39a9894      1 msg         7 tok  2026-01-01T00:00:00Z
        ");
    let r = Project::new();
    r.ok(&["--branch", "session-1", "add", "x"]);
    assert_snapshot!(r.fails(&["switch", "-c", "session-1"]), @"
        exit: 5
        --- stderr
        error: invalid operation: branch 'session-1' already exists
        ");
}
