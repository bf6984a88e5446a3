"""Codex CLI rollouts, checked against Codex itself: the real `codex` binary (PyPI's
`openai-codex-cli-bin`, pinned) reads the real rollouts in tests/fixtures/codex-real, and cut and
damaged variants of them, offline through `codex app-server` (`thread/list`, `thread/read` with
turns), and tract imports the same files.

How each side's shape maps onto the other's:

- Codex's thread is tract's branch: the thread id is the branch's last segment
  (`codex/<project key>/<thread id>`); `forkedFromId` names the parent's thread.
- Codex's turns are built from the `event_msg` lines (`user_message`, `agent_message`,
  `task_started`/`task_complete`, ...), which tract keeps as records of kind `codex.line`,
  verbatim. tract's view is built from the `response_item` lines instead: what the model is
  sent. The two can differ (the published files had their texts redacted differently on each
  side, and Codex writes context messages that are no turn). So the property checked is the
  issue's: every text Codex reads back (each `userMessage`'s text, each `agentMessage`'s) is in
  the branch's history, as a message or in a record, and nothing is on the branch that the file
  does not hold.
"""

import json
import os
import pathlib
import queue
import shutil
import subprocess
import threading

import pytest

import tract

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "codex-real"
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))
ROLLOUTS = sorted(FIXTURES.glob("rollout-*.jsonl"))

codex_cli_bin = pytest.importorskip("codex_cli_bin", reason="openai-codex-cli-bin is not installed")


def codex_binary() -> str:
    path = pathlib.Path(codex_cli_bin.__file__).parent / "bin" / "codex"
    assert path.is_file(), path
    return str(path)


class AppServer:
    """`codex app-server` over stdio: one JSON object a line each way."""

    def __init__(self, home: pathlib.Path):
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env.update(CODEX_HOME=str(home), RUST_LOG="error")
        self.proc = subprocess.Popen(
            [codex_binary(), "app-server", "--listen", "stdio://"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
            bufsize=1,
        )
        self.replies: queue.Queue = queue.Queue()
        self.next = 0
        threading.Thread(target=self.pump, daemon=True).start()
        self.call("initialize", {"clientInfo": {"name": "tract-test", "version": "0"}, "capabilities": {}})
        self.send({"method": "initialized"})

    def pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.replies.put(json.loads(line))
        self.replies.put(None)

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict) -> dict:
        self.next += 1
        self.send({"id": self.next, "method": method, "params": params})
        while True:
            reply = self.replies.get(timeout=60)
            assert reply is not None, f"codex app-server exited while answering {method}"
            if reply.get("id") == self.next:
                assert "error" not in reply, reply
                return reply["result"]

    def threads(self) -> dict[str, dict]:
        """Every thread Codex lists, read with its turns, by id."""
        listed = self.call("thread/list", {"limit": 100, "sourceKinds": ["cli", "vscode", "exec", "unknown"]})
        return {
            t["id"]: self.call("thread/read", {"threadId": t["id"], "includeTurns": True})["thread"]
            for t in listed["data"]
        }

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def codex_reads(files: list[pathlib.Path], home: pathlib.Path) -> dict[str, dict]:
    """What Codex reads of `files`, put where it looks for them."""
    day = home / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    for f in files:
        shutil.copy(f, day / f.name)
    server = AppServer(home)
    try:
        return server.threads()
    finally:
        server.close()


def texts_codex_shows(thread: dict) -> list[str]:
    """The texts of the user's and the agent's messages in Codex's turns."""
    out = []
    for turn in thread["turns"]:
        for item in turn["items"]:
            if item["type"] == "userMessage":
                out += [c["text"] for c in item["content"] if c.get("type") == "text" and c["text"].strip()]
            elif item["type"] == "agentMessage" and item.get("text", "").strip():
                out.append(item["text"])
    return out


def imported(store: pathlib.Path, files: list[pathlib.Path]) -> dict[str, str]:
    """Imports `files` with `tract import`; returns each file's branch by thread id."""
    run = subprocess.run(
        [str(TRACT_BIN), "--store", str(store), "import", "--json", *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
    )
    return {r["branch"].rsplit("/", 1)[1]: r["branch"] for r in json.loads(run.stdout)}


def history_text(store: pathlib.Path, branch: str) -> str:
    """Everything the branch's history holds: each commit's message and each record's data."""
    with tract.Tract.open(store, branch=branch) as t:
        parts = [c.content or "" for c in t.log()]
        parts += [r.data for r in t.records("codex")]
    # A record holds its line as JSON: its texts are read back from it, unescaped.
    out = []
    for p in parts:
        out.append(p)
        try:
            out.append(json.dumps(json.loads(p), ensure_ascii=False))
        except (ValueError, TypeError):
            pass
    return "\n".join(out)


def check(files: list[pathlib.Path], tmp: pathlib.Path) -> dict[str, dict]:
    threads = codex_reads(files, tmp / "codex-home")
    store = tmp / "store.redb"
    tract.Tract.open(store).close()
    branches = imported(store, files)
    for thread_id, thread in threads.items():
        # Exactly one branch per rollout, named after its thread.
        assert thread_id in branches, (thread_id, branches)
        held = history_text(store, branches[thread_id])
        for text in texts_codex_shows(thread):
            assert text in held or json.dumps(text, ensure_ascii=False)[1:-1] in held, (
                f"{thread_id}: Codex shows {text[:80]!r}, which the branch's history lacks"
            )
    return threads


@pytest.mark.parametrize("rollout", ROLLOUTS, ids=lambda p: p.name[8:27])
def test_every_text_codex_reads_of_a_real_rollout_is_in_its_branch(rollout: pathlib.Path, tmp_path) -> None:
    threads = check([rollout], tmp_path)
    assert len(threads) == 1
    (thread,) = threads.values()
    assert texts_codex_shows(thread), "Codex shows something of every fixture"


def test_cut_and_damaged_rollouts_read_the_same_way(tmp_path) -> None:
    """A rollout cut at several lines (a session still being written) and one with a damaged
    line in it (which Codex skips): each is read by Codex and by tract, and the property holds."""
    source = FIXTURES / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
    lines = source.read_text().splitlines(keepends=True)
    variants = []
    for k, cut in enumerate([40, 120, 250]):
        v = tmp_path / "in" / f"rollout-2026-05-11T11-26-5{k}-019e1625-789d-76c0-80ab-3724b5ddb79{k}.jsonl"
        v.parent.mkdir(exist_ok=True)
        # Each variant is a thread of its own.
        head = json.loads(lines[0])
        head["payload"]["id"] = f"019e1625-789d-76c0-80ab-3724b5ddb79{k}"
        v.write_text(json.dumps(head) + "\n" + "".join(lines[1:cut]))
        variants.append(v)
    damaged = tmp_path / "in" / "rollout-2026-05-11T11-26-59-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
    broken = list(lines)
    broken[60] = broken[60][: len(broken[60]) // 2] + "\n"
    damaged.write_text("".join(broken))
    variants.append(damaged)
    threads = check(variants, tmp_path)
    assert len(threads) == len(variants)
