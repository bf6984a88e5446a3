//! `tract edit`: replace a message's content in the view; the original stays in history.

use crate::common::{Project, a_session};
use insta::assert_snapshot;

/// An edit prints its own id, which `log` then shows first with `(edit of ID)`; the message
/// keeps its role, name and call id, and the original is still in history.
#[test]
fn edit_replaces_the_content_in_view() {
    let p = a_session();
    let id = p.ok(&["log", "--oneline", "-n", "1"])[..10].to_string();
    let run = p.run(&["edit", &id, "config.py:1"]);
    assert_snapshot!(run, @"
        exit: 0
        --- stdout
        f8a23b35d5
        ");
    let edit = run.stdout.trim();
    let log = p.run(&["log", "-n", "2"]);
    assert_snapshot!(log, @"
        exit: 0
        --- stdout
        f8a23b35d5 edit   tool      grep              7  (edit of 501f6a52ff) config.py:1
        501f6a52ff append tool      grep             20  config.py:1: CFG=1
        ");
    assert!(
        log.stdout.starts_with(edit) && log.stdout.contains(&format!("(edit of {id})")),
        "{log}"
    );
    assert_snapshot!(p.run(&["show", "--history", &id]), @"
        exit: 0
        --- stdout
        commit  501f6a52ffe0a11242de7104f848704a9938fd69d234e5aca7d636c87f0c3001
        op      append
        parent  0b0f62b55f
        date    2026-01-01T00:00:00.000003Z
        role    tool  name grep  tool_call_id c1
        tokens  20

        config.py:1: CFG=1
        config.py:2: X=2

        commit  f8a23b35d569cc35f22b4e0024ca55c6644d98b0c4df4e699fa60bf36a7d0f85
        op      edit of 501f6a52ff
        parent  501f6a52ff
        date    2026-01-01T00:00:00.000004Z
        role    tool  name grep  tool_call_id c1
        tokens  7

        config.py:1
        ");
}

/// The new content comes from TEXT, `--content`, `--file` or standard input (`-`); without any
/// of them the error says which to give.
#[test]
fn edit_reads_content_from_flags_a_file_or_stdin() {
    let p = Project::new();
    p.ok(&["add", "first"]);
    std::fs::write(p.path().join("new.txt"), "from a file\n").unwrap();
    assert_snapshot!(p.run(&["edit", "HEAD", "--content", "from --content"]), @"
        exit: 0
        --- stdout
        149ee7c7f8
        ");
    assert_snapshot!(p.run(&["edit", "HEAD", "--file", "new.txt"]), @"
        exit: 0
        --- stdout
        1cc4c3b4ef
        ");
    assert_snapshot!(p.run_in(&["edit", "HEAD", "-"], "from stdin"), @"
        exit: 0
        --- stdout
        8eb930c4ed
        ");
    let before = p.state();
    assert_snapshot!(p.fails(&["edit", "HEAD"]), @"
        exit: 4
        --- stderr
        error: invalid input: give the new content: TEXT, --content, --file or -
        ");
    assert!(p.state() == before, "a failed edit changes nothing");
    assert_snapshot!(p.run(&["log"]), @"
        exit: 0
        --- stdout
        8eb930c4ed edit   user      -                 5  (edit of 1cc4c3b4ef) from stdin
        1cc4c3b4ef edit   user      -                 7  (edit of 149ee7c7f8) from a file
        149ee7c7f8 edit   user      -                 6  (edit of 91cfedc1ba) from --content
        91cfedc1ba append user      -                 4  first
        ");
    assert_snapshot!(p.run(&["compile", "--compact"]), @r#"
        exit: 0
        --- stdout
        [{"role":"user","content":"from stdin"}]
        "#);
}
