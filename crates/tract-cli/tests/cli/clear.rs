//! `tract clear`: replace old tool results with a placeholder naming the original.

use crate::common::{grep_turns, json};
use insta::assert_snapshot;

/// A dry run lists what would be cleared and the saving, and commits nothing; the real run
/// commits one edit per result but the last `--keep` turns' and prints the tokens before and
/// after; the model then sees the placeholder; a second run has nothing left to clear.
#[test]
fn clear_old_tool_results() {
    let p = grep_turns();
    let before = p.state();
    let dry = p.run(&["clear", "--keep", "1", "--dry-run"]);
    assert_snapshot!(dry, @"
        exit: 0
        --- stdout
        would clear 43e1616e60 grep             403 -> 35 tokens
        would clear e9834f7ca7 grep             403 -> 34 tokens
        would clear 284e304b3f grep             403 -> 36 tokens
        3 results: tokens 1635 -> 531 (dry run, nothing committed)
        prompt cache: invalidates 1627 cached tokens, saves 1104 tokens a request
        ");
    assert!(
        dry.stdout.contains("3 results") && dry.stdout.contains("dry run"),
        "{dry}"
    );
    assert!(p.state() == before, "a dry run commits nothing");
    let run = p.run(&["clear", "--keep", "1"]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        20b2ffeaef edit   tool      grep             35  (edit of 43e1616e60) [tract] Cleared this grep result to save context (403 tokens, 600 bytes). …
        dcb4b00557 edit   tool      grep             34  (edit of e9834f7ca7) [tract] Cleared this grep result to save context (403 tokens, 600 bytes). …
        cf6129e8e5 edit   tool      grep             36  (edit of 284e304b3f) [tract] Cleared this grep result to save context (403 tokens, 600 bytes). …
        cleared 3 results: tokens 1635 -> 531
        ");
    assert!(run.stdout.contains("cleared 3 results: tokens"), "{run}");
    let oai = json(&p.ok(&["compile"]));
    assert!(
        oai[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("[tract] Cleared this grep result")
    );
    assert!(oai[7]["content"].as_str().unwrap().starts_with("hit 3"));
    assert_snapshot!(p.run(&["show", "HEAD"]), @"
        exit: 0
        --- stdout
        commit  cf6129e8e56427209c3dfba3fe98b7010dab434fdd8c2da3d13cda188bf5e312
        op      edit of 284e304b3f
        parent  dcb4b00557
        date    2026-01-01T00:00:00.000010Z
        role    tool  name grep  tool_call_id c2
        tokens  36

        [tract] Cleared this grep result to save context (403 tokens, 600 bytes). The original is commit 284e304b3f5c.
        ");
    let again = p.run(&["clear", "--keep", "1"]);
    assert_snapshot!(again, @"
        exit: 0
        --- stdout
        cleared 0 results: tokens 531 -> 531
        ");
    assert!(again.stdout.contains("cleared 0 results"));
}

/// A blank placeholder is refused and commits nothing.
#[test]
fn a_blank_placeholder_is_refused() {
    let p = grep_turns();
    let before = p.state();
    assert_snapshot!(p.fails(&["clear", "--placeholder", " "]), @"
        exit: 4
        --- stderr
        error: invalid input: the placeholder must not be empty
        ");
    assert!(p.state() == before);
}
