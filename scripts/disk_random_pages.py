#!/usr/bin/env python3
"""What one durable commit costs on this disk as a function of the 4 KiB pages it writes.

Writes N pages at random offsets of a 64 MiB file (as a B-tree keyed by content hashes
dirties them), then one fdatasync; the same N pages as one contiguous write for comparison.
Prints the median of 20 rounds per N. Used to explain the group-commit figures in
docs/performance.md: a group of appends saves fsyncs, not the pages each append dirties.

    python3 scripts/disk_random_pages.py [DIR]
"""

import os
import random
import sys
import tempfile
import time

PAGE = 4096
FILE_PAGES = 64 * 256  # 64 MiB


def median_ms(samples: list) -> float:
    return sorted(samples)[len(samples) // 2] * 1000


def main() -> None:
    directory = sys.argv[1] if len(sys.argv) > 1 else None
    with tempfile.NamedTemporaryFile(dir=directory) as f:
        fd = f.fileno()
        os.ftruncate(fd, FILE_PAGES * PAGE)
        os.fsync(fd)
        page = os.urandom(PAGE)
        print("pages  random+fdatasync  contiguous+fdatasync")
        for n in (2, 8, 32, 64, 128, 192, 256):
            scattered, contiguous = [], []
            for _ in range(20):
                start = time.perf_counter()
                for _ in range(n):
                    os.pwrite(fd, page, random.randrange(FILE_PAGES) * PAGE)
                os.fdatasync(fd)
                scattered.append(time.perf_counter() - start)
                base = random.randrange(FILE_PAGES - n)
                start = time.perf_counter()
                os.pwrite(fd, page * n, base * PAGE)
                os.fdatasync(fd)
                contiguous.append(time.perf_counter() - start)
            print(f"{n:5}  {median_ms(scattered):13.2f} ms  {median_ms(contiguous):15.2f} ms")


if __name__ == "__main__":
    main()
