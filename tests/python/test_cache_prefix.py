"""Renderings that keep a provider's prompt cache warm: when only appends happened, each request
tract renders starts with the previous one, byte for byte, in all three formats (the previous
request less its closing brackets), step after step over a long agent session."""

import json

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
