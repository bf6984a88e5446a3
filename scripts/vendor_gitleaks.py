#!/usr/bin/env python3
"""Converts gitleaks' default rules (config/gitleaks.toml, MIT) into the JSON tract bundles.

Usage: scripts/vendor_gitleaks.py GITLEAKS_TOML COMMIT VERSION
Writes crates/tract-core/src/secrets/gitleaks.json. Run once per gitleaks update; the JSON is
committed, so building tract needs neither Python nor a TOML parser.

Kept per rule: id, regex, secretGroup, entropy, keywords, allowlists (regexes, stopwords,
regexTarget, condition). Rules without a regex (path-only) are left out, and so are allowlists
that test only paths, or paths AND something else: tract scans messages, which have no path.
"""

import json
import pathlib
import sys
import tomllib

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/tract-core/src/secrets/gitleaks.json"


def allowlist(a):
    """The allowlist as tract applies it, or None when it depends on a path."""
    has_path = bool(a.get("paths"))
    checks = bool(a.get("regexes") or a.get("stopwords"))
    condition = a.get("condition", "OR").upper()
    if not checks or (has_path and condition == "AND"):
        return None
    out = {}
    if a.get("regexes"):
        out["regexes"] = a["regexes"]
        out["regexTarget"] = a.get("regexTarget", "secret")
    if a.get("stopwords"):
        out["stopwords"] = a["stopwords"]
    out["condition"] = condition
    return out


def main():
    src, commit, version = sys.argv[1:4]
    with open(src, "rb") as f:
        config = tomllib.load(f)
    rules, skipped = [], []
    for r in config["rules"]:
        if "regex" not in r:
            skipped.append(r["id"])
            continue
        rule = {"id": r["id"], "regex": r["regex"]}
        if "secretGroup" in r:
            rule["secretGroup"] = r["secretGroup"]
        if "entropy" in r:
            rule["entropy"] = r["entropy"]
        rule["keywords"] = r.get("keywords", [])
        if "path" in r:
            # Kept as a fact: tract decides (rules.rs) what a path-scoped rule means for it.
            rule["path"] = r["path"]
        lists = [allowlist(a) for a in r.get("allowlists", [])]
        if "allowlist" in r:
            lists.append(allowlist(r["allowlist"]))
        lists = [a for a in lists if a]
        if lists:
            rule["allowlists"] = lists
        rules.append(rule)
    g = config.get("allowlist", {})
    out = {
        "source": "https://github.com/gitleaks/gitleaks config/gitleaks.toml",
        "commit": commit,
        "version": version,
        "license": "MIT, Copyright (c) 2019 Zachary Rice (see GITLEAKS.md)",
        "skipped_path_only_rules": skipped,
        "allowlist": {"regexes": g.get("regexes", []), "stopwords": g.get("stopwords", [])},
        "rules": rules,
    }
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(rules)} rules written to {OUT} ({len(skipped)} path-only skipped: {skipped})")


if __name__ == "__main__":
    main()
