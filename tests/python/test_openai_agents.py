"""The OpenAI Agents SDK with tract as its session store: real ``Runner.run`` calls through the
SDK's own Responses model and the ``openai`` client, against a Responses server on 127.0.0.1
that replies from a script (no network, no key)."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

import tract

agents = pytest.importorskip("agents")
from agents import Agent, Runner, function_tool, set_tracing_disabled  # noqa: E402
from agents.memory import Session  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from conftest import REPO, StubLLM  # noqa: E402
from tract.integrations.openai_agents import TractSession  # noqa: E402

set_tracing_disabled(True)

USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "total_tokens": 15,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens_details": {"reasoning_tokens": 0},
}


def response(n: int, *output: dict) -> tuple[int, dict]:
    """A Responses API reply with these output items."""
    return (
        200,
        {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1_700_000_000 + n,
            "status": "completed",
            "model": "gpt-test",
            "output": list(output),
            "usage": USAGE,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        },
    )


def call(n: int, city: str) -> dict:
    return {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": f"call_{n}",
        "name": "get_weather",
        "arguments": json.dumps({"city": city}),
        "status": "completed",
    }


def said(n: int, text: str) -> dict:
    return {
        "type": "message",
        "id": f"msg_{n}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def reasoning(n: int, text: str) -> dict:
    return {"type": "reasoning", "id": f"rs_{n}", "summary": [{"type": "summary_text", "text": text}]}


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny, 21 C"


def agent_on(stub: StubLLM) -> Agent:
    from agents import OpenAIResponsesModel

    client = AsyncOpenAI(base_url=stub.url, api_key="sk-test-not-a-key", max_retries=0)
    return Agent(
        name="weather",
        instructions="Answer with the weather.",
        tools=[get_weather],
        model=OpenAIResponsesModel(model="gpt-test", openai_client=client),
    )


class Recording(TractSession):
    """A TractSession that remembers what the SDK added, to compare with what comes back."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.added: list = []

    async def add_items(self, items):
        self.added.extend(json.loads(json.dumps(items, default=str)))
        await super().add_items(items)


def test_tract_session_is_an_sdk_session() -> None:
    assert isinstance(TractSession("s"), Session)


def test_a_real_run_with_tool_calls_is_stored_as_tract_messages(any_store) -> None:
    stub = StubLLM(
        [
            response(1, reasoning(1, "look it up"), call(1, "Paris")),
            response(2, said(2, "Sunny in Paris.")),
            response(3, call(3, "Oslo")),
            response(4, said(4, "Sunny in Oslo too.")),
        ]
    )
    try:
        session = Recording("user-42", store=any_store)
        agent = agent_on(stub)
        first = asyncio.run(Runner.run(agent, "Weather in Paris?", session=session))
        assert first.final_output == "Sunny in Paris."
        second = asyncio.run(Runner.run(agent, "And Oslo?", session=session))
        assert second.final_output == "Sunny in Oslo too."
    finally:
        stub.close()
    # What the SDK added comes back as it was added.
    items = asyncio.run(session.get_items())
    assert items == session.added
    types = [i.get("type", "message") for i in items]
    assert types.count("function_call") == 2 and types.count("function_call_output") == 2
    assert "reasoning" in types
    # The third request carried the whole first turn: history came from the store.
    third_input = stub.bodies[2][2]["input"]
    assert [i.get("content") for i in third_input if i.get("role") == "user"] == [
        "Weather in Paris?",
        "And Oslo?",
    ]
    assert any(i.get("type") == "function_call_output" and "Paris" in i["output"] for i in third_input)
    # ... and tract sees tract messages: tool queries, search, the branch.
    t = session.tract
    results = t.find_tool_results("get_weather")
    assert [r.content for r in results] == ["Paris: sunny, 21 C", "Oslo: sunny, 21 C"]
    assert [h.commit.content for h in t.search("Oslo", role="user")] == ["And Oslo?"]
    assert any(b.name == "sessions/user-42" for b in t.branches())
    assert asyncio.run(session.get_items(limit=2)) == items[-2:]
    session.close()


def test_a_session_continues_in_a_new_process_with_identical_history(tmp_path) -> None:
    store = tmp_path / "agents.tract"
    stub = StubLLM([response(1, call(1, "Paris")), response(2, said(2, "Sunny."))])
    try:
        session = TractSession("s1", store=store)
        asyncio.run(Runner.run(agent_on(stub), "Weather in Paris?", session=session))
    finally:
        stub.close()
    before = asyncio.run(session.get_items())
    session.close()
    script = f"""
import asyncio, json, sys
sys.path.insert(0, {str(REPO / "tests" / "python")!r})
from test_openai_agents import StubLLM, agent_on, response, said, Runner, TractSession
stub = StubLLM([response(9, said(9, "Still sunny."))])
session = TractSession("s1", store={str(store)!r})
history = asyncio.run(session.get_items())
result = asyncio.run(Runner.run(agent_on(stub), "Again?", session=session))
stub.close()
print(json.dumps({{"history": history, "sent": stub.bodies[0][2]["input"],
                  "after": asyncio.run(session.get_items()), "out": result.final_output}}))
"""
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=dict(os.environ)
    )
    assert run.returncode == 0, run.stderr
    child = json.loads(run.stdout.strip().splitlines()[-1])
    assert child["history"] == before
    assert child["out"] == "Still sunny."
    # The model in the new process was sent the stored history, then the new input.
    assert child["sent"][: len(before)] == before
    with tract.Tract.open(store, branch="sessions/s1") as t:
        assert t.compile().to_responses() == child["after"]
        assert len(child["after"]) == len(before) + 2


def test_pop_and_clear_move_the_branch_and_the_reflog_keeps_everything(any_store) -> None:
    session = TractSession("p", store=any_store)
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "3 matches"},
    ]
    asyncio.run(session.add_items(items))
    assert asyncio.run(session.pop_item()) == items[2]
    # The call now has no result: a marked error output keeps the history valid.
    now = asyncio.run(session.get_items())
    assert now[:2] == items[:2]
    assert now[2]["call_id"] == "c1" and now[2]["output"] == tract.SYNTHETIC_RESULT
    assert asyncio.run(session.pop_item()) == items[1]
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == []
    assert asyncio.run(session.pop_item()) is None
    moves = session.tract.reflog("sessions/p")
    assert [m["reason"].split(":")[0] for m in moves[:3]] == ["clear", "pop", "pop"]
    # The cleared history comes back from the reflog.
    session.tract.reset(moves[2]["old"])
    assert asyncio.run(session.get_items()) == items
    # A cleared session starts over in the same branch.
    asyncio.run(session.clear_session())
    asyncio.run(session.add_items([{"role": "user", "content": "again"}]))
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "again"}]


def test_pop_item_after_an_edit_takes_the_answer_and_keeps_the_edit(any_store) -> None:
    """The integration guide's flow: a real run, an edit of its tool result in tract, then
    `pop_item` of the final answer; the next run sends the edited result."""
    stub = StubLLM(
        [
            response(1, call(1, "Paris")),
            response(2, said(2, "Sunny in Paris.")),
            response(3, said(3, "Still sunny.")),
        ]
    )
    try:
        session = TractSession("pop-edit", store=any_store)
        agent = agent_on(stub)
        asyncio.run(Runner.run(agent, "Weather in Paris?", session=session))
        t = session.tract
        t.edit(t.find_tool_results("get_weather")[0].commit_hash, "Paris: sunny")
        last = asyncio.run(session.pop_item())
        assert last["role"] == "assistant" and last["content"][0]["text"] == "Sunny in Paris."
        items = asyncio.run(session.get_items())
        assert items[-1]["output"] == "Paris: sunny", items[-1]
        assert [i.get("type") for i in items][-2:] == ["function_call", "function_call_output"]
        asyncio.run(Runner.run(agent, "And now?", session=session))
    finally:
        stub.close()
    sent = stub.bodies[2][2]["input"]
    outputs = [i["output"] for i in sent if i.get("type") == "function_call_output"]
    assert outputs == ["Paris: sunny"], sent
    assert not any(i.get("role") == "assistant" and "Sunny in Paris." in json.dumps(i) for i in sent)
    session.close()


def test_edits_and_compression_in_tract_show_in_the_session() -> None:
    session = TractSession("e")
    asyncio.run(
        session.add_items(
            [
                {"role": "user", "content": "find it"},
                {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "x" * 5000, "id": "o1"},
            ]
        )
    )
    t = session.tract
    result = t.find_tool_results("grep")[0]
    t.edit(result.commit_hash, "grep: 5000 x's (trimmed)")
    items = asyncio.run(session.get_items())
    assert items[2] == {"type": "function_call_output", "call_id": "c1", "id": "o1", "output": "grep: 5000 x's (trimmed)"}


def test_bad_items_raise_and_add_nothing() -> None:
    session = TractSession("bad")
    asyncio.run(session.add_items([{"role": "user", "content": "kept"}]))
    for bad, words in [
        ({"role": "robot", "content": "x"}, "unknown message role 'robot'"),
        ({"type": "function_call", "name": "f", "arguments": "{}"}, "'call_id'"),
        ({"content": "no role or type"}, "needs a 'type'"),
        ("not a dict", "must be a JSON object"),
    ]:
        with pytest.raises(tract.InvalidInputError, match="message 2") as raised:
            asyncio.run(session.add_items([{"role": "user", "content": "lost"}, bad]))
        assert words in str(raised.value)
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "kept"}]
    # Unknown item types are kept whole, never dropped.
    odd = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "q"}}
    asyncio.run(session.add_items([odd]))
    assert asyncio.run(session.get_items())[-1] == odd
    with pytest.raises(tract.InvalidInputError):
        TractSession("has space")
    with pytest.raises(ValueError):
        TractSession("")


def test_importing_tract_imports_no_framework() -> None:
    code = (
        "import sys, tract, tract.integrations, tract.integrations.openai_agents\n"
        "print(sorted(m for m in ('agents', 'openai') if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_a_session_that_only_adds_items_leaves_view_checkpoints(any_store) -> None:
    # The SDK adds items and reads them back; nothing compiles a view in this process. The
    # branch is checkpointed as it grows all the same (at least every 16 commits for a view
    # this small), on both backends, and a new session reads back what was added.
    session = TractSession("grows", store=any_store)
    for k in range(30):
        asyncio.run(session.add_items([
            {"role": "user", "content": f"question {k}"},
            {"role": "assistant", "content": f"answer {k}"},
        ]))
    report = tract.Tract.open(any_store).fsck()
    assert report["clean"], report["problems"]
    assert report["checkpoints_checked"] == 1
    assert 0 <= report["past_checkpoint"]["sessions/grows"] <= 16
    fresh = TractSession("grows", store=any_store)
    assert len(asyncio.run(fresh.get_items())) == 60
