"""A branch written as a Claude Code session (`tract export --format claude-code --install`) is
read back by Claude Code's own reader (the Claude Agent SDK's ``get_session_messages``) as
exactly the branch's view: the real sessions in tests/fixtures, imported, forked at several
points (a rewind), each fork exported and read back, with the same messages, blocks (thinking
with its signature, tool uses and results, text) and order as the view's Messages API request.
Bad input: a session id that is not a UUID, a session that is there already, a branch that does
not exist, a folder that cannot be written: each one line, nothing written."""

import json
import os
import pathlib
import subprocess

import pytest
from claude_agent_sdk import get_session_messages

import tract

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))
SESSIONS = sorted((ROOT / "tests" / "fixtures" / "claude-code-real").glob("*.jsonl"))


def run(store: pathlib.Path, config: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(TRACT_BIN), "--store", str(store), *args],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), "CLAUDE_CONFIG_DIR": str(config), "HOME": str(config)},
    )


def request(t: tract.Tract) -> list:
    """The view as the Messages API is sent it: (role, blocks) per message."""
    return [(m["role"], m["content"]) for m in t.compile().to_anthropic()["messages"]]


@pytest.mark.parametrize("session", SESSIONS, ids=[s.stem for s in SESSIONS])
def test_an_exported_branch_reads_back_in_claude_code_as_the_view(
    tmp_path: pathlib.Path, session: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.tract"
    config = tmp_path / "claude"
    # Where the reader looks: the folder the export installs into.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    project = tmp_path / "project"
    project.mkdir()
    with tract.Tract.open(str(store)) as t:
        branch = t.import_file(str(session))["branch"]
    with tract.Tract.open(str(store), branch=branch) as t:
        log = [c.commit_hash for c in t.log()]
        # The tip, and forks a quarter, half and three quarters of the way (rewinds).
        points = sorted({log[0], log[len(log) // 4], log[len(log) // 2], log[(3 * len(log)) // 4]})
        for k, at in enumerate(points):
            name = f"rewind/{k}"
            fork = t.fork(name, at=at)
            expected = request(fork)
            sid = f"00000000-0000-4000-8000-{k:012d}"
            r = run(store, config, "--branch", name, "export", "--format", "claude-code", "--install",
                    "--project", str(project), "--session-id", sid)
            assert r.returncode == 0, r.stderr
            path = pathlib.Path(r.stdout.splitlines()[0])
            assert path.is_file() and path.name == f"{sid}.jsonl"
            assert path.parent.parent == config / "projects"
            read = get_session_messages(sid, directory=str(project))
            got = [(m.type, m.message["content"]) for m in read]
            assert got == expected, f"{session.name} at {at[:10]}"
            assert all(m.session_id == sid for m in read)
            # A system prompt in the view is named, not dropped silently.
            has_system = "system" in fork.compile().to_anthropic()
            assert ("system message" in r.stderr) == has_system
            # Standard output without --install: the same lines.
            out = run(store, config, "--branch", name, "export", "--format", "claude-code", "--project", str(project),
                      "--session-id", sid)
            assert out.returncode == 0 and out.stdout == path.read_text()


def test_bad_exports_are_one_line_and_write_nothing(tmp_path: pathlib.Path) -> None:
    store = tmp_path / "s.tract"
    config = tmp_path / "claude"
    with tract.Tract.open(str(store)) as t:
        t.system("You are terse.")
        t.user("hello")
        t.assistant("hi")
    first = run(store, config, "export", "--format", "claude-code", "--install", "--project", str(tmp_path))
    assert first.returncode == 0, first.stderr
    path = pathlib.Path(first.stdout.splitlines()[0])
    before = path.read_text()
    # The same view again: the same session id, which is there already.
    again = run(store, config, "export", "--format", "claude-code", "--install", "--project", str(tmp_path))
    assert again.returncode != 0 and "exists" in again.stderr and len(again.stderr.strip().splitlines()) <= 3
    assert path.read_text() == before
    for args, words in [
        (("export", "--format", "claude-code", "--session-id", "not-a-uuid"), "not a UUID"),
        (("--branch", "nope", "export", "--format", "claude-code"), "nope"),
        (("export", "--format", "jsonl", "--install"), "go with --format claude-code"),
    ]:
        r = run(store, config, *args)
        assert r.returncode != 0 and words in r.stderr, (args, r.stderr)
        assert r.stdout == ""
    # Claude Code's folder under a file: it cannot be made.
    blocked = tmp_path / "file"
    blocked.write_text("x")
    r = run(store, blocked, "export", "--format", "claude-code", "--install", "--project", str(tmp_path))
    assert r.returncode != 0 and r.stderr.startswith("error:") and r.stdout == ""
    files = sorted(p.name for p in config.rglob("*") if p.is_file())
    assert files == [path.name], "nothing but the first session was written"
    lines = [json.loads(x) for x in before.splitlines()]
    assert [x["type"] for x in lines] == ["user", "assistant"]
    assert lines[0]["parentUuid"] is None and lines[1]["parentUuid"] == lines[0]["uuid"]
