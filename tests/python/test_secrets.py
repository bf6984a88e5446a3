"""Secrets scrubbed as they are written, through the Python API, a framework drop-in, the MCP
server's writes and a store in PostgreSQL (whose `pg_dump` must hold none of them)."""

import asyncio
import json
import pathlib
import re
import shutil
import subprocess

import pytest

import tract
from conftest import fresh_schema_url, postgres_url

MARKER = re.compile(r"\[REDACTED:([a-z0-9._-]+):([0-9a-f]{12})\]")


def token(seed: int) -> str:
    """A GitHub token of the real shape (fake), distinct per seed."""
    body = (f"{seed:08}" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ1bC")[:36]
    return f"ghp_{body}"


def test_a_new_store_scrubs_and_the_message_says_what(tmp_path: pathlib.Path) -> None:
    with tract.Tract.open(tmp_path / "s.redb") as t:
        assert t.secrets_policy() == {"enabled": True, "rules": {}, "disabled": [], "allow": []}
        info = t.user(f"deploy with {token(1)}")
        t.assistant("", tool_calls=[{"id": "c1", "name": "bash", "arguments": {"env": f"GH={token(1)}"}}])
        shown = [m["content"] for m in t.compile().messages]
        assert token(1) not in json.dumps(t.compile().to_openai())
        (rule, fp), = MARKER.findall(shown[0])
        assert rule == "github-pat"
        # One secret, one marker: in prose and in tool-call arguments alike.
        args = t.compile().to_openai()[1]["tool_calls"][0]["function"]["arguments"]
        assert json.loads(args) == {"env": f"GH=[REDACTED:github-pat:{fp}]"}
        listed = t.get_commit(info.commit_hash).metadata["tract.scrubbed"]
        assert listed == [{"rule": "github-pat", "field": "content", "offset": 12, "fingerprint": fp}]


def test_a_bad_policy_is_refused_and_the_stored_one_kept(tmp_path: pathlib.Path) -> None:
    with tract.Tract.open(tmp_path / "s.redb") as t:
        before = t.secrets_policy()
        for bad in [
            {"rules": {"broken": "([a-z"}},
            {"rules": {"empty": "x*"}},
            {"rules": {"everything": "[a-z]"}},
            {"allow": ["/.*/"]},
            {"disabled": ["no-such-rule"]},
            {"enabled": True, "nonsense": 1},
        ]:
            with pytest.raises(tract.InvalidInputError):
                t.set_secrets_policy(bad)
            assert t.secrets_policy() == before, bad
        t.set_secrets_policy({"enabled": False})
        t.user(f"kept as written: {token(2)}")
        assert token(2) in t.compile().messages[-1]["content"]


def test_a_policy_another_process_changes_is_followed_by_the_next_write(tmp_path: pathlib.Path) -> None:
    from secrets_oracle import TRACT_BIN

    path = tmp_path / "s.redb"

    def config(*args: str) -> None:
        subprocess.run([str(TRACT_BIN), "--store", str(path), "config", "secrets", *args],
                       check=True, capture_output=True)

    with tract.Tract.open(path) as t:
        t.set_secrets_policy({"enabled": False})
        t.user(f"kept as written: {token(3)}")
        # Turned on by another process while this handle stays open: its next write scrubs.
        config("--on")
        t.user(f"scrubbed: {token(4)}")
        # A rule of the user's added the same way applies to the next write too.
        config("--rule", "ticket=TICKET-[0-9]{6}")
        t.user("see TICKET-123456")
        config("--off")
        t.user(f"kept again: {token(5)}")
        shown = [m["content"] for m in t.compile().messages]
    assert token(3) in shown[0]
    assert token(4) not in shown[1] and MARKER.search(shown[1])
    assert MARKER.findall(shown[2])[0][0] == "ticket"
    assert token(5) in shown[3]


def test_what_is_stored_is_found_and_scrubbed_in_place(tmp_path: pathlib.Path) -> None:
    with tract.Tract.open(tmp_path / "s.redb") as t:
        t.set_secrets_policy({"enabled": False})
        t.user("read the env")
        t.assistant("", tool_calls=[{"id": "c1", "name": "cat", "arguments": {}}])
        result = t.tool_result("c1", "cat", f"GITHUB_TOKEN={token(3)}\n")
        assert t.fsck()["secrets_in_view"] == {"main": 1}
        found = t.scan_secrets(history=True, all=True)
        assert [(f["commit_hash"], f["rule"], f["branch"], f["field"]) for f in found] == [
            (result.commit_hash, "github-pat", "main", "content")
        ]
        assert token(3) not in json.dumps(found)
        done = t.redact_secrets(history=True, all=True)
        assert done == {"findings": 1, "scrubbed": [result.commit_hash], "followed": []}
        assert t.scan_secrets(history=True, all=True) == []
        assert t.fsck()["clean"] and t.fsck()["secrets_in_view"] == {}
        stored = t.get_commit(result.commit_hash)
        assert stored.content.startswith("GITHUB_TOKEN=[REDACTED:github-pat:")
        assert stored.message["tool_call_id"] == "c1"


def test_the_openai_agents_session_scrubs_items(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("agents")
    from tract.integrations.openai_agents import TractSession

    store = str(tmp_path / "s.redb")
    session = TractSession("s1", store=store)
    items = [
        {"role": "user", "content": f"use {token(4)}"},
        {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": json.dumps({"cmd": f"export T={token(4)}"})},
        {"type": "function_call_output", "call_id": "c1", "output": f"T={token(4)}"},
    ]
    asyncio.run(session.add_items(items))
    back = asyncio.run(session.get_items())
    text = json.dumps(back)
    assert token(4) not in text
    assert len(MARKER.findall(text)) == 3
    assert len(set(MARKER.findall(text))) == 1, "one marker for one secret"


def test_the_mcp_servers_writes_are_scrubbed(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("mcp")
    from test_mcp import call, text

    path = tmp_path / "s.redb"
    with tract.Tract.open(path) as t:
        t.user("hello")
        made = t.assistant("draft")

    async def writing(s):
        edited = await s.call_tool("edit", {"id": made.commit_hash, "content": f"the key is {token(5)}"})
        return edited

    edited = call(path, writing, "--allow-writes")
    assert not edited.is_error, text(edited)
    assert token(5) not in text(edited)
    with tract.Tract.open(path) as t:
        assert MARKER.search(t.compile().messages[-1]["content"])


@pytest.mark.skipif(postgres_url() is None, reason="no PostgreSQL server (scripts/test.sh starts one)")
def test_a_pg_dump_of_a_store_sent_secrets_holds_none(tmp_path: pathlib.Path) -> None:
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        for candidate in sorted(pathlib.Path("/usr/lib/postgresql").glob("*/bin/pg_dump")):
            pg_dump = str(candidate)
    assert pg_dump, "pg_dump is installed with the server scripts/test.sh starts"
    url = fresh_schema_url()
    planted = [token(100 + i) for i in range(4)]
    # Written directly, and sent by a push from a store file with scrubbing on.
    with tract.Tract.open(url) as t:
        t.user(f"direct {planted[0]}")
        t.assistant("", tool_calls=[{"id": "c1", "name": "sh", "arguments": {"t": planted[1]}}])
        t.tool_result("c1", "sh", f"TOKEN={planted[1]}")
    local = tmp_path / "local.redb"
    with tract.Tract.open(local, branch="sent") as t:
        t.user(f"pushed {planted[2]} and {planted[3]}")
        t.push(url)
    # The control: with scrubbing off, a planted token is in the dump.
    with tract.Tract.open(url, branch="control") as t:
        t.set_secrets_policy({"enabled": False})
        control = token(999)
        t.user(f"control {control}")
    base, schema = url.rsplit("schema=", 1)
    dump = subprocess.run(
        [pg_dump, "--schema", schema, "--dbname", base.rstrip("?&")],
        capture_output=True, check=True, timeout=120,
    ).stdout

    def held(value: str) -> bool:
        return value.encode() in dump or value.encode().hex().encode() in dump

    assert held(control), "an unscrubbed token is found in the dump (the check below means something)"
    for value in planted:
        assert not held(value), value
