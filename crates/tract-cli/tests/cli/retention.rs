//! `tract config retention` and `tract gc` applying it: the rules as stored and shown, what a
//! dry run lists, what gc then does, and bad rules refused.

use crate::common::{Project, add_tool_turn, json};
use insta::assert_snapshot;

/// Three months after the harness's clock.
const LATER: &str = "2026-04-01T00:00:00Z";

/// A session with an old grep result and an old bash one on main, and an idle side branch.
fn aged() -> Project {
    let p = Project::new();
    p.ok(&["add", "find the config"]);
    add_tool_turn(
        &p,
        "c1",
        "grep",
        "config.py:42: DATABASE_URL=postgres://db",
        &[],
    );
    add_tool_turn(&p, "c2", "bash", "exit 0", &[]);
    p.ok(&["branch", "side"]);
    p.ok(&["--branch", "side", "add", "side work"]);
    p.ok(&["branch", "keep"]);
    p.ok(&["add", "back on main"]);
    p
}

#[test]
fn rules_are_stored_shown_dry_run_then_applied() {
    let p = aged();
    let set = p.run(&[
        "config",
        "retention",
        "--rule",
        "results: branches=main, tool-results-older-than=30d, keep-newest=2, replace-with=placeholder",
        "--rule",
        "idle: branches=*, delete-idle-for=60",
        "--pin",
        "keep",
    ]);
    assert_snapshot!(set, @"
        exit: 0
        --- stdout
        retention (applied by tract gc):
          results [main]: tool results older than 30 days outside the newest 2 messages of each view replaced by a placeholder
          idle [*]: branches idle for 60 days deleted
          pinned: keep
        ");
    let stored = json(&p.ok(&["config", "show", "--json"]));
    assert_eq!(
        stored["retention"]["rules"][0]["replace_tool_results"],
        serde_json::json!({"older_than_days": 30, "keep_newest": 2, "with": "placeholder"})
    );
    // Today nothing is due: the rules name ages the store has not reached.
    assert_snapshot!(p.run(&["gc", "--dry-run"]), @"
        exit: 0
        --- stdout
        rule 'results': nothing due
        rule 'idle': nothing due; kept 1 pinned branch
        would remove 0 commits, 0 blobs, 0 chunks (0 bytes); would expire 0 reflog entries
        ");
    // Three months on: main is idle too, but HEAD is on it; `keep` is pinned and reaches both
    // results, so the results rule keeps them (the first reason to keep one is the one
    // counted).
    let later = [("TRACT_TIMESTAMP", LATER)];
    let dry = p.run_env(&["gc", "--dry-run", "--prune-now"], None, &later);
    assert_snapshot!(dry, @"
        exit: 0
        --- stdout
        rule 'results': nothing due; kept 2 results another branch reaches
        rule 'idle': would delete 1 branch (107 bytes once collected); kept 1 pinned branch; kept 1 idle branch HEAD is on
          branch side at 35eae6ef44 (idle since 2026-01-01T00:00:00.000005Z)
        would remove 1 commit, 1 blob, 0 chunks (107 bytes); would expire 10 reflog entries
        ");
    // Nothing changed.
    assert!(p.ok(&["branch"]).contains("side"));
    // Unpinned, `keep` is idle too, and the grep result the rule's alone (the bash result is
    // among main's newest two messages).
    p.ok(&["config", "retention", "--unpin", "keep"]);
    let done = p.run_env(&["gc", "--prune-now"], None, &later);
    assert_snapshot!(done, @"
        exit: 0
        --- stdout
        rule 'results': replaced 1 tool result (0 bytes); kept 1 result among a view's newest messages
          result 574ca7382e by a placeholder
        rule 'idle': deleted 2 branches (107 bytes once collected); kept 1 idle branch HEAD is on
          branch keep at fdaf96a068 (idle since 2026-01-01T00:00:00.000004Z)
          branch side at 35eae6ef44 (idle since 2026-01-01T00:00:00.000005Z)
        removed 1 commit, 1 blob, 0 chunks (107 bytes), 0 view checkpoints; expired 11 reflog entries
        ");
    let view = p.ok(&["show", "574ca7382e"]);
    assert!(
        view.contains("removed by retention rule 'results'"),
        "{view}"
    );
    assert!(!view.contains("DATABASE_URL"), "{view}");
    let shown = p.ok(&["log", "--oneline"]);
    assert!(!shown.contains("side work"), "{shown}");
    assert!(p.ok(&["fsck"]).contains("checked"));
    let reflog = p.ok(&["reflog", "side"]);
    assert!(
        reflog.contains("retention rule 'idle': deleted"),
        "{reflog}"
    );
    // Applied, the rules have nothing more to do.
    let again = json(&p.run_env(&["gc", "--json"], None, &later).stdout);
    assert!(
        again["retention"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["deleted_branches"] == serde_json::json!([])
                && r["replaced_results"] == serde_json::json!([])),
        "{again}"
    );
}

/// A rule with no action named the JSON fields (`replace_tool_results`,
/// `delete_idle_branches`), which `--rule` does not take: it names the keys it does.
#[test]
fn a_rule_with_no_action_names_the_cli_keys() {
    let p = Project::new();
    assert_snapshot!(p.fails(&["config", "retention", "--rule", "x: branches=*"]), @"
    exit: 4
    --- stderr
    error: invalid input: --rule 'x: branches=*': the rule does nothing: give it tool-results-older-than=DAYS or keep-newest=N (to replace tool results), or delete-idle-for=DAYS (to delete idle branches)
    ");
}

#[test]
fn bad_rules_are_refused_and_change_nothing() {
    let p = Project::new();
    p.ok(&[
        "config",
        "retention",
        "--rule",
        "idle: branches=*, delete-idle-for=90",
    ]);
    let before = p.ok(&["config", "show", "--json"]);
    let r = ["config", "retention"];
    for (args, says) in [
        (vec!["--rule", "no colon"], "NAME: KEY=VALUE"),
        (vec!["--rule", "x: branches=["], "invalid"),
        (
            vec!["--rule", "x: branches=*"],
            "does nothing: give it tool-results-older-than=DAYS",
        ),
        (
            vec!["--rule", "x: branches=*, replace-with=placeholder"],
            "give it tool-results-older-than=DAYS or keep-newest=N",
        ),
        (
            vec!["--rule", "x: branches=*, delete-idle-for=soon"],
            "not a number of days",
        ),
        (
            vec!["--rule", "x: branches=*, delete-idle-for=0"],
            "1 or more",
        ),
        (
            vec!["--rule", "x: branches=*, frobnicate=1"],
            "unknown key 'frobnicate'",
        ),
        (
            vec![
                "--rule",
                "x: branches=*, replace-with=nothing, keep-newest=3",
            ],
            "summary or placeholder",
        ),
        (
            vec!["--rule", "x: branches=*, delete-idle-for=9, keep-newest=3"],
            "two things",
        ),
        (vec!["--rule", "x: delete-idle-for=9"], "names no branches"),
        (
            vec!["--remove-rule", "nope"],
            "no retention rule named 'nope'",
        ),
        (vec!["--pin", "["], "invalid"),
        (vec!["--from", "/nonexistent/policy.json"], "cannot read"),
    ] {
        let run = p.fails(&[&r[..], &args[..]].concat());
        assert!(run.stderr.contains(says), "{args:?}: {run}");
        // The keys written on the command line, not the JSON fields of `--from`.
        for field in [
            "replace_tool_results",
            "delete_idle_branches",
            "older_than_days",
        ] {
            assert!(!run.stderr.contains(field), "{args:?}: {run}");
        }
        assert_eq!(p.ok(&["config", "show", "--json"]), before, "{args:?}");
    }
    let run = p.fails_in(
        &["config", "retention", "--from", "-"],
        r#"{"rules":[],"pinned":[],"extra":1}"#,
    );
    assert!(run.stderr.contains("unknown field"), "{run}");
    // A whole policy from JSON replaces the stored one.
    p.ok_in(
        &["config", "retention", "--from", "-"],
        r#"{"rules":[{"name":"r","branches":["claude/*"],"replace_tool_results":{"older_than_days":7}}]}"#,
    );
    let stored = json(&p.ok(&["config", "show", "--json"]));
    assert_eq!(stored["retention"]["rules"][0]["name"], "r");
    assert_eq!(
        stored["retention"]["rules"][0]["replace_tool_results"]["with"],
        "summary"
    );
}
