"""compress() and compress_tool_calls() with caller, manual and built-in summarizers."""

import pytest

import tract
from conftest import StubLLM, reply

BIG = "\n".join(f"src/mod{i}.py:{i}: DATABASE_URL = env('DATABASE_URL')" for i in range(300))


def session(t: tract.Tract) -> dict[str, tract.CommitInfo]:
    c = {"sys": t.system("You are a coding agent.")}
    c["q"] = t.user("Where is DATABASE_URL read?")
    c["call"] = t.assistant("", tool_calls=[
        {"id": "g1", "name": "grep", "arguments": {"pattern": "DATABASE_URL"}},
        {"id": "r1", "name": "read_file", "arguments": {"path": "config.py"}},
    ])
    c["grep"] = t.tool_result("g1", "grep", BIG)
    c["read"] = t.tool_result("r1", "read_file", "DATABASE_URL = env()")
    c["answer"] = t.assistant("It is read in config.py.")
    c["next"] = t.user("Thanks. Now fix the pool.")
    return c


def test_compress_tool_calls_with_a_callable(store_path) -> None:
    seen = []

    def summarize(messages):
        seen.append(messages)
        return "grep found DATABASE_URL in 300 files; config.py reads it with env()."

    with tract.Tract.open(store_path) as t:
        c = session(t)
        t.tool_result("g1", "grep", "EDITED: 300 files", edit=c["grep"])
        out = t.compress_tool_calls(target_tokens=100, instructions="keep file names", summarizer=summarize)
        assert len(out["commits"]) == 1
        assert out["sources"] == [[c["call"].commit_hash, c["grep"].commit_hash, c["read"].commit_hash]]
        assert out["tokens_after"] < out["tokens_before"]
        system, user = seen[0]
        assert system == {"role": "system", "content": tract.TOOL_SUMMARIZE_SYSTEM}
        assert "keep file names" in user["content"] and "at most 100 tokens" in user["content"]
        assert "EDITED: 300 files" in user["content"], "the current content is summarized"
        ci = out["commits"][0]
        assert ci.op == "compress" and ci.role == "user"
        msgs = t.compile().messages
        assert [m["content"] for m in msgs] == [
            "You are a coding agent.",
            "Where is DATABASE_URL read?",
            "grep found DATABASE_URL in 300 files; config.py reads it with env().",
            "It is read in config.py.",
            "Thanks. Now fix the pool.",
        ]
        assert t.get_content(c["grep"]) == BIG, "the original stays in history"
    with tract.Tract.open(store_path) as t:
        assert len(t.compile().messages) == 5


def test_compress_with_preserve_content_and_default_summarizer(t: tract.Tract) -> None:
    c = session(t)
    out = t.compress(commits=[c["q"], c["call"], c["grep"], c["read"], c["answer"]], preserve=[c["answer"]], content="by hand")
    assert [m["content"] for m in t.compile().messages][1:3] == ["by hand", "It is read in config.py."]
    assert out["commits"][0].metadata.get("tract_summary") is True
    # The built-in extractive summarizer needs no network and keeps key lines.
    t2 = tract.Tract.open()
    c2 = session(t2)
    out = t2.compress(commits=[c2["grep"], c2["read"]], target_tokens=120)
    # Only the results were selected: the call stays, with synthetic results, then the summary.
    summary = next(m["content"] for m in t2.compile().messages if m["content"].startswith("[Summary of 2 messages]"))
    assert "[tool grep]" in summary and "src/mod0.py:0" in summary
    assert out["tokens_after"] < out["tokens_before"]


def test_open_with_a_default_summarizer(store_path) -> None:
    with tract.Tract.open(store_path, summarizer=lambda messages: "default summary") as t:
        c = session(t)
        t.compress(commits=[c["grep"]])
        assert "default summary" in [m["content"] for m in t.compile().messages]


def test_dry_run_and_bad_requests_commit_nothing(t: tract.Tract) -> None:
    c = session(t)
    head = t.head
    plan = t.compress(commits=[c["grep"], c["read"], c["next"]], dry_run=True)
    assert plan["sources"] == [[c["grep"].commit_hash, c["read"].commit_hash], [c["next"].commit_hash]]
    with pytest.raises(tract.InvalidInputError, match="nothing selected"):
        t.compress(commits=[])
    with pytest.raises(tract.InvalidInputError, match="not in the selection"):
        t.compress(commits=[c["grep"]], preserve=[c["read"]])
    with pytest.raises(tract.InvalidInputError, match="positive"):
        t.compress(commits=[c["grep"]], target_tokens=0)
    with pytest.raises(tract.NotFoundError):
        t.compress(commits=["f" * 20])

    def broken(messages):
        raise RuntimeError("model unavailable")

    with pytest.raises(tract.SummarizerError, match="model unavailable"):
        t.compress(commits=[c["grep"]], summarizer=broken)
    with pytest.raises(tract.SummarizerError):
        t.compress(commits=[c["grep"]], summarizer=lambda m: 42)
    assert t.head == head


def test_openai_compatible_summarizer(t: tract.Tract) -> None:
    c = session(t)
    server = StubLLM([(429, {"error": "rate limited"}), reply("LLM summary")])
    try:
        llm = tract.OpenAICompatible(server.url, "stub", api_key="sk-test", timeout=2, backoff=0.01)
        out = t.compress_tool_calls(target_tokens=64, summarizer=llm)
        assert out["commits"][0].content == "LLM summary"
        assert len(server.bodies) == 2
        path, auth, body = server.bodies[1]
        assert path == "/v1/chat/completions" and auth == "Bearer sk-test"
        assert body["model"] == "stub"
        assert body["messages"][0]["content"] == tract.TOOL_SUMMARIZE_SYSTEM
        assert "at most 64 tokens" in body["messages"][1]["content"]
    finally:
        server.close()
    head = t.head
    broken = StubLLM([(500, {"error": "down"})] * 2)
    try:
        llm = tract.OpenAICompatible(broken.url, "stub", timeout=2, retries=1, backoff=0.01)
        with pytest.raises(tract.SummarizerError, match="HTTP 500"):
            t.compress(commits=[c["next"]], summarizer=llm)
    finally:
        broken.close()
    assert t.head == head
    with pytest.raises(tract.InvalidInputError):
        tract.OpenAICompatible("http://127.0.0.1:1/v1", "m", timeout=-1)


def test_links_both_ways(t: tract.Tract) -> None:
    c = session(t)
    out = t.compress(commits=[c["grep"], c["read"]], content="two results")
    summary = out["commits"][0]
    assert summary.sources == [c["grep"].commit_hash, c["read"].commit_hash]
    assert summary.summarizer == "manual"
    assert t.compressed_into(c["grep"]) == summary
    assert t.compressed_into(c["q"]) is None


def test_a_summary_no_shorter_than_its_run_is_not_committed(t: tract.Tract) -> None:
    t.user("hi")
    a = t.assistant("ok")
    head = t.head
    with pytest.warns(tract.TractWarning, match="not shorter"):
        out = t.compress(commits=[a], summarizer=lambda messages: "a long summary " * 40)
    assert out["commits"] == [] and out["skipped"] == [[a.commit_hash]]
    assert out["tokens_after"] == out["tokens_before"] and t.head == head
    # Written by hand, it is committed as given.
    out = t.compress(commits=[a], content="a long summary " * 40)
    assert len(out["commits"]) == 1 and out["skipped"] == []
