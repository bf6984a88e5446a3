#!/usr/bin/env python3
"""tract beside the OpenAI Agents SDK's ``SQLiteSession``, row by row, through Python.

One seeded coding-agent workload (``agent_turns``: a user message, a ``function_call``, its
``function_call_output`` of about 1 KB, an assistant message; every text distinct) fills, for
each of ``--sizes``, a tract store (its default settings: credential scrubbing on) and an
SQLite file (``SQLiteSession``'s own settings, WAL). Then, each measurement in a new process of
its own (the interpreter's start and the imports are not counted), alternating tract and SQLite:

- ``cold``: open the store and read the whole view as OpenAI messages: tract
  ``Tract.open(path, branch=...)`` then ``compile().to_openai()``; ``SQLiteSession(...)`` then
  ``get_items()``. Milliseconds, and the process's own peak RSS (``VmHWM`` of
  ``/proc/self/status``: a child's ``ru_maxrss`` can carry its parent's peak) in MiB.
- ``appends``: ``--appends`` durable single appends on a copy of the filled session, opened,
  read once (``get_items()``, as the SDK's runner reads a session before a turn; the typed
  appends' handle compiles its view) and written to once before the timing starts (a handle
  that never read its view builds it for the first checkpoint it writes: a cold read's cost,
  once a process), the items cycling
  through a turn: tract's typed appends (``t.user``, ``t.assistant`` with its call,
  ``t.tool_result``, ``t.assistant``), tract's ``TractSession.add_items([item])``,
  ``SQLiteSession.add_items([item])``. Appends per second.
- ``step``: an agent's step at that size (on a copy of the filled session): one append and
  then the whole model input (tract:
  a typed append, then ``compile().to_openai()``; SQLite: ``add_items`` then ``get_items()``).
  Milliseconds a step, median over ``--steps`` steps.

Figures are medians over ``--runs`` runs; ratios are speed ratios tract ÷ SQLite (above 1:
tract is faster) and, for memory, tract's peak ÷ SQLite's. The machine's load average is printed
before and after. JSON goes to stdout, progress to stderr.

    python scripts/bench-peers.py [--sizes 1000,10000,50000] [--runs 5] [--appends 300]
        [--steps 30] [--dir DIR]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agent_turns  # noqa: E402

SESSION = "bench"


def output(k: int) -> str:
    """The grep output of turn ``k``: about 1 KB of distinct text."""
    return "".join(f"src/module_{k}_{j}.py:{j + 1}: SETTING_{k}_{j} = read_setting('{k}-{j}')\n" for j in range(14))


def items(n: int) -> list[dict]:
    out = []
    k = 0
    while len(out) < n:
        out += agent_turns.turn(k, output(k))
        k += 1
    return out[:n]


def fill(n: int, d: Path) -> tuple[Path, Path]:
    """A tract store and an SQLite file, each holding the same ``n`` items."""
    import asyncio

    from agents import SQLiteSession

    from tract.integrations.openai_agents import TractSession

    data = items(n)
    tract_path, sqlite_path = d / f"tract-{n}.tract", d / f"sqlite-{n}.db"
    for make in (lambda: TractSession(SESSION, store=tract_path), lambda: SQLiteSession(SESSION, db_path=sqlite_path)):
        s = make()
        for k in range(0, n, 1000):
            asyncio.run(s.add_items(data[k:k + 1000]))
        s.close()
    return tract_path, sqlite_path


CHILD = r"""
import asyncio, json, sys, time
which, path, session, what, count = sys.argv[1:6]
count = int(count)

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

sys.path.insert(0, sys.argv[6])
import agent_turns
if which == "tract":
    import tract
    from tract.integrations.openai_agents import TractSession
else:
    from agents import SQLiteSession

def item(k):
    return agent_turns.turn(10**7 + k // 4, "x" * 900 + str(k))[k % 4]

out = {}
if what == "cold":
    start = time.perf_counter()
    if which == "tract":
        t = tract.Tract.open(path, branch="sessions/" + session)
        n = len(t.compile().to_openai())
    else:
        s = SQLiteSession(session, db_path=path)
        n = len(asyncio.run(s.get_items()))
    out["ms"] = (time.perf_counter() - start) * 1000
    out["n"] = n
    out["hwm_mib"] = hwm()
elif what in ("typed", "add_items"):
    loop = asyncio.new_event_loop()
    if which == "tract" and what == "typed":
        t = tract.Tract.open(path, branch="sessions/" + session)
        t.compile()
        def append(k):
            m = k % 4
            if m == 0:
                t.user(f"question {k}: where is it read?")
            elif m == 1:
                t.assistant(None, tool_calls=[{"id": f"c{k}", "name": "grep", "arguments": {"pattern": str(k)}}])
            elif m == 2:
                t.tool_result(f"c{k - 1}", "grep", "x" * 900 + str(k))
            else:
                t.assistant(f"It is read in src/config_{k}.py.")
    else:
        s = TractSession(session, store=path) if which == "tract" else SQLiteSession(session, db_path=path)
        def append(k):
            loop.run_until_complete(s.add_items([item(k)]))
    # A session in use: read (as the SDK's runner reads it before a turn) and written to once.
    # What is timed is its appends, not its opening or its first read.
    if what == "add_items":
        loop.run_until_complete(s.get_items())
    append(-1)
    start = time.perf_counter()
    for k in range(count):
        append(k)
    out["per_s"] = count / (time.perf_counter() - start)
elif what == "step":
    loop = asyncio.new_event_loop()
    times = []
    if which == "tract":
        t = tract.Tract.open(path, branch="sessions/" + session)
        t.compile().to_openai()
        for k in range(count):
            start = time.perf_counter()
            t.user(f"step {k}: and now?")
            t.compile().to_openai()
            times.append((time.perf_counter() - start) * 1000)
    else:
        s = SQLiteSession(session, db_path=path)
        loop.run_until_complete(s.get_items())
        for k in range(count):
            start = time.perf_counter()
            loop.run_until_complete(s.add_items([{"role": "user", "content": f"step {k}: and now?"}]))
            loop.run_until_complete(s.get_items())
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    out["ms"] = times[len(times) // 2]
print(json.dumps(out))
"""


def child(which: str, path: Path, what: str, count: int = 0) -> dict:
    """Runs one measurement in a new process. A measurement that writes works on a copy of the
    filled store, so every measurement of a size sees the same store."""
    if what != "cold":
        with tempfile.TemporaryDirectory(dir=path.parent) as d:
            copy = Path(d) / path.name
            for f in path.parent.iterdir():
                if f.name.startswith(path.name):
                    (shutil.copytree if f.is_dir() else shutil.copy2)(f, Path(d) / f.name)
            return child_at(which, copy, what, count)
    return child_at(which, path, what, count)


def child_at(which: str, path: Path, what: str, count: int) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", CHILD, which, str(path), SESSION, what, str(count), str(Path(__file__).resolve().parent)],
        capture_output=True, text=True,
    )
    if run.returncode != 0:
        raise SystemExit(f"{which} {what} failed:\n{run.stderr}")
    return json.loads(run.stdout)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,10000,50000")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--appends", type=int, default=300)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rows", default="cold,appends,step")
    p.add_argument("--dir")
    args = p.parse_args()
    rows = set(args.rows.split(","))
    result = {"load_before": load(), "sizes": {}}
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        for n in map(int, args.sizes.split(",")):
            print(f"filling {n} items", file=sys.stderr)
            paths = dict(zip(("tract", "sqlite"), fill(n, Path(d))))
            runs = {}
            for r in range(args.runs):
                order = ("tract", "sqlite") if r % 2 == 0 else ("sqlite", "tract")
                for which in order:
                    if "cold" in rows:
                        c = child(which, paths[which], "cold")
                        runs.setdefault(f"{which}_cold_ms", []).append(c["ms"])
                        runs.setdefault(f"{which}_cold_hwm_mib", []).append(c["hwm_mib"])
                    if "step" in rows:
                        runs.setdefault(f"{which}_step_ms", []).append(
                            child(which, paths[which], "step", args.steps)["ms"])
                    if "appends" in rows:
                        kinds = ("typed", "add_items") if which == "tract" else ("add_items",)
                        for kind in kinds:
                            runs.setdefault(f"{which}_{kind}_per_s", []).append(
                                child(which, paths[which], kind, args.appends)["per_s"])
                print(f"  {n}: run {r + 1} of {args.runs}", file=sys.stderr)
            fig = {k: round(statistics.median(v), 3) for k, v in runs.items()}
            fig["runs"] = {k: [round(x, 2) for x in v] for k, v in runs.items()}
            ratios = {}
            if "cold" in rows:
                ratios["cold_speed"] = round(fig["sqlite_cold_ms"] / fig["tract_cold_ms"], 2)
                ratios["cold_peak_rss"] = round(fig["tract_cold_hwm_mib"] / fig["sqlite_cold_hwm_mib"], 2)
            if "step" in rows:
                ratios["step_speed"] = round(fig["sqlite_step_ms"] / fig["tract_step_ms"], 2)
            if "appends" in rows:
                ratios["typed_appends"] = round(fig["tract_typed_per_s"] / fig["sqlite_add_items_per_s"], 2)
                ratios["add_items_appends"] = round(fig["tract_add_items_per_s"] / fig["sqlite_add_items_per_s"], 2)
            result["sizes"][n] = {"figures": fig, "ratios": ratios}
    result["load_after"] = load()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
