#!/usr/bin/env python3
"""The agent step from Python: a durable append, then the model input rendered again
(``t.compile().to_openai()``, ``to_anthropic()``, ``to_responses()``), on a warm handle whose view
holds N messages, the figures of issue "History without end" (docs/performance.md).

Two workloads:

- ``short``: N short chat messages (user and assistant, about 40 bytes each);
- ``tools``: N messages of agent turns: a user question, an assistant tool call, its ~1 KB
  grep-like result and the answer (what ``bench-appends.py`` appends, as chat messages).

For each, the store is filled in batches (not timed), the handle renders once (warm), and then
``--steps`` steps are timed: one ``t.user(...)`` (durable) and one render of the whole view;
medians and p95 in milliseconds are printed as JSON, with the append alone and the render
alone too.

    python scripts/bench-step.py [--sizes 10000] [--steps 50] [--workloads short,tools]
"""

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tract import Tract

WORDS = (
    "config settings load value default timeout retry client server request response cache "
    "session token user path file read write open close parse error warning handler route"
).split()


def tool_output(k: int) -> str:
    """About 1 KB of grep-like output, different for every k."""
    rng = random.Random(k)
    lines, size = [], 0
    while size < 1000:
        a, b, c, d = (rng.choice(WORDS) for _ in range(4))
        line = f"src/{a}/{b}_{c}.py:{rng.randrange(1, 2000)}:    {c}_{d} = {a}.{b}({d})\n"
        lines.append(line)
        size += len(line)
    return "".join(lines)


def messages(workload: str, start: int, count: int) -> list[dict]:
    out = []
    for i in range(start, start + count):
        k, part = divmod(i, 4) if workload == "tools" else divmod(i, 2)
        if workload == "short":
            role = "user" if part == 0 else "assistant"
            out.append({"role": role, "content": f"{role} message {i}: ok, next step please"})
        elif part == 0:
            out.append({"role": "user", "content": f"question {k}: where is setting {k} read?"})
        elif part == 1:
            out.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": f"call_{k}", "name": "grep", "arguments": json.dumps({"pattern": f"SETTING_{k}"})}]})
        elif part == 2:
            out.append({"role": "tool", "tool_call_id": f"call_{k}", "name": "grep", "content": tool_output(k)})
        else:
            out.append({"role": "assistant", "content": f"Setting {k} is read in src/config_{k}.py."})
    return out


def ms(values: list[float]) -> dict:
    s = sorted(values)
    return {"median_ms": round(statistics.median(s) * 1000, 3), "p95_ms": round(s[int(0.95 * (len(s) - 1))] * 1000, 3)}


def run(workload: str, size: int, steps: int, directory: Path) -> dict:
    path = directory / f"{workload}-{size}.tract"
    t = Tract.open(path)
    for start in range(0, size, 1000):
        t.append_many(messages(workload, start, min(1000, size - start)))
    figures = {}
    for render in ("to_openai", "to_anthropic", "to_responses"):
        getattr(t.compile(), render)()  # warm
        step, append, alone = [], [], []
        for i in range(steps):
            a = time.perf_counter()
            t.user(f"step {i}: and then?")
            b = time.perf_counter()
            out = getattr(t.compile(), render)()
            c = time.perf_counter()
            step.append(c - a)
            append.append(b - a)
            d = time.perf_counter()
            getattr(t.compile(), render)()
            alone.append(time.perf_counter() - d)
            del out
        figures[render] = {"step": ms(step), "append": ms(append), "render_again": ms(alone)}
    figures["messages_in_view"] = len(t.compile())
    t.close()
    return figures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10000")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--workloads", default="short,tools")
    p.add_argument("--dir", default=None)
    args = p.parse_args()
    out = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        for w in args.workloads.split(","):
            for n in (int(s) for s in args.sizes.split(",")):
                out[f"{w}-{n}"] = run(w, n, args.steps, Path(d))
                print(f"{w} {n}: " + ", ".join(f"{r} step {f['step']['median_ms']} ms" for r, f in out[f"{w}-{n}"].items() if isinstance(f, dict)), file=sys.stderr)
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
