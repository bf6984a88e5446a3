"""The Python examples of the guides run as written."""

import os
import pathlib
import re
import warnings

import tract

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "hooks.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_hooks_guide_examples_run_in_order() -> None:
    blocks = python_blocks(GUIDE.read_text())
    assert len(blocks) >= 4
    with tract.Tract.open() as t:
        scope = {"t": t, "tract": tract}
        for block in blocks:
            exec(compile(block, str(GUIDE), "exec"), scope)
        # The guide ends with `t.off(...)`: the stored policy applies again.
        assert t._tool_summarization_config is not None
        t.on("tool_result", scope["my_custom_handler"])
        # The custom handler rejects private keys...
        t.user("show the deploy key")
        t.assistant("", tool_calls=[{"id": "k1", "name": "cat", "arguments": {"path": "id_rsa"}}])
        head = t.head
        try:
            t.tool_result("k1", "cat", "-----BEGIN PRIVATE KEY-----\nMIIE...")
            raise AssertionError("the handler should have rejected the key")
        except tract.RejectedError:
            pass
        assert t.head == head
        # ...and trims long listings, keeping the original in history.
        t.assistant("", tool_calls=[{"id": "l1", "name": "ls", "arguments": {"path": "."}}])
        listing = "\n".join(f"src/generated/file_{i:04}.rs" for i in range(400))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            info = t.tool_result("l1", "ls", listing)
        assert info.content == listing
        assert t.compile().messages[-1]["content"] == "400 entries (listing trimmed)"
        # After `off`, the policy the guide configured applies.
        t.off("tool_result")
        assert t.tool_summarization().auto_threshold == 1000


def test_the_sessions_guide_examples_run_in_order(tmp_path) -> None:
    guide = GUIDE.with_name("sessions.md")
    blocks = python_blocks(guide.read_text())
    assert len(blocks) >= 4
    scope = {"store_path": tmp_path / "sessions.redb"}
    for block in blocks:
        exec(compile(block, str(guide), "exec"), scope)
    # The sessions the guide wrote are where it said.
    with tract.Tract.open(scope["store_path"], branch="user-alice") as alice:
        assert [c.content for c in reversed(alice.log())] == [
            "Summarize the incident report.",
            "Here is the summary.",
        ]
    with tract.Tract.open(scope["store_path"]) as main:
        assert main.current_branch == "main"
        assert [c.content for c in main.log()] == ["on main"]


def test_the_integrations_guide_examples_run_in_order(tmp_path, monkeypatch, capfd) -> None:
    """The OpenAI Agents SDK section, with the SDK's own Responses model talking to a scripted
    server on 127.0.0.1 as `model`."""
    import pytest

    pytest.importorskip("agents")
    from agents import set_tracing_disabled
    from test_openai_agents import StubLLM, agent_on, call, response, said

    pytest.importorskip("mcp")
    pytest.importorskip("langgraph.graph")
    pytest.importorskip("claude_agent_sdk")
    set_tracing_disabled(True)
    # The guide starts `tract` by name, as a user's PATH finds it.
    from test_sessions import TRACT_BIN

    monkeypatch.setenv("PATH", f"{TRACT_BIN.parent}{os.pathsep}{os.environ['PATH']}")
    guide = GUIDE.with_name("integrations.md")
    blocks = python_blocks(guide.read_text())
    assert len(blocks) >= 4
    stub = StubLLM([response(1, call(1, "Paris")), response(2, said(2, "Sunny in Paris."))])
    try:
        scope = {"store_path": tmp_path / "agent.tract", "model": agent_on(stub).model}
        for block in blocks:
            exec(compile(block, str(guide), "exec"), scope)
    finally:
        stub.close()
    assert scope["result"].final_output == "Sunny in Paris."
    assert scope["last"]["content"][0]["text"] == "Sunny in Paris."
    assert scope["items"][-2]["output"] == "Paris: sunny"
    # The MCP example found the session's messages through `tract mcp`.
    out = capfd.readouterr().out
    assert '"Weather in Paris?"' in out
    # The LangGraph example: the graph's messages, the thread's mirror and its records.
    assert scope["state"]["messages"][-1].content == "You said: again"
    assert "['hello', 'You said: hello', 'again', 'You said: again']" in out
    assert "['langgraph.checkpoint', 'langgraph.writes']" in out
    # The Claude Agent SDK example: the entries stored once, the tool result found.
    assert len(scope["session"].records("claude.entries")) == 1
    assert "app.py:3: load_config()" in out


def test_every_pip_install_in_the_docs_installs_what_exists(tmp_path) -> None:
    """Each `pip install` the README and the guides give names this checkout's package (the
    distribution is not on an index yet) with extras it declares, and pip resolves it as
    written, from the checkout's root."""
    import subprocess
    import sys
    import tomllib

    root = GUIDE.parents[1]
    pyproject = tomllib.loads((root / "crates/tract-py/pyproject.toml").read_text())
    extras = set(pyproject["project"]["optional-dependencies"])
    texts = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    texts += sorted((root / "crates/tract-py/python/tract").rglob("*.py"))
    found = []
    for path in texts:
        text = path.read_text()
        for target in re.findall(r"""pip install\s+["']?([^\s"'`]+)""", text):
            if target.startswith("-") or path.name in ("development.md", "decisions.md", "performance.md"):
                continue
            found.append((path.name, target))
    assert found, "the docs give install commands"
    for where, target in found:
        assert not target.startswith("tract-context"), f"{where}: {target} is on no index"
        path, _, extra = target.partition("[")
        assert (root / path / "pyproject.toml").is_file(), f"{where}: {target} names no package"
        for e in filter(None, extra.rstrip("]").split(",")):
            assert e in extras, f"{where}: {target}: no extra {e!r}"
    # pip itself, as the integrations guide writes it: the metadata only (no compile), every
    # requirement already in this environment.
    run = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-build-isolation", "--no-index",
         "./crates/tract-py[openai-agents]"],
        cwd=root, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "tract-context" in run.stdout, run.stdout
