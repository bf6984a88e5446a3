#!/usr/bin/env python3
"""What one durable append can cost on this disk: the floors a write path is measured against.

Each row appends N records of about 1 KB, one at a time, each durable before the next, and
prints appends per second (median of ROUNDS rounds) and the median latency:

- `sqlite wal full`: SQLite in WAL mode with `synchronous=FULL`, one INSERT per transaction
  (what the OpenAI Agents SDK's `SQLiteSession` does, without its Python layer);
- `append+fdatasync`: a checksummed frame written at the end of a growing file, then
  fdatasync (a journal that grows);
- `prealloc+fdatasync`: the same frame written into space written once beforehand, so the
  fdatasync has no file size or extent to record (a journal that reuses its space);
- `fallocate+fdatasync`: into space only allocated (`posix_fallocate`), not written;
- `2x fdatasync`: the growing file's write made durable twice, as a two-phase commit does;
- `tract append` (with `--tract`): `Tract.user()` on a store file, through the installed
  wheel.

    python3 scripts/durable_append_floor.py [--dir DIR] [--count N] [--rounds R] [--tract]
"""

import argparse
import hashlib
import os
import sqlite3
import statistics
import struct
import tempfile
import time
from pathlib import Path
from typing import Callable


def record(i: int) -> bytes:
    """About 1 KB, as a tool result or a message with a tool call is."""
    return (f'{{"role":"tool","n":{i},"content":"' + "line of output " * 64 + '"}').encode()


def frame(seq: int, payload: bytes) -> bytes:
    check = hashlib.blake2b(struct.pack("<Q", seq) + payload, digest_size=8).digest()
    return struct.pack("<IQ", len(payload), seq) + check + payload


def sqlite_wal(directory: Path, count: int) -> list[float]:
    db = sqlite3.connect(directory / "s.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, session TEXT, data TEXT)")
    out = []
    for i in range(count):
        start = time.perf_counter()
        db.execute("BEGIN")
        db.execute("INSERT INTO m (session, data) VALUES (?, ?)", ("s", record(i).decode()))
        db.execute("COMMIT")
        out.append(time.perf_counter() - start)
    db.close()
    return out


def growing(directory: Path, count: int, syncs: int = 1) -> list[float]:
    fd = os.open(directory / "j", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    out = []
    try:
        for i in range(count):
            start = time.perf_counter()
            os.write(fd, frame(i, record(i)))
            for _ in range(syncs):
                os.fdatasync(fd)
            out.append(time.perf_counter() - start)
    finally:
        os.close(fd)
    return out


def preallocated(directory: Path, count: int, zeroed: bool = True) -> list[float]:
    fd = os.open(directory / "j", os.O_RDWR | os.O_CREAT, 0o644)
    size = (len(frame(0, record(count))) + 64) * count
    os.posix_fallocate(fd, 0, size)
    if zeroed:
        # Written once and made durable, as a recycled journal's space is: fallocate alone
        # leaves the extents marked unwritten, and writing into them updates metadata again.
        os.pwrite(fd, bytes(size), 0)
    os.fsync(fd)
    out = []
    offset = 0
    try:
        for i in range(count):
            data = frame(i, record(i))
            start = time.perf_counter()
            os.pwrite(fd, data, offset)
            os.fdatasync(fd)
            out.append(time.perf_counter() - start)
            offset += len(data)
    finally:
        os.close(fd)
    return out


def tract_append(directory: Path, count: int) -> list[float]:
    import tract

    out = []
    with tract.Tract.open(directory / "t.redb") as t:
        for i in range(count):
            text = record(i).decode()
            start = time.perf_counter()
            t.user(text)
            out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tract", action="store_true")
    args = parser.parse_args()
    cases: list[tuple[str, Callable[[Path, int], list[float]]]] = [
        ("sqlite wal full", sqlite_wal),
        ("append+fdatasync", growing),
        ("prealloc+fdatasync", preallocated),
        ("fallocate+fdatasync", lambda d, n: preallocated(d, n, zeroed=False)),
        ("2x fdatasync", lambda d, n: growing(d, n, syncs=2)),
    ]
    if args.tract:
        cases.append(("tract append", tract_append))
    results: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in cases}
    # Rounds interleave the cases, so a noisy moment falls on all of them alike.
    for _ in range(args.rounds):
        for name, case in cases:
            with tempfile.TemporaryDirectory(dir=args.dir) as d:
                samples = case(Path(d), args.count)
            results[name].append((len(samples) / sum(samples), statistics.median(samples)))
    base = statistics.median(r for r, _ in results["sqlite wal full"])
    print(f"{'case':20} {'appends/s':>10} {'median ms':>10} {'vs sqlite':>10}")
    for name, runs in results.items():
        rate = statistics.median(r for r, _ in runs)
        lat = statistics.median(m for _, m in runs) * 1000
        print(f"{name:20} {rate:10.0f} {lat:10.3f} {rate / base:9.2f}x")


if __name__ == "__main__":
    main()
