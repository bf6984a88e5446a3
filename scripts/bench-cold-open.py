#!/usr/bin/env python3
"""A long-running agent's cold open from Python: a new process's `Tract.open` + `compile()` +
`to_openai()` on a store with a long history, against a store holding only that view (its
messages appended into a fresh store), the figure of issue "History without end" (target:
at most 1.5 times). Each side is timed in 7 new processes (the interpreter's own start is not
counted); medians are printed as JSON.

    target/release/tract-bench --history --commits 100000,1000000 --dir DIR
    python scripts/bench-cold-open.py DIR/history-100000.redb [--branch main]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from tract import Tract

CHILD = r"""
import sys, time
from tract import Tract
start = time.perf_counter()
t = Tract.open(sys.argv[1], branch=sys.argv[2])
messages = t.compile().to_openai()
print((time.perf_counter() - start) * 1000, len(messages))
"""


def timed(path: str, branch: str, runs: int = 7) -> tuple[float, int, list[float]]:
    times, n = [], 0
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, path, branch], capture_output=True, text=True, check=True
        ).stdout.split()
        times.append(float(out[0]))
        n = int(out[1])
    return statistics.median(times), n, times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("store")
    p.add_argument("--branch", default="main")
    args = p.parse_args()
    history = Tract.open(args.store, branch=args.branch)
    messages = history.compile().messages
    history.close()
    with tempfile.TemporaryDirectory() as d:
        only = os.path.join(d, "only-view.tract")
        t = Tract.open(only, branch=args.branch)
        t.append_many(messages)
        t.close()
        h_ms, h_n, h_runs = timed(args.store, args.branch)
        o_ms, o_n, o_runs = timed(only, args.branch)
    print(json.dumps({
        "history_ms": round(h_ms, 2),
        "only_view_ms": round(o_ms, 2),
        "ratio": round(h_ms / o_ms, 2),
        "target_ratio": 1.5,
        "messages_rendered": [h_n, o_n],
        "history_runs_ms": [round(x, 2) for x in h_runs],
        "only_view_runs_ms": [round(x, 2) for x in o_runs],
    }, indent=2))


if __name__ == "__main__":
    main()
