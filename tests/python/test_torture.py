"""Crash torture: a writer process runs a random agent session (appends, batches, compressions,
edits, clears, forks and merges, policy changes) and is SIGKILLed at random moments, many
times, while a reader process reads the store in a loop. After every kill the store opens,
`tract fsck` finds it clean, everything the writer acknowledged is there, whole and in order,
whatever the killed call committed is all of it or nothing, and the reader never saw a torn
state. The writer then starts again on the same store and carries on.

    TRACT_TORTURE_KILLS=1000 TRACT_TORTURE_SEED=7 pytest -q -s test_torture.py

TRACT_TORTURE_KILLS (default 12: the smoke the test command runs; scripts/soak.sh runs 1,000)
is the number of kills; TRACT_TORTURE_SEED (default: a random
one, printed) fixes the writer's choices and the kill schedule. The processes are in
tests/python/torture/.
"""

from __future__ import annotations

import collections
import os
import pathlib
import random
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import pytest

import tract
from torture.common import TESTS_DIR, TRACT_BIN, AckReader, ReaderReport, clean_env, fsck, view_problems

KILLS = int(os.environ.get("TRACT_TORTURE_KILLS", "12"))
SEED = int(os.environ.get("TRACT_TORTURE_SEED", str(random.SystemRandom().randrange(1_000_000))))


def spawn(module: str, *args: Any, stdout: Any, stderr: Any) -> subprocess.Popen:
    """Starts `python -m torture.MODULE ARGS...` from tests/python."""
    return subprocess.Popen(
        [sys.executable, "-m", f"torture.{module}", *map(str, args)],
        cwd=TESTS_DIR,
        env=clean_env(),
        stdout=stdout,
        stderr=stderr,
    )


@dataclass
class Ledger:
    """What the writer acknowledged, folded from its ack log: each branch's commits in order
    (plus those of calls a kill interrupted after they committed), where each fork started,
    which branches must exist, the stored policy, and the call in flight when it was killed."""

    known: dict[str, list[str]] = field(default_factory=lambda: collections.defaultdict(list))
    fork_at: dict[str, str] = field(default_factory=dict)
    live: set[str] = field(default_factory=set)
    policy: dict[str, Any] = field(
        default_factory=lambda: {"instructions": {}, "auto_threshold": None, "default_instructions": None}
    )
    inflight: Optional[dict[str, Any]] = None
    acked: list[str] = field(default_factory=list)
    verified: int = 0
    compress_sources: list[list[str]] = field(default_factory=list)

    def feed(self, records: list[dict[str, Any]]) -> None:
        """Applies ack records; remembers the last `begin` without its ack."""
        for rec in records:
            if rec["type"] == "begin":
                self.inflight = rec
                continue
            assert self.inflight is not None and self.inflight["seq"] == rec["seq"], (
                f"ack without begin: {rec}"
            )
            self.inflight = None
            self.known[rec["branch"]].extend(rec["commits"])
            self.acked.extend(rec["commits"])
            call = rec["call"]
            if call == "fork":
                self.fork_at[rec["new_branch"]] = rec["at"]
                self.live.add(rec["new_branch"])
            elif call == "delete":
                self.live.discard(rec["deleted"])
            elif call == "policy":
                self.policy = rec["policy"]
            elif call == "compress" and rec["commits"]:
                self.compress_sources.extend(rec["sources"])


def tail_problems(begin: Optional[dict[str, Any]], branch: str, tail: list[tract.CommitInfo]) -> list[str]:
    """The commits found after the last acknowledged one on `branch` must be exactly what the
    call in flight at the kill (`begin`) commits: all of it, never a part."""
    if not tail:
        return []
    shown = [f"{c.op} {c.short_hash} {(c.content or '')[:40]!r}" for c in tail]
    if begin is None or begin["branch"] != branch:
        return [f"{branch}: {len(tail)} commit(s) nobody made: {shown}"]
    call, n = begin["call"], len(tail)
    contents = [c.content or "" for c in tail]
    ok = False
    if call == "append":
        ok = n == 1 and contents == begin["contents"]
    elif call == "tool_result":
        ok = n in (1, 2) and contents[0] == begin["contents"][0]
        ok = ok and (n == 1 or (tail[1].op == "edit" and tail[1].edit_target == tail[0].commit_hash))
    elif call == "append_many":
        ok = contents == begin["contents"]
    elif call == "compress":
        ok = n == begin["runs"] and all(c.op == "compress" for c in tail)
        ok = ok and [c.sources for c in tail] == begin["sources"]
        ok = ok and (begin["content"] is None or all(x == begin["content"] for x in contents))
    elif call == "edit":
        ok = (
            n == 1
            and tail[0].op == "edit"
            and tail[0].edit_target == begin["target"]
            and contents == begin["contents"]
        )
    elif call == "clear":
        ok = n == begin["count"] and all(c.op == "edit" for c in tail)
    elif call == "repair":
        ok = n == begin["count"] and all(c.metadata.get("tract_repair") for c in tail)
    elif call == "merge":
        ok = n == 1 and tail[0].op == "merge" and tail[0].merged_branch == begin["merged"]
    if ok:
        return []
    return [
        f"{branch}: the killed call {call} (seq {begin['seq']}) left a partial or foreign result: {shown}"
    ]


@dataclass
class Stats:
    """How the kills landed."""

    modes: collections.Counter = field(default_factory=collections.Counter)
    inflight: collections.Counter = field(default_factory=collections.Counter)
    committed_unacked: collections.Counter = field(default_factory=collections.Counter)
    acks: int = 0

    def line(self) -> str:
        """One line for the test output and docs/reliability.md."""
        return (
            f"kill modes {dict(self.modes)}; call in flight at the kill {dict(self.inflight)}; "
            f"of those, committed but not yet acknowledged {dict(self.committed_unacked)}; {self.acks} acks"
        )


def check_store(store: pathlib.Path, ledger: Ledger, stats: Stats, rng: random.Random) -> list[str]:
    """Everything that must hold after a kill (see the module docstring); absorbs the killed
    call's commits into the ledger. Returns the problems found."""
    problems: list[str] = []
    report = fsck(store)
    if not report.clean:
        problems.append(f"tract fsck: {report.problems}")
    begin = ledger.inflight
    with tract.Tract.open(store, branch="main") as t:
        branches = {b.name for b in t.branches()}
        maybe = {begin.get("new_branch"), begin.get("deleted")} if begin else set()
        # A kill during the first call on `main` may leave it made (its first commit durable,
        # not yet acknowledged) or not.
        if begin is not None and begin["branch"] == "main" and not ledger.known["main"]:
            maybe.add("main")
        expected = ledger.live | ({"main"} if ledger.known["main"] else set())
        for name in sorted((expected ^ branches) - maybe):
            problems.append(
                f"branch {name} {'is missing' if name in expected else 'exists but was never made'}"
            )
        # What the killed call did stays done: the writer carries on from there.
        if begin is not None and begin["call"] == "fork" and begin["new_branch"] in branches:
            ledger.live.add(begin["new_branch"])
            ledger.fork_at[begin["new_branch"]] = begin["at"]
        if begin is not None and begin["call"] == "delete" and begin["deleted"] not in branches:
            ledger.live.discard(begin["deleted"])
        main_log: list[tract.CommitInfo] = []
        for name in sorted(branches & (expected | maybe)):
            log = t.log() if name == "main" else t.log(start=name)
            if name == "main":
                main_log = log
            chain = list(reversed(log))
            hashes = [c.commit_hash for c in chain]
            start = 0 if name == "main" else hashes.index(ledger.fork_at[name]) + 1
            known = ledger.known[name]
            if hashes[start : start + len(known)] != known:
                diff = next(
                    i for i, (a, b) in enumerate(zip(hashes[start:] + [""] * len(known), known)) if a != b
                )
                problems.append(
                    f"{name}: acknowledged commit {diff} of {len(known)} ({known[diff][:10]}) "
                    "is not where it was acked"
                )
                continue
            tail = chain[start + len(known) :]
            problems += tail_problems(begin, name, tail)
            known.extend(c.commit_hash for c in tail)
            if begin is not None and begin["branch"] == name:
                stats.inflight[begin["call"]] += 1
                if tail:
                    stats.committed_unacked[begin["call"]] += 1
        # Every acknowledged commit is there by hash (the new ones, and a sample of the rest).
        new = ledger.acked[ledger.verified :]
        sample = rng.sample(ledger.acked[: ledger.verified], min(50, ledger.verified))
        for h in new + sample:
            try:
                t.get_commit(h)
            except tract.NotFoundError:
                problems.append(f"acknowledged commit {h[:10]} is gone")
        ledger.verified = len(ledger.acked)
        for sources in ledger.compress_sources[-3:]:
            if any(t.compressed_into(s) is None for s in sources):
                problems.append(f"compressed sources {[s[:10] for s in sources]} are not marked compressed")
        problems += view_problems(t, main_log)
        policy = t.tool_summarization()
        found = {
            "instructions": dict(policy.instructions),
            "auto_threshold": policy.auto_threshold,
            "default_instructions": policy.default_instructions,
        }
        allowed = [ledger.policy] + ([begin["policy"]] if begin and begin["call"] == "policy" else [])
        if found not in allowed:
            problems.append(
                f"stored policy {found} is neither the acknowledged one nor the one in flight: {allowed}"
            )
        ledger.policy = found
    ledger.inflight = None
    return problems


def run_writer_until_killed(
    store: pathlib.Path, acks: pathlib.Path, run: int, rng: random.Random, stats: Stats, err: Any
) -> None:
    """Starts the writer (run `run`) and SIGKILLs it: soon after it starts (while it imports,
    opens the store or recovers), a few milliseconds after one of its acks (inside the next
    call's transaction, often), or after a random while."""
    proc = spawn("writer", store, acks, SEED, run, stdout=subprocess.PIPE, stderr=err)
    assert proc.stdout is not None
    mode = rng.choices(["start", "after-ack", "timed"], [2, 5, 3])[0]
    stats.modes[mode] += 1
    try:
        if mode == "start":
            time.sleep(rng.uniform(0.0, 0.25))
        elif mode == "timed":
            time.sleep(rng.uniform(0.2, 1.0))
        else:
            want, seen, buf = rng.randint(1, 30), 0, b""
            deadline = time.monotonic() + 10
            fd = proc.stdout.fileno()
            while seen < want and time.monotonic() < deadline:
                ready, _, _ = select.select([fd], [], [], 0.05)
                if ready:
                    chunk = os.read(fd, 4096)
                    if not chunk:
                        break
                    buf += chunk
                    seen = buf.count(b"\n")
            if seen < want and proc.poll() is None:
                raise AssertionError(f"the writer (run {run}) made {seen} acks in 10 s: stuck")
            time.sleep(rng.uniform(0.0, 0.015))
        if proc.poll() is not None:
            raise AssertionError(f"the writer (run {run}) exited by itself with {proc.returncode}")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()


def test_a_sigkilled_writer_never_loses_or_tears_anything(tmp_path: pathlib.Path) -> None:
    assert TRACT_BIN.is_file(), f"{TRACT_BIN} is missing: build it with `cargo build -p tract-cli`"
    work = tmp_path / "torture"
    work.mkdir()
    store, acks, report = work / "store.redb", work / "acks.jsonl", work / "reader.jsonl"
    tract.Tract.open(store).close()
    rng = random.Random(SEED)
    stats = Stats()
    ledger = Ledger()
    ack_reader = AckReader(acks)
    print(f"\ncrash torture: seed {SEED}, {KILLS} kills (TRACT_TORTURE_SEED={SEED} replays it)")
    started = time.monotonic()
    with open(work / "writer.err", "ab") as werr, open(work / "reader.err", "ab") as rerr:
        reader = spawn("reader", store, acks, report, SEED, stdout=subprocess.DEVNULL, stderr=rerr)
        try:
            for kill in range(KILLS):
                try:
                    run_writer_until_killed(store, acks, kill, rng, stats, werr)
                    records = ack_reader.read_new()
                    stats.acks += sum(r["type"] == "ack" for r in records)
                    ledger.feed(records)
                    problems = check_store(store, ledger, stats, rng)
                except AssertionError as e:
                    problems = [str(e)]
                problems += [p["problem"] for p in ReaderReport.load(report).problems]
                if reader.poll() is not None:
                    problems.append(f"the reader died with {reader.returncode}")
                if (kill + 1) % 100 == 0:
                    print(f"{kill + 1} kills, {time.monotonic() - started:.0f} s: {stats.line()}", flush=True)
                if problems:
                    errors = (work / "writer.err").read_text()[-3000:]
                    pytest.fail(
                        f"seed {SEED}, after kill {kill + 1} of {KILLS}:\n"
                        + "\n".join(problems[:20])
                        + f"\nwriter stderr: {errors}"
                    )
        finally:
            if reader.poll() is None:
                reader.send_signal(signal.SIGTERM)
            try:
                reader.wait(timeout=30)
            except subprocess.TimeoutExpired:
                reader.kill()
                reader.wait()
    seen = ReaderReport.load(report)
    assert seen.finished and not seen.problems, f"seed {SEED}: the reader saw {seen.problems[:5]}"
    with tract.Tract.open(store, branch="main") as t:
        for h in ledger.acked:
            t.get_commit(h)
    elapsed = time.monotonic() - started
    print(
        f"crash torture: seed {SEED}: {KILLS} kills in {elapsed:.0f} s, {len(ledger.acked)} acknowledged "
        f"commits all present, fsck clean after every kill, reader rounds {seen.iterations} without a torn "
        f"state; {stats.line()}"
    )
    assert stats.acks > 0
    shutil.rmtree(work)


def test_the_torture_checks_catch_torn_and_missing_states(tmp_path: pathlib.Path) -> None:
    """The checks above fail when they should: a torn batch, a compression missing a run, a
    view that is not what its history says, a killed call that committed half, an acked commit
    that is not there (in the driver and in the reader process)."""
    from torture.common import batch_problems, summary_problems

    store = tmp_path / "store.redb"
    with tract.Tract.open(store, branch="main") as t:
        whole = t.append_many([{"role": "user", "content": f"batch r0o1 item {i} of 3"} for i in (1, 2, 3)])
        assert batch_problems(t.log()) == [] and view_problems(t, t.log()) == []
        t.user("batch r0o2 item 1 of 3")
        t.user("batch r0o2 item 3 of 3")
        assert [p.split(":")[0] for p in batch_problems(t.log())] == ["batch r0o2 is torn"]
        out = t.compress(commits=[whole[0].commit_hash], content="summary r0o3: 2 run(s)")
        summary = out["commits"][0]  # type: ignore[typeddict-item]
        assert [p.split(" of ")[0] for p in summary_problems(t.log())] == ["compress r0o3"]
        t.edit(whole[1].commit_hash, "edited")
        # A history that lost the compression does not explain the compiled view.
        lost = [c for c in t.log() if c != summary]
        assert any("differs from its history" in p for p in view_problems(t, lost))
        begin = {"seq": 9, "call": "append_many", "branch": "main", "contents": ["a", "b", "c"]}
        head = t.log(limit=3)
        assert tail_problems(begin, "main", head[:2]) != [] and tail_problems(None, "main", head[:1]) != []
        everything = [c.commit_hash for c in reversed(t.log())]
    ledger = Ledger()
    ledger.known["main"] = everything[:2] + everything[3:]  # one commit the store has, never acked
    assert any("not where it was acked" in p for p in check_store(store, ledger, Stats(), random.Random(0)))
    ledger = Ledger()
    ledger.known["main"] = list(everything)
    ledger.acked = ["0" * 64]
    assert any("is gone" in p for p in check_store(store, ledger, Stats(), random.Random(0)))
    # The reader reports an acknowledged commit it cannot find.
    acks, report = tmp_path / "acks.jsonl", tmp_path / "reader.jsonl"
    acks.write_text('{"type":"ack","seq":0,"branch":"main","commits":["' + "0" * 64 + '"]}\n')
    reader = spawn("reader", store, acks, report, 0, stdout=subprocess.DEVNULL, stderr=None)
    try:
        deadline = time.monotonic() + 30
        while not ReaderReport.load(report).problems and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        reader.send_signal(signal.SIGTERM)
        reader.wait(timeout=30)
    assert "not in its history" in ReaderReport.load(report).problems[0]["problem"]
