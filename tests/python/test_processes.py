"""Real processes: a reader beside a writer, two writers, and a SIGKILL mid-session, on each
backend (a store file, a PostgreSQL schema)."""

import os
import signal
import subprocess
import sys
import textwrap

import tract

WRITER = textwrap.dedent(
    """
    import sys, tract
    path, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with tract.Tract.open(path) as t:
        for i in range(count):
            t.user(f"{tag} {i}")
            # Acknowledged only after append returned: the message must survive anything now.
            print(i, flush=True)
    """
)


def spawn_writer(path, tag: str, count: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), tag, str(count)],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_reader_follows_a_live_writer(any_store) -> None:
    tract.Tract.open(any_store).close()
    writer = spawn_writer(any_store, "live", 400)
    assert writer.stdout is not None
    with tract.Tract.open(any_store) as reader:
        acked = -1
        for line in writer.stdout:
            acked = int(line)
            if acked in (50, 150, 300):
                # While the writer keeps the file open and appending, this process reads
                # every message it acknowledged.
                seen = {c.content for c in reader.log()}
                assert {f"live {i}" for i in range(acked + 1)} <= seen
        assert writer.wait() == 0
        assert acked == 399
        assert len(reader.log()) == 400


def test_two_writers_lose_nothing_and_never_fork(any_store) -> None:
    tract.Tract.open(any_store).close()
    writers = [spawn_writer(any_store, tag, 150) for tag in ("a", "b")]
    for w in writers:
        assert w.wait() == 0
    with tract.Tract.open(any_store) as t:
        log = t.log()
        assert len(log) == 300
        for newer, older in zip(log, log[1:]):
            assert newer.parents == [older.commit_hash], "one linear branch"
        for tag in ("a", "b"):
            mine = [c.content for c in reversed(log) if c.content.startswith(tag + " ")]
            assert mine == [f"{tag} {i}" for i in range(150)]


def test_sigkill_after_acknowledged_appends_loses_nothing(any_store) -> None:
    tract.Tract.open(any_store).close()
    writer = spawn_writer(any_store, "crash", 1_000_000)
    assert writer.stdout is not None
    acked = -1
    for line in writer.stdout:
        acked = int(line)
        if acked >= 200:
            os.kill(writer.pid, signal.SIGKILL)
            break
    writer.wait()
    assert writer.returncode == -signal.SIGKILL
    # What the writer acknowledged before the kill and this process had not read yet; a line
    # cut short by the kill is not an acknowledgment.
    for line in writer.stdout:
        if line.endswith("\n"):
            acked = int(line)
    with tract.Tract.open(any_store) as t:
        contents = [c.content for c in reversed(t.log())]
    # Every acknowledged message is there, in order; at most the one in flight follows.
    assert contents[: acked + 1] == [f"crash {i}" for i in range(acked + 1)]
    assert len(contents) <= acked + 2
