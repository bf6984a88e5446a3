"""Renderings that keep a provider's prompt cache warm: when only appends happened, each request
tract renders starts with the previous one, byte for byte, in all three formats (the previous
request less its closing brackets), step after step over a long agent session."""

import json
from typing import Any

import pytest
from providers import assert_valid_anthropic

import tract

FORMATS = ("openai", "anthropic", "responses")


def rendered(c: tract.Compiled, fmt: str) -> str:
    """The request body as an agent sends it (compact JSON)."""
    value = {"openai": c.to_openai, "anthropic": c.to_anthropic, "responses": c.to_responses}[fmt]()
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_each_request_starts_with_the_one_before_when_only_appends_happened() -> None:
    with tract.Tract.open() as t:
        t.system("You are a coding agent. Keep answers short.")
        before: dict[str, str] = {}
        for k in range(150):
            t.user(f"step {k}: what does module_{k}.py do?")
            calls = [{"id": f"call_{k}_{j}", "name": "read_file", "arguments": {"path": f"module_{k}_{j}.py"}} for j in range(1 + k % 3)]
            t.assistant(f"Reading {len(calls)} files.", tool_calls=calls)
            for j, call in enumerate(calls):
                t.tool_result(call["id"], "read_file", f"def f_{k}_{j}():\n    return {{'k': {k}, 'j': {j}}}\n" * (1 + j))
            if k % 4 == 0:
                t.user("Also check the tests.")
            t.assistant(f"module_{k}.py defines {len(calls)} functions.")
            c = t.compile()
            for fmt in FORMATS:
                now = rendered(c, fmt)
                if fmt in before:
                    stem = before[fmt].rstrip("]}")
                    assert now.startswith(stem), f"{fmt}, step {k}: the request no longer starts with the previous one"
                    assert len(now) > len(before[fmt])
                before[fmt] = now


def test_the_prompt_cache_key_is_the_conversations_in_every_process(tmp_path) -> None:
    import subprocess
    import sys

    store = str(tmp_path / "s.tract")
    with tract.Tract.open(store) as t:
        assert t.compile().prompt_cache_key() is None
        t.system("You are a coding agent.")
        first = t.user("hello")
        key = t.compile().prompt_cache_key()
        assert key is not None and key.startswith("tract-") and len(key) == 38
        t.assistant("hi")
        assert t.compile().prompt_cache_key() == key
        # A fork shares the conversation's start, and its cache.
        assert t.fork("retry", at=first.commit_hash).compile().prompt_cache_key() == key
    code = f"import tract; print(tract.Tract.open({store!r}).compile().prompt_cache_key())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == key
    with tract.Tract.open(store, branch="other") as other:
        other.user("another conversation")
        assert other.compile().prompt_cache_key() != key


def marks(body: dict[str, Any]) -> list[Any]:
    """Where the breakpoints are: "system", or (message, block)."""
    out: list[Any] = []
    if isinstance(body.get("system"), list) and "cache_control" in body["system"][-1]:
        out.append("system")
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(message["content"]):
            if "cache_control" in block:
                assert block["cache_control"] == {"type": "ephemeral"}
                out.append((m, b))
    return out


def test_cache_breakpoints_are_valid_at_most_four_and_change_nothing_else() -> None:
    """At every step of an agent that compresses now and then: a valid Messages request by the
    Anthropic SDK's own types, at most 4 breakpoints (the system prompt, the newest summary, the
    newest message), and the default rendering once they are taken out."""
    with tract.Tract.open() as t:
        t.system("You are a coding agent.")
        positions: list[str] = []  # the view but the system prompt
        for k in range(60):
            positions.append(t.user(f"step {k}: read module_{k}.py").commit_hash)
            calls = [{"id": f"c{k}", "name": "read_file", "arguments": {"path": f"module_{k}.py"}}]
            positions.append(t.assistant("", tool_calls=calls).commit_hash)
            positions.append(t.tool_result(f"c{k}", "read_file", f"def f_{k}(): return {k}\n" * 5).commit_hash)
            positions.append(t.assistant(f"module_{k}.py returns {k}.").commit_hash)
            if k % 15 == 14:
                done = t.compress(commits=positions[:-4], content=f"Modules 0 to {k - 1} read.")
                assert isinstance(done, dict)
                positions = [done["commits"][0].commit_hash, *positions[-4:]]
            c = t.compile()
            body = c.to_anthropic(cache_breakpoints=True)
            assert_valid_anthropic(body)
            where = marks(body)
            assert 2 <= len(where) <= 4 and where[0] == "system", where
            last = len(body["messages"]) - 1
            assert where[-1] == (last, len(body["messages"][last]["content"]) - 1)
            if k >= 14:
                # The newest summary's block, before the newest message.
                assert len(where) == 3, where
                m, b = where[1]
                assert body["messages"][m]["content"][b]["text"].startswith("Modules 0 to")
            plain = c.to_anthropic()
            body["system"] = body["system"][0]["text"]
            for message in body["messages"]:
                for block in message["content"]:
                    block.pop("cache_control", None)
            assert body == plain


def test_a_compaction_can_keep_the_stable_prefix_and_says_what_it_costs_the_cache() -> None:
    """`keep_prefix=True` leaves what comes up to the newest summary as it is; a dry run says how
    many cached tokens a compaction invalidates against how many it saves."""
    with tract.Tract.open() as t:
        t.system("You are a coding agent.")
        run = [
            t.user("read a.py"),
            t.assistant("", tool_calls=[{"id": "c0", "name": "read_file", "arguments": {"path": "a.py"}}]),
            t.tool_result("c0", "read_file", "x = 1\n" * 60),
            t.assistant("a.py sets x."),
        ]
        done = t.compress(commits=[c.commit_hash for c in run], content="a.py read: it sets x.")
        summary = done["commits"][0].commit_hash  # type: ignore[index]
        for k in range(1, 4):
            t.user(f"read m{k}.py")
            t.assistant("", tool_calls=[{"id": f"c{k}", "name": "read_file", "arguments": {"path": f"m{k}.py"}}])
            t.tool_result(f"c{k}", "read_file", f"y{k} = 2\n" * 60)
            t.assistant(f"m{k}.py sets y{k}.")
        whole = t.compress(dry_run=True)
        kept = t.compress(dry_run=True, keep_prefix=True)
        assert whole["sources"][0][0] == summary and kept["sources"][0][0] != summary
        assert 0 < kept["cached_tokens_invalidated"] < whole["cached_tokens_invalidated"]  # type: ignore[typeddict-item]
        clear = t.clear_tool_results(keep=1, dry_run=True, keep_prefix=True)
        assert len(clear["cleared"]) == 2 and clear["cached_tokens_invalidated"] > 0
        assert clear["tokens_before"] > clear["tokens_after"]
        head = t.head
        with pytest.raises(tract.InvalidInputError, match="after the stable prefix"):
            t.compress(commits=[summary], keep_prefix=True, content="again")
        assert t.head == head
        t.compress(keep_prefix=True, content="m1 to m3 read.")
        body = t.compile().to_anthropic(cache_breakpoints=True)
        # The first summary is untouched: the system prompt, it, then the new one.
        texts = [b.get("text") for m in body["messages"] for b in m["content"]]
        assert texts[:2] == ["a.py read: it sets x.", "m1 to m3 read."]
