#!/usr/bin/env python3
"""Framework drop-ins against the frameworks' own stores, measured in the same run.

OpenAI Agents SDK: a session of N items (turns of a user message, a function call, its output
and an assistant message, as the SDK stores them) in tract's ``TractSession`` (a store file)
and in the SDK's ``SQLiteSession`` (an SQLite file). For each: adding the items turn by turn,
``get_items()`` on a session object opened fresh (its first read) and again (warm), and
``get_items(limit=20)``. Prints JSON: the median of ``--runs`` runs, in milliseconds, and the
ratio tract / SQLite.

    python scripts/bench-integrations.py [--items 10000] [--runs 5]
"""

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path


def turn(k: int) -> list[dict]:
    return [
        {"role": "user", "content": f"question {k}: where is setting {k} read?"},
        {
            "type": "function_call",
            "id": f"fc_{k}",
            "call_id": f"call_{k}",
            "name": "grep",
            "arguments": json.dumps({"pattern": f"SETTING_{k}"}),
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": f"call_{k}", "output": f"src/config_{k}.py:{k}: SETTING_{k} = ...\n" * 4},
        {
            "type": "message",
            "id": f"msg_{k}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"Setting {k} is read in src/config_{k}.py.", "annotations": []}],
        },
    ]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        runs = [one_run(args.items, Path(d), r) for r in range(args.runs)]
    result: dict = {"items": args.items, "runs": args.runs, "openai_agents": {}}
    for name in ("tract", "sqlite"):
        result["openai_agents"][name] = {
            k: round(statistics.median(r[name][k] for r in runs), 2) for k in runs[0][name]
        }
    t, s = result["openai_agents"]["tract"], result["openai_agents"]["sqlite"]
    result["openai_agents"]["ratio_tract_to_sqlite"] = {k: round(t[k] / s[k], 2) for k in t}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
