"""`tract capture` following a Claude Code projects folder while another process writes real
session lines into it, as Claude Code does: lines appended over time, some caught half written,
a sub-agent's file growing beside its session, the capture killed with SIGKILL and restarted.
In the end each session's branch holds what one import of the whole file gives, no line was
imported twice, and the store is clean."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

import tract

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))
REAL = ROOT / "tests" / "fixtures" / "claude-code-real"

# Real sessions (tests/fixtures/claude-code-real/README.md names their sources): one where the
# conversation leaves a path (an interrupted answer, then a resumed one), one whose Task
# sub-agent writes its own file while the session waits for it.
SESSIONS = ["v2.1.37-interrupt-resume-branch.jsonl", "v2.1.39-task-subagent.jsonl"]
AGENT = "v2.1.39-task-subagent/subagents/agent-aac57f5.jsonl"

WRITER = r"""
import json, pathlib, random, sys, time
plan = json.loads(pathlib.Path(sys.argv[1]).read_text())
rng = random.Random(7)
handles = {}
for step in plan:
    path = pathlib.Path(step["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    f = handles.get(step["path"]) or open(path, "ab")
    handles[step["path"]] = f
    data = step["line"].encode()
    if rng.random() < 0.2:
        # Half a line now, the rest a moment later: capture must wait for its end.
        cut = rng.randrange(1, len(data))
        f.write(data[:cut]); f.flush(); time.sleep(0.03)
        data = data[cut:]
    f.write(data); f.flush()
    time.sleep(step["pause"])
print("done", flush=True)
"""


def _lines(path: pathlib.Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    lines = [line + "\n" for line in text.split("\n") if line.strip()]
    return lines


def _plan(projects: pathlib.Path) -> list[dict]:
    """The lines of both sessions and of the sub-agent, interleaved, each with a short pause."""
    folder = projects / "-home-USER-spotter"
    streams = [
        [(folder / name, line) for line in _lines(REAL / name)] for name in SESSIONS
    ]
    # The sub-agent's lines go in before its session's line that reports its result.
    agent_lines = [(folder / AGENT, line) for line in _lines(REAL / AGENT)]
    session = streams[1]
    cut = next(
        (k for k, (_, line) in enumerate(session) if '"agentId":"aac57f5"' in line.replace(" ", "") and '"toolUseResult"' in line),
        len(session) // 2,
    )
    streams[1] = session[:cut] + agent_lines + session[cut:]
    plan = []
    k = 0
    while any(streams):
        stream = streams[k % len(streams)]
        k += 1
        if stream:
            path, line = stream.pop(0)
            plan.append({"path": str(path), "line": line, "pause": 0.004})
    return plan


def _tract(store: pathlib.Path, *args: str) -> str:
    return subprocess.run(
        [str(TRACT_BIN), "--store", str(store), *args], check=True, capture_output=True, text=True
    ).stdout


def _start_capture(store: pathlib.Path, projects: pathlib.Path) -> subprocess.Popen:
    return subprocess.Popen(
        [str(TRACT_BIN), "--store", str(store), "capture", str(projects), "--interval", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _view(store: pathlib.Path, branch: str) -> list[dict]:
    with tract.Tract.open(store, branch=branch) as t:
        return t.compile().messages


def _notes(store: pathlib.Path, branch: str) -> list[str]:
    log = json.loads(_tract(store, "--branch", branch, "log", "--json"))
    return [c["note"] for c in log if c.get("note")]


def test_capture_follows_a_writer_and_survives_sigkill(tmp_path: pathlib.Path) -> None:
    assert TRACT_BIN.is_file(), f"{TRACT_BIN} is missing: build it with `cargo build -p tract-cli`"
    projects = tmp_path / "projects"
    projects.mkdir()
    store = tmp_path / "captured.redb"
    plan = _plan(projects)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(plan_file)], stdout=subprocess.PIPE, text=True)
    capture = _start_capture(store, projects)
    try:
        # Killed mid-way, and started again: it resumes from what the store holds.
        time.sleep(1.0)
        capture.send_signal(signal.SIGKILL)
        capture.wait(timeout=10)
        capture = _start_capture(store, projects)
        assert writer.wait(timeout=120) == 0
        # Every session as one import of its whole file makes it.
        reference = tmp_path / "reference.redb"
        _tract(reference, "init")
        folder = projects / "-home-USER-spotter"
        imported = {}
        for name in SESSIONS:
            out = json.loads(_tract(reference, "import", str(folder / name), "--json"))
            imported[out[0]["branch"]] = out[0]
        deadline = time.monotonic() + 30
        while True:
            views_equal = all(
                store.exists() and _branch_exists(store, b) and _view(store, b) == _view(reference, b)
                for b in imported
            )
            if views_equal or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert views_equal, "the captured sessions never matched their import"
    finally:
        capture.send_signal(signal.SIGTERM)
        capture.wait(timeout=10)
        if writer.poll() is None:
            writer.kill()
    for branch in imported:
        # No line was imported twice: each is named by one commit (an edit of a response that
        # grew names the lines it joined again), and the lines are the import's.
        log = json.loads(_tract(store, "--branch", branch, "log", "--json"))
        named = [u for c in log if c.get("note") and c["op"] != "edit" for u in c["note"].split()[1:]]
        assert len(named) == len(set(named)), sorted(u for u in named if named.count(u) > 1)
        everything = {u for note in _notes(store, branch) for u in note.split()[1:]}
        assert everything == {u for note in _notes(reference, branch) for u in note.split()[1:]}
    # The sub-agent's conversation is on its own branch, merged back as the Task's result.
    branches = [b.name for b in tract.Tract.open(store).branches()]
    assert any(b.endswith("/agents/aac57f5") for b in branches), branches
    report = tract.Tract.open(store).fsck()
    assert report["clean"], report


def _branch_exists(store: pathlib.Path, branch: str) -> bool:
    with tract.Tract.open(store) as t:
        return any(b.name == branch for b in t.branches())


def test_capture_once_twice_imports_nothing_the_second_time(tmp_path: pathlib.Path) -> None:
    projects = tmp_path / "projects" / "-work"
    projects.mkdir(parents=True)
    shutil.copy(REAL / SESSIONS[0], projects / SESSIONS[0])
    store = tmp_path / "s.redb"
    first = json.loads(_tract(store, "capture", "--once", "--json", str(tmp_path / "projects")).splitlines()[-1])
    again = json.loads(_tract(store, "capture", "--once", "--json", str(tmp_path / "projects")).splitlines()[-1])
    assert first["messages"] > 0 and again["messages"] == 0
    assert first["sessions"] == again["sessions"] == 1


def test_a_session_the_sdk_session_store_keeps_is_not_captured_twice(tmp_path: pathlib.Path) -> None:
    import asyncio

    pytest.importorskip("claude_agent_sdk")
    from tract.integrations.claude_agent_sdk import TractSessionStore

    name = SESSIONS[0]
    lines = [json.loads(line) for line in _lines(REAL / name)]
    session = next(e["sessionId"] for e in lines if e.get("sessionId"))
    cwd = next(e["cwd"] for e in lines if e.get("cwd"))
    project = "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)
    store_path = tmp_path / "s.redb"
    store = TractSessionStore(store_path)
    key = {"project_key": project, "session_id": session}
    asyncio.run(store.append(key, lines))
    branch = store.branch_of(key)
    before = tract.Tract.open(store_path, branch=branch).head
    folder = tmp_path / "projects" / project
    folder.mkdir(parents=True)
    shutil.copy(REAL / name, folder / f"{session}.jsonl")
    run = subprocess.run(
        [str(TRACT_BIN), "--store", str(store_path), "capture", "--once", str(tmp_path / "projects")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "kept by the Claude Agent SDK session store" in run.stderr
    assert tract.Tract.open(store_path, branch=branch).head == before
    assert [b.name for b in tract.Tract.open(store_path).branches()] == [branch]
