"""What the torture and soak processes share: the acknowledgement log, `tract fsck`, and the
checks of a branch that hold in every state a reader can see (batches whole, compressions whole,
the view what its history says)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
from dataclasses import dataclass, field
from typing import Any, Optional

import tract

TESTS_DIR = pathlib.Path(__file__).resolve().parents[1]
ROOT = TESTS_DIR.parents[1]
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))

# A batch's messages start with this line, so a reader recognises a torn batch.
BATCH_RE = re.compile(r"^batch (r\d+o\d+) item (\d+) of (\d+)$")
# Every summary of one compress call written with `content=` starts with this line.
SUMMARY_RE = re.compile(r"^summary (r\d+o\d+): (\d+) run\(s\)$")


def clean_env() -> dict[str, str]:
    """The environment for the processes a test starts: no LLM (summaries are extractive or
    written by hand), no store, branch or fixed timestamp inherited from the caller."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TRACT_LLM_", "OPENAI_"))
        and k not in ("TRACT_STORE", "TRACT_BRANCH", "TRACT_TIMESTAMP")
    }
    env["PYTHONUNBUFFERED"] = "1"
    return env


def first_line(text: Optional[str]) -> str:
    """The first line of a message's content ("" for none)."""
    return (text or "").split("\n", 1)[0]


# ---------------------------------------------------------------------------------------------
# fsck


@dataclass
class FsckReport:
    """What `tract fsck --json` said about a store."""

    clean: bool
    problems: list[Any]
    exit_code: int
    output: str


def fsck(store: pathlib.Path) -> FsckReport:
    """Runs `tract fsck --json` on `store` (the one place the tests call fsck) and returns its
    report. The exit code and the JSON must agree: 0 with `"clean": true`, 1 with problems."""
    proc = subprocess.run(
        [str(TRACT_BIN), "--store", str(store), "fsck", "--json"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise AssertionError(f"tract fsck --json printed no JSON (exit {proc.returncode}): {output}") from e
    clean = report.get("clean")
    problems = report.get("problems")
    if not isinstance(clean, bool) or not isinstance(problems, list):
        raise AssertionError(f"tract fsck --json lacks clean/problems: {output}")
    if (proc.returncode == 0) != clean or proc.returncode not in (0, 1):
        raise AssertionError(f"tract fsck exit {proc.returncode} disagrees with clean={clean}: {output}")
    return FsckReport(clean=clean, problems=problems, exit_code=proc.returncode, output=output)


# ---------------------------------------------------------------------------------------------
# The acknowledgement log: one JSON object a line. A writer writes {"type": "begin", "seq": N,
# ...} before each store call and {"type": "ack", "seq": N, ...} after it returned, flushed and
# fsynced: an ack line on disk means the call returned. A line without its newline is one the
# writer was killed while writing: not written.


class AckWriter:
    """The writer's side of the acknowledgement log."""

    def __init__(self, path: pathlib.Path) -> None:
        """Opens (or creates) the log and drops a last line the previous writer was killed
        while writing; `next_seq` continues after the last complete line."""
        data = path.read_bytes() if path.exists() else b""
        complete = data[: data.rfind(b"\n") + 1]
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        if len(complete) != len(data):
            os.ftruncate(self.fd, len(complete))
            os.fsync(self.fd)
        os.lseek(self.fd, 0, os.SEEK_END)
        lines = complete.splitlines()
        self.next_seq = json.loads(lines[-1])["seq"] + 1 if lines else 0
        self.records: list[dict[str, Any]] = [json.loads(line) for line in lines]

    def _write(self, record: dict[str, Any], sync: bool) -> None:
        os.write(self.fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())
        if sync:
            os.fsync(self.fd)

    def begin(self, record: dict[str, Any]) -> int:
        """Records the call about to be made (not synced: only a SIGKILL is survived, and the
        page cache outlives the process); returns its sequence number."""
        seq = self.next_seq
        self.next_seq += 1
        self._write({"type": "begin", "seq": seq, **record}, sync=False)
        return seq

    def ack(self, seq: int, record: dict[str, Any]) -> None:
        """Records that call `seq` returned, durably (write + fsync)."""
        self._write({"type": "ack", "seq": seq, **record}, sync=True)

    def close(self) -> None:
        """Closes the file."""
        os.close(self.fd)


class AckReader:
    """Reads an acknowledgement log as it grows, one complete line at a time."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self.offset = 0
        self.partial_lines_seen = 0

    def read_new(self) -> list[dict[str, Any]]:
        """The records completed since the last call (a last line without its newline is left
        for later: its writer is still writing it, or was killed and will drop it)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        if end < len(data):
            self.partial_lines_seen += 1
        self.offset += end
        return [json.loads(line) for line in data[:end].splitlines()]


# ---------------------------------------------------------------------------------------------
# The view a branch's history says it has.

# A message as the view and the compiled request both show it: role, content, the result's
# call id, the ids of the calls it makes.
Entry = tuple[str, str, Optional[str], tuple[str, ...]]


def entry_of(c: tract.CommitInfo) -> Entry:
    """The message a commit carries, as an Entry."""
    m = c.message or {}
    calls = tuple(tc.get("id") or tc.get("function", {}).get("id") for tc in m.get("tool_calls") or [])
    return (m.get("role") or "", m.get("content") or "", m.get("tool_call_id"), calls)


def compiled_entries(compiled: tract.Compiled) -> list[Entry]:
    """The compiled request's messages as Entries, without the synthetic results compile adds
    for calls that have none (those are not in the history)."""
    out: list[Entry] = []
    for m in compiled.messages:
        meta = m.get("metadata") or {}
        if (
            m["role"] == "tool"
            and m.get("content") == tract.SYNTHETIC_RESULT
            and not meta.get("tract_repair")
        ):
            continue
        calls = tuple(tc["id"] for tc in m.get("tool_calls") or [])
        out.append((m["role"], m.get("content") or "", m.get("tool_call_id"), calls))
    return out


def side_commits(t: tract.Tract, tip: str, stop: set[str]) -> list[tract.CommitInfo]:
    """The commits of a merged branch from `tip` back along first parents to the first one in
    `stop` (exclusive), oldest first."""
    limit = 8
    while True:
        chain = t.log(limit=limit, start=tip)
        for i, c in enumerate(chain):
            if c.commit_hash in stop:
                return list(reversed(chain[:i]))
        if len(chain) < limit:
            return list(reversed(chain))
        limit *= 4


def model_view(t: tract.Tract, log: list[tract.CommitInfo]) -> tuple[list[Entry], list[str]]:
    """Folds a branch's first-parent history (`log`, newest first, as `Tract.log` returns it)
    into the view it implies, following the rules of docs/concepts.md: an append adds a
    position, an edit replaces a position's content, a compress replaces its contiguous sources
    with its summary, a `tool_result` merge adds its result, an `append` merge adds the merged
    branch's commits since it forked. Returns the view and every rule a commit breaks (an edit
    of a position not in view, a compress of sources not in view or not contiguous)."""
    problems: list[str] = []
    order: list[str] = []
    entries: dict[str, Entry] = {}
    on_branch = {c.commit_hash for c in log}
    merged: set[str] = set()

    def fold(c: tract.CommitInfo) -> None:
        h = c.commit_hash
        if c.op == "append" or (c.op == "merge" and c.merge_strategy == "tool_result"):
            order.append(h)
            entries[h] = entry_of(c)
        elif c.op == "edit":
            target = c.edit_target or ""
            if target not in entries:
                problems.append(f"edit {h[:10]} of {target[:10]}, which is not in view")
                return
            role, _, call_id, calls = entries[target]
            entries[target] = (role, c.content or "", call_id, calls)
        elif c.op == "compress":
            try:
                at = [order.index(s) for s in c.sources]
            except ValueError:
                problems.append(f"compress {h[:10]} has a source not in view")
                return
            if not at or at != list(range(at[0], at[0] + len(at))):
                problems.append(f"compress {h[:10]}: sources not one contiguous run in view order: {at}")
                return
            for source in c.sources:
                del entries[source]
            order[at[0] : at[-1] + 1] = [h]
            entries[h] = entry_of(c)
        elif c.op == "merge":
            for side in side_commits(t, c.parents[1], on_branch | merged):
                merged.add(side.commit_hash)
                fold(side)
        else:
            problems.append(f"{h[:10]}: unknown op {c.op}")

    for c in reversed(log):
        fold(c)
    return [entries[h] for h in order], problems


def batch_problems(log: list[tract.CommitInfo]) -> list[str]:
    """Every batch (`batch OP item I of N`) in a first-parent history is whole: its N items,
    in order, one after another."""
    seen: dict[str, list[tuple[int, int, int]]] = {}
    for at, c in enumerate(reversed(log)):
        if c.op != "append":
            continue
        m = BATCH_RE.match(first_line(c.content))
        if m:
            seen.setdefault(m.group(1), []).append((at, int(m.group(2)), int(m.group(3))))
    problems = []
    for op, items in seen.items():
        n = items[0][2]
        ok = [i for _, i, _ in items] == list(range(1, n + 1)) and [a for a, _, _ in items] == list(
            range(items[0][0], items[0][0] + n)
        )
        if not ok:
            problems.append(f"batch {op} is torn: items {[(a, i, k) for a, i, k in items]}")
    return problems


def summary_problems(log: list[tract.CommitInfo]) -> list[str]:
    """Every compress call written with `content=` (`summary OP: N run(s)`) committed all its N
    runs, one after another, or none."""
    seen: dict[str, list[tuple[int, int]]] = {}
    for at, c in enumerate(reversed(log)):
        if c.op != "compress":
            continue
        m = SUMMARY_RE.match(first_line(c.content))
        if m:
            seen.setdefault(m.group(1), []).append((at, int(m.group(2))))
    problems = []
    for op, items in seen.items():
        n = items[0][1]
        if [a for a, _ in items] != list(range(items[0][0], items[0][0] + n)):
            problems.append(f"compress {op} of {n} run(s) is torn: found at {[a for a, _ in items]}")
    return problems


def view_problems(t: tract.Tract, log: list[tract.CommitInfo]) -> list[str]:
    """Everything wrong with a branch as of the history `log` (newest first): a torn batch or
    compression, a commit breaking the view's rules, or a compiled request that is not the view
    its history implies. The request is compiled at `log`'s head, so the check is exact even
    while writers go on."""
    problems = batch_problems(log) + summary_problems(log)
    if not log:
        return problems
    model, fold_problems = model_view(t, log)
    problems += fold_problems
    compiled = t.compile(at=log[0].commit_hash)
    got = compiled_entries(compiled)
    if got != model:
        first = next((i for i, (a, b) in enumerate(zip(got, model)) if a != b), min(len(got), len(model)))
        problems.append(
            f"compiled view at {log[0].commit_hash[:10]} differs from its history at message {first}: "
            f"compiled {len(got)} messages, history says {len(model)}; "
            f"compiled[{first}]={got[first] if first < len(got) else None!r:.200}, "
            f"history[{first}]={model[first] if first < len(model) else None!r:.200}"
        )
    compiled.to_openai()
    compiled.to_anthropic()
    return problems


@dataclass
class ReaderReport:
    """What a reader process reported: the problems it saw and how much it read."""

    problems: list[dict[str, Any]] = field(default_factory=list)
    iterations: int = 0
    finished: bool = False

    @staticmethod
    def load(path: pathlib.Path) -> ReaderReport:
        """Reads a reader's report file (JSON lines: problems, progress and a final summary)."""
        report = ReaderReport()
        if not path.exists():
            return report
        for line in path.read_text().splitlines():
            if not line.endswith("}"):
                continue
            rec = json.loads(line)
            if rec["type"] == "problem":
                report.problems.append(rec)
            elif rec["type"] in ("progress", "done"):
                report.iterations = max(report.iterations, rec["iterations"])
                report.finished = report.finished or rec["type"] == "done"
        return report


class Reporter:
    """A reader's side of its report file: each line flushed as it is written."""

    def __init__(self, path: pathlib.Path) -> None:
        self.f = open(path, "a", buffering=1)

    def write(self, record: dict[str, Any]) -> None:
        """Appends one JSON line."""
        self.f.write(json.dumps(record) + "\n")
        self.f.flush()
