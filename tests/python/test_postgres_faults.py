"""Every wait on a PostgreSQL server is bounded: a server that accepts and never answers, a TCP
handshake that never completes, and a server that stops answering in the middle of a session are
each a DatabaseError within the bound the URL sets, never a hang; and a handle whose connection
was lost works again once the server answers, having written nothing half.

Loopback only: the silent servers and the proxy are sockets of the test on 127.0.0.1."""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import uuid

import pytest

import tract

DIRECT = os.environ.get("TRACT_TEST_POSTGRES") or None
PASSWORD = "tract-test-password"

pytestmark = pytest.mark.skipif(DIRECT is None, reason="no PostgreSQL server (scripts/test.sh starts one)")


def url_to(port: int, **params: str) -> str:
    """The test server's URL with its port replaced by `port` (a socket of the test), a fresh
    schema, and `params`."""
    parts = urllib.parse.urlsplit(DIRECT)
    query = {**params, "schema": f"faults_{uuid.uuid4().hex[:16]}"}
    return f"postgresql://tract:{PASSWORD}@127.0.0.1:{port}{parts.path}?" + urllib.parse.urlencode(query)


def fails_within(url: str, bound: float) -> tuple[tract.DatabaseError, float]:
    """Opens `url`, which must fail with a DatabaseError within `bound` seconds."""
    started = time.monotonic()
    with pytest.raises(tract.DatabaseError) as e:
        tract.Tract.open(url)
    elapsed = time.monotonic() - started
    assert elapsed < bound, f"failed after {elapsed:.1f} s, not within {bound} s: {e.value}"
    assert PASSWORD not in str(e.value)
    return e.value, elapsed


def test_a_server_that_accepts_and_never_answers_fails_within_connect_timeout() -> None:
    """A listener that accepts and stays silent (not even the answer to the TLS request):
    connect_timeout=2 bounds the whole login."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        error, _ = fails_within(url_to(listener.getsockname()[1], connect_timeout="2"), 4)
        assert "connect_timeout" in error.reason, error.reason
        assert accepted, "the client did reach the listener"
    finally:
        listener.close()
        for s in accepted:
            s.close()


def test_a_tcp_handshake_that_never_completes_fails_within_connect_timeout() -> None:
    """A listener whose backlog is full (listen(0), never accepting): the kernel drops the new
    SYN, so the TCP connect itself hangs; connect_timeout=2 bounds it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers: list[socket.socket] = []
    try:
        for _ in range(16):
            probe = socket.socket()
            probe.settimeout(0.3)
            fillers.append(probe)
            try:
                probe.connect(("127.0.0.1", port))
            except TimeoutError:
                break  # the queue is full: a new connect hangs
        else:
            pytest.skip("the backlog never filled: this kernel answers every SYN")
        error, _ = fails_within(url_to(port, connect_timeout="2"), 4)
        assert "connect_timeout" in error.reason or "timed out" in error.reason, error.reason
    finally:
        for s in fillers:
            s.close()
        listener.close()


class FreezingProxy:
    """A TCP proxy on 127.0.0.1 to the test server, a thread per direction and connection.
    While frozen it forwards nothing, either way, on any connection, and keeps every socket
    open: a server that stopped answering without closing anything."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.frozen = threading.Event()
        self.closed = threading.Event()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client = self.listener.accept()[0]
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while not self.closed.is_set():
                if self.frozen.is_set():
                    time.sleep(0.01)
                    continue
                if not select.select([src], [], [], 0.05)[0]:
                    continue
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.closed.set()
        self.listener.close()
        for s in self.sockets:
            s.close()


def test_a_server_that_stops_answering_mid_session_is_an_error_within_the_bound_and_the_handle_recovers() -> None:
    """Through a proxy that freezes: with statement_timeout=1000 (ms) an append that gets no
    answer fails within the bound (1 s + the 5 s grace); once the proxy forwards again, the
    same handle appends again (its pool connects anew), and the store holds exactly the
    acknowledged appends: the one that failed left nothing behind."""
    parts = urllib.parse.urlsplit(DIRECT)
    proxy = FreezingProxy((parts.hostname, parts.port))
    try:
        url = url_to(proxy.port, statement_timeout="1000")
        acked = []
        with tract.Tract.open(url) as t:
            for i in range(3):
                t.user(f"m {i}")
                acked.append(f"m {i}")
            proxy.frozen.set()
            started = time.monotonic()
            with pytest.raises(tract.DatabaseError) as e:
                t.user("while frozen")
            elapsed = time.monotonic() - started
            assert "no answer from the server within" in e.value.reason, e.value.reason
            assert 5 < elapsed < 10, f"the bound is 6 s; failed after {elapsed:.1f} s"
            proxy.frozen.clear()
            t.user("after")
            acked.append("after")
            assert [m["content"] for m in t.compile().messages] == acked
    finally:
        proxy.close()
    schema = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["schema"][0]
    with tract.Tract.open(f"{DIRECT}?schema={schema}") as direct:
        log = direct.log()
        for newer, older in zip(log, log[1:]):
            assert newer.parents == [older.commit_hash], "one linear branch"
        assert [c.content for c in reversed(log)] == acked
        assert direct.fsck()["clean"]


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_a_store_whose_creator_died_before_recording_its_format_is_completed_on_open() -> None:
    """The state a creator leaves when it dies between making the tables and recording the
    store's format (made here by emptying `meta` of a new, empty store): the next open that may
    create the store completes it."""
    url = f"{DIRECT}?schema=faults_{uuid.uuid4().hex[:16]}"
    tract.Tract.open(url).close()
    schema = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["schema"][0]
    emptied = subprocess.run(
        ["psql", DIRECT, "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", f'DELETE FROM "{schema}".meta'],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert emptied.returncode == 0, emptied.stderr
    with tract.Tract.open(url) as t:
        t.user("after the creator died")
        assert t.fsck()["clean"]
