"""Hooks and the stored tool-summarization policy: seed 002's layer 3, as written there."""

import subprocess
import sys
import warnings

import pytest

import tract
from conftest import StubLLM, reply

BIG = "\n".join(f"src/app/mod{i}.py:{i}: import settings  # loads DATABASE_URL" for i in range(400))


def shortened(text: str) -> bool:
    """BIG as the extractive summarizer shortens it: its first lines, then what was left out
    (no "[Summary of 2 messages]" header, no call)."""
    return text.startswith(BIG.split("\n", 1)[0] + "\n") and text.endswith(" of 400 lines omitted)")


def call(t: tract.Tract, call_id: str, name: str) -> None:
    t.user("find where the database is configured")
    t.assistant("", tool_calls=[{"id": call_id, "name": name, "arguments": {"pattern": "DATABASE_URL"}}])


def shown(t: tract.Tract) -> str:
    return t.compile().messages[-1]["content"]


def test_per_tool_instructions_as_in_the_seed(store_path) -> None:
    server = StubLLM([reply("grep: src/app/settings.py:12 reads DATABASE_URL")])
    try:
        llm = tract.OpenAICompatible(server.url, "stub", timeout=2)
        with tract.Tract.open(store_path, summarizer=llm) as t:
            t.configure_tool_summarization({
                "grep": "summarize to matching filenames and line numbers only",
                "read_file": "keep first 20 lines, summarize the rest",
                "bash": "preserve exit code, stderr, and last 10 lines of stdout",
            })
            call(t, "g1", "grep")
            info = t.tool_result("g1", "grep", BIG)
            # The position keeps the original; the model sees the summary, an edit of it.
            assert info.content == BIG
            assert shown(t) == "grep: src/app/settings.py:12 reads DATABASE_URL"
            assert info.current_content == shown(t)
            history = t.edit_history(info)
            assert [h.op for h in history] == ["append", "edit"]
            assert history[1].edit_target == info.commit_hash
            assert history[1].parents == [info.commit_hash]
            body = server.bodies[0][2]
            assert body["messages"][0]["content"] == tract.TOOL_SUMMARIZE_SYSTEM
            prompt = body["messages"][1]["content"]
            assert "summarize to matching filenames and line numbers only" in prompt
            assert "DATABASE_URL" in prompt
            # A tool without instructions passes through unchanged.
            call(t, "w1", "web_fetch")
            before = len(t.log())
            t.tool_result("w1", "web_fetch", BIG)
            assert len(t.log()) == before + 1 and shown(t) == BIG
    finally:
        server.close()


def test_threshold_form_and_every_process_applies_it(store_path) -> None:
    with tract.Tract.open(store_path) as t:
        t.configure_tool_summarization(
            auto_threshold=1000,  # tokens
            instructions={
                "grep": "summarize to matching filenames and line numbers only",
            },
        )
        config = t.tool_summarization()
        # Python's own words (it printed `auto_threshold=Some(1000)`).
        assert repr(config) == (
            "ToolSummarization(instructions={'grep': 'summarize to matching filenames and line numbers only'}, "
            "auto_threshold=1000, default_instructions=None)"
        )
        assert config.auto_threshold == 1000
        assert config.instructions == {"grep": "summarize to matching filenames and line numbers only"}
        assert config.default_instructions is None
    # Another process records a big bash result: the stored policy summarizes it with the
    # built-in extractive summarizer (no LLM configured), a small one passes through.
    script = (
        "import sys, tract\n"
        "t = tract.Tract.open(sys.argv[1])\n"
        "t.user('run the tests')\n"
        "t.assistant('', tool_calls=[{'id': 'b1', 'name': 'bash', 'arguments': '{}'}])\n"
        "t.tool_result('b1', 'bash', sys.argv[2])\n"
        "t.assistant('', tool_calls=[{'id': 'b2', 'name': 'bash', 'arguments': '{}'}])\n"
        "t.tool_result('b2', 'bash', 'exit 0')\n"
    )
    subprocess.run([sys.executable, "-c", script, str(store_path), BIG], check=True, env=_offline_env())
    with tract.Tract.open(store_path) as t:
        results = t.find_tool_results("bash")
        assert results[0].content == BIG
        current = t.edit_history(results[0])[-1]
        assert shortened(current.content), current.content
        assert len(current.content) < len(BIG) / 4
        assert len(t.edit_history(results[1])) == 1 and results[1].content == "exit 0"


def _offline_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("TRACT_LLM_", "OPENAI_"))}


def test_the_documented_default_handler_works_as_written(t: tract.Tract) -> None:
    # configure_tool_summarization() internally does:
    def _default_tool_handler(pending):
        config = pending.tract._tool_summarization_config
        if config and pending.tool_name in config.instructions:
            # Summarize with tool-specific instructions
            pending.summarize(instructions=config.instructions[pending.tool_name])
        elif config and config.auto_threshold and pending.token_count > config.auto_threshold:
            # Auto-summarize over threshold
            pending.summarize()
        else:
            pending.approve()  # Pass through unchanged

    assert t._tool_summarization_config is None
    t.on("tool_result", _default_tool_handler)
    call(t, "a", "bash")
    t.tool_result("a", "bash", BIG)
    assert shown(t) == BIG  # nothing configured: approved
    t.configure_tool_summarization(auto_threshold=100)
    call(t, "b", "bash")
    t.tool_result("b", "bash", BIG)
    assert shortened(shown(t))


def test_a_custom_handler_replaces_the_default_and_decides(t: tract.Tract) -> None:
    t.configure_tool_summarization(auto_threshold=1)
    seen = []

    def my_custom_handler(pending):
        seen.append((pending.tool_name, pending.tool_call_id, pending.token_count, pending.is_error))
        assert pending.tract is t
        if "password" in pending.content:
            pending.reject("the output holds a password")
        elif pending.tool_name == "ls":
            pending.edit("3 files")
        elif pending.tool_name == "grep":
            pending.summarize(instructions="only paths", target_tokens=50)
            assert pending.decision == "summarize"
        elif pending.tool_name == "boom":
            raise RuntimeError("handler bug")
        elif pending.tool_name == "silent":
            pass
        else:
            pending.approve()

    t.on("tool_result", my_custom_handler)  # Replaces the default
    call(t, "c1", "bash")
    head = t.head
    with pytest.raises(tract.RejectedError, match="holds a password"):
        t.tool_result("c1", "bash", "password=hunter2")
    with pytest.raises(RuntimeError, match="handler bug"):
        t.tool_result("c1", "boom", "x")
    assert t.head == head, "nothing committed"
    name, call_id, tokens, is_error = seen[0]
    # The handler sees the result as it would be stored: its password scrubbed to a marker.
    assert (name, call_id, is_error) == ("bash", "c1", False) and 0 < tokens < 30

    t.tool_result("c1", "bash", BIG)  # approved: the threshold is not consulted
    assert shown(t) == BIG
    call(t, "c2", "ls")
    info = t.tool_result("c2", "ls", "a.py\nb.py\nc.py")
    assert shown(t) == "3 files" and info.content == "a.py\nb.py\nc.py"
    call(t, "c3", "grep")
    t.tool_result("c3", "grep", BIG)
    assert shortened(shown(t))
    call(t, "c4", "silent")
    with pytest.warns(tract.TractWarning, match="decided nothing"):
        t.tool_result("c4", "silent", BIG)
    assert shown(t) == BIG

    t.off("tool_result")
    call(t, "c5", "bash")
    t.tool_result("c5", "bash", BIG)
    assert shortened(shown(t)), "the stored policy applies again"


def test_a_decision_is_made_once(t: tract.Tract) -> None:
    def twice(pending):
        pending.approve()
        pending.edit("x")

    t.on("tool_result", twice)
    call(t, "c1", "bash")
    head = t.head
    with pytest.raises(tract.InvalidOperationError, match="already decided"):
        t.tool_result("c1", "bash", "out")

    def bad_target(pending):
        pending.summarize(target_tokens=0)

    t.on("tool_result", bad_target)
    with pytest.raises(tract.InvalidInputError, match="target_tokens"):
        t.tool_result("c1", "bash", "out")
    assert t.head == head


def test_a_failing_summarizer_keeps_the_result_and_warns(store_path) -> None:
    def down(messages):
        raise ConnectionError("LLM unreachable")

    with tract.Tract.open(store_path, summarizer=down) as t:
        t.configure_tool_summarization({"grep": "paths only"})
        call(t, "g1", "grep")
        with pytest.warns(tract.TractWarning, match="LLM unreachable"):
            info = t.tool_result("g1", "grep", BIG)
        assert shown(t) == BIG and info.content == BIG
        assert len(t.edit_history(info)) == 1


def test_bad_input_changes_nothing(t: tract.Tract) -> None:
    t.configure_tool_summarization({"grep": "paths only"}, auto_threshold=500)
    before = t.tool_summarization()
    with pytest.raises(tract.InvalidInputError, match="unknown event 'tool_call'"):
        t.on("tool_call", lambda p: p.approve())
    with pytest.raises(TypeError, match="callable"):
        t.on("tool_result", "not a function")
    with pytest.raises(tract.InvalidInputError, match="non-negative"):
        t.configure_tool_summarization(auto_threshold=-1)
    with pytest.raises(tract.InvalidInputError, match="non-negative"):
        t.configure_tool_summarization(auto_threshold=True)
    with pytest.raises(tract.InvalidInputError, match="'bash' are empty"):
        t.configure_tool_summarization({"bash": "  "})
    with pytest.raises(tract.InvalidInputError, match="empty"):
        t.configure_tool_summarization(default_instructions="")
    after = t.tool_summarization()
    assert (after.instructions, after.auto_threshold) == (before.instructions, before.auto_threshold)
    # No handler registered: on() failed, the policy still applies.
    call(t, "g1", "grep")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t.tool_result("g1", "grep", BIG)
    assert shortened(shown(t))
    t.configure_tool_summarization()
    assert t._tool_summarization_config is None
