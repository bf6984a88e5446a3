"""One vocabulary: the reports the Python API returns are the CLI's `--json` reports, field by
field, made from the same serde types (tract-vocabulary) through one conversion."""

import json
import os
import pathlib
import subprocess

import pytest

import tract

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))


def cli(store: pathlib.Path, *args: str) -> dict:
    """`tract --store STORE ARGS --json`, parsed."""
    assert TRACT_BIN.is_file(), f"{TRACT_BIN} is missing: build it with `cargo build -p tract-cli`"
    out = subprocess.run(
        [str(TRACT_BIN), "--store", str(store), *args, "--json"],
        check=True,
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), "TRACT_TIMESTAMP": "2026-01-01T00:00:00Z"},
    )
    return json.loads(out.stdout)


def same(python: dict, cli_json: dict, what: str) -> None:
    """The same keys in the same order, each with the same value."""
    assert list(python) == list(cli_json), what
    for key in cli_json:
        assert python[key] == cli_json[key], f"{what}: {key}"


@pytest.fixture
def store(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "store.redb"
    with tract.Tract.open(path) as t:
        t.system("be brief")
        t.user("where is the config?")
        t.assistant("", [{"id": "c1", "name": "grep", "arguments": {"q": "config"}}])
        # Long enough for `clear` to replace with its placeholder.
        t.tool_result("c1", "grep", "config.py:1: CFG=1\n" + "".join(f"a.py:{n}: x\n" for n in range(40)))
        t.assistant("in config.py")
        t.branch("side")
    return path


def test_status_is_the_clis_status(store: pathlib.Path) -> None:
    with tract.Tract.open(store) as t:
        status = t.status()
        same(status, cli(store, "status"), "status")
        assert status["detached"] is False
        t.checkout(t.log()[1].commit_hash)
        detached = t.status()
        assert detached["detached"] is True and detached["branch"] is None
    # A handle detached is its own position; the CLI's is the store's HEAD, moved the same way.
    subprocess.run([str(TRACT_BIN), "--store", str(store), "checkout", detached["head"]], check=True,
                   capture_output=True)
    same(detached, cli(store, "status"), "status, detached")


def test_fsck_is_the_clis_fsck(store: pathlib.Path) -> None:
    with tract.Tract.open(store) as t:
        t.update_index()
        report = t.fsck()
    assert report["clean"] is True and report["index_documents"] > 0
    same(report, cli(store, "fsck"), "fsck")


def test_update_index_is_the_clis_index(store: pathlib.Path) -> None:
    with tract.Tract.open(store) as t:
        first = t.update_index()
    assert first["added"] > 0
    # Nothing new on either side now: the same report.
    with tract.Tract.open(store) as t:
        again = t.update_index()
    same(again, cli(store, "index"), "update_index")


def test_push_is_the_clis_push(store: pathlib.Path, tmp_path: pathlib.Path) -> None:
    by_python = tmp_path / "python.redb"
    by_cli = tmp_path / "cli.redb"
    for dest in (by_python, by_cli):
        tract.Tract.open(dest).close()
    with tract.Tract.open(store) as t:
        pushed = t.push(by_python)
    same(pushed, cli(store, "push", str(by_cli)), "push")
    assert [b["name"] for b in pushed["branches"]] == ["main", "side"]


# The reports of calls that write: Python writes to the store, the CLI to a clone of it (every
# id the same), both on the CLI's clock, so what they commit has the same ids.
CLOCK = "2026-01-01T00:00:00Z"


@pytest.fixture
def twin(store: pathlib.Path, tmp_path: pathlib.Path, monkeypatch) -> pathlib.Path:
    """A clone of `store` for the CLI to write to; Python's opens from now on use its clock."""
    path = tmp_path / "twin.redb"
    tract.Tract.clone_store(store, path).close()
    monkeypatch.setenv("TRACT_TIMESTAMP", CLOCK)
    return path


def test_gc_is_the_clis_gc(tmp_path: pathlib.Path, monkeypatch) -> None:
    path = tmp_path / "store.redb"
    monkeypatch.setenv("TRACT_TIMESTAMP", "2025-06-01T00:00:00Z")
    with tract.Tract.open(path) as t:
        t.user("look")
        t.assistant("", [{"id": "c1", "name": "bash", "arguments": {}}])
        t.tool_result("c1", "bash", "an old build's output")
        t.assistant("done")
        t.fork("side").user("side work")
        t.set_retention_policy(
            {
                "rules": [
                    {"name": "idle", "branches": ["side"], "delete_idle_branches": {"idle_days": 30}},
                    {
                        "name": "results",
                        "branches": ["main"],
                        "replace_tool_results": {"older_than_days": 30, "with": "placeholder"},
                    },
                ],
                "pinned": [],
            }
        )
    monkeypatch.setenv("TRACT_TIMESTAMP", CLOCK)
    with tract.Tract.open(path) as t:
        report = t.gc(dry_run=True)
    idle, results = report["retention"]
    # A time is an RFC 3339 string, as everywhere in the vocabulary.
    assert idle["deleted_branches"][0]["idle_since"].startswith("2025-06-01T00:00:00.")
    assert len(results["replaced_results"]) == 1
    same(report, cli(path, "gc", "--dry-run"), "gc")


def test_redact_is_the_clis_redact(store: pathlib.Path, twin: pathlib.Path) -> None:
    with tract.Tract.open(store) as t:
        result = [c for c in t.log() if c.role == "tool"][0]
        report = t.redact(result, "a path", follow=True)
    assert report["commit"] == result.commit_hash
    assert report["redacted_at"] == "2026-01-01T00:00:00.000000Z"
    assert report["redacted_at_us"] == 1_767_225_600_000_000
    same(report, cli(twin, "redact", result.commit_hash, "--reason", "a path", "--follow"), "redact")


def test_import_file_is_the_clis_import(tmp_path: pathlib.Path, monkeypatch) -> None:
    # A Claude Code session with a line that is not JSON: a warning with its line.
    session = tmp_path / "session.jsonl"
    lines = (ROOT / "tests" / "fixtures" / "claude-code-session.jsonl").read_text().splitlines()
    session.write_text("\n".join([*lines[:2], "{not json", *lines[2:]]) + "\n")
    monkeypatch.setenv("TRACT_TIMESTAMP", CLOCK)
    with tract.Tract.open(tmp_path / "python.redb", branch="cc") as t:
        report = t.import_file(str(session))
    assert report["file"] == str(session) and report["branch"] == "cc"
    assert [w["line"] for w in report["warnings"]] == [3]
    tract.Tract.open(tmp_path / "cli.redb").close()
    by_cli = cli(tmp_path / "cli.redb", "--branch", "cc", "import", str(session))
    assert len(by_cli) == 1
    same(report, by_cli[0], "import_file")


def secrets_store(path: pathlib.Path) -> str:
    """A store holding a token written while scrubbing was off; its commit."""
    with tract.Tract.open(path) as t:
        t.set_secrets_policy({"enabled": False})
        t.user("read the env")
        t.assistant("", [{"id": "c1", "name": "cat", "arguments": {}}])
        leaked = t.tool_result("c1", "cat", "GITHUB_TOKEN=ghp_00000001aB3dE5gH7jK9mN1pQ3sT5vW7y\n")
        t.set_secrets_policy({"enabled": True})
        return leaked.commit_hash


def test_scan_secrets_is_the_clis_scan(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "store.redb"
    leaked = secrets_store(path)
    with tract.Tract.open(path) as t:
        found = t.scan_secrets(history=True)
    assert [f["commit_hash"] for f in found] == [leaked]
    by_cli = cli(path, "secrets", "scan", "--history")
    assert len(found) == len(by_cli)
    for mine, theirs in zip(found, by_cli):
        same(mine, theirs, "scan_secrets")


def test_redact_secrets_is_the_clis_scan_redact(tmp_path: pathlib.Path) -> None:
    path, twin = tmp_path / "store.redb", tmp_path / "twin.redb"
    leaked = secrets_store(path)
    tract.Tract.clone_store(path, twin).close()
    with tract.Tract.open(path) as t:
        report = t.redact_secrets()
    assert report["scrubbed"] == [leaked]
    same(report, cli(twin, "secrets", "scan", "--redact"), "redact_secrets")


def test_clear_tool_results_is_the_clis_clear(store: pathlib.Path, twin: pathlib.Path) -> None:
    with tract.Tract.open(store) as t:
        plan = t.clear_tool_results(keep=0, dry_run=True)
    assert len(plan["cleared"]) == 1
    same(plan, cli(store, "clear", "--keep", "0", "--dry-run"), "clear_tool_results(dry_run=True)")
    with tract.Tract.open(store) as t:
        done = t.clear_tool_results(keep=0)
    by_cli = cli(twin, "clear", "--keep", "0")
    # The commits are CommitInfo objects, the CLI's their JSON form: the same commits.
    assert [c.commit_hash for c in done["cleared"]] == [c["commit_hash"] for c in by_cli["cleared"]]
    same({**done, "cleared": None}, {**by_cli, "cleared": None}, "clear_tool_results")


def test_compress_is_the_clis_compress(store: pathlib.Path, twin: pathlib.Path) -> None:
    with tract.Tract.open(store) as t:
        plan = t.compress(dry_run=True)
    same(plan, cli(store, "compress", "--dry-run"), "compress(dry_run=True)")
    with tract.Tract.open(store) as t:
        done = t.compress(content="the config is in config.py")
    by_cli = cli(twin, "compress", "--content", "the config is in config.py")
    assert [c.commit_hash for c in done["commits"]] == [c["commit_hash"] for c in by_cli["commits"]]
    assert len(done["commits"]) == 1 and done["warnings"] == []
    same({**done, "commits": None}, {**by_cli, "commits": None}, "compress")


def test_compress_tool_calls_is_the_clis_tool_turns(store: pathlib.Path, twin: pathlib.Path) -> None:
    with tract.Tract.open(store) as t:
        done = t.compress_tool_calls(content="grep found config.py")
    by_cli = cli(twin, "compress", "--tool-turns", "--content", "grep found config.py")
    assert [c.commit_hash for c in done["commits"]] == [c["commit_hash"] for c in by_cli["commits"]]
    same({**done, "commits": None}, {**by_cli, "commits": None}, "compress_tool_calls")


def test_policies_are_the_clis_config(store: pathlib.Path) -> None:
    with tract.Tract.open(store) as t:
        t.set_retention_policy(
            {"rules": [{"name": "idle", "branches": ["s*"], "delete_idle_branches": {"idle_days": 7}}]}
        )
        t.set_secrets_policy({"rules": {"ticket": "TICKET-[0-9]{6}"}, "allow": ["/example/"]})
        retention, secrets = t.retention_policy(), t.secrets_policy()
    config = cli(store, "config", "show")
    assert retention == config["retention"] and list(retention) == list(config["retention"])
    assert secrets == config["secrets"] and list(secrets) == list(config["secrets"])


def test_usage_is_the_clis(tmp_path: pathlib.Path) -> None:
    store = tmp_path / "s.tract"
    session = ROOT / "tests" / "fixtures" / "claude-code-real" / "v2.1.37-interrupt-resume-branch.jsonl"
    with tract.Tract.open(str(store)) as t:
        report = t.import_file(str(session))
        branch = report["branch"]
        same(t.usage(branch), cli(store, "--branch", branch, "usage"), "usage")
        same(t.usage(branch, by_day=True), cli(store, "--branch", branch, "usage", "--by", "day"), "usage by day")


def test_the_cache_report_is_the_clis(tmp_path: pathlib.Path) -> None:
    store = tmp_path / "s.tract"
    session = ROOT / "tests" / "fixtures" / "claude-code-real" / "v2.0.76-compact-boundary.jsonl"
    with tract.Tract.open(str(store)) as t:
        branch = t.import_file(str(session))["branch"]
        report = t.cache_report(branch)
        same(report, cli(store, "--branch", branch, "cache"), "cache")
        same(t.cache_report(branch, format="openai", ttl=3600), cli(store, "--branch", branch, "cache", "--format", "openai", "--ttl", "3600"), "cache (openai)")
    # The compaction Claude Code made in the session is named as a break, with its commit.
    causes = [q["break"]["cause"] for q in report["requests"] if q["break"]]
    assert "compress" in causes
    assert report["request_count"] == 12 and report["notes"][0].startswith("no request's view holds a system prompt")


def test_the_diff_is_the_clis(store: pathlib.Path) -> None:
    with tract.Tract.open(store) as t:
        t.user("only on main")
        side = t.fork("other", at="side")
        side.user("only on other")
        view = t.diff("main", "other")
        same(view, cli(store, "diff", "main", "other"), "diff")
        assert [m["content"] for m in view["only_a"]] == ["only on main"]
        assert [m["content"] for m in view["only_b"]] == ["only on other"]
        one = t.diff("HEAD")
        same(one, cli(store, "diff", "HEAD"), "diff of one commit")
        assert one["commit"]["commit_hash"] == t.head
        history = t.diff("main", "other", history=True)
        same(history, cli(store, "diff", "main", "other", "--history"), "history diff")
        assert len(history["only_a"]) == 1 and len(history["only_b"]) == 1
        # A message with tool calls says them, apart from its view.
        side.assistant("", tool_calls=[{"id": "c9", "name": "grep", "arguments": {"q": "x"}}])
        [call] = t.diff("main", "other")["only_b"][-1:]
        assert call["tool_calls"] == [{"id": "c9", "name": "grep", "arguments": '{"q":"x"}'}]
        assert call["caller"] is None and call["calls"] == []
        with pytest.raises(tract.NotFoundError):
            t.diff("main@{99}")
        with pytest.raises(tract.InvalidInputError):
            t.diff("main", history=True)
