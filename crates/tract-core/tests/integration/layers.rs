//! The architecture: the core's files in layers, folders without cycles, and no cycle among the
//! files of any crate of the workspace.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers of tract-core, lowest first, each file named by its path under `src/` without
/// `.rs` (a folder's `mod.rs` by the folder's path). A file may use only files of lower layers:
/// no cycles, and nothing low reaches up to operations or the handle. docs/architecture.md
/// draws its table from this one (`the_architecture_page_draws_the_same_layers`).
const LAYERS: &[&[&str]] = &[
    &["clock", "id"],
    &["error"],
    &["object", "parallel"],
    &["usage"],
    &[
        "tokens",
        "json",
        "storage/codec",
        "storage/journal/segment",
        "refs",
        "retention_policy",
        "price_table",
        "storage/search/tokenizer",
        "storage/search/lanes",
        "secrets/rules",
    ],
    &["secrets/policy"],
    &["secrets/detect"],
    &["secrets/scrub"],
    &[
        "stats",
        "storage/search/query",
        "storage/search/state",
        "secrets",
        "secrets/text",
    ],
    &["storage/backend", "storage/postgres/connect"],
    &["storage/postgres/writes", "storage/journal/ops"],
    &[
        "storage/group",
        "storage/redb_backend",
        "storage/memory",
        "storage/postgres/backend",
        "storage/journal/overlay",
    ],
    &["storage/journal"],
    &["storage/pack"],
    &["storage/pack/set"],
    &["storage/journaled"],
    &["storage/store/create"],
    &["storage/store/meta"],
    &["storage/store/verify"],
    &[
        "storage/store/snapshot",
        "storage/store/writer",
        "storage/store/faults",
        "storage/store/upgrade",
    ],
    &["storage/store"],
    &["storage/search/catch_up"],
    &["storage/search"],
    &["storage/search/tantivy_index/index"],
    &[
        "storage/search/tantivy_index/upkeep",
        "storage/search/tantivy_index/rank",
        "storage/search/snippet",
    ],
    &["storage/search/tantivy_index", "storage/postgres/search"],
    &["storage/search/keeper"],
    &["storage/open", "agents"],
    &[
        "view/revision",
        "view",
        "view/info",
        "summarize",
        "tools/decision",
        "view/ancestry",
        "scrubbing",
    ],
    &["view/ledger"],
    &["view/checkpoint"],
    &["view/cache"],
    &["formats/responses", "formats/claude_code"],
    &["formats/transcript/steps", "formats/transcript/rfc3339"],
    &[
        "formats/transcript/values",
        "formats/transcript/openai_chat",
        "formats/transcript/openai_responses",
        "formats/transcript/anthropic",
        "formats/transcript/tract_jsonl",
    ],
    &[
        "formats/transcript/claude_code",
        "formats/transcript/codex",
        "formats/transcript/gemini",
    ],
    &["formats/transcript", "formats/response_body"],
    &["summarize/llm", "formats/compile"],
    &["formats/render", "formats/claude_code_export"],
    &["repo"],
    &["write/txn", "ops/index", "ops/reach"],
    &["ops/retention"],
    &[
        "write/append",
        "write/edit",
        "write/record",
        "ops/branch",
        "ops/history",
        "ops/search",
        "ops/merge",
        "ops/fsck",
        "ops/redact",
        "ops/gc",
        "ops/usage",
        "tools/policy",
        "formats/imports",
        "formats/exports",
    ],
    &[
        "tools",
        "tools/clear",
        "tools/hooks",
        "summarize/compress",
        "ops/sync",
        "ops/secrets",
    ],
    &["ops/page", "ops/prompt_cache"],
    &["ops/diff", "ops/replay"],
    &[
        "tract",
        "tract/branches",
        "tract/compress",
        "tract/history",
        "tract/secrets",
        "tract/tools",
        "tract/transcripts",
        "tract/view",
        "tract/write",
        "tract/replay",
    ],
    &["environment"],
    &["fuzzing", "capture"],
];

#[test]
fn files_depend_only_on_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layer_of = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let sources = sources(&src);
    let modules: BTreeSet<&str> = sources.keys().map(String::as_str).collect();
    let mut placed = BTreeSet::new();
    for (module, code) in &sources {
        if module.is_empty() || declares_only(code) {
            continue;
        }
        let layer = layer_of(module)
            .unwrap_or_else(|| panic!("{module}.rs has no layer in LAYERS: place it"));
        for dep in uses(code, &modules) {
            if dep == module.as_str() {
                continue;
            }
            let dl = layer_of(dep).unwrap_or_else(|| panic!("{module} uses {dep}, in no layer"));
            assert!(
                dl < layer,
                "{module} (layer {layer}) uses {dep} (layer {dl}): dependencies point down"
            );
        }
        placed.insert(module.as_str());
    }
    let listed: BTreeSet<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    let missing: Vec<_> = listed.difference(&placed).collect();
    assert!(
        missing.is_empty(),
        "LAYERS names files that do not exist: {missing:?}"
    );
}

/// A folder is one concept: the folders (and the files at the top) use each other without a
/// cycle, so a folder can be read knowing only those below it.
#[test]
fn the_core_folders_have_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let sources = sources(&src);
    let modules: BTreeSet<&str> = sources.keys().map(String::as_str).collect();
    let folder = |m: &str| m.split('/').next().unwrap_or(m).to_string();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &sources {
        let from = folder(module);
        let deps = uses(code, &modules).into_iter().map(folder);
        let entry = graph.entry(from.clone()).or_default();
        entry.extend(deps.filter(|d| *d != from));
    }
    if let Some(cycle) = cycle(&graph) {
        panic!("tract-core: folders in a cycle: {}", cycle.join(" -> "));
    }
}

/// Every crate of the workspace: its files (each a node, `lib.rs` and `main.rs` included) use
/// each other through `crate::` paths without a cycle.
#[test]
fn no_crate_has_a_cycle_among_its_files() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let sources = sources(&src);
        let modules: BTreeSet<&str> = sources.keys().map(String::as_str).collect();
        let graph: BTreeMap<String, BTreeSet<String>> = sources
            .iter()
            .map(|(m, code)| {
                let deps = uses(code, &modules).into_iter().filter(|d| d != m);
                (m.clone(), deps.map(str::to_string).collect())
            })
            .collect();
        if let Some(cycle) = cycle(&graph) {
            panic!(
                "{}: files in a cycle: {}",
                src.display(),
                cycle.join(" -> ")
            );
        }
        checked += 1;
    }
    assert!(checked >= 5, "found only {checked} crates under {crates:?}");
}

/// docs/architecture.md's table of the core's layers lists the same files in the same layers,
/// in the same order, as `LAYERS`: the page cannot drift from the code.
#[test]
fn the_architecture_page_draws_the_same_layers() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md");
    let text = std::fs::read_to_string(page).unwrap();
    let table = text
        .split("| layer | files | what they hold |")
        .nth(1)
        .expect("docs/architecture.md has the layer table");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let files = row.split('|').nth(2).unwrap_or_default();
            files.split('`').skip(1).step_by(2).collect()
        })
        .collect();
    let layers: Vec<Vec<&str>> = LAYERS.iter().map(|l| l.to_vec()).collect();
    assert_eq!(
        rows, layers,
        "docs/architecture.md's layer table and LAYERS differ"
    );
}

/// Each Rust file under `src` by module path (`storage/store`, a folder's `mod.rs` by the
/// folder's path, `lib.rs` and `main.rs` as the empty path), with its code before its unit
/// tests (those may reach anywhere).
fn sources(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<PathBuf> = vec![src.to_path_buf()];
    while let Some(path) = todo.pop() {
        if path.is_dir() {
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(src).unwrap().with_extension("");
        let mut module = rel.to_str().unwrap().replace('\\', "/");
        if let Some(folder) = module.strip_suffix("/mod") {
            module = folder.to_string();
        }
        if module == "lib" || module == "main" {
            module = String::new();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        out.entry(module).or_insert_with(String::new).push_str(code);
    }
    out
}

/// A folder's file that holds only docs, attributes and `mod` lines: it has no layer of its own.
fn declares_only(code: &str) -> bool {
    code.lines().map(str::trim).all(|l| {
        l.is_empty()
            || l.starts_with("//")
            || l.starts_with("#[")
            || (l.ends_with(';') && l.split_whitespace().any(|w| w == "mod"))
    })
}

/// The files a source names through `crate::` paths (`crate::a::b::Item`,
/// `crate::{a::{b, c}, d}`), each resolved to the longest module path it starts with.
fn uses<'a>(code: &str, modules: &BTreeSet<&'a str>) -> BTreeSet<&'a str> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let glued = rest[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        rest = &rest[i + "crate::".len()..];
        if glued {
            continue;
        }
        for path in use_tree(rest, Vec::new()).1 {
            let module = (1..=path.len())
                .rev()
                .map(|n| path[..n].join("/"))
                .find_map(|p| modules.get(p.as_str()).copied());
            found.extend(module);
        }
    }
    found
}

/// The paths of the use tree at the start of `s` (after `crate::`), each under `prefix`, and
/// the text after the tree.
fn use_tree(s: &str, mut prefix: Vec<String>) -> (&str, Vec<Vec<String>>) {
    let mut s = s.trim_start();
    loop {
        if let Some(group) = s.strip_prefix('{') {
            let (mut g, mut paths) = (group, Vec::new());
            loop {
                g = g.trim_start();
                if let Some(after) = g.strip_prefix('}') {
                    return (after, paths);
                }
                let Some(first) = g.chars().next() else {
                    return (g, paths);
                };
                if first == ',' {
                    g = &g[1..];
                    continue;
                }
                let (after, more) = use_tree(g, prefix.clone());
                paths.extend(more);
                // Something that is no path (`as x`, `*`): step over it.
                g = if after.len() == g.len() {
                    &g[first.len_utf8()..]
                } else {
                    after
                };
            }
        }
        let end = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        if end == 0 {
            return (s, vec![prefix]);
        }
        if &s[..end] != "self" {
            prefix.push(s[..end].to_string());
        }
        s = &s[end..];
        match s.strip_prefix("::") {
            Some(after) => s = after,
            None => return (s, vec![prefix]),
        }
    }
}

/// A cycle in a graph, as the nodes along it (the first repeated at the end), if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // Depth-first search: a node met again while on the current path closes a cycle.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut cycle = path[i..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for d in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn use_trees_resolve_to_the_longest_module_path() {
    let modules: BTreeSet<&str> = ["a", "a/b", "c", "d/e"].into_iter().collect();
    let code = "use crate::a::b::Item;\nuse crate::{c::{self, X as Y}, d::e::{f, g}, a::Z};\n\
                let x = my_crate::c::Q; crate::d::e::*;";
    let found: Vec<&str> = uses(code, &modules).into_iter().collect();
    assert_eq!(found, ["a", "a/b", "c", "d/e"]);
}
