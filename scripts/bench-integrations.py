#!/usr/bin/env python3
"""Framework drop-ins against the frameworks' own stores, measured in the same run.

OpenAI Agents SDK: a session of N items (turns of a user message, a function call, its output
and an assistant message, as the SDK stores them) in tract's ``TractSession`` (a store file)
and in the SDK's ``SQLiteSession`` (an SQLite file). For each: adding the items turn by turn,
``get_items()`` on a session object opened fresh (its first read) and again (warm), and
``get_items(limit=20)``.

LangGraph: a thread whose checkpoints grow its ``messages`` channel by ``--items / 100``
messages a step (a user message, an assistant tool call, the tool's result, the answer) to
``--items`` messages, put through tract's ``TractSaver`` and LangGraph's ``SqliteSaver``;
then ``get_tuple`` of the newest checkpoint on a saver opened fresh (first) and again (warm),
and ``list(limit=10)``. Skipped with a message when ``langgraph-checkpoint-sqlite`` is not
installed.

Prints JSON: the median of ``--runs`` runs, in milliseconds, and the ratio tract / SQLite.

    python scripts/bench-integrations.py [--items 10000] [--runs 5]
"""

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import agent_turns


def turn(k: int) -> list[dict]:
    return agent_turns.turn(k, f"src/config_{k}.py:{k}: SETTING_{k} = ...\n" * 4)


def ms(f) -> float:
    start = time.perf_counter()
    f()
    return (time.perf_counter() - start) * 1000


def one_run(items: int, directory: Path, run: int) -> dict:
    from agents import SQLiteSession

    from tract.integrations.openai_agents import TractSession

    turns = [turn(k) for k in range(items // 4)]
    makers = {
        "tract": lambda: TractSession("bench", store=directory / f"tract-{run}.tract"),
        "sqlite": lambda: SQLiteSession("bench", db_path=directory / f"sqlite-{run}.db"),
    }
    out = {}
    for name, make in makers.items():
        session = make()

        def add_all() -> None:
            for t in turns:
                asyncio.run(session.add_items(t))

        figures = {"add_turns_ms": ms(add_all)}
        session.close()
        fresh = make()
        figures["get_items_first_ms"] = ms(lambda: asyncio.run(fresh.get_items()))
        figures["get_items_warm_ms"] = ms(lambda: asyncio.run(fresh.get_items()))
        figures["get_items_limit20_ms"] = ms(lambda: asyncio.run(fresh.get_items(limit=20)))
        assert len(asyncio.run(fresh.get_items())) == len(turns) * 4
        fresh.close()
        out[name] = figures
    return out


def lc_messages(k: int) -> list:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    call = {"id": f"call_{k}", "name": "grep", "args": {"pattern": f"SETTING_{k}"}}
    return [
        HumanMessage(content=f"question {k}: where is setting {k} read?", id=f"h{k}"),
        AIMessage(content="", tool_calls=[call], id=f"a{k}"),
        ToolMessage(content=f"src/config_{k}.py:{k}: SETTING_{k} = ...\n" * 4, tool_call_id=f"call_{k}", name="grep", id=f"t{k}"),
        AIMessage(content=f"Setting {k} is read in src/config_{k}.py.", id=f"r{k}"),
    ]


def langgraph_run(items: int, directory: Path, run: int) -> dict:
    import sqlite3

    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    from tract.integrations.langgraph import TractSaver

    steps = 100
    per_step = max(items // steps // 4, 1)
    makers = {
        "tract": lambda: TractSaver(directory / f"lg-tract-{run}.tract"),
        "sqlite": lambda: SqliteSaver(sqlite3.connect(directory / f"lg-sqlite-{run}.db", check_same_thread=False)),
    }
    out = {}
    for name, make in makers.items():
        saver = make()
        config = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
        messages: list = []
        version = None

        def put_all() -> None:
            nonlocal config, version
            for step in range(steps):
                for k in range(step * per_step, (step + 1) * per_step):
                    messages.extend(lc_messages(k))
                version = saver.get_next_version(version, None)
                checkpoint = empty_checkpoint()
                checkpoint["channel_values"] = {"messages": list(messages)}
                checkpoint["channel_versions"] = {"messages": version}
                config = saver.put(config, checkpoint, {"source": "loop", "step": step}, {"messages": version})

        figures = {"put_steps_ms": ms(put_all)}
        fresh = make()
        latest = {"configurable": {"thread_id": "bench"}}
        figures["get_tuple_first_ms"] = ms(lambda: fresh.get_tuple(latest))
        figures["get_tuple_warm_ms"] = ms(lambda: fresh.get_tuple(latest))
        figures["list_limit10_ms"] = ms(lambda: list(fresh.list(latest, limit=10)))
        got = fresh.get_tuple(latest)
        assert got is not None and len(got.checkpoint["channel_values"]["messages"]) == len(messages)
        out[name] = figures
    return out


def medians(runs: list, names: tuple) -> dict:
    part: dict = {}
    for name in names:
        part[name] = {k: round(statistics.median(r[name][k] for r in runs), 2) for k in runs[0][name]}
    t, s = part[names[0]], part[names[1]]
    part["ratio_tract_to_sqlite"] = {k: round(t[k] / s[k], 2) for k in t}
    return part


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    result: dict = {"items": args.items, "runs": args.runs}
    with tempfile.TemporaryDirectory() as d:
        runs = [one_run(args.items, Path(d), r) for r in range(args.runs)]
        result["openai_agents"] = medians(runs, ("tract", "sqlite"))
        try:
            import langgraph.checkpoint.sqlite  # noqa: F401
        except ImportError:
            result["langgraph"] = "skipped: pip install langgraph-checkpoint-sqlite"
        else:
            lg = [langgraph_run(args.items, Path(d), r) for r in range(args.runs)]
            result["langgraph"] = medians(lg, ("tract", "sqlite"))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
