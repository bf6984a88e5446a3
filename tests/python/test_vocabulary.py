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
        t.tool_result("c1", "grep", "config.py:1: CFG=1")
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
