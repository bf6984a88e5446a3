//! Retention: the rules `gc` applies (old tool results replaced, idle branches deleted), what
//! a dry run says they would do, and what they keep.

use crate::support::{branch, call, temp_store, texts};
use std::path::Path;
use tract_core::{
    Bind, Clock, DeleteIdleBranches, GcOptions, GcOutcome, Message, OpenOptions, RecordOptions,
    ReplaceToolResults, Replacement, RetentionPolicy, RetentionRule, Rev, SearchQuery,
    StoreOptions, ToolPolicy, Tract,
};

/// 2026-01-01T00:00:00Z.
const T0: u64 = 1_767_225_600_000_000;
const DAY: u64 = 24 * 3600 * 1_000_000;

/// A handle on branch `name` whose clock says `at`.
fn at(path: &Path, name: &str, at: u64) -> Tract {
    let options = OpenOptions {
        bind: Bind::Branch(branch(name)),
        store: StoreOptions {
            clock: Clock::Fixed(at),
            ..StoreOptions::default()
        },
        ..OpenOptions::default()
    };
    Tract::open_with(path, &options).unwrap()
}

fn gc(t: &Tract, dry_run: bool) -> GcOutcome {
    let options = GcOptions {
        grace: std::time::Duration::ZERO,
        dry_run,
    };
    tract_core::gc_with(t.store(), &options).unwrap()
}

fn grep_output(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("src/module_{i}.rs:{i}: let zanzibar_{i} = compute({i});"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn replace(days: Option<u32>, keep: Option<u32>, with: Replacement) -> Option<ReplaceToolResults> {
    Some(ReplaceToolResults {
        older_than_days: days,
        keep_newest: keep,
        with,
    })
}

fn rule(name: &str, branches: &[&str]) -> RetentionRule {
    RetentionRule {
        name: name.into(),
        branches: branches.iter().map(|b| b.to_string()).collect(),
        replace_tool_results: None,
        delete_idle_branches: None,
    }
}

fn names(t: &Tract) -> Vec<String> {
    t.branches().unwrap().into_iter().map(|b| b.name).collect()
}

#[test]
fn rules_replace_old_results_by_their_summary_and_delete_idle_branches_as_the_dry_run_said() {
    let (_dir, path) = temp_store();
    let old = at(&path, "main", T0);
    old.set_tool_policy(&ToolPolicy {
        instructions: [("grep".to_string(), "the files".to_string())].into(),
        ..ToolPolicy::default()
    })
    .unwrap();
    old.user("where is zanzibar computed?").unwrap();
    old.assistant("", vec![call("g1", "grep")]).unwrap();
    let grep = old
        .record_tool_result(
            Message::tool_result("g1", "grep", grep_output(300), false),
            &RecordOptions::default(),
        )
        .unwrap();
    let summary = grep.replacement.expect("the policy summarized it").id;
    old.assistant("", vec![call("b1", "bash")]).unwrap();
    let bash = old
        .tool_result("b1", "bash", "exit 0: built", false)
        .unwrap();
    for name in ["idle/x", "idle/pinned"] {
        let side = old.fork(&branch(name), &Rev::head()).unwrap();
        side.user(format!("work on {name}")).unwrap();
    }
    // Main goes on today; its old results are due, its branch is not idle.
    let now = T0 + 100 * DAY;
    let today = at(&path, "main", now);
    today.user("and now?").unwrap();
    let mut results = rule("results", &["main", "idle/*"]);
    results.replace_tool_results = replace(Some(30), None, Replacement::Summary);
    let mut stale = rule("stale", &["idle/*"]);
    stale.delete_idle_branches = Some(DeleteIdleBranches { idle_days: 90 });
    let policy = RetentionPolicy {
        rules: vec![results, stale],
        pinned: vec!["idle/p*".into()],
    };
    today.set_retention_policy(&policy).unwrap();
    assert_eq!(today.retention_policy().unwrap(), policy);
    let view_before = texts(&today);

    let dry = gc(&today, true);
    assert!(dry.dry_run);
    let [results, stale] = &dry.retention[..] else {
        panic!("{:?}", dry.retention)
    };
    assert_eq!(stale.rule, "stale");
    assert_eq!(
        stale
            .deleted
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>(),
        ["idle/x"]
    );
    assert_eq!(stale.deleted[0].idle_since_us, T0 + 6);
    assert_eq!((stale.kept.pinned, stale.bytes > 0), (1, true));
    // The pinned branch forked from main after both results: it reaches them, so the rule
    // keeps them (a pin keeps what the branch reaches).
    assert_eq!(results.replaced.len(), 0, "{results:?}");
    assert_eq!((results.kept.shared, results.kept.pinned), (2, 1));
    // Nothing changed.
    assert_eq!(names(&today), ["idle/pinned", "idle/x", "main"]);
    assert!(today.tombstone(grep.original.id).unwrap().is_none());

    // Unpinned, the results are the rule's alone.
    let policy = RetentionPolicy {
        pinned: vec![],
        ..policy
    };
    today.set_retention_policy(&policy).unwrap();
    let dry = gc(&today, true);
    let [results, stale] = &dry.retention[..] else {
        panic!()
    };
    assert_eq!(stale.deleted.len(), 2);
    assert_eq!(results.replaced.len(), 1);
    assert_eq!(results.replaced[0].commits, [grep.original.id]);
    assert_eq!(results.replaced[0].summary, Some(summary));
    assert_eq!(
        results.kept.unsummarized, 1,
        "the bash result has no summary"
    );
    assert!(results.bytes > 1000, "{}", results.bytes);

    let q = SearchQuery {
        query: "zanzibar_250".into(),
        history: true,
        ..SearchQuery::default()
    };
    assert_eq!(today.search(&q).unwrap().len(), 1, "the original's words");
    let done = gc(&today, false);
    assert_eq!(
        done.retention, dry.retention,
        "gc did what the dry run said"
    );
    assert_eq!(
        (done.commits, done.blobs, done.bytes),
        (dry.commits, dry.blobs, dry.bytes)
    );
    assert!(done.commits >= 2, "the idle branches' own commits");
    assert_eq!(names(&today), ["main"]);
    // The view showed the summary already: it does not change. History shows the summary in
    // the original's place, and says why.
    assert_eq!(texts(&today), view_before);
    let original = today.get_commit(grep.original.id).unwrap();
    assert_eq!(original.id, grep.original.id, "ids stay valid");
    let stone = today.tombstone(grep.original.id).unwrap().unwrap();
    assert!(
        stone.reason.starts_with("retention rule 'results'"),
        "{}",
        stone.reason
    );
    let shown = today.get_commit(summary).unwrap();
    assert_eq!(
        stone.placeholder.content.text(),
        shown.message.unwrap().content.text()
    );
    assert!(today.tombstone(bash.id).unwrap().is_none());
    // The original's words leave the index; the store checks clean, the summary not listed
    // as made from removed content (it is what was meant to stay).
    let hits = today.search(&q).unwrap();
    assert!(hits.is_empty(), "{hits:?}");
    let report = tract_core::fsck(today.store()).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert!(report.derived_from_redacted.is_empty());
    // The deletion is in the reflog under the rule's name.
    let log = today.reflog("idle/x", 10).unwrap();
    assert!(
        log[0].reason.starts_with("retention rule 'stale'"),
        "{log:?}"
    );
    // Nothing is due twice.
    let again = gc(&today, false);
    assert!(
        again
            .retention
            .iter()
            .all(|r| r.deleted.is_empty() && r.replaced.is_empty()),
        "{again:?}"
    );
}

#[test]
fn a_result_another_branch_reaches_or_a_views_newest_messages_hold_stays() {
    let (_dir, path) = temp_store();
    let old = at(&path, "main", T0);
    old.user("go").unwrap();
    old.assistant("", vec![call("c1", "bash")]).unwrap();
    let r1 = old
        .tool_result("c1", "bash", "first output", false)
        .unwrap();
    old.fork(&branch("other"), &Rev::head()).unwrap();
    old.assistant("", vec![call("c2", "bash")]).unwrap();
    let r2 = old
        .tool_result("c2", "bash", "second output", false)
        .unwrap();
    old.assistant("", vec![call("c3", "bash")]).unwrap();
    let r3 = old
        .tool_result("c3", "bash", "third output", false)
        .unwrap();
    let today = at(&path, "main", T0 + 40 * DAY);
    let mut results = rule("results", &["main"]);
    results.replace_tool_results = replace(Some(30), Some(2), Replacement::Placeholder);
    today
        .set_retention_policy(&RetentionPolicy {
            rules: vec![results],
            pinned: vec![],
        })
        .unwrap();
    let out = gc(&today, false);
    let r = &out.retention[0];
    assert_eq!(r.replaced.len(), 1, "{r:?}");
    assert_eq!(r.replaced[0].commits, [r2.id]);
    assert_eq!(r.replaced[0].summary, None);
    assert_eq!(
        (r.kept.shared, r.kept.newest),
        (1, 1),
        "r1 on other; r3 newest"
    );
    let shown = texts(&today);
    assert!(shown.contains(&"first output".to_string()));
    assert!(shown.contains(&"third output".to_string()));
    assert!(shown.contains(
        &"[tract] This tool result was removed by retention rule 'results'.".to_string()
    ));
    // The request stays valid: the placeholder answers its call.
    let compiled = today.compile().unwrap();
    compiled.to_openai().unwrap();
    compiled.to_anthropic().unwrap();
    assert!(today.tombstone(r1.id).unwrap().is_none());
    assert!(today.tombstone(r3.id).unwrap().is_none());
    assert!(tract_core::fsck(today.store()).unwrap().is_clean());
}

#[test]
fn a_deleted_branch_stays_known_as_deleted_once_its_reflog_expires() {
    let (_dir, path) = temp_store();
    let t = at(&path, "main", T0);
    t.user("hello").unwrap();
    let side = t.fork(&branch("side"), &Rev::head()).unwrap();
    side.user("side work").unwrap();
    t.delete_branch(&branch("side")).unwrap();
    let later = at(&path, "main", T0 + 400 * DAY);
    let out = gc(&later, false);
    assert_eq!(out.commits, 1, "the side's commit went");
    // Its last entry stays, naming no commit: the branch is known as deleted.
    let log = later.reflog("side", 10).unwrap();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!((log[0].old, log[0].new), (None, None));
    assert_eq!(log[0].reason, "branch: deleted");
    // It holds nothing and never expires.
    let again = gc(&at(&path, "main", T0 + 800 * DAY), false);
    assert_eq!(again.reflog_entries, 0);
    assert_eq!(later.reflog("side", 10).unwrap().len(), 1);
}

#[test]
fn a_policy_that_makes_no_sense_is_refused_and_the_stored_one_kept() {
    let (_dir, path) = temp_store();
    let t = at(&path, "main", T0);
    let mut good = rule("idle", &["*"]);
    good.delete_idle_branches = Some(DeleteIdleBranches { idle_days: 90 });
    let policy = RetentionPolicy {
        rules: vec![good.clone()],
        pinned: vec!["main".into()],
    };
    t.set_retention_policy(&policy).unwrap();
    let mut bad = good.clone();
    bad.replace_tool_results = replace(Some(1), None, Replacement::Summary);
    for rules in [
        vec![good.clone(), good.clone()],
        vec![bad],
        vec![rule("x", &["*"])],
    ] {
        let e = t
            .set_retention_policy(&RetentionPolicy {
                rules,
                pinned: vec![],
            })
            .unwrap_err();
        assert!(matches!(e, tract_core::Error::InvalidInput { .. }), "{e}");
        assert_eq!(t.retention_policy().unwrap(), policy);
    }
    // Without a rule, gc only collects.
    t.set_retention_policy(&RetentionPolicy::default()).unwrap();
    assert!(gc(&t, false).retention.is_empty());
}
