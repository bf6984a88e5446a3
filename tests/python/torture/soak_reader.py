"""A concurrency-soak reader: reads every branch in a loop until stopped, and reports what
should never be seen.

    python -m torture.soak_reader STORE REPORT SEED BRANCH...

For each branch, each round: its first-parent history is one linear chain from a root (each
commit's parent is the next one in the log, no commit twice); each writer's messages (`TAG N`)
are numbered 0, 1, 2, ... with no gap and no repeat (a writer's message is durable before it
writes the next, so a reader seeing N also sees N-1); the branch never moves back (the head
seen in the last round is in this round's history); every compression's sources are older
commits of its history; and the compiled view is what the history implies
(torture.common.view_problems).
Problems and progress go to REPORT as JSON lines; SIGTERM ends it after the current round.
"""

from __future__ import annotations

import os
import pathlib
import random
import signal
import sys
import time
import traceback

import tract
from torture.common import Reporter, first_line, view_problems

stopping = False


def stop(_signum: int, _frame: object) -> None:
    """SIGTERM: finish the round, then write the summary and exit."""
    global stopping
    stopping = True


def chain_problems(branch: str, log: list[tract.CommitInfo], last_head: str | None) -> list[str]:
    """What is wrong with one branch's first-parent history `log` (newest first)."""
    problems = []
    hashes = [c.commit_hash for c in log]
    if len(set(hashes)) != len(hashes):
        problems.append(f"{branch}: a commit appears twice in the history")
    for newer, older in zip(log, log[1:]):
        if newer.parents[:1] != [older.commit_hash]:
            problems.append(f"{branch}: {newer.short_hash}'s first parent is not {older.short_hash}")
            break
    if log and log[-1].parents:
        problems.append(f"{branch}: the history does not end at a root")
    if last_head is not None and last_head not in set(hashes):
        problems.append(f"{branch}: head {last_head[:10]} seen before is no longer in the history")
    numbers: dict[str, list[int]] = {}
    for c in reversed(log):
        if c.op == "append":
            tag, _, n = first_line(c.content).partition(" ")
            numbers.setdefault(tag, []).append(int(n))
    for tag, ns in numbers.items():
        if ns != list(range(len(ns))):
            problems.append(f"{branch}: messages of {tag} out of order or missing: {ns[:50]}")
    # A compression's sources are older commits of the same history: appends, or the summary of
    # an earlier compression that the range spanned.
    older = {h: i for i, h in enumerate(hashes)}
    for i, c in enumerate(log):
        if c.op == "compress" and not all(older.get(s, -1) > i for s in c.sources):
            problems.append(f"{branch}: compress {c.short_hash} has sources outside the history")
    return problems


def main() -> None:
    """Entry point: STORE REPORT SEED BRANCH..."""
    store, report_path, seed, branches = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
    signal.signal(signal.SIGTERM, stop)
    rng = random.Random(f"soak-reader/{seed}/{os.getpid()}")
    report = Reporter(report_path)
    parent = os.getppid()
    handles: dict[str, tract.Tract] = {}
    heads: dict[str, str | None] = {b: None for b in branches}
    iterations = 0
    while not stopping and os.getppid() == parent:
        for branch in branches:
            try:
                if branch not in handles or rng.random() < 0.3:
                    handles[branch] = tract.Tract.open(store, branch=branch)
                h = handles[branch]
                log = h.log()
                problems = chain_problems(branch, log, heads[branch])
                problems += view_problems(h, log)
                if log:
                    heads[branch] = log[0].commit_hash
                h.branches()
                h.status()
            except Exception as e:  # noqa: BLE001 (every error a reader meets is reported)
                problems = [f"{branch}: {type(e).__name__}: {e}\n{traceback.format_exc()}"]
                handles.pop(branch, None)
            for p in problems:
                report.write({"type": "problem", "iteration": iterations, "problem": p})
        iterations += 1
        if iterations % 10 == 0:
            report.write({"type": "progress", "iterations": iterations})
        time.sleep(rng.uniform(0, 0.02))
    report.write({"type": "done", "iterations": iterations})


if __name__ == "__main__":
    main()
