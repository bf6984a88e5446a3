"""The crash-torture reader: reads the store in a loop while the writer works and is killed,
and reports every torn state it sees.

    python -m torture.reader STORE ACKS REPORT SEED

Each round it reads the writer's acknowledgements first, then the store, so everything acked
before the round must be visible: each acked commit of `main` in `main`'s history, every other
acked commit by hash. Then it checks the branch as it found it (torture.common.view_problems):
every batch whole, every compression whole, the compiled view what the history implies. Half
the rounds open a new handle (a fresh open of the file), the others reuse one. Problems and
progress go to REPORT as JSON lines; SIGTERM ends it after the current round.
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
from torture.common import AckReader, Reporter, view_problems

stopping = False


def stop(_signum: int, _frame: object) -> None:
    """SIGTERM: finish the round, then write the summary and exit."""
    global stopping
    stopping = True


def main() -> None:
    """Entry point: STORE ACKS REPORT SEED."""
    store, acks, report_path, seed = (
        sys.argv[1],
        pathlib.Path(sys.argv[2]),
        pathlib.Path(sys.argv[3]),
        int(sys.argv[4]),
    )
    signal.signal(signal.SIGTERM, stop)
    rng = random.Random(f"reader/{seed}")
    report = Reporter(report_path)
    parent = os.getppid()
    acked_main: list[str] = []
    acked_other: list[str] = []
    checked_other = 0
    reader = AckReader(acks)
    handle: tract.Tract | None = None
    iterations = 0
    while not stopping and os.getppid() == parent:
        for rec in reader.read_new():
            if rec["type"] == "ack":
                (acked_main if rec["branch"] == "main" else acked_other).extend(rec["commits"])
        try:
            if handle is None or rng.random() < 0.5:
                if handle is not None:
                    handle.close()
                handle = tract.Tract.open(store, branch="main")
            log = handle.log()
            present = {c.commit_hash for c in log}
            missing = [h for h in acked_main if h not in present]
            problems = [f"acked commit {h[:10]} of main is not in its history" for h in missing[:5]]
            for h in acked_other[checked_other:]:
                handle.get_commit(h)  # raises NotFoundError if an acked commit is gone
            checked_other = len(acked_other)
            problems += view_problems(handle, log)
        except Exception as e:  # noqa: BLE001 (every error a reader meets is reported)
            problems = [f"{type(e).__name__}: {e}\n{traceback.format_exc()}"]
            handle = None
        for p in problems:
            report.write({"type": "problem", "iteration": iterations, "problem": p})
        iterations += 1
        if iterations % 20 == 0:
            report.write({"type": "progress", "iterations": iterations})
        time.sleep(rng.uniform(0, 0.02))
    report.write({"type": "done", "iterations": iterations})


if __name__ == "__main__":
    main()
