//! The commands and options the documentation names exist: every `tract ...` in README.md and
//! docs/*.md (inline, and the lines of shell blocks) is checked against the binary's `--help`.

use crate::common::Project;
use std::collections::{BTreeSet, HashMap};

/// The options `tract ARGS --help` lists, or `None` when there is no such command.
fn options(
    p: &Project,
    args: &[&str],
    cache: &mut HashMap<String, Option<BTreeSet<String>>>,
) -> Option<BTreeSet<String>> {
    let key = args.join(" ");
    cache
        .entry(key)
        .or_insert_with(|| {
            let run = p.run(&[args, &["--help"]].concat());
            (run.code == Some(0)).then(|| {
                let flag = regex::Regex::new(r"--[a-z][a-z0-9-]*").unwrap();
                flag.find_iter(&run.stdout)
                    .map(|m| m.as_str().to_string())
                    .collect()
            })
        })
        .clone()
}

/// What is wrong with the command line `line` (`tract ...`), if anything.
fn check(
    p: &Project,
    line: &str,
    cache: &mut HashMap<String, Option<BTreeSet<String>>>,
) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    let global = options(p, &[], cache).unwrap_or_default();
    // Global options before the command, with their values.
    let mut i = 0;
    while i < words.len() && words[i].starts_with('-') {
        i += if words[i].contains('=') { 1 } else { 2 };
    }
    let command = *words.get(i)?;
    // Placeholders and prose (`tract ... --json`, `tract's`) are not commands.
    if !command.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
        return None;
    }
    let Some(mut known) = options(p, &[command], cache) else {
        return Some(format!("no command '{command}'"));
    };
    if let Some(sub) = words
        .get(i + 1)
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        && let Some(sub_options) = options(p, &[command, sub], cache)
    {
        known = sub_options;
    }
    let flag = regex::Regex::new(r"(?:^|[\[(|])(--[a-z][a-z0-9-]*)").unwrap();
    let unknown: Vec<String> = words[i + 1..]
        .iter()
        .flat_map(|w| {
            flag.captures_iter(w)
                .map(|c| c[1].to_string())
                .collect::<Vec<_>>()
        })
        .filter(|f| !known.contains(f) && !global.contains(f))
        .collect();
    (!unknown.is_empty()).then(|| format!("no option {} of '{command}'", unknown.join(", ")))
}

/// The docs named `tract compact` (it is `tract gc --compact`) and options no command has.
#[test]
fn every_command_and_option_the_docs_name_exists() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut files = vec![std::path::PathBuf::from(root).join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(format!("{root}/docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let inline = regex::Regex::new(r"`(tract\s[^`]*)`").unwrap();
    let block = regex::Regex::new(r"(?s)```(?:sh|bash|console)\n(.*?)```").unwrap();
    let p = Project::empty();
    let mut cache = HashMap::new();
    let mut wrong = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let mut lines: Vec<String> = inline
            .captures_iter(&text)
            .map(|c| c[1].split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        for b in block.captures_iter(&text) {
            for line in b[1].lines() {
                let line = line.split(" #").next().unwrap_or_default();
                for part in line.split(['|', ';']).flat_map(|s| s.split("&&")) {
                    let part = part.trim().trim_start_matches("$ ");
                    if part.starts_with("tract ") {
                        lines.push(part.to_string());
                    }
                }
            }
        }
        for line in lines {
            if let Some(why) = check(&p, &line, &mut cache) {
                wrong.push(format!("{name}: `{line}`: {why}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
