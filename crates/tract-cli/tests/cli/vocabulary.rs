//! One vocabulary: what `--json`, the MCP server and the web API say about the same commit,
//! branch, status, search hit and tool turn is spelled the same way, field for field. A
//! surface may leave fields out only where its documentation says so: MCP the messages
//! (`message`, `current_message`: the texts repeat them), the web API's lists the texts too.

use crate::common::{Project, a_session, grep_turns, json};
use crate::mcp::Mcp;
use crate::serve::Server;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The keys of a JSON object.
fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// Asserts that `a` and `b` hold the same value for every key they share, that `a` has
/// no key `b` lacks but some of `only_a`, and `b` none `a` lacks but some of `only_b`.
fn agree(what: &str, a: &Value, b: &Value, only_a: &[&str], only_b: &[&str]) {
    let (ka, kb) = (keys(a), keys(b));
    for k in ka.intersection(&kb) {
        assert_eq!(a[k], b[k], "{what}: `{k}` differs");
    }
    for (alone, allowed, which) in [
        (ka.difference(&kb), only_a, "first"),
        (kb.difference(&ka), only_b, "second"),
    ] {
        for k in alone {
            assert!(allowed.contains(k), "{what}: `{k}` only in the {which}");
        }
    }
}

/// The MCP tool's answer, as JSON (a tool error fails the test).
fn tool(mcp: &mut Mcp, name: &str, arguments: Value) -> Value {
    let (failed, text) = mcp.call(name, arguments);
    assert!(!failed, "{name}: {text}");
    json(&text)
}

/// [`a_session`] with its tool result edited: a position whose version in view is another
/// commit, and a branch beside `main`.
fn session() -> (Project, String, String) {
    let p = a_session();
    let result = p.hash("HEAD");
    p.ok(&["edit", &result, "config.py:1"]);
    p.ok(&["branch", "side"]);
    let edit = p.hash("HEAD");
    (p, result, edit)
}

const MESSAGES: &[&str] = &["message", "current_message"];
const TEXTS: &[&str] = &["content", "message", "current_content", "current_message"];

#[test]
fn a_commit_is_spelled_the_same_by_every_surface() {
    let (p, result, edit) = session();
    let mut mcp = Mcp::start(&p, &[]);
    let web = Server::start(&p, &[]);

    // One commit in full: `show --json`, MCP `show`, the web API's commit.
    for id in [&result, &edit] {
        let cli = json(&p.ok(&["show", "--json", id]));
        let shown = tool(&mut mcp, "show", json!({"id": id}));
        let page = web.get(&format!("/api/commit/{id}"));
        assert_eq!(cli["commit_hash"], id.as_str());
        agree("show/MCP show", &cli, &shown, MESSAGES, &["versions"]);
        agree("show/web commit", &cli, &page["commit"], &[], &[]);
        let versions = shown["versions"].as_array().unwrap();
        let web_versions = page["versions"].as_array().unwrap();
        assert_eq!(versions.len(), web_versions.len());
        for (m, w) in versions.iter().zip(web_versions) {
            agree("MCP/web versions", m, w, &[], MESSAGES);
        }
    }
    // Shown, the original says which version is in view, as Python's `current_hash` does.
    let cli = json(&p.ok(&["show", "--json", &result]));
    assert_eq!(cli["current_hash"], edit.as_str());
    assert_eq!(cli["current_content"], "config.py:1");

    // The history: `log --json`, MCP `log`, the web API's history rows.
    let log = json(&p.ok(&["log", "--json"]));
    let mcp_log = tool(&mut mcp, "log", json!({}));
    let rows = web.get("/api/history?branch=main")["commits"].clone();
    let (log, mcp_log, rows) = (
        log.as_array().unwrap(),
        mcp_log.as_array().unwrap(),
        rows.as_array().unwrap(),
    );
    assert_eq!((log.len(), mcp_log.len(), rows.len()), (5, 5, 5));
    for ((c, m), r) in log.iter().zip(mcp_log).zip(rows) {
        agree("log/MCP log", c, m, MESSAGES, &[]);
        agree(
            "log/web history",
            c,
            r,
            &["content", "message"],
            &["first_parent", "preview", "branches"],
        );
    }

    // A tool result found: `tools results --json` and MCP `find_tool_results`.
    let cli = json(&p.ok(&["tools", "results", "--json"]));
    let found = tool(&mut mcp, "find_tool_results", json!({}));
    assert_eq!(cli[0]["current_hash"], edit.as_str());
    agree(
        "tools results/MCP",
        &cli[0],
        &found[0],
        TEXTS[1..].as_ref(),
        &[],
    )
}

#[test]
fn turns_hits_branches_and_statuses_are_spelled_the_same_by_every_surface() {
    let (p, _, _) = session();
    let mut mcp = Mcp::start(&p, &[]);
    let web = Server::start(&p, &[]);

    let cli = json(&p.ok(&["tools", "turns", "--json"]));
    let turns = tool(&mut mcp, "find_tool_turns", json!({}));
    let (cli, turn) = (&cli[0], &turns[0]);
    assert_eq!(keys(cli), keys(turn));
    for k in ["tool_names", "all_hashes", "result_hashes", "calls"] {
        assert_eq!(cli[k], turn[k], "turn: `{k}` differs");
    }
    agree("turn call", &cli["call"], &turn["call"], MESSAGES, &[]);
    agree(
        "turn result",
        &cli["results"][0],
        &turn["results"][0],
        MESSAGES,
        &[],
    );
    // A call in view is the turn's call, with the page's own two fields.
    let view = web.get("/api/view?branch=main");
    let call = &view["entries"][2]["calls"][0];
    agree(
        "turn/view call",
        &cli["calls"][0],
        call,
        &[],
        &["synthetic", "result"],
    );

    let cli = json(&p.ok(&["search", "--json", "config"]));
    let hits = tool(&mut mcp, "search_history", json!({"query": "config"}));
    let web_hits = web.get("/api/search?branch=main&q=config")["hits"].clone();
    assert_eq!(cli.as_array().unwrap().len(), 2);
    for i in 0..2 {
        agree("search/MCP", &cli[i], &hits[i], TEXTS, &[]);
        agree("search/web", &cli[i], &web_hits[i], TEXTS, &["index"]);
    }

    let cli = json(&p.ok(&["status", "--json"]));
    assert_eq!(cli, tool(&mut mcp, "status", json!({})));
    let cli = json(&p.ok(&["branch", "--json"]));
    assert_eq!(cli, web.get("/api/sessions")["sessions"]);
}

/// The reports Python returns as dicts print as JSON with the same keys.
#[test]
fn clear_compress_gc_and_merge_print_their_reports_as_json() {
    let p = grep_turns();
    let plan = json(&p.ok(&["clear", "--keep", "1", "--dry-run", "--json"]));
    let done = json(&p.ok(&["clear", "--keep", "1", "--json"]));
    assert_eq!(
        keys(&done),
        ["cleared", "tokens_after", "tokens_before"].into()
    );
    // The plan says also what it would cost a provider's prompt cache.
    assert_eq!(
        keys(&plan),
        [
            "cached_tokens_invalidated",
            "cleared",
            "tokens_after",
            "tokens_before"
        ]
        .into()
    );
    assert_eq!(plan["tokens_after"], done["tokens_after"]);
    let cleared = done["cleared"].as_array().unwrap();
    assert_eq!(cleared.len(), 3);
    for (c, position) in cleared.iter().zip(plan["cleared"].as_array().unwrap()) {
        assert_eq!((&c["op"], &c["edit_target"]), (&json!("edit"), position));
    }

    let plan = json(&p.ok(&["compress", "--tool-turns", "--dry-run", "--json"]));
    assert_eq!(
        keys(&plan),
        ["cached_tokens_invalidated", "sources", "tokens"].into()
    );
    let done = json(&p.ok(&["compress", "--tool-turns", "--json"]));
    assert_eq!(
        keys(&done),
        [
            "commits",
            "skipped",
            "sources",
            "tokens_after",
            "tokens_before",
            "warnings"
        ]
        .into()
    );
    assert_eq!(done["sources"], plan["sources"]);
    for (c, sources) in done["commits"]
        .as_array()
        .unwrap()
        .iter()
        .zip(plan["sources"].as_array().unwrap())
    {
        assert_eq!((&c["op"], &c["sources"]), (&json!("compress"), sources));
    }

    p.ok(&["branch", "side"]);
    p.ok(&["--branch", "side", "add", "from the side"]);
    let merged = json(&p.ok(&["merge", "side", "--json"]));
    assert_eq!(
        (&merged["op"], &merged["merge"]["branch"]),
        (&json!("merge"), &json!("side"))
    );
    assert_eq!(merged["commit_hash"], p.hash("HEAD").as_str());

    let gc = json(&p.ok(&["gc", "--prune-now", "--json"]));
    assert_eq!(
        keys(&gc),
        [
            "blobs",
            "bytes",
            "checkpoint_chunks",
            "checkpoints",
            "chunks",
            "commits",
            "dry_run",
            "reflog_entries",
            "retention"
        ]
        .into()
    );
}
