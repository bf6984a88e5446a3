"""Replays from Python: a recorded session rerun on a scripted model served on 127.0.0.1 by
the test, its tool calls answered from the recorded results; a divergence answered by a hook."""

import pytest

import tract

from conftest import StubLLM


def completion(text=None, calls=(), usage=(10, 2)):
    """A chat completion with `text` and tool calls `(id, tool, arguments)`."""
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
        ]
    return (
        200,
        {
            "object": "chat.completion",
            "model": "stub-model",
            "choices": [{"index": 0, "message": message}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
        },
    )


def recorded(t: tract.Tract) -> None:
    t.system("You find files.")
    t.user("Where is the config?")
    t.assistant("", tool_calls=[{"id": "c1", "name": "grep", "arguments": '{"q": "config"}'}])
    t.tool_result("c1", "grep", "a.py:1: config = {}")
    t.assistant("It is in a.py.")


def test_a_replay_answers_the_models_calls_from_the_recording(t: tract.Tract) -> None:
    recorded(t)
    stub = StubLLM([completion(calls=[("r1", "grep", '{ "q":"config" }')]), completion("a.py", usage=(20, 3))])
    try:
        report = t.replay("main", model="stub", base_url=stub.url, api_key="sk-test")
    finally:
        stub.close()
    assert report["branch"] == "replay/main/1"
    assert report["matched_call_count"] == 1
    assert report["finished"] is True
    assert report["divergence"] is None
    assert (report["input_tokens"], report["output_tokens"]) == (30, 5)
    assert report["diff_command"] == "tract diff main replay/main/1"
    path, auth, body = stub.bodies[1]
    assert path == "/v1/chat/completions" and auth == "Bearer sk-test"
    assert body["messages"][-1] == {"role": "tool", "tool_call_id": "r1", "content": "a.py:1: config = {}"}
    assert [t["function"]["name"] for t in body["tools"]] == ["grep"]
    diff = t.diff("main", "replay/main/1")
    assert diff["shared_prefix_count"] == 2


def test_a_divergence_stops_or_the_hook_answers_it(t: tract.Tract) -> None:
    recorded(t)
    stub = StubLLM([completion(calls=[("r1", "cat", '{"path": "a.py"}')])])
    try:
        report = t.replay("main", model="stub", base_url=stub.url)
    finally:
        stub.close()
    assert report["divergence"] == {"step": 1, "tool": "cat", "arguments": '{"path": "a.py"}', "call_id": "r1"}
    assert report["finished"] is False

    seen = []

    def answer(d):
        seen.append(d)
        return "config = {}"

    stub = StubLLM([completion("a.py")])
    try:
        report = t.replay("main", model="stub", base_url=stub.url, resume=True, on_divergence=answer)
    finally:
        stub.close()
    assert seen == [{"step": 1, "tool": "cat", "arguments": '{"path": "a.py"}', "call_id": "r1"}]
    assert report["hook_answered_call_count"] == 1 and report["finished"] is True
    assert stub.bodies[0][2]["messages"][-1]["content"] == "config = {}"


def test_a_hook_that_raises_stops_the_replay_with_its_exception(t: tract.Tract) -> None:
    recorded(t)

    def broken(d):
        raise KeyError("no such file")

    stub = StubLLM([completion(calls=[("r1", "cat", "{}")])])
    try:
        with pytest.raises(KeyError, match="no such file"):
            t.replay("main", model="stub", base_url=stub.url, on_divergence=broken)
    finally:
        stub.close()


def test_bad_replays_are_clear_errors(t: tract.Tract) -> None:
    recorded(t)
    with pytest.raises(tract.InvalidInputError, match="needs model="):
        t.replay("main")
    with pytest.raises(tract.InvalidInputError, match="unknown provider"):
        t.replay("main", model="m", provider="gemini")
    with pytest.raises(tract.InvalidInputError, match="tool definition 0"):
        t.replay("main", model="m", tools=[{"description": "no name"}])
    with pytest.raises(tract.NotFoundError):
        t.replay("mian", model="m")
    # An answer that is not one: an unavailable model, the branch keeping what came before.
    stub = StubLLM([(200, {"choices": [{"message": {"role": "assistant", "content": ""}}]})])
    try:
        with pytest.raises(tract.UnavailableError, match="neither content nor tool calls") as e:
            t.replay("main", model="stub", base_url=stub.url, retries=0)
    finally:
        stub.close()
    assert e.value.endpoint == stub.url
    assert "replay/main/1" in [b.name for b in t.branches()]
