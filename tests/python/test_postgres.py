"""A store on a real PostgreSQL server (the one `scripts/test.sh` starts): many processes on one
branch and on several, reached directly and through PgBouncer in transaction mode, writers of 64
branches beside a running gc, a server of its own stopped in the middle of appends, credentials and
passwords."""

import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from typing import Iterator

import pytest

import tract
from conftest import REPO, fresh_schema_url, postgres_url

pytestmark = pytest.mark.skipif(
    postgres_url() is None, reason="no PostgreSQL server (scripts/test.sh starts one)"
)

WRITER = textwrap.dedent(
    """
    import sys, tract
    url, branch, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with tract.Tract.open(url, branch=branch) as t:
        for i in range(count):
            t.user(f"{tag} {i}")
            print(i, flush=True)
    """
)


@pytest.fixture(params=["direct", "pgbouncer"])
def server_url(request) -> str:
    """A fresh schema of the test server, reached directly, then through PgBouncer in
    transaction mode (``TRACT_TEST_PGBOUNCER``; skipped when it is not set)."""
    url = fresh_schema_url()
    if request.param == "pgbouncer":
        bouncer = os.environ.get("TRACT_TEST_PGBOUNCER")
        if not bouncer:
            pytest.skip("no PgBouncer: TRACT_TEST_PGBOUNCER is not set (scripts/test.sh sets it)")
        direct = postgres_url()
        assert direct is not None and url.startswith(direct)
        url = bouncer + url[len(direct):]
    return url


def spawn(url: str, branch: str, tag: str, count: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, url, branch, tag, str(count)],
        stdout=subprocess.PIPE,
        text=True,
    )


def assert_linear(t: tract.Tract, branch: str) -> list[str]:
    log = t.log(start=branch)
    for newer, older in zip(log, log[1:]):
        assert newer.parents == [older.commit_hash], f"{branch} is one linear branch"
    return [c.content for c in reversed(log)]


def test_four_processes_on_one_branch_lose_nothing_and_never_fork(server_url) -> None:
    url = server_url
    tract.Tract.open(url).close()
    writers = [spawn(url, "main", f"w{n}", 60) for n in range(4)]
    for w in writers:
        assert w.wait() == 0
    with tract.Tract.open(url) as t:
        contents = assert_linear(t, "main")
        assert len(contents) == 240
        for n in range(4):
            mine = [c for c in contents if c.startswith(f"w{n} ")]
            assert mine == [f"w{n} {i}" for i in range(60)], "each writer's appends once, in order"
        assert t.fsck()["clean"]


def test_four_processes_on_four_branches_each_get_their_own(server_url) -> None:
    url = server_url
    tract.Tract.open(url).close()
    writers = [spawn(url, f"sessions/s{n}", f"s{n}", 60) for n in range(4)]
    for w in writers:
        assert w.wait() == 0
    with tract.Tract.open(url) as t:
        for n in range(4):
            assert assert_linear(t, f"sessions/s{n}") == [f"s{n} {i}" for i in range(60)]
        listed = {b.name: b.messages for b in t.branches()}
        assert all(listed[f"sessions/s{n}"] == 60 for n in range(4)), listed
        assert t.fsck()["clean"]


BRANCH_WRITER = textwrap.dedent(
    """
    import sys, threading, tract
    url, proc, branches, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    failures = []

    def write(b):
        try:
            with tract.Tract.open(url, branch=f"p{proc}/b{b}") as t:
                for i in range(count):
                    t.user(f"p{proc} b{b} {i}")
        except BaseException as e:
            failures.append(repr(e))

    threads = [threading.Thread(target=write, args=(b,)) for b in range(branches)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    sys.exit("; ".join(failures) if failures else 0)
    """
)


def test_writers_of_64_branches_beside_a_running_gc_lose_nothing(server_url) -> None:
    """8 processes, each appending to 8 branches of its own from 8 threads (64 branches, 30
    appends each), while this process runs gc (no grace) again and again on garbage it keeps
    making: every writer finishes without an error, every branch is linear and holds exactly
    its appends in order, gc removed only the garbage, and fsck is clean."""
    url = server_url
    procs, branches, count = 8, 8, 30
    tract.Tract.open(url).close()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", BRANCH_WRITER, url, str(p), str(branches), str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(procs)
    ]
    removed = 0
    runs = 0
    with tract.Tract.open(url) as t:
        while any(w.poll() is None for w in writers) or runs == 0:
            with tract.Tract.open(url, branch=f"scratch/{runs}") as scratch:
                scratch.user(f"garbage {runs}")
            t.delete_branch(f"scratch/{runs}")
            removed += t.gc(prune_now=True)["commits"]
            runs += 1
        outputs = [w.communicate() for w in writers]
        for w, (out, err) in zip(writers, outputs):
            assert w.returncode == 0, err
        removed += t.gc(prune_now=True)["commits"]
        listed = {b.name: b.messages for b in t.branches()}
        for p in range(procs):
            for b in range(branches):
                name = f"p{p}/b{b}"
                assert assert_linear(t, name) == [f"p{p} b{b} {i}" for i in range(count)], name
                assert listed[name] == count
        assert not [n for n in listed if n.startswith("scratch/")]
        assert removed == runs, "gc removed each garbage commit, and nothing else"
        assert t.fsck()["clean"]


def postgres_sh(action: str, home: pathlib.Path, check: bool = True) -> None:
    """Runs `scripts/postgres.sh ACTION HOME`: start, crash (an immediate stop, as a crash
    would), restart or stop the server whose directory is HOME."""
    subprocess.run(["bash", str(REPO / "scripts/postgres.sh"), action, str(home)], check=check, capture_output=True)


@pytest.fixture(scope="module")
def own_server(tmp_path_factory) -> Iterator[tuple[pathlib.Path, dict[str, str]]]:
    """A PostgreSQL server and PgBouncer of their own, for the test that stops the server: the
    tests running beside it on other workers use the shared one and must not see it go. Its
    directory and the URLs its `env` file names."""
    home = tmp_path_factory.mktemp("own-postgres")
    postgres_sh("start", home)
    try:
        names = {}
        for line in (home / "env").read_text().splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            names[name] = value
        yield home, names
    finally:
        postgres_sh("stop", home, check=False)


@pytest.mark.parametrize("via", ["direct", "pgbouncer"])
def test_the_server_stopped_during_appends_is_a_clear_error_and_the_next_call_reconnects(own_server, via) -> None:
    home, names = own_server
    bouncer = names["TRACT_TEST_PGBOUNCER"]
    url = f"{names['TRACT_TEST_POSTGRES'] if via == 'direct' else bouncer}?schema=py_{uuid.uuid4().hex[:16]}"
    acked: list[str] = []
    errors: list[BaseException] = []
    others: list[BaseException] = []
    slowest = [0.0]
    stop = threading.Event()

    def append_forever() -> None:
        with tract.Tract.open(url) as t:
            i = 0
            while not stop.is_set():
                started = time.monotonic()
                try:
                    t.user(f"m {i}")
                    acked.append(f"m {i}")
                except tract.DatabaseError as e:
                    errors.append(e)
                    time.sleep(0.05)
                except Exception as e:  # noqa: BLE001 - any other kind is a failure, said below
                    others.append(e)
                    return
                slowest[0] = max(slowest[0], time.monotonic() - started)
                i += 1

    writer = threading.Thread(target=append_forever)
    writer.start()
    try:
        while len(acked) < 50 and not others:
            time.sleep(0.01)
        postgres_sh("crash", home)
        time.sleep(1.0)
        during = len(errors)
        postgres_sh("restart", home)
        deadline = time.monotonic() + 20
        before = len(acked)
        while len(acked) < before + 50 and time.monotonic() < deadline and not others:
            time.sleep(0.01)
    finally:
        stop.set()
        writer.join(timeout=60)
    assert not writer.is_alive(), "an append hung"
    assert not others, f"a lost server is a DatabaseError, not {others!r}"
    # Through PgBouncer an append may instead wait, and go through once the server is back: a
    # pooler holds a query while it has no server connection (up to its query_wait_timeout, 15 s
    # here) and runs it on a new one, so a 1 s outage between two transactions may not show.
    if via == "direct":
        assert during > 0, "appends while the server was down raised DatabaseError"
    assert len(acked) >= before + 50, "appends go through again once the server is back"
    assert slowest[0] < 15, f"every call returned within its bounds ({slowest[0]:.1f} s)"
    for e in errors:
        assert "tract-test-password" not in str(e)
        assert e.store and "***" in e.store
    with tract.Tract.open(url) as t:
        contents = assert_linear(t, "main")
        # Every acknowledged append is there exactly once; an append whose commit reached the
        # server just before it stopped may be there without its acknowledgment.
        assert [c for c in contents if c in set(acked)] == acked
        assert len(contents) <= len(acked) + len(errors)
        assert t.fsck()["clean"]


def test_wrong_credentials_and_no_server_are_clear_errors_without_the_password() -> None:
    url = postgres_url()
    assert url is not None
    wrong = url.replace(":tract-test-password@", ":Wrong-Secret-99@")
    assert wrong != url
    with pytest.raises(tract.DatabaseError) as e:
        tract.Tract.open(wrong)
    assert "password authentication failed" in e.value.reason
    assert "Wrong-Secret-99" not in str(e.value) and "Wrong-Secret-99" not in e.value.store
    started = time.monotonic()
    with pytest.raises(tract.DatabaseError):
        tract.Tract.open("postgresql://tract:Other-Secret-5@127.0.0.1:1/tract")
    assert time.monotonic() - started < 10
    with pytest.raises(tract.InvalidInputError, match="unknown store scheme"):
        tract.Tract.open("mongodb://localhost/db")


def test_the_password_never_shows_in_status_repr_or_the_cli() -> None:
    url = fresh_schema_url()
    with tract.Tract.open(url) as t:
        t.user("hello")
        assert "tract-test-password" not in (t.path or "")
        assert "tract-test-password" not in repr(t)
        assert "tract-test-password" not in str(t.status())
    from test_sessions import TRACT_BIN as tract_bin

    for args in (["status"], ["status", "--json"], ["log", "--json"], ["fsck", "--json"]):
        out = subprocess.run([tract_bin, "--store", url, *args], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert "tract-test-password" not in out.stdout + out.stderr
    bad = subprocess.run(
        [tract_bin, "--store", url.replace(":tract-test-password@", ":Nope-Secret-1@"), "log"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0
    assert "Nope-Secret-1" not in bad.stdout + bad.stderr
    assert "password authentication failed" in bad.stderr
