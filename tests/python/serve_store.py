"""Stores for the tests of `tract serve` (tests/python/test_serve.py) and for the screenshots of
docs/serve.md (scripts/screenshots.py), built with the Python API as an agent would build them.

`build_rich_store(path)` makes one store holding every kind of thing the web view shows and
returns a `RichStore` naming its commits and texts, so the tests look for exactly what was
written."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import queue
import re
import shutil
import subprocess
import threading
from typing import Optional, Union

import tract

# A tool result that tries every way to run script in a page that would set HTML.
XSS_PAYLOAD = (
    "<script>window.__xss=1</script>"
    '<img src=x onerror="window.__xss=2">'
    "[click](javascript:window.__xss=3)"
)

# The grep output that is edited down: its first line is searchable only in the history.
GREP_ORIGINAL = "\n".join(
    ["src/legacy/oldauth.py:7: TODO ORIGINALGREPMARKER remove the legacy login path"]
    + [f"src/module_{i:02d}.py:{10 + i}: TODO tidy this ({i})" for i in range(40)]
)
GREP_EDITED = "src/auth.py:12: TODO token expiry is off by one second"

# What the one answer with usage cost (the compressed run's), as Anthropic reports it.
USAGE = {
    "input_tokens": 12,
    "output_tokens": 340,
    "cache_read_input_tokens": 18000,
    "cache_creation_input_tokens": 2400,
    "model": "claude-sonnet-4-5",
}

# A log long enough to pass the stored policy's auto threshold: summarized on arrival.
BIG_LOG = "\n".join(
    [f"2025-11-23T12:{i // 60:02d}:{i % 60:02d}Z INFO request {i} served in {i % 17} ms path=/api/item/{i}"
     for i in range(300)]
    + ["2025-11-23T12:05:00Z ERROR connection refused: DATABASE_URL=postgres://db:5432/app"]
)
AUTO_THRESHOLD = 500

# The run that is compressed, and the summary written for it.
COMPRESSED_TEXTS = [
    "Before fixing anything, let us agree on a plan: COMPRESSEDSOURCEONE read config first.",
    "Agreed. I will read config.py, then the auth module, then run the tests (COMPRESSEDSOURCETWO).",
    "Good, and keep the changes small.",
]
SUMMARY_TEXT = "Summary: we agreed to read config, then auth, then run the tests, with small changes."

# The listing that is cleared: large enough to be bigger than the placeholder.
LS_LISTING = "\n".join(f"-rw-r--r-- 1 dev dev {1000 + i} Nov 23 12:00 file_{i:03d}.py" for i in range(60))

SECRET = "sk-live-SECRETVALUE-8c1f2a"
REDACT_REASON = "leaked API key"

SUB_BRANCH = "main/agents/a1"
SUB_ANSWER = "auth.py:12 compares with expiry + 1: tokens live one second too long."
REVIEW_BRANCH = "review"
REVIEW_TEXT = "Review the plan before any change is made."

READ_ARGS = {"path": "config.py", "lines": [1, 80]}
READ_RESULT = "config.py:42: DATABASE_URL = os.environ['DATABASE_URL']"
TEST_ARGS = {"cmd": "pytest tests/test_login.py -x"}
TEST_RESULT = "exit 1: ModuleNotFoundError: No module named 'pytest_asyncio'"
PENDING_ARGS = {"env": "staging", "dry_run": False}


@dataclasses.dataclass
class RichStore:
    path: pathlib.Path
    # Commit ids (full hashes) by role in the story.
    system: str
    question: str
    parallel_call: str
    read_result: str
    test_result: str
    grep_call: str
    grep_result: str  # the position (the original); `grep_edit` is the edit shown
    grep_edit: str
    log_result: str  # the position; its current content is the policy's summary
    compressed_sources: list
    summary: str
    ls_result: str
    env_result: str  # redacted
    task_call: str
    merge: str
    sub_tip: str
    xss_result: str
    pending_call: str
    review_tip: str
    # The number of entries of main's view (the pending call's synthetic result is none).
    total: int


def _write_tool_result(t: tract.Tract, call_id: str, name: str, content: str, is_error: bool = False) -> str:
    return t.tool_result(call_id, name, content, is_error=is_error).commit_hash


def build_rich_store(path: Union[str, pathlib.Path]) -> RichStore:
    """A store whose branch `main` holds every kind of entry the web view shows:

    0 system, 1 user, 2 assistant with two parallel calls (read_file ok, bash error) and
    3-4 their results, 5 a grep call and 6 its result edited down, 7 a read_file call and 8 its
    result summarized by the stored policy, 9 the summary of a compressed run of three
    messages, 10 an ls call and 11 its result cleared, 12 a bash call and 13 its result
    redacted, 14 a `task` call and 15 the merge of the sub-agent's branch as its result, 16 a
    fetch call and 17 its result holding an XSS payload, 18 a call left pending.

    Also a sub-agent branch (`main/agents/a1`, merged) and a second branch (`review`) forked
    from main after the question."""
    path = pathlib.Path(path)
    ids: dict = {}
    with tract.Tract.open(path, branch="main") as t:
        ids["system"] = t.system("You are a careful coding agent.").commit_hash
        ids["question"] = t.user("Where is DATABASE_URL read, and why does the login test fail?").commit_hash
        ids["parallel_call"] = t.assistant(
            "Let me look at the config and run the test.",
            tool_calls=[
                {"id": "call_read", "name": "read_file", "arguments": json.dumps(READ_ARGS)},
                {"id": "call_test", "name": "bash", "arguments": json.dumps(TEST_ARGS)},
            ],
        ).commit_hash
        ids["read_result"] = _write_tool_result(t, "call_read", "read_file", READ_RESULT)
        ids["test_result"] = _write_tool_result(t, "call_test", "bash", TEST_RESULT, is_error=True)

        # A grep whose output is edited down; the original stays in history.
        ids["grep_call"] = t.assistant(
            None, tool_calls=[{"id": "call_grep", "name": "grep", "arguments": {"pattern": "TODO"}}]
        ).commit_hash
        grep = t.tool_result("call_grep", "grep", GREP_ORIGINAL)
        ids["grep_result"] = grep.commit_hash
        ids["grep_edit"] = t.tool_result("call_grep", "grep", GREP_EDITED, edit=grep.commit_hash).commit_hash

        # A large result summarized on arrival by the stored policy (built-in extractive
        # summarizer: no summarizer is given and no LLM is named by the environment).
        t.configure_tool_summarization(auto_threshold=AUTO_THRESHOLD)
        t.assistant(None, tool_calls=[{"id": "call_log", "name": "read_file", "arguments": {"path": "logs/app.log"}}])
        ids["log_result"] = _write_tool_result(t, "call_log", "read_file", BIG_LOG)
        t.configure_tool_summarization()

        # A run of three messages compressed into a summary written by hand.
        run = [
            t.user(COMPRESSED_TEXTS[0]).commit_hash,
            # What the answer cost: compressed out of view, still counted in the branch's usage.
            t.assistant(COMPRESSED_TEXTS[1], usage=USAGE).commit_hash,
            t.user(COMPRESSED_TEXTS[2]).commit_hash,
        ]
        out = t.compress(commits=run, content=SUMMARY_TEXT)
        ids["compressed_sources"] = run
        ids["summary"] = out["commits"][0].commit_hash

        # A listing cleared by `clear_tool_results` (every other tool excluded).
        t.assistant(None, tool_calls=[{"id": "call_ls", "name": "ls", "arguments": {"path": "."}}])
        ids["ls_result"] = _write_tool_result(t, "call_ls", "ls", LS_LISTING)
        cleared = t.clear_tool_results(keep=0, exclude_tools=("read_file", "bash", "grep"))
        assert len(cleared["cleared"]) == 1, cleared

        # A result holding a secret, redacted.
        t.assistant(None, tool_calls=[{"id": "call_env", "name": "bash", "arguments": {"cmd": "env"}}])
        ids["env_result"] = _write_tool_result(t, "call_env", "bash", f"HOME=/home/dev\nAPI_KEY={SECRET}\n")
        t.redact(ids["env_result"], REDACT_REASON)

        # A sub-agent forked at a pending `task` call and merged back as its result.
        ids["task_call"] = t.assistant(
            None,
            tool_calls=[{"id": "task_1", "name": "task", "arguments": {"goal": "find why test_login fails"}}],
        ).commit_hash
        sub = t.fork(SUB_BRANCH)
        sub.user("Find why test_login fails.")
        sub.assistant(None, tool_calls=[{"id": "g1", "name": "grep", "arguments": {"pattern": "expiry"}}])
        sub.tool_result("g1", "grep", "auth.py:12:    if now > expiry + 1:")
        ids["sub_tip"] = sub.assistant(SUB_ANSWER).commit_hash
        sub.close()
        ids["merge"] = t.merge(SUB_BRANCH, strategy="tool_result", call_id="task_1").commit_hash

        # A page fetch whose result tries to run script.
        t.assistant(None, tool_calls=[{"id": "call_web", "name": "fetch_page", "arguments": {"url": "https://example.test/"}}])
        ids["xss_result"] = _write_tool_result(t, "call_web", "fetch_page", XSS_PAYLOAD)

        # A call left without a result.
        ids["pending_call"] = t.assistant(
            "Deploying the fix to staging.",
            tool_calls=[{"id": "call_deploy", "name": "deploy", "arguments": json.dumps(PENDING_ARGS)}],
        ).commit_hash

        # A second session forked from main after the question.
        review = t.fork(REVIEW_BRANCH, at=ids["question"])
        ids["review_tip"] = review.user(REVIEW_TEXT).commit_hash
        review.close()
        total = next(b.messages for b in t.branches() if b.name == "main")
    return RichStore(path=path, total=total, **ids)


def build_long_store(path: Union[str, pathlib.Path], n: int = 10_000, batch: int = 2_000) -> None:
    """A branch `main` whose view holds `n` messages (user and assistant turns, every tenth
    assistant message calling a tool and answered), appended in batches of one transaction."""
    msgs: list = [{"role": "system", "content": "You are a coding agent working a long session."}]
    i = 0
    while len(msgs) < n:
        if i % 10 == 9:
            cid = f"call_{i}"
            msgs.append({"role": "assistant", "content": None,
                         "tool_calls": [{"id": cid, "name": "grep", "arguments": json.dumps({"pattern": f"item{i}"})}]})
            msgs.append({"role": "tool", "tool_call_id": cid, "name": "grep",
                         "content": f"src/item_{i}.py:{i % 300}: item{i} = load({i})"})
        else:
            msgs.append({"role": "user", "content": f"Step {i}: look at item {i} and report what it does."})
            msgs.append({"role": "assistant", "content": f"Item {i} loads its record and checks field {i % 7}."})
        i += 1
    msgs = msgs[:n]
    # A view cannot end between a call and its result.
    if msgs[-1].get("tool_calls"):
        msgs[-1] = {"role": "assistant", "content": "Done."}
    with tract.Tract.open(path, branch="main") as t:
        for k in range(0, len(msgs), batch):
            t.append_many(msgs[k:k + batch])


# ---------------------------------------------------------------------------------------------
# Running `tract serve` and a headless Chromium (shared by the tests and scripts/screenshots.py).

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def clean_env(**extra: str) -> dict:
    """The environment without anything that would choose another store or branch."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACT_STORE", "TRACT_BRANCH"))}
    env.update(extra)
    return env


class Serve:
    """A `tract serve --port 0` process; its address is read from its first stdout line.

    Both output streams are drained by threads, so a chatty server never blocks on a full pipe.
    Use as a context manager or call `stop()`."""

    FIRST_LINE = re.compile(r"^tract serve: (http://([0-9.]+):(\d+)/)$")

    def __init__(self, store, *args: str, store_after: bool = False, env: Optional[dict] = None,
                 cwd=None, timeout: float = 30.0):
        assert TRACT_BIN.is_file(), f"{TRACT_BIN} is missing: build it with `cargo build -p tract-cli`"
        store_args = ["--store", str(store)]
        cmd = [str(TRACT_BIN)] + ([] if store_after else store_args) + ["serve", "--port", "0", *args]
        if store_after:
            cmd += store_args
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env if env is not None else clean_env(), cwd=cwd)
        self.stdout: "queue.Queue[Optional[str]]" = queue.Queue()
        self.stderr_lines: list = []
        threading.Thread(target=self._drain, args=(self.proc.stdout, self.stdout.put, True), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr, self.stderr_lines.append), daemon=True).start()
        try:
            line = self.stdout.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise AssertionError(f"`{' '.join(cmd)}` printed no address within {timeout} s; "
                                 f"stderr: {''.join(self.stderr_lines)!r}")
        if line is None:
            self.stop()
            raise AssertionError(f"`{' '.join(cmd)}` exited ({self.proc.returncode}) before printing its address; "
                                 f"stderr: {''.join(self.stderr_lines)!r}")
        self.first_line = line.rstrip("\n")
        m = self.FIRST_LINE.match(self.first_line)
        if not m:
            self.stop()
            raise AssertionError(f"unexpected first line of `tract serve`: {self.first_line!r}")
        self.url, self.host, self.port = m.group(1), m.group(2), int(m.group(3))

    @staticmethod
    def _drain(stream, put, mark_end: bool = False) -> None:
        for line in stream:
            put(line)
        if mark_end:
            put(None)  # the process closed its output

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def __enter__(self) -> "Serve":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def chromium_missing() -> Optional[str]:
    """Why the browser tests cannot run here (None when Chromium and chromedriver are there)."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        return (f"Chromium or chromedriver is absent ({', '.join(missing)}): "
                "scripts/test.sh installs Debian's chromium and chromium-driver")
    return None


def new_chrome(width: int = 1280, height: int = 1600):
    """A headless Chromium driven by Selenium, its console log kept (`driver.get_log("browser")`)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={width},{height}",
                "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
