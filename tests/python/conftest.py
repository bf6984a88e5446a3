"""Shared fixtures: every test gets its own store file."""

import pathlib

import pytest

import tract


@pytest.fixture
def store_path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "store.redb"


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
