#!/usr/bin/env python3
"""Durable single appends: tract's ``TractSession`` and the Agents SDK's ``SQLiteSession``.

Both are measured in the same run. Every append is ``await session.add_items([item])`` of one
item, as an agent's run adds them: the items cycle through a turn (a user message, a
``function_call``, its ``function_call_output`` of about 1 KB, an assistant message). Each
thread runs one event loop for all its appends, as an agent's runner does, and times each
``await`` (a new event loop per append would give ``SQLiteSession`` a new worker thread, so a
new connection, each time). tract's ``TractSession`` commits each ``add_items`` durably;
``SQLiteSession`` keeps its own settings (its ``journal_mode`` and ``synchronous`` are read
back and printed). Every item's text is distinct (tool output drawn from a fixed vocabulary by
a generator seeded with the item's number, session numbers in the ids), so neither side gets
repeated content for free.

- ``single_session``: for each of ``--sizes``, a session filled with that many items (in
  batches, as fast as each side takes them), closed and opened again, then ``--appends``
  single appends: appends per second over the whole loop, p50 and p99 latency.
- ``threads``: ``--threads`` sessions in one process, each on its own thread with its own
  session object (tract: ``TractSession(f"s{k}", store=path)``, each a branch of one store
  file; SQLite: ``SQLiteSession(f"s{k}", db_path=path)``, all in one .db file), each appending
  for ``--seconds`` after a common start: appends per second over the common window (start
  to the last append's end), p50 and p99 over every append.
- ``processes``: the same sessions spread over ``--processes`` processes (this script run
  with ``--worker``), on one store file / one SQLite file, started together.
- ``store_bytes_per_text_byte``: after each single-session run, the bytes of the store's files
  (tract: the store file and every file under its ``<store>-journal/`` directory; SQLite: the
  .db and its ``-wal`` and ``-shm`` if present), with the session closed, divided by the bytes
  of the JSON text (``json.dumps``, UTF-8) of all the items added. Apparent sizes and
  allocated blocks are both given; the files counted are listed.

With ``--tract-bench PATH`` (``target/release/tract-bench``), a third column, ``core``: the
same items appended through tract's Rust API by ``tract-bench --sessions-worker`` processes
(each append ``Tract::append_batch`` of one item, as ``TractSession.add_items`` makes it, with
no Python in the way), on a session filled by ``TractSession`` for the single-session figures,
with the sessions of the threads and processes figures spread over processes of it the same
way. It shows what tract's store does and what the Python binding adds.

Runs are interleaved (tract, SQLite, then SQLite, tract, ...) so machine noise falls on both
sides; the figures printed are the medians over ``--runs`` runs, with the ratio tract / SQLite
(and core / SQLite) of appends per second. Progress goes to stderr, the JSON to stdout.

    python scripts/bench-appends.py [--sizes 1000,10000,100000] [--appends 1000]
        [--seconds 3] [--runs 3] [--threads 64] [--processes 4] [--dir DIR]
        [--tract-bench target/release/tract-bench]

``--dir`` chooses where the temporary files go (default: the system's temporary directory);
durability costs depend on the disk under it. The temporary directory is removed at the end.
"""

import argparse
import asyncio
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import agent_turns

BACKENDS = ("tract", "sqlite")
PREFILL_BATCH = 1000
# Items each session of the core's threads and processes figures is given.
CORE_ITEMS_PER_SESSION = 1000
WORDS = (
    "config settings load value default timeout retry client server request response cache "
    "session token user path file read write open close parse error warning handler route "
    "index model schema field query result status buffer stream worker queue event state "
    "update delete create fetch store commit branch merge update local remote limit offset"
).split()


def tool_output(k: int) -> str:
    """About 1 KB of grep-like output, different for every k."""
    rng = random.Random(k)
    lines = []
    size = 0
    while size < 1000:
        a, b, c, d = (rng.choice(WORDS) for _ in range(4))
        line = f"src/{a}/{b}_{c}.py:{rng.randrange(1, 2000)}:    {c}_{d} = {a}.{b}({d}, timeout={rng.randrange(1, 600)})\n"
        lines.append(line)
        size += len(line)
    return "".join(lines)


def turn(k: int) -> list[dict]:
    return agent_turns.turn(k, tool_output(k))


def item(i: int) -> dict:
    """The i-th item of a session: turn i // 4, its part i % 4."""
    return turn(i // 4)[i % 4]


def items(start: int, count: int) -> list[dict]:
    return [item(i) for i in range(start, start + count)]


def text_bytes(added: list[dict]) -> int:
    return sum(len(json.dumps(x).encode()) for x in added)


def session_base(k: int) -> int:
    """Where session k's item numbers start, so no two sessions add the same text."""
    return (k + 1) * 10_000_000


def maker(backend: str, path: Path):
    if backend == "tract":
        from tract.integrations.openai_agents import TractSession

        return lambda sid: TractSession(sid, store=path)
    from agents import SQLiteSession

    return lambda sid: SQLiteSession(sid, db_path=path)


def store_path(backend: str, directory: Path, tag: str) -> Path:
    return directory / (f"{tag}.tract" if backend == "tract" else f"{tag}.db")


def store_files(backend: str, path: Path) -> list[Path]:
    """The files a store is: tract's store file and its journal directory's files; SQLite's
    database and its -wal and -shm."""
    if backend == "tract":
        journal = path.parent / (path.name + "-journal")
        extra = sorted(p for p in journal.rglob("*") if p.is_file()) if journal.is_dir() else []
        return [path] + extra
    return [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def remove_store(backend: str, path: Path) -> None:
    for p in store_files(backend, path):
        p.unlink(missing_ok=True)
    if backend == "tract":
        shutil.rmtree(path.parent / (path.name + "-journal"), ignore_errors=True)


def quantile(sorted_values: list[float], q: float) -> float:
    """Nearest rank."""
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))]


def latency_figures(latencies: list[float]) -> dict:
    s = sorted(latencies)
    return {"p50_ms": quantile(s, 0.50) * 1000, "p99_ms": quantile(s, 0.99) * 1000}


SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def sqlite_settings(session) -> dict:
    """SQLite's journal_mode and synchronous on the session's own connection (the one its
    add_items uses), or, if that is not reachable, journal_mode read from the file."""

    def read() -> tuple:
        with session._locked_connection() as conn:
            return (
                conn.execute("PRAGMA journal_mode").fetchone()[0],
                conn.execute("PRAGMA synchronous").fetchone()[0],
            )

    try:
        mode, sync = asyncio.run(asyncio.to_thread(read))
        return {
            "journal_mode": mode,
            "synchronous": f"{SYNCHRONOUS.get(sync, sync)} ({sync})",
            "read_from": "the session's connection",
        }
    except AttributeError:
        import sqlite3

        with sqlite3.connect(session.db_path) as conn:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        return {"journal_mode": mode, "read_from": "the .db file after the run"}


async def timed_appends(session, added: list[dict]) -> tuple[list[float], float]:
    latencies = []
    start = time.perf_counter()
    for x in added:
        t = time.perf_counter()
        await session.add_items([x])
        latencies.append(time.perf_counter() - t)
    return latencies, time.perf_counter() - start


async def prefill(session, size: int) -> None:
    for start in range(0, size, PREFILL_BATCH):
        await session.add_items(items(start, min(PREFILL_BATCH, size - start)))


def single(backend: str, size: int, appends: int, directory: Path, tag: str, notes: dict) -> dict:
    path = store_path(backend, directory, tag)
    make = maker(backend, path)
    session = make("bench")
    t = time.perf_counter()
    asyncio.run(prefill(session, size))
    prefill_s = time.perf_counter() - t
    session.close()
    session = make("bench")
    if backend == "sqlite" and "sqlite" not in notes:
        notes["sqlite"] = sqlite_settings(session)
    added = items(size, appends)
    latencies, total = asyncio.run(timed_appends(session, added))
    newest = asyncio.run(session.get_items(limit=1))
    assert newest and newest[-1].get("call_id") == added[-1].get("call_id"), newest
    session.close()
    files = store_files(backend, path)
    stats = {p: p.stat() for p in files}
    apparent = sum(s.st_size for s in stats.values())
    allocated = sum(s.st_blocks * 512 for s in stats.values())
    text = text_bytes(items(0, size) + added)
    remove_store(backend, path)
    return {
        "appends_per_s": appends / total,
        **latency_figures(latencies),
        "prefill_s": prefill_s,
        "store": {
            "bytes_per_text_byte": apparent / text,
            "allocated_per_text_byte": allocated / text,
            "store_bytes": apparent,
            "allocated_bytes": allocated,
            "text_bytes": text,
            "files": {str(p.relative_to(directory)): s.st_size for p, s in stats.items()},
        },
    }


def run_threads(make, session_numbers: list[int], seconds: float, gate) -> dict:
    """One thread per session: open it, add one item (untimed), wait for the common start
    (``gate()`` gives it, as time.time()), then append single items until start + seconds."""
    n = len(session_numbers)
    ready = threading.Barrier(n + 1)
    go = threading.Event()
    start_at: list[float] = []
    results: list = [None] * n

    def body(j: int) -> None:
        k = session_numbers[j]
        base = session_base(k)

        async def work() -> dict:
            await session.add_items([item(base)])
            ready.wait()
            go.wait()
            start = start_at[0]
            stop = start + seconds
            time.sleep(max(0.0, start - time.time()))
            latencies: list[float] = []
            errors: list[str] = []
            i = base + 1
            while time.time() < stop:
                x = item(i)
                i += 1
                t = time.perf_counter()
                try:
                    await session.add_items([x])
                except Exception as e:  # counted and reported, not timed
                    errors.append(repr(e))
                    continue
                latencies.append(time.perf_counter() - t)
            return {"latencies": latencies, "end": time.time(), "errors": errors}

        session = None
        try:
            session = make(f"s{k}")
            results[j] = asyncio.run(work())
        except BaseException:
            ready.abort()
            raise
        finally:
            if session is not None:
                session.close()

    threads = [threading.Thread(target=body, args=(j,)) for j in range(n)]
    for th in threads:
        th.start()
    ready.wait()
    try:
        start_at.append(gate())
    finally:
        if not start_at:
            start_at.append(0.0)  # the threads stop at once; the error goes up
        go.set()
    for th in threads:
        th.join()
    if any(r is None for r in results):
        raise RuntimeError("a session's thread failed (its traceback is above)")
    return {
        "start": start_at[0],
        "end": max(r["end"] for r in results),
        "latencies": [x for r in results for x in r["latencies"]],
        "errors": [e for r in results for e in r["errors"]],
    }


def concurrent_figures(start: float, end: float, latencies: list[float], errors: list[str]) -> dict:
    window = end - start
    out = {
        "appends": len(latencies),
        "window_s": window,
        "appends_per_s": len(latencies) / window,
        **latency_figures(latencies),
        "errors": len(errors),
    }
    if errors:
        out["first_error"] = errors[0]
    return out


def create_store(backend: str, path: Path) -> None:
    """Makes the store file before the sessions open it together."""
    maker(backend, path)("setup").close()


def threads_run(backend: str, n: int, seconds: float, directory: Path, tag: str) -> dict:
    path = store_path(backend, directory, tag)
    create_store(backend, path)
    r = run_threads(maker(backend, path), list(range(n)), seconds, time.time)
    remove_store(backend, path)
    return concurrent_figures(r["start"], r["end"], r["latencies"], r["errors"])


def processes_run(backend: str, procs: int, per: int, seconds: float, directory: Path, tag: str) -> dict:
    path = store_path(backend, directory, tag)
    create_store(backend, path)
    workers = [
        subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", "--backend", backend,
             "--store", str(path), "--first", str(p * per), "--threads", str(per), "--seconds", str(seconds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for p in range(procs)
    ]
    start = 0.0

    def start_line() -> str:
        nonlocal start
        start = time.time() + 0.05
        return repr(start)

    reports = gather_workers(workers, start_line)
    remove_store(backend, path)
    return concurrent_figures(
        start,
        max(r["end"] for r in reports),
        [x for r in reports for x in r["latencies"]],
        [e for r in reports for e in r["errors"]],
    )


def gather_workers(workers: list, gate) -> list[dict]:
    """Waits until every worker says "ready", then gives them all the line ``gate()`` makes
    (their common start; no gate: they started at once), and reads each one's JSON report.
    A worker that fails fails the run, and every worker still running is killed."""
    try:
        if gate is not None:
            for w in workers:
                line = w.stdout.readline()
                if line.strip() != "ready":
                    raise RuntimeError(f"a worker did not start: {line!r} {w.stderr.read() if w.stderr else ''}")
            line = gate()
            for w in workers:
                w.stdin.write(line + "\n")
                w.stdin.flush()
        reports = []
        for w in workers:
            out, err = w.communicate()
            if w.returncode != 0:
                raise RuntimeError(f"a worker failed with exit code {w.returncode}: {err or ''}")
            reports.append(json.loads(out))
        return reports
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()


def worker(args) -> None:
    """--worker: this process's sessions; prints "ready", reads the start time from stdin,
    prints its latencies as JSON."""

    def gate() -> float:
        print("ready", flush=True)
        return float(sys.stdin.readline())

    make = maker(args.backend, Path(args.store))
    r = run_threads(make, list(range(args.first, args.first + args.threads)), args.seconds, gate)
    print(json.dumps(r))


def core_workers(bench: str, path: Path, directory: Path, tag: str, procs: int, per: int,
                 span: str, lists: list[list[dict]], seconds: float) -> dict:
    """``procs`` ``tract-bench --sessions-worker`` processes of ``per`` sessions each (branches
    ``sessions/<tag>p<P>-<K>``), session ``P * per + K`` appending ``lists[P * per + K]``; a
    count, or ``timed``: all start together once every session has opened, for ``seconds``."""
    workers = []
    for p in range(procs):
        items_file = directory / f"{tag}-p{p}.jsonl"
        items_file.write_text("".join(json.dumps(x) + "\n" for x in lists[p * per:(p + 1) * per]))
        workers.append(subprocess.Popen(
            [bench, "--sessions-worker", str(path), f"{tag}p{p}", str(per), span, str(items_file)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))
    def window() -> str:
        start = int(time.time() * 1e6) + 50_000
        return f"{start} {start + int(seconds * 1e6)}"

    reports = gather_workers(workers, window if span == "timed" else None)
    latencies = [us / 1e6 for r in reports for us in r["latencies_us"]]
    first = min(r["first_start_us"] for r in reports) / 1e6
    last = max(r["last_end_us"] for r in reports) / 1e6
    return concurrent_figures(first, last, latencies, [])


def core_single(bench: str, size: int, appends: int, directory: Path, tag: str) -> dict:
    """A session filled by TractSession, closed, then ``appends`` single appends by tract-bench."""
    path = store_path("tract", directory, tag)
    make = maker("tract", path)
    session = make(f"{tag}p0-0")
    asyncio.run(prefill(session, size))
    session.close()
    f = core_workers(bench, path, directory, tag, 1, 1, str(appends), [items(size, appends)], 0)
    remove_store("tract", path)
    return {"appends_per_s": f["appends_per_s"], "p50_ms": f["p50_ms"], "p99_ms": f["p99_ms"]}


def core_concurrent(bench: str, procs: int, per: int, seconds: float, directory: Path, tag: str) -> dict:
    path = store_path("tract", directory, tag)
    create_store("tract", path)
    # More items than a session appends in the window at tract's pace; it starts over if not.
    lists = [items(session_base(k), CORE_ITEMS_PER_SESSION) for k in range(procs * per)]
    f = core_workers(bench, path, directory, tag, procs, per, "timed", lists, seconds)
    remove_store("tract", path)
    return f


def median_figures(runs: list[dict]) -> dict:
    return {
        k: round(statistics.median(r[k] for r in runs), 3)
        for k in runs[0]
        if isinstance(runs[0][k], (int, float))
    }


def compare(runs: dict) -> dict:
    out = {b: median_figures(runs[b]) for b in runs}
    for b in runs:
        errors = sum(r.get("errors", 0) for r in runs[b])
        if errors:
            out[b]["errors_all_runs"] = errors
            out[b]["first_error"] = next(r["first_error"] for r in runs[b] if "first_error" in r)
    for b in ("tract", "core"):
        if b in out:
            out[f"ratio_{b}_to_sqlite_appends_per_s"] = round(
                out[b]["appends_per_s"] / out["sqlite"]["appends_per_s"], 2
            )
    return out


def versions() -> dict:
    import sqlite3
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0], "sqlite": sqlite3.sqlite_version}
    for name in ("tract-context", "openai-agents"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="items in the session before the timed appends (comma-separated)")
    parser.add_argument("--appends", type=int, default=1000, help="timed single appends per size")
    parser.add_argument("--seconds", type=float, default=3.0, help="wall time of each concurrent run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=64, help="concurrent sessions")
    parser.add_argument("--processes", type=int, default=4, help="processes sharing --threads sessions")
    parser.add_argument("--dir", default=None, help="where the temporary files go")
    parser.add_argument("--tract-bench", default=None,
                        help="tract-bench binary: adds the core column (the same items through tract's Rust API)")
    parser.add_argument("--only", default="single,threads,processes", help=argparse.SUPPRESS)
    parser.add_argument("--backends", default=",".join(BACKENDS), help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    sizes = [int(s) for s in args.sizes.split(",") if s]
    only = set(args.only.split(","))
    backends = [b for b in BACKENDS if b in args.backends.split(",")]
    bench = args.tract_bench
    if bench is not None and not os.access(bench, os.X_OK):
        parser.error(f"--tract-bench: {bench} is not an executable")
    columns = backends + (["core"] if bench else [])
    per = args.threads // args.processes
    sample = items(0, 4000)
    notes: dict = {}
    single_runs: dict = {s: {b: [] for b in columns} for s in sizes}
    thread_runs: dict = {b: [] for b in columns}
    process_runs: dict = {b: [] for b in columns}
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-appends-") as d:
        directory = Path(d)
        for r in range(args.runs):
            order = backends if r % 2 == 0 else backends[::-1]
            if "single" in only:
                for size in sizes:
                    for b in order:
                        f = single(b, size, args.appends, directory, f"single-{b}-{size}-{r}", notes)
                        single_runs[size][b].append(f)
                        log(f"run {r + 1}/{args.runs} single {size} {b}: prefill {f['prefill_s']:.1f} s, "
                            f"{f['appends_per_s']:.0f} appends/s, p99 {f['p99_ms']:.2f} ms")
                    if bench:
                        f = core_single(bench, size, args.appends, directory, f"core{size}r{r}")
                        single_runs[size]["core"].append(f)
                        log(f"run {r + 1}/{args.runs} single {size} core: {f['appends_per_s']:.0f} appends/s, "
                            f"p99 {f['p99_ms']:.2f} ms")
            if "threads" in only:
                for b in order:
                    f = threads_run(b, args.threads, args.seconds, directory, f"threads-{b}-{r}")
                    thread_runs[b].append(f)
                    log(f"run {r + 1}/{args.runs} {args.threads} threads {b}: {f['appends_per_s']:.0f} appends/s, "
                        f"p99 {f['p99_ms']:.2f} ms, {f['errors']} errors")
                if bench:
                    f = core_concurrent(bench, 1, args.threads, args.seconds, directory, f"corethreads{r}")
                    thread_runs["core"].append(f)
                    log(f"run {r + 1}/{args.runs} {args.threads} threads core: {f['appends_per_s']:.0f} appends/s, "
                        f"p99 {f['p99_ms']:.2f} ms")
            if "processes" in only:
                for b in order:
                    f = processes_run(b, args.processes, per, args.seconds, directory, f"procs-{b}-{r}")
                    process_runs[b].append(f)
                    log(f"run {r + 1}/{args.runs} {args.processes}x{per} {b}: {f['appends_per_s']:.0f} appends/s, "
                        f"p99 {f['p99_ms']:.2f} ms, {f['errors']} errors")
                if bench:
                    f = core_concurrent(bench, args.processes, per, args.seconds, directory, f"coreprocs{r}")
                    process_runs["core"].append(f)
                    log(f"run {r + 1}/{args.runs} {args.processes}x{per} core: {f['appends_per_s']:.0f} appends/s, "
                        f"p99 {f['p99_ms']:.2f} ms")

    result: dict = {
        "settings": {
            "sizes": sizes, "appends": args.appends, "seconds": args.seconds, "runs": args.runs,
            "threads": args.threads, "processes": args.processes, "threads_per_process": per,
            "dir": str(Path(args.dir or tempfile.gettempdir()).resolve()),
        },
        "versions": versions(),
        "item_mean_json_bytes": round(text_bytes(sample) / len(sample), 1),
        "item_json_bytes_by_kind": {
            kind: len(json.dumps(x).encode())
            for kind, x in zip(("user", "function_call", "function_call_output", "assistant"), sample)
        },
        "sqlite_session_settings": notes.get("sqlite"),
        "durability": "tract: each add_items commits durably; SQLite: SQLiteSession's own settings",
    }
    if "single" in only:
        result["single_session"] = {}
        result["store_bytes_per_text_byte"] = {
            "counted": "tract: the store file and every file under <store>-journal/; SQLite: the .db, "
            "-wal and -shm present; measured with the session closed",
        }
        for size in sizes:
            runs = {b: [{k: v for k, v in f.items() if k != "store"} for f in single_runs[size][b]] for b in columns}
            if "sqlite" in backends and len(columns) > 1:
                result["single_session"][str(size)] = compare(runs)
            else:
                result["single_session"][str(size)] = {b: median_figures(runs[b]) for b in columns}
            part = {}
            for b in backends:
                stores = [f["store"] for f in single_runs[size][b]]
                part[b] = {
                    "bytes_per_text_byte": round(statistics.median(s["bytes_per_text_byte"] for s in stores), 3),
                    "allocated_per_text_byte": round(statistics.median(s["allocated_per_text_byte"] for s in stores), 3),
                    "store_bytes": int(statistics.median(s["store_bytes"] for s in stores)),
                    "text_bytes": stores[0]["text_bytes"],
                    "files_first_run": stores[0]["files"],
                }
            result["store_bytes_per_text_byte"][str(size)] = part
    for name, runs in ((f"threads_{args.threads}", thread_runs),
                       (f"processes_{args.processes}x{per}", process_runs)):
        if all(runs[b] for b in columns) and columns:
            together = "sqlite" in backends and len(columns) > 1
            result[name] = compare(runs) if together else {b: median_figures(runs[b]) for b in columns}
    result["wall_s"] = round(time.perf_counter() - began, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
