"""`tract mcp` over stdio, driven by the real Python MCP client (`mcp`)."""

import asyncio
import json
import pathlib
import subprocess

import pytest

import tract

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from test_sessions import TRACT_BIN  # noqa: E402

READ_TOOLS = {
    "search_history", "log", "show", "find_tool_results", "find_tool_turns", "sessions", "status", "usage", "diff",
}


def history(path: pathlib.Path) -> dict:
    """A session with a long grep result that was edited, and a side branch."""
    with tract.Tract.open(path) as t:
        t.user("Where is DATABASE_URL read?")
        t.assistant("", tool_calls=[{"id": "c1", "name": "grep", "arguments": {"pattern": "DATABASE_URL"}}])
        long = "config.py:42: DATABASE_URL = os.environ['DATABASE_URL']\n" + "noise line\n" * 400
        result = t.tool_result("c1", "grep", long)
        t.edit(result, "config.py:42")
        t.assistant("It is read in config.py, line 42.")
        side = t.fork("side")
        side.user("a question on the side")
        return {"result": result.commit_hash, "long": long}


def call(path: pathlib.Path, steps, *flags: str):
    """Starts `tract --store PATH mcp FLAGS`, runs `steps(session)` and returns what it returns."""

    async def go():
        server = StdioServerParameters(command=str(TRACT_BIN), args=["--store", str(path), "mcp", *flags])
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await steps(session)

    return asyncio.run(go())


def text(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def test_the_read_tools_answer_from_the_store(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "s.redb"
    made = history(path)

    async def steps(s):
        tools = {t.name: t for t in (await s.list_tools()).tools}
        out = {"tools": tools}
        out["search"] = await s.call_tool("search_history", {"query": "DATABASE_URL", "history": True})
        out["search_tool"] = await s.call_tool("search_history", {"query": "config.py", "role": "tool"})
        out["log"] = await s.call_tool("log", {"limit": 3})
        out["show"] = await s.call_tool("show", {"id": made["result"][:10]})
        out["results"] = await s.call_tool("find_tool_results", {"name": "grep"})
        out["turns"] = await s.call_tool("find_tool_turns", {})
        out["status"] = await s.call_tool("status", {"branch": "side"})
        out["usage"] = await s.call_tool("usage", {"branch": "side"})
        out["diff"] = await s.call_tool("diff", {"a": "main", "b": "side"})
        out["diff_edit"] = await s.call_tool("diff", {"a": "HEAD~1"})
        out["diff_bad"] = await s.call_tool("diff", {"a": "main", "b": "sied"})
        out["nope"] = await s.call_tool("log", {"branch": "nope"})
        out["typo"] = await s.call_tool("status", {"branch": "sied"})
        out["bad_role"] = await s.call_tool("search_history", {"query": "x", "role": "robot"})
        out["bad_id"] = await s.call_tool("show", {"id": "fffffff"})
        return out

    out = call(path, steps)
    assert set(out["tools"]) == READ_TOOLS
    # Every tool takes the branch explicitly, but the list of every branch.
    for t in out["tools"].values():
        assert ("branch" in t.input_schema.get("properties", {})) is (t.name != "sessions"), t.name
    hits = json.loads(text(out["search"]))
    assert {h["role"] for h in hits} >= {"user", "tool"}
    assert [h["name"] for h in json.loads(text(out["search_tool"]))] == ["grep"]
    log = json.loads(text(out["log"]))
    assert [c["op"] for c in log] == ["append", "edit", "append"]
    shown = json.loads(text(out["show"]))
    # The full original, and every version of the edited result.
    assert shown["content"] == made["long"]
    assert shown["current_content"] == "config.py:42"
    assert len(shown["versions"]) == 2
    results = json.loads(text(out["results"]))
    assert results[0]["tool_call_id"] == "c1" and results[0]["current_content"] == "config.py:42"
    assert results[0]["content"].endswith("[truncated; show gives all of it]")
    turns = json.loads(text(out["turns"]))
    assert turns[0]["calls"][0]["name"] == "grep" and turns[0]["calls"][0]["state"] == "ok"
    status = json.loads(text(out["status"]))
    assert status["branch"] == "side" and status["messages"] == 5
    usage = json.loads(text(out["usage"]))
    assert usage["branch"] == "side" and set(usage["totals"]) == {
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    }
    diff = json.loads(text(out["diff"]))
    assert [m["content"] for m in diff["only_b"]] == ["a question on the side"]
    assert diff["only_a"] == [] and diff["changed"] == []
    edit = json.loads(text(out["diff_edit"]))
    assert edit["commit"]["op"] == "edit"
    [changed] = edit["changed"]
    assert changed["a"]["content"] == made["long"] and changed["b"]["content"] == "config.py:42"
    assert out["diff_bad"].is_error and text(out["diff_bad"]) == "error: branch 'sied' not found; did you mean 'side'?"
    # Bad input: a tool error the agent can read, not a crash of the server.
    assert out["nope"].is_error and text(out["nope"]) == "error: branch 'nope' not found"
    assert out["typo"].is_error and text(out["typo"]) == "error: branch 'sied' not found; did you mean 'side'?"
    assert out["bad_role"].is_error and "robot" in text(out["bad_role"])
    assert out["bad_id"].is_error


def test_writes_only_with_allow_writes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "s.redb"
    made = history(path)

    async def read_only(s):
        from mcp.shared.exceptions import MCPError

        try:
            await s.call_tool("edit", {"id": made["result"], "content": "x"})
        except MCPError as e:
            return str(e)
        return None

    # Without --allow-writes the write tools are not served at all.
    assert call(path, read_only) == "tool not found"

    async def writing(s):
        tools = {t.name for t in (await s.list_tools()).tools}
        edited = await s.call_tool("edit", {"id": made["result"][:12], "content": "config.py line 42"})
        log = json.loads(text(await s.call_tool("log", {"limit": 3})))
        ids = [c["commit_hash"] for c in reversed(log)][:2]
        compressed = await s.call_tool("compress", {"commits": ids, "summary": "looked it up"})
        bad = await s.call_tool("edit", {"id": made["result"], "content": "x", "branch": "nope"})
        return tools, edited, compressed, bad

    tools, edited, compressed, bad = call(path, writing, "--allow-writes")
    assert tools == READ_TOOLS | {"edit", "compress"}
    assert not edited.is_error, text(edited)
    assert not compressed.is_error, text(compressed)
    assert bad.is_error and text(bad) == "error: branch 'nope' not found"
    with tract.Tract.open(path, branch="main") as t:
        contents = [m["content"] for m in t.compile().messages]
        assert "looked it up" in contents
        # The originals stay in history.
        assert t.get_commit(made["result"]).content == made["long"]


FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
AGENT_FILES = {
    "codex": FIXTURES / "codex-real" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    "claude-code": FIXTURES / "claude-code-real" / "v1.0.98-init-command.jsonl",
    "gemini": FIXTURES / "gemini-real" / "legacy-v0.3x-toolcall-error-aim.json",
}


def agents_store(path: pathlib.Path) -> dict:
    """A store holding a real session of each agent, imported with `tract import`; returns each
    agent's branch."""
    tract.Tract.open(path).close()
    out = subprocess.run(
        [str(TRACT_BIN), "--store", str(path), "import", "--json", *map(str, AGENT_FILES.values())],
        capture_output=True, text=True, check=True,
    )
    reports = json.loads(out.stdout)
    return {agent: r["branch"] for agent, r in zip(AGENT_FILES, reports)}


def test_sessions_names_each_agent_and_version_and_search_says_whose(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "s.redb"
    branches = agents_store(path)
    # The same from Python.
    with tract.Tract.open(path) as t:
        listed = {b.name: (b.agent, b.agent_version) for b in t.branches()}
    assert listed == {
        branches["codex"]: ("codex", "0.125.0"),
        branches["claude-code"]: ("claude-code", "1.0.98"),
        branches["gemini"]: ("gemini", None),
    }

    async def steps(s):
        return (
            await s.call_tool("sessions", {}),
            await s.call_tool("search_history", {"query": "README.md", "all_branches": True, "limit": 50}),
        )

    sessions, search = call(path, steps)
    assert not sessions.is_error, text(sessions)
    by_name = {b["name"]: (b["agent"], b["agent_version"]) for b in json.loads(text(sessions))}
    assert by_name == listed
    hits = json.loads(text(search))
    seen = {a["agent"] for h in hits for a in h["agents"].values()}
    assert seen == {"codex", "claude-code", "gemini"}, hits
    for h in hits:
        assert set(h["agents"]) <= set(h["branches"])
        for b, a in h["agents"].items():
            assert (a["agent"], a["version"]) == listed[b]
