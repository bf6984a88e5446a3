"""A concurrency-soak writer: appends numbered messages to one branch until a deadline.

    python -m torture.soak_writer STORE BRANCH TAG SECONDS ACKS SEED

Each message starts `TAG N` (N from 0, in the order written); most are single appends, some
come in batches of 2-3 (`append_many`, one transaction). After each call returns, the commit
and its number are written to ACKS (one JSON line per message). A short random pause between
calls leaves room for the other processes.
"""

from __future__ import annotations

import json
import random
import sys
import time

import tract
from torture.writer import WORDS


def main() -> None:
    """Entry point: STORE BRANCH TAG SECONDS ACKS SEED."""
    store, branch, tag, seconds, acks, seed = sys.argv[1:7]
    rng = random.Random(f"{seed}/{tag}")
    deadline = time.monotonic() + float(seconds)
    n = 0
    with tract.Tract.open(store, branch=branch) as t, open(acks, "w", buffering=1) as out:
        while time.monotonic() < deadline:
            size = 1 if rng.random() < 0.8 else rng.randint(2, 3)
            msgs = []
            for k in range(size):
                body = "\n".join(" ".join(rng.choice(WORDS) for _ in range(10)) for _ in range(3))
                msgs.append({"role": rng.choice(("user", "assistant")), "content": f"{tag} {n + k}\n{body}"})
            infos = [t.append(msgs[0])] if size == 1 else t.append_many(msgs)
            for k, info in enumerate(infos):
                out.write(
                    json.dumps({"tag": tag, "n": n + k, "commit": info.commit_hash, "branch": branch}) + "\n"
                )
            n += size
            time.sleep(rng.uniform(0, 0.01))
    print(n)


if __name__ == "__main__":
    main()
