#!/usr/bin/env python3
"""Frames from several processes into one file: the lock held through the fdatasync, or let go
before it.

Each of PROCS processes loops for SECONDS: take an `flock` on a lock file, write a 16 KiB frame
at the shared end of a file whose space is allocated ahead (`posix_fallocate`, as the journal's
segments are), move the end on, and make the frame durable with one fdatasync. Two ways:

- `held`: the lock is held through the fdatasync (one process's fdatasync at a time);
- `let go`: the lock is let go after the write, before the fdatasync (several processes'
  fdatasyncs at once; one covers every frame written before it).

Prints frames per second over all processes, and the worst process's p50 and p99 per frame, for
ROUNDS rounds of each, interleaved.

    python3 scripts/overlapped_fdatasync.py [--dir DIR] [--procs 4] [--seconds 3] [--rounds 2]
"""

import argparse
import fcntl
import mmap
import multiprocessing as mp
import os
import statistics
import struct
import tempfile
import time

FRAME = 16 << 10


def worker(directory: str, mode: str, start: float, seconds: float, out) -> None:
    fd = os.open(f"{directory}/segment", os.O_RDWR)
    lock = os.open(f"{directory}/lock", os.O_RDWR)
    end_fd = os.open(f"{directory}/end", os.O_RDWR)
    end = mmap.mmap(end_fd, 8)
    frame = os.urandom(FRAME)
    latencies = []
    while time.time() < start:
        pass
    while time.time() < start + seconds:
        began = time.perf_counter()
        fcntl.flock(lock, fcntl.LOCK_EX)
        at = struct.unpack("Q", end[:8])[0]
        os.pwrite(fd, frame, at)
        end[:8] = struct.pack("Q", at + FRAME)
        if mode == "held":
            os.fdatasync(fd)
            fcntl.flock(lock, fcntl.LOCK_UN)
        else:
            fcntl.flock(lock, fcntl.LOCK_UN)
            os.fdatasync(fd)
        latencies.append(time.perf_counter() - began)
    latencies.sort()
    out.put((len(latencies), latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]))


def run(directory: str, mode: str, procs: int, seconds: float) -> tuple[float, float, float]:
    fd = os.open(f"{directory}/segment", os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    os.posix_fallocate(fd, 0, 1 << 30)
    os.close(fd)
    open(f"{directory}/lock", "w").close()
    with open(f"{directory}/end", "wb") as f:
        f.write(b"\0" * 8)
    out: mp.Queue = mp.Queue()
    start = time.time() + 0.5
    workers = [mp.Process(target=worker, args=(directory, mode, start, seconds, out)) for _ in range(procs)]
    for w in workers:
        w.start()
    results = [out.get() for _ in workers]
    for w in workers:
        w.join()
    frames = sum(r[0] for r in results)
    return frames / seconds, max(r[1] for r in results) * 1e3, max(r[2] for r in results) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    figures: dict[str, list] = {"held": [], "let go": []}
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        for _ in range(args.rounds):
            for mode in figures:
                figures[mode].append(run(d, mode, args.procs, args.seconds))
    for mode, runs in figures.items():
        rate, p50, p99 = (statistics.median(r[i] for r in runs) for i in range(3))
        print(f"{mode:7} {args.procs} processes: {rate:8.0f} frames/s  p50 {p50:.3f} ms  p99 {p99:.3f} ms")


if __name__ == "__main__":
    main()
