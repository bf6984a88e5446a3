"""Shared fixtures: every test gets its own store (a file; or, for the tests that run on both
backends, a fresh schema of the PostgreSQL server the test command starts)."""

import os
import pathlib
import uuid

import pytest

import tract


@pytest.fixture
def store_path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "store.redb"


REPO = pathlib.Path(__file__).resolve().parents[2]


def postgres_url() -> str | None:
    """The server's URL (``TRACT_TEST_POSTGRES``, set by ``scripts/test.sh``), if any."""
    return os.environ.get("TRACT_TEST_POSTGRES") or None


def fresh_schema_url() -> str:
    """A URL naming a schema of the test server that nothing uses yet."""
    url = postgres_url()
    if url is None:
        pytest.skip("no PostgreSQL server: TRACT_TEST_POSTGRES is not set (scripts/test.sh sets it)")
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}schema=py_{uuid.uuid4().hex[:16]}"


@pytest.fixture(params=["redb", "postgres"])
def any_store(request, tmp_path: pathlib.Path) -> str:
    """A new store on each backend in turn: a file, then a PostgreSQL schema."""
    if request.param == "redb":
        return str(tmp_path / "store.redb")
    return fresh_schema_url()


@pytest.fixture
def t(store_path: pathlib.Path):
    with tract.Tract.open(store_path) as opened:
        yield opened


class StubLLM:
    """A chat-completions server on 127.0.0.1 replying from a script; records request bodies."""

    def __init__(self, replies):
        import http.server
        import json
        import threading

        self.bodies = []
        script = list(replies)
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (the stdlib's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.bodies.append((self.path, self.headers.get("Authorization"), json.loads(body)))
                status, payload = script.pop(0) if script else (500, {"error": "script ended"})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def reply(text):
    return (200, {"choices": [{"message": {"role": "assistant", "content": text}}]})
