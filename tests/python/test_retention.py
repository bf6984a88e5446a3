"""Retention policies through the Python API: stored as a dict, shown by a dry run, applied by
gc, refused when they make no sense."""

import pytest

import tract


def test_gc_applies_the_rules_the_dry_run_listed(store_path, monkeypatch) -> None:
    monkeypatch.setenv("TRACT_TIMESTAMP", "2026-01-01T00:00:00Z")
    with tract.Tract.open(store_path) as t:
        t.user("look")
        t.assistant("", tool_calls=[{"id": "c1", "name": "bash", "arguments": "{}"}])
        old = t.tool_result("c1", "bash", "PLANTED-OUTPUT-77 of an old build")
        t.assistant("", tool_calls=[{"id": "c2", "name": "bash", "arguments": "{}"}])
        t.tool_result("c2", "bash", "newest output")
        side = t.fork("side")
        side.user("side work")
    policy = {
        "rules": [
            {
                "name": "results",
                "branches": ["main"],
                "replace_tool_results": {
                    "older_than_days": 30,
                    "keep_newest": 1,
                    "with": "placeholder",
                },
            },
            {"name": "idle", "branches": ["side"], "delete_idle_branches": {"idle_days": 60}},
        ],
        "pinned": [],
    }
    monkeypatch.setenv("TRACT_TIMESTAMP", "2026-04-01T00:00:00Z")
    with tract.Tract.open(store_path) as t:
        t.set_retention_policy(policy)
        assert t.retention_policy() == policy
        dry = t.gc(dry_run=True, prune_now=True)
        assert dry["dry_run"] is True
        results, idle = dry["retention"]
        assert [r["commits"] for r in results["replaced_results"]] == [[old.commit_hash]]
        assert results["replaced_results"][0]["summary"] is None
        assert results["kept"]["newest"] == 1
        assert [b["branch"] for b in idle["deleted_branches"]] == ["side"]
        assert idle["deleted_branches"][0]["idle_since"].startswith("2026-")
        assert "side" in [b.name for b in t.branches()], "a dry run changes nothing"
        assert t.get_commit(old.commit_hash).content.startswith("PLANTED-OUTPUT-77")

        done = t.gc(prune_now=True)
        assert done["dry_run"] is False
        assert done["retention"] == dry["retention"]
        assert done["commits"] == dry["commits"] >= 1
        assert [b.name for b in t.branches()] == ["main"]
        assert "removed by retention rule 'results'" in t.get_commit(old.commit_hash).content
        assert t.search("PLANTED-OUTPUT-77", history=True) == []
        assert t.fsck()["clean"]


def test_a_bad_policy_raises_and_the_stored_one_stays(store_path) -> None:
    good = {
        "rules": [{"name": "idle", "branches": ["*"], "delete_idle_branches": {"idle_days": 90}}],
        "pinned": ["main"],
    }
    with tract.Tract.open(store_path) as t:
        t.set_retention_policy(good)
        for bad, says in [
            ({"rules": [{"name": "x", "branches": ["*"]}]}, "does nothing"),
            ({"rules": [], "pined": []}, "unknown field"),
            ({"pinned": ["["]}, "invalid"),
            (
                {"rules": [{"name": "x", "branches": ["*"], "delete_idle_branches": {"idle_days": 0}}]},
                "1 or more",
            ),
            ({"rules": [{"name": "x", "branches": ["*"], "replace_tool_results": {"with": "all"}}]}, "unknown variant"),
        ]:
            with pytest.raises(tract.InvalidInputError, match=says):
                t.set_retention_policy(bad)
            assert t.retention_policy() == good
        t.set_retention_policy({})
        assert t.retention_policy() == {"rules": [], "pinned": []}
        assert t.gc()["retention"] == []
