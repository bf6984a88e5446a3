"""tract as the Claude Agent SDK's session store: the SDK's own conformance suite, its
store-backed session functions over a real Claude Code transcript, and the session's messages
seen as tract messages."""

import asyncio
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("claude_agent_sdk.testing")

import claude_agent_sdk  # noqa: E402
from claude_agent_sdk.testing import run_session_store_conformance  # noqa: E402

import tract  # noqa: E402
from tract.integrations.claude_agent_sdk import TractSessionStore  # noqa: E402
from test_sessions import TRACT_BIN  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
SESSION = "9a1d2c3b-0000-4000-8000-00000000a9e1"


def test_the_conformance_suite_passes_with_every_optional_method(any_store, tmp_path):
    made = []

    def make():
        # A fresh store per contract: the suite expects empty stores.
        if any_store.startswith("postgres"):
            store = any_store.replace("schema=", f"schema=c{len(made)}_")
        else:
            store = str(tmp_path / f"c{len(made)}.redb")
        s = TractSessionStore(store)
        made.append(s)
        return s

    asyncio.run(run_session_store_conformance(make))
    assert len(made) == 15, "one store per contract, every optional one included"


@pytest.fixture
def claude_home(tmp_path, monkeypatch):
    """A Claude config directory holding the fixture session (with its sub-agent) for the
    project directory returned."""
    project = tmp_path / "app"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    key = claude_agent_sdk.project_key_for_directory(str(project))
    folder = tmp_path / "claude" / "projects" / key
    (folder / SESSION / "subagents").mkdir(parents=True)
    shutil.copy(FIXTURES / "claude-code-agents.jsonl", folder / f"{SESSION}.jsonl")
    shutil.copy(
        FIXTURES / "claude-code-agents" / "subagents" / "agent-a1b2c3.jsonl",
        folder / SESSION / "subagents" / "agent-a1b2c3.jsonl",
    )
    return project, key


def lines(path: pathlib.Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_sdk_imports_lists_and_reads_a_session_through_the_store(any_store, claude_home):
    project, key = claude_home
    store = TractSessionStore(any_store)

    async def main():
        await claude_agent_sdk.import_session_to_store(SESSION, store, directory=str(project))
        # Again: entries are keyed by uuid, so nothing is stored twice.
        await claude_agent_sdk.import_session_to_store(SESSION, store, directory=str(project))
        listed = await claude_agent_sdk.list_sessions_from_store(store, directory=str(project))
        from_store = await claude_agent_sdk.get_session_messages_from_store(store, SESSION, directory=str(project))
        subagents = await claude_agent_sdk.list_subagents_from_store(store, SESSION, directory=str(project))
        return listed, from_store, subagents

    listed, from_store, subagents = asyncio.run(main())
    main_key = {"project_key": key, "session_id": SESSION}
    loaded = asyncio.run(store.load(main_key))
    assert loaded == lines(FIXTURES / "claude-code-agents.jsonl")
    sub = asyncio.run(store.load({**main_key, "subpath": "subagents/agent-a1b2c3"}))
    assert sub == lines(FIXTURES / "claude-code-agents" / "subagents" / "agent-a1b2c3.jsonl")
    assert [s.session_id for s in listed] == [SESSION]
    assert subagents == ["a1b2c3"]
    # The SDK reads the same conversation from the store as from its own files on disk.
    from_disk = claude_agent_sdk.get_session_messages(SESSION, directory=str(project))
    assert [m.uuid for m in from_store] == [m.uuid for m in from_disk] and len(from_disk) >= 4

    # The session is a branch of tract messages: log, search and the tool queries see it.
    with tract.Tract.open(any_store, branch=store.branch_of(main_key)) as t:
        roles = [m["role"] for m in t.compile().messages]
        assert roles[0] == "user" and "tool" in roles and "assistant" in roles
        assert {c.op for c in t.log()} == {"append", "record"}
        assert len(t.records("claude.entries")) == 1, "the second import stored nothing"
        turns = t.find_tool_turns()
        assert turns and all(c.state == "ok" for turn in turns for c in turn.calls)
        hits = t.search("billing")
        assert hits
    store.close()


def test_entries_load_deep_equal_in_a_new_process(store_path):
    store = TractSessionStore(store_path)
    key = {"project_key": "-home-dev-app", "session_id": "s1"}
    entries = lines(FIXTURES / "claude-code-session.jsonl")
    asyncio.run(store.append(key, entries[:5]))
    asyncio.run(store.append(key, entries[5:]))
    store.close()
    code = (
        "import asyncio, json, sys; from tract.integrations.claude_agent_sdk import TractSessionStore;"
        "s = TractSessionStore(sys.argv[1]);"
        "print(json.dumps(asyncio.run(s.load({'project_key': '-home-dev-app', 'session_id': 's1'}))))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(store_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == entries
    log = subprocess.run(
        [str(TRACT_BIN), "--store", str(store_path), "--branch", "claude/-home-dev-app/s1", "log"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert log.returncode == 0, log.stderr
    assert "DATABASE_URL" in log.stdout and "Grep" in log.stdout and "claude.entries" in log.stdout


def test_delete_cascades_keeps_the_reflog_and_keys_of_any_text_round_trip(store_path):
    store = TractSessionStore(store_path)
    key = {"project_key": "/home/dév/my app", "session_id": "s 1"}
    sub = {**key, "subpath": "subagents/agent-1"}
    asyncio.run(store.append(key, [{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}]))
    asyncio.run(store.append(sub, [{"type": "x", "n": 1}]))
    assert asyncio.run(store.list_sessions("/home/dév/my app"))[0]["session_id"] == "s 1"
    assert asyncio.run(store.list_subkeys(key)) == ["subagents/agent-1"]
    with tract.Tract.open(store_path) as t:
        tip = next(b.head for b in t.branches() if b.name == store.branch_of(key))
    asyncio.run(store.delete(key))
    assert asyncio.run(store.load(key)) is None and asyncio.run(store.load(sub)) is None
    with tract.Tract.open(store_path) as t:
        assert t.reflog(store.branch_of(key))[0]["old"] == tip


def test_bad_input_is_refused_and_stores_nothing(store_path):
    store = TractSessionStore(store_path)
    key = {"project_key": "p", "session_id": "s"}
    with pytest.raises(ValueError, match="JSON"):
        asyncio.run(store.append(key, [{"type": "x", "bad": {1, 2}}]))
    with pytest.raises(ValueError, match="JSON"):
        asyncio.run(store.append(key, [{"type": "x", "n": float("nan")}]))
    assert asyncio.run(store.load(key)) is None
    with pytest.raises(ValueError, match="session_id"):
        asyncio.run(store.append({"project_key": "p", "session_id": ""}, [{"type": "x"}]))
    with pytest.raises(ValueError, match="subpath"):
        asyncio.run(store.append({**key, "subpath": ""}, [{"type": "x"}]))
    with pytest.raises(TypeError):
        asyncio.run(store.append(key, ["not an object"]))
    # A line the mirror cannot make a message of is still stored exactly.
    odd = {"type": "user", "uuid": "u9", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": ""}]}}
    asyncio.run(store.append(key, [odd]))
    assert asyncio.run(store.load(key)) == [odd]


def test_import_does_not_load_the_sdk():
    code = "import sys, tract; print('claude_agent_sdk' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_the_mirror_reads_a_transcript_as_tract_import_does(tmp_path):
    """One message per response (Claude Code writes a line per content block; the SDK flushes
    them together), thinking kept with its signature, an abandoned retry left out: the same view
    `tract import` gives."""
    store_path = tmp_path / "s.tract"
    store = TractSessionStore(store_path)
    key = {"project_key": "-home-dev-app", "session_id": "s1"}
    entries = lines(FIXTURES / "claude-code-session.jsonl")
    # Batches as the SDK flushes them (per turn, a response's lines together), one of them
    # ending with the abandoned retry.
    for start, end in [(0, 2), (2, 5), (5, 9), (9, 13), (13, len(entries))]:
        asyncio.run(store.append(key, entries[start:end]))
    with tract.Tract.open(store_path, branch=store.branch_of(key)) as t:
        mirrored = t.compile().messages
        thinking = t.compile().to_anthropic()["messages"][1]["content"][0]
    imported_path = tmp_path / "i.tract"
    with tract.Tract.open(imported_path, branch="import") as t:
        t.import_file(FIXTURES / "claude-code-session.jsonl")
        for c in t.log():  # the view before the compaction: the mirror has no compress commits
            if c.op == "compress":
                imported = t.compile(at=c.parents[0]).messages
                break
    assert len(imported) == 7
    # The mirror keeps each line's uuid beside the message; the messages are the import's,
    # with what each response cost.
    cost = lambda m: (m.get("metadata") or {}).get("tract.usage")  # noqa: E731
    assert [cost(m) for m in mirrored][: len(imported)] == [cost(m) for m in imported]
    assert any(cost(m) for m in imported)
    assert [m.pop("metadata")["claude.uuid"] for m in mirrored][:3] == ["u1", "a1", "u2"]
    for m in imported:
        m.pop("metadata", None)
    assert mirrored[: len(imported)] == imported
    assert thinking["type"] == "thinking" and thinking["signature"]
    assert not any("retry" in json.dumps(m) for m in mirrored), "the abandoned retry is left out"
