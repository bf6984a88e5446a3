"""A concurrency-soak writer: appends numbered messages to one branch until a deadline, and now
and then compresses some of the branch's older messages, as an agent trimming its context.

    python -m torture.soak_writer STORE BRANCH TAG SECONDS ACKS SEED

Each message starts `TAG N` (N from 0, in the order written); most are single appends, some
come in batches of 2-3 (`append_many`, one transaction). After each call returns, the commit
and its number are written to ACKS (one JSON line per message; a compression's line lists its
summaries under "compress"). A compression that loses a race with another writer of the branch
(`HeadMovedError`, or a message another compression took first: `NotInViewError`) commits
nothing and is counted, not retried. A short random pause between calls leaves room for the
other processes. Prints the number of messages, compressions and lost races at the end.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import TextIO

import tract
from torture.writer import WORDS


def compress_some(t: tract.Tract, rng: random.Random) -> list[str]:
    """Compresses 4-8 messages still in view among the 60 before the newest 20 (extractive,
    30 tokens); returns the summaries' commits ([] if there were too few)."""
    window = t.log(limit=80)
    # A message among the newest 80 commits can only have been compressed by a newer one.
    gone = {s for c in window for s in c.sources}
    cands = [c.commit_hash for c in reversed(window[20:]) if c.op == "append" and c.commit_hash not in gone]
    if len(cands) < 4:
        return []
    k = rng.randint(4, min(8, len(cands)))
    start = rng.randint(0, len(cands) - k)
    out = t.compress(commits=cands[start : start + k], target_tokens=30)
    return [c.commit_hash for c in out["commits"]]  # type: ignore[typeddict-item]


def ack(out: TextIO, record: dict[str, object]) -> None:
    """Writes one acknowledgement line."""
    out.write(json.dumps(record) + "\n")


def main() -> None:
    """Entry point: STORE BRANCH TAG SECONDS ACKS SEED."""
    store, branch, tag, seconds, acks, seed = sys.argv[1:7]
    rng = random.Random(f"{seed}/{tag}")
    deadline = time.monotonic() + float(seconds)
    n = compressions = lost = 0
    with tract.Tract.open(store, branch=branch) as t, open(acks, "w", buffering=1) as out:
        while time.monotonic() < deadline:
            if rng.random() < 0.02:
                try:
                    summaries = compress_some(t, rng)
                except (tract.HeadMovedError, tract.NotInViewError):
                    lost += 1
                    continue
                if summaries:
                    ack(out, {"tag": tag, "compress": summaries, "branch": branch})
                    compressions += 1
                continue
            size = 1 if rng.random() < 0.8 else rng.randint(2, 3)
            msgs = []
            for k in range(size):
                body = "\n".join(" ".join(rng.choice(WORDS) for _ in range(10)) for _ in range(3))
                msgs.append({"role": rng.choice(("user", "assistant")), "content": f"{tag} {n + k}\n{body}"})
            infos = [t.append(msgs[0])] if size == 1 else t.append_many(msgs)
            for k, info in enumerate(infos):
                ack(out, {"tag": tag, "n": n + k, "commit": info.commit_hash, "branch": branch})
            n += size
            time.sleep(rng.uniform(0, 0.01))
    print(json.dumps({"messages": n, "compressions": compressions, "lost": lost}))


if __name__ == "__main__":
    main()
