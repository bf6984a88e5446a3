//! `tract demo`: a realistic agent session built in a new store, then shown.

use crate::common::{Project, assert_run_snapshot};
use insta::assert_snapshot;

/// The demo prints where its store is, then what `log`, `status`, `search --history` and
/// `compile --format anthropic` show: tool use and results, the edited grep output found in
/// history, and the crashed call answered by a synthetic result. Run again in the same place it refuses rather than mix two demos.
#[test]
fn demo_builds_a_session_and_shows_it() {
    let p = Project::empty();
    let run = p.run(&["demo", "demo"]);
    assert_run_snapshot!("demo", run);
    assert_eq!(run.code, Some(0));
    let text = &run.stdout;
    assert!(
        text.contains("$ tract log") && text.contains("$ tract status"),
        "{text}"
    );
    assert!(text.contains("\"tool_use\"") && text.contains("\"tool_result\""));
    assert!(
        text.contains("[tract] No result was recorded"),
        "the crashed call is repaired"
    );
    assert!(p.path().join("demo/.tract/store.redb").is_file());
    let again = p.fails(&["demo", "demo"]);
    assert_snapshot!(again, @"
        exit: 5
        --- stderr
        error: invalid operation: demo already holds a tract store; pick a new directory
        ");
}
