"""tract as a LangGraph checkpointer: LangGraph's own conformance suite, a real graph with tool
calls resumed in a new process, and the thread's messages seen as tract messages."""

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402

import tract  # noqa: E402
from tract.integrations.langgraph import TractSaver  # noqa: E402
from test_sessions import TRACT_BIN  # noqa: E402


def test_the_conformance_suite_passes_on_both_backends(any_store, tmp_path):
    made = []

    @checkpointer_test(name="TractSaver")
    async def saver():
        # A fresh store per capability suite: the suite expects empty savers.
        if any_store.startswith("postgres"):
            store = any_store.replace("schema=", f"schema=s{len(made)}_")
        else:
            store = str(tmp_path / f"s{len(made)}.redb")
        s = TractSaver(store)
        made.append(s)
        yield s
        s.close()

    report = asyncio.run(validate(saver))
    detected = {name for name, r in report.results.items() if r.detected}
    assert detected == {"put", "put_writes", "get_tuple", "list", "delete_thread", "copy_thread"}
    failed = {name: r.failures for name, r in report.results.items() if r.detected and not r.passed}
    assert not failed, failed
    assert report.passed_all_base() and report.passed_all()
    assert sum(r.tests_passed for r in report.results.values()) > 50


# A graph with the state LangGraph's agents use: `messages`, a model that calls a tool, the
# tool, and the model's answer. The model is scripted (no network): it calls `lookup` once per
# question, then answers from the tool's result.
GRAPH = textwrap.dedent(
    """
    import sys
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from tract.integrations.langgraph import TractSaver

    # What each answer cost, as LangChain reports it (its input counts the cached tokens too).
    COST = {
        "usage_metadata": {"input_tokens": 1200, "output_tokens": 30, "total_tokens": 1230,
                           "input_token_details": {"cache_read": 1000}},
        "response_metadata": {"model_name": "scripted-1"},
    }

    def model(state):
        last = state["messages"][-1]
        if isinstance(last, HumanMessage):
            n = sum(isinstance(m, HumanMessage) for m in state["messages"])
            call = {"id": f"call_{n}", "name": "lookup", "args": {"q": last.content}}
            return {"messages": [AIMessage(content="", tool_calls=[call], id=f"ai_call_{n}", **COST)]}
        return {"messages": [AIMessage(content=f"Answer: {last.content}", id=f"ai_answer_{last.tool_call_id}", **COST)]}

    def tools(state):
        call = state["messages"][-1].tool_calls[0]
        result = f"found {call['args']['q']} in config.py:42"
        return {"messages": [ToolMessage(content=result, tool_call_id=call["id"], name="lookup", id=f"tool_{call['id']}")]}

    def route(state):
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else END

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", tools)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", route, ["tools", END])
    builder.add_edge("tools", "model")
    graph = builder.compile(checkpointer=TractSaver(sys.argv[1]))
    config = {"configurable": {"thread_id": "support-1"}}
    out = graph.invoke({"messages": [HumanMessage(content=sys.argv[2], id=sys.argv[3])]}, config)
    print("|".join(f"{m.type}:{m.content}" for m in out["messages"]))
    """
)


def run_graph(store: str, question: str, message_id: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", GRAPH, store, question, message_id],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split("|")


def test_a_graph_with_tool_calls_resumes_in_a_new_process_and_its_messages_are_tract_messages(
    any_store,
):
    first = run_graph(any_store, "DATABASE_URL", "h1")
    assert first == [
        "human:DATABASE_URL",
        "ai:",
        "tool:found DATABASE_URL in config.py:42",
        "ai:Answer: found DATABASE_URL in config.py:42",
    ]
    # Another process resumes the thread from its checkpoint: the history is all there.
    second = run_graph(any_store, "REDIS_URL", "h2")
    assert second[:4] == first
    assert second[4:] == [
        "human:REDIS_URL",
        "ai:",
        "tool:found REDIS_URL in config.py:42",
        "ai:Answer: found REDIS_URL in config.py:42",
    ]
    saver = TractSaver(any_store)
    config = {"configurable": {"thread_id": "support-1"}}
    latest = saver.get_tuple(config)
    assert latest is not None
    assert [m.content for m in latest.checkpoint["channel_values"]["messages"]] == [
        s.split(":", 1)[1] for s in second
    ]
    history = list(saver.list(config))
    assert len(history) >= 8 and history[0].config == latest.config
    # The thread's branch holds the conversation as tract messages, each once.
    with tract.Tract.open(any_store, branch="threads/support-1") as t:
        view = t.compile().to_openai()
        assert [m["role"] for m in view] == ["user", "assistant", "tool", "assistant"] * 2
        assert view[1]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"q": "DATABASE_URL"}'}
        assert view[2] == {"role": "tool", "tool_call_id": "call_1", "content": "found DATABASE_URL in config.py:42"}
        hits = t.search("REDIS_URL", tool="lookup")
        assert [h.commit.role for h in hits] == ["assistant", "tool"]
        turns = t.find_tool_turns("lookup")
        assert len(turns) == 2 and all(c.state == "ok" for turn in turns for c in turn.calls)
        ops = {c.op for c in t.log()}
        assert ops == {"append", "record"}
        # What the answers cost, each once, in Anthropic's names (LangChain counts the cached
        # tokens in its input).
        usage = t.usage()
        assert usage["request_count"] == 4
        assert usage["totals"] == {
            "input_tokens": 4 * 200,
            "output_tokens": 4 * 30,
            "cache_read_input_tokens": 4 * 1000,
            "cache_creation_input_tokens": 0,
        }
        assert [m["model"] for m in usage["by_model"]] == ["scripted-1"]
    saver.close()
    if not any_store.startswith("postgres"):
        log = subprocess.run(
            [str(TRACT_BIN), "--store", any_store, "--branch", "threads/support-1", "log"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert log.returncode == 0, log.stderr
        assert "lookup" in log.stdout and "found REDIS_URL in config.py:42" in log.stdout
        assert "record -" in log.stdout and "langgraph.checkpoint" in log.stdout


def put(saver: TractSaver, thread: str, parent=None, **values):
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    versions = {k: saver.get_next_version(None, None) for k in values}
    checkpoint["channel_versions"] = versions
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if parent:
        config["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    return saver.put(config, checkpoint, {"source": "input", "step": -1}, versions)


def test_copy_forks_the_branch_and_delete_keeps_the_reflog(store_path):
    saver = TractSaver(store_path)
    first = put(saver, "a", x=1)
    saver.copy_thread("a", "b")
    # Both threads go on alone from the shared checkpoint.
    put(saver, "a", parent=first, x=2)
    put(saver, "b", parent=first, x=3)
    values = lambda thread: saver.get_tuple({"configurable": {"thread_id": thread}}).checkpoint["channel_values"]  # noqa: E731
    assert (values("a"), values("b")) == ({"x": 2}, {"x": 3})
    with tract.Tract.open(store_path) as t:
        a_log = {c.commit_hash for c in t.log(start="threads/a")}
        b_log = {c.commit_hash for c in t.log(start="threads/b")}
        assert len(a_log & b_log) == 1, "the fork shares the first checkpoint's commit"
    with pytest.raises(ValueError, match="exists already"):
        saver.copy_thread("a", "b")
    tip = next(b.head for b in saver._root.branches() if b.name == "threads/a")
    saver.delete_thread("a")
    assert saver.get_tuple({"configurable": {"thread_id": "a"}}) is None
    assert list(saver.list({"configurable": {"thread_id": "a"}})) == []
    with tract.Tract.open(store_path) as t:
        assert t.reflog("threads/a")[0]["old"] == tip
    # A new thread of the same id starts empty; b is untouched.
    put(saver, "a", x=9)
    assert values("a") == {"x": 9} and values("b") == {"x": 3}


def test_thread_ids_of_any_text_have_a_branch_and_list_gives_them_back(store_path):
    saver = TractSaver(store_path)
    odd = ["with space", "ü/ñ", "a_b", "x" * 3]
    for thread in odd:
        put(saver, thread, v=thread)
    listed = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
    assert listed == set(odd)
    for thread in odd:
        assert saver.get_tuple({"configurable": {"thread_id": thread}}).checkpoint["channel_values"] == {"v": thread}
    with pytest.raises(ValueError, match="thread id"):
        saver.get_tuple({"configurable": {"thread_id": ""}})
    with pytest.raises(KeyError):
        saver.get_tuple({"configurable": {}})
    assert saver.get_tuple({"configurable": {"thread_id": "with space", "checkpoint_id": "nope"}}) is None


def test_async_twins_and_writes(store_path):
    async def main():
        saver = TractSaver(store_path)
        config = await asyncio.to_thread(put, saver, "t", x=1)
        await saver.aput_writes(config, [("x", 5), ("y", 6)], task_id="task-1")
        await saver.aput_writes(config, [("x", 7)], task_id="task-1")  # the first write stays
        got = await saver.aget_tuple({"configurable": {"thread_id": "t"}})
        listed = [c async for c in saver.alist({"configurable": {"thread_id": "t"}})]
        await saver.adelete_thread("t")
        gone = await saver.aget_tuple({"configurable": {"thread_id": "t"}})
        return got, listed, gone

    got, listed, gone = asyncio.run(main())
    assert got.pending_writes == [("task-1", "x", 5), ("task-1", "y", 6)]
    assert listed[0].pending_writes == got.pending_writes
    assert gone is None


def test_import_does_not_load_langgraph():
    code = "import sys, tract; print('langgraph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_records_hold_the_checkpoint_and_the_view_only_messages(store_path):
    from langchain_core.messages import AIMessage, HumanMessage

    saver = TractSaver(store_path)
    first = put(saver, "m", messages=[HumanMessage(content="hi", id="h1")])
    put(saver, "m", parent=first, messages=[HumanMessage(content="hi", id="h1"), AIMessage(content="hello", id="a1")])
    with tract.Tract.open(store_path, branch="threads/m") as t:
        assert [m["content"] for m in t.compile().to_openai()] == ["hi", "hello"]
        checkpoints = t.records("langgraph.checkpoint")
        assert len(checkpoints) == 2
        data = json.loads(checkpoints[0].data)
        assert data["parent"] == first["configurable"]["checkpoint_id"]
        assert set(data) >= {"ns", "id", "checkpoint", "metadata", "blobs", "refs"}
        assert t.fsck()["clean"]


def test_a_message_the_mirror_cannot_take_does_not_stop_the_checkpoint(store_path):
    from langchain_core.messages import ToolMessage

    saver = TractSaver(store_path)
    # A tool message with an empty call id: not a valid tract message, still a valid state.
    bad = ToolMessage(content="orphan", tool_call_id="", id="t1")
    put(saver, "o", messages=[bad])
    got = saver.get_tuple({"configurable": {"thread_id": "o"}})
    assert got.checkpoint["channel_values"]["messages"][0].content == "orphan"
    with tract.Tract.open(store_path, branch="threads/o") as t:
        assert t.compile().to_openai() == []


