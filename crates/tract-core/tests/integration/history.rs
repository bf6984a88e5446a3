//! Finding commits in history: revisions by prefix, and search over the view and the history.

use crate::support::tool_session;
use tract_core::{Content, Error, Message, Rev, Role, Tract};

#[test]
fn prefixes_resolve_like_git() {
    let t = Tract::in_memory().unwrap();
    let msgs: Vec<Message> = (0..1500)
        .map(|i| Message::text(Role::User, format!("message {i}")))
        .collect();
    let infos = t.append_batch(msgs).unwrap();
    let one = &infos[0];
    assert_eq!(
        t.resolve(&Rev::parse(&one.id.short()).unwrap()).unwrap(),
        one.id
    );
    // With 1,500 commits two of them share a 4-digit prefix (birthday bound).
    let mut seen = std::collections::HashMap::new();
    let shared = infos
        .iter()
        .find_map(|i| {
            seen.insert(i.id.to_hex()[..4].to_string(), i.id)
                .map(|_| i.id.to_hex()[..4].to_string())
        })
        .unwrap();
    match t.resolve(&Rev::parse(&shared).unwrap()) {
        Err(Error::AmbiguousPrefix { candidates, .. }) => assert!(candidates.len() >= 2),
        other => panic!("expected ambiguity, got {other:?}"),
    }
    assert!(matches!(
        t.resolve(&Rev::parse(&"0".repeat(64)).unwrap()),
        Err(Error::UnknownRevision { .. })
    ));
    assert!(matches!(
        t.resolve(&Rev::parse("no-such-branch").unwrap()),
        Err(Error::UnknownRevision { .. })
    ));
    assert!(matches!(
        Rev::parse("abc").and_then(|r| t.resolve(&r)),
        Err(Error::InvalidRevision { .. })
    ));
}

#[test]
fn search_the_view_and_the_history() {
    use tract_core::SearchQuery;
    let t = Tract::in_memory().unwrap();
    let c = tool_session(&t);
    let q = |query: &str| SearchQuery {
        query: query.into(),
        ..SearchQuery::default()
    };
    let hits = t.search(&q("database_url")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].info.id, c[4].id);
    assert_eq!(hits[0].snippet, "config.py:42: DATABASE_URL other.py:1: x");
    let marked: Vec<&str> = hits[0]
        .highlights
        .iter()
        .map(|&(a, b)| &hits[0].snippet[a..b])
        .collect();
    assert_eq!(marked, ["DATABASE", "URL"]);
    assert_eq!(hits[0].branches, ["main"]);
    assert!(hits[0].score.is_some_and(|s| s > 0.0));
    // Tool-call names and arguments are searched too.
    assert_eq!(t.search(&q("b1")).unwrap()[0].info.id, c[5].id);
    // Edit the result: the view no longer has it, the history does (original first).
    let e = t
        .edit_tool_result(c[4].id, "g1", "grep", Content::Text("trimmed".into()))
        .unwrap();
    assert!(t.search(&q("DATABASE_URL")).unwrap().is_empty());
    let mut hist = q("DATABASE_URL");
    hist.history = true;
    assert_eq!(t.search(&hist).unwrap()[0].info.id, c[4].id);
    assert_eq!(t.search(&q("trimmed")).unwrap()[0].info.id, e.id);
    let mut by_tool = q("config|nothing|file");
    by_tool.regex = true;
    by_tool.tool = Some("grep".into());
    by_tool.history = true;
    // The call that names read_file, the grep result's original, and the second grep result.
    let ids: Vec<_> = t
        .search(&by_tool)
        .unwrap()
        .iter()
        .map(|h| h.info.id)
        .collect();
    assert_eq!(ids, [c[2].id, c[4].id, c[8].id]);
    let mut by_role = q("edit_file");
    by_role.role = Some(Role::Assistant);
    assert_eq!(t.search(&by_role).unwrap().len(), 1);
    let mut bad = q("(");
    bad.regex = true;
    assert!(matches!(t.search(&bad), Err(Error::InvalidInput { .. })));
}
