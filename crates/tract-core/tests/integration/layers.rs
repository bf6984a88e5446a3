//! The architecture: the core's modules in layers, and no module cycle in the other crates.

/// The layers of tract-core, lowest first (docs/architecture.md). A module may use only
/// modules of lower layers: no cycles, and nothing low reaches up to operations or the handle.
const LAYERS: &[&[&str]] = &[
    &["clock", "id"],
    &["error"],
    &["object"],
    &["tokens", "json", "codec", "refs"],
    &["stats"],
    &["backend", "postgres_connect"],
    &["postgres_writes"],
    &["group", "redb_backend", "postgres_backend"],
    &["store"],
    &[
        "revision",
        "view",
        "info",
        "summarize",
        "decision",
        "ancestry",
    ],
    &["responses", "claude_code"],
    &["transcript"],
    &["llm", "cache", "compile"],
    &["repo"],
    &["txn"],
    &[
        "append", "edit", "branch", "history", "search", "policy", "merge", "fsck", "redact", "gc",
        "imports", "exports", "record",
    ],
    &["tools", "clear", "compress", "hooks", "sync"],
    &["page"],
    &["tract"],
    &["environment", "fuzzing", "capture"],
];

#[test]
fn modules_depend_only_on_lower_layers() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layer_of = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let module = path.file_stem().unwrap().to_str().unwrap().to_string();
        if module == "lib" {
            continue;
        }
        let layer = layer_of(&module)
            .unwrap_or_else(|| panic!("module {module} has no layer in LAYERS: place it"));
        let text = std::fs::read_to_string(&path).unwrap();
        // Unit tests may reach anywhere.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for dep in crate_uses(code) {
            if dep == module {
                continue;
            }
            if let Some(dl) = layer_of(dep) {
                assert!(
                    dl < layer,
                    "{module} (layer {layer}) uses {dep} (layer {dl}): dependencies point down"
                );
            }
        }
        seen.push(module);
    }
    let listed: usize = LAYERS.iter().map(|l| l.len()).sum();
    assert_eq!(
        seen.len(),
        listed,
        "LAYERS names a module that does not exist"
    );
}

/// The modules a crate's source names with `crate::...` (`crate::a::b`, `crate::{a, b::c}`).
fn crate_uses(code: &str) -> Vec<&str> {
    static USE_OF: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let use_of = USE_OF.get_or_init(|| regex::Regex::new(r"crate::(?:(\w+)|\{([^}]*)\})").unwrap());
    use_of
        .captures_iter(code)
        .flat_map(|cap| match (cap.get(1), cap.get(2)) {
            (Some(one), _) => vec![one.as_str()],
            (None, Some(group)) => group
                .as_str()
                .split(',')
                .filter_map(|p| p.trim().split("::").next())
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The other crates of the workspace have no cycle among their top-level modules either: each
/// module's `crate::...` uses (in its file, or in its folder for a module with submodules) form
/// a graph without a cycle.
#[test]
fn the_other_crates_modules_have_no_cycle() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["tract-cli", "tract-py", "tract-bench"] {
        let src = crates.join(krate).join("src");
        let mut deps: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            Default::default();
        let mut files = vec![src.clone()];
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            // The top-level module a file belongs to: its own name, or its folder's.
            let rel = path.strip_prefix(&src).unwrap();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_str()
                .unwrap();
            let module = first.trim_end_matches(".rs").to_string();
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            deps.entry(module.clone()).or_default().extend(
                crate_uses(code)
                    .into_iter()
                    .filter(|d| !d.is_empty() && *d != module)
                    .map(str::to_string),
            );
        }
        // Depth-first search: a module met again while on the current path closes a cycle.
        fn visit(
            m: &str,
            deps: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut std::collections::BTreeSet<String>,
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
            for d in deps.get(m).into_iter().flatten() {
                if deps.contains_key(d)
                    && let Some(c) = visit(d, deps, path, done)
                {
                    return Some(c);
                }
            }
            path.pop();
            done.insert(m.to_string());
            None
        }
        let mut done = Default::default();
        for m in deps.keys() {
            if let Some(cycle) = visit(m, &deps, &mut Vec::new(), &mut done) {
                panic!("{krate}: modules in a cycle: {}", cycle.join(" -> "));
            }
        }
        assert!(!deps.is_empty(), "{krate}: no module found in {src:?}");
    }
}
