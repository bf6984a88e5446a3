"""The crash-torture writer: a seeded random agent session on the branch `main` of a store,
which the driver (test_torture.py) SIGKILLs at random moments and starts again.

    python -m torture.writer STORE ACKS SEED RUN

Before each store call it writes a `begin` record to the ACKS log, and after the call returned
an `ack` record (flushed and fsynced) with what was committed: the new commits of the branch
(oldest first), and the batch's contents, the compression's sources and so on. It prints
`ack SEQ` on stdout after each ack. On start it reads the store to continue sensibly: tool calls
left without a result are answered (by `repair`, by a result, or by the sub-agent's merge), and
branches of sub-agents a kill interrupted are merged or deleted.

Every message names the operation that wrote it (`r3o17`: run 3, operation 17), so every
content is unique and a reader recognises a batch's items and a compression's summaries.
"""

from __future__ import annotations

import functools
import json
import pathlib
import random
import sys
import warnings
from typing import Any, Callable, Optional, TypeVar

import tract
from torture.common import AckWriter

T = TypeVar("T")

WORDS = (
    "agent context token commit branch merge store reader writer batch summary window model "
    "request result grep file line path error retry config value deploy latency cache index"
).split()
TOOLS = ("grep", "read_file", "bash")
MAIN = "main"


class Writer:
    """One run of the writer: the store, the ack log and the run's random choices."""

    def __init__(self, store: str, acks: pathlib.Path, seed: int, run: int) -> None:
        self.rng = random.Random(f"{seed}/{run}")
        self.run = run
        self.ops = 0
        self.log = AckWriter(acks)
        self.main = tract.Tract.open(store, branch=MAIN)

    # -- helpers --------------------------------------------------------------------------------

    def op_id(self) -> str:
        """A fresh operation id, unique across runs."""
        self.ops += 1
        return f"r{self.run}o{self.ops}"

    def prose(self, head: str, lines: int) -> str:
        """A message: `head`, then `lines` lines of words (long enough to summarize)."""
        body = [
            " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(6, 14))) for _ in range(lines)
        ]
        return "\n".join([head, *body])

    @staticmethod
    def new_commits(h: tract.Tract, before: Optional[str]) -> list[str]:
        """The commits on `h`'s branch after `before` along first parents, oldest first."""
        limit = 8
        while True:
            log = h.log(limit=limit)
            hashes = [c.commit_hash for c in log]
            if before in hashes:
                return list(reversed(hashes[: hashes.index(before)]))
            if len(log) < limit:
                if before is not None:
                    raise RuntimeError(f"{before} is no longer in the history of {h.current_branch}")
                return list(reversed(hashes))
            limit *= 4

    def call(
        self, h: tract.Tract, kind: str, expect: dict[str, Any], fn: Callable[[], T], **details: Any
    ) -> tuple[T, list[str]]:
        """Makes one store call on handle `h`: `begin` record, the call, then the `ack` record
        with the commits it added to `h`'s branch. Returns the call's result and those
        commits."""
        branch = h.current_branch
        before = h.head
        seq = self.log.begin({"call": kind, "branch": branch, **expect})
        result = fn()
        commits = self.new_commits(h, before)
        self.log.ack(seq, {"call": kind, "branch": branch, "commits": commits, **expect, **details})
        print(f"ack {seq}", flush=True)
        return result, commits

    def append(self, h: tract.Tract, message: dict[str, Any]) -> str:
        """Appends one message; returns its commit."""
        info, _ = self.call(
            h, "append", {"contents": [message.get("content") or ""]}, lambda: h.append(message)
        )
        return info.commit_hash

    def tool_result(
        self, h: tract.Tract, call_id: str, name: str, content: str, is_error: bool = False
    ) -> None:
        """Records a tool result through the store's policy (it may add a summary edit)."""
        self.call(
            h,
            "tool_result",
            {"contents": [content]},
            lambda: h.tool_result(call_id, name, content, is_error=is_error),
        )

    def grep_output(self, op: str, n: int) -> str:
        """A tool result of `n` lines."""
        lines = [f"result {op}"]
        for i in range(n):
            word, line, hit = self.rng.choice(WORDS), self.rng.randint(1, 999), self.rng.choice(WORDS)
            lines.append(f"src/{word}_{i}.py:{line}: {hit} {op}")
        return "\n".join(lines)

    def view_positions(self, limit: int, skip_newest: int) -> list[tract.CommitInfo]:
        """Dialogue positions (user and assistant text, summaries) of the branch's own history
        that are still in view, newest first, skipping the newest few. A position among the
        newest `limit` commits can only have been compressed by a newer commit, so the window's
        own compress commits tell which are gone (`compressed_into` would walk the whole
        history for each)."""
        window = self.main.log(limit=limit)
        gone = {s for c in window for s in c.sources}
        out = []
        for c in window[skip_newest:]:
            if c.op not in ("append", "compress") or c.role not in ("user", "assistant"):
                continue
            if (c.message or {}).get("tool_calls") or not c.content or c.commit_hash in gone:
                continue
            out.append(c)
        return out

    # -- recovery -------------------------------------------------------------------------------

    def recover(self) -> None:
        """Continues after a kill: answers the tool calls left without a result (a sub-agent's
        task by merging its branch when it has an answer, others by `repair` or by a result),
        then merges or deletes the branches of interrupted sub-agents."""
        pending = self.main.pending_tool_calls()
        branches = {b.name for b in self.main.branches()}
        if pending:
            use_repair = self.rng.random() < 0.5
            for pc in pending:
                sub = "sub/" + pc.call_id.removeprefix("task-")
                if pc.name == "task" and sub in branches:
                    try:
                        self.call(
                            self.main,
                            "merge",
                            {"merged": sub, "strategy": "tool_result"},
                            functools.partial(
                                self.main.merge, sub, strategy="tool_result", call_id=pc.call_id
                            ),
                        )
                        continue
                    except tract.InvalidOperationError:
                        pass  # the sub-agent had no answer yet
                if use_repair:
                    left = self.main.pending_tool_calls()
                    self.call(self.main, "repair", {"count": len(left)}, self.main.repair)
                    break
                self.tool_result(
                    self.main,
                    pc.call_id,
                    pc.name,
                    f"recovered result of {pc.call_id} in run {self.run}",
                    is_error=True,
                )
        for name in sorted(branches):
            if not name.startswith(("sub/", "side/")):
                continue
            if name.startswith("side/"):
                try:
                    self.call(
                        self.main,
                        "merge",
                        {"merged": name, "strategy": "append"},
                        functools.partial(self.main.merge, name),
                    )
                except tract.InvalidOperationError:
                    pass  # merged already: nothing new
            self.call(
                self.main, "delete", {"deleted": name}, functools.partial(self.main.delete_branch, name)
            )

    # -- operations -----------------------------------------------------------------------------

    def op_user(self) -> None:
        """A user message."""
        op = self.op_id()
        self.append(self.main, {"role": "user", "content": self.prose(f"user {op}", self.rng.randint(1, 4))})

    def op_assistant(self) -> None:
        """An assistant answer."""
        op = self.op_id()
        self.append(
            self.main, {"role": "assistant", "content": self.prose(f"assistant {op}", self.rng.randint(1, 4))}
        )

    def op_tool_turn(self) -> None:
        """An assistant message calling 1-3 tools, then each result (some large: the policy
        may summarize them, `clear` will clear them)."""
        op = self.op_id()
        calls = [
            {"id": f"{op}-c{k}", "name": self.rng.choice(TOOLS), "arguments": json.dumps({"q": op, "k": k})}
            for k in range(self.rng.randint(1, 3))
        ]
        self.append(self.main, {"role": "assistant", "content": f"calling {op}", "tool_calls": calls})
        for c in calls:
            lines = self.rng.choice((2, 5, 60, 150))
            self.tool_result(
                self.main, c["id"], c["name"], self.grep_output(op, lines), is_error=self.rng.random() < 0.1
            )

    def op_batch(self) -> None:
        """A batch (`append_many`, one transaction) of 2-6 messages, sometimes with a tool
        call and its result; each item starts `batch OP item I of N`."""
        op = self.op_id()
        n = self.rng.randint(2, 6)
        msgs: list[dict[str, Any]] = []
        for i in range(1, n + 1):
            head = f"batch {op} item {i} of {n}"
            if i == n - 1 and self.rng.random() < 0.3:
                msgs.append(
                    {
                        "role": "assistant",
                        "content": head,
                        "tool_calls": [{"id": f"{op}-b", "name": "bash", "arguments": "{}"}],
                    }
                )
            elif i == n and msgs and msgs[-1].get("tool_calls"):
                msgs.append(
                    {"role": "tool", "tool_call_id": f"{op}-b", "name": "bash", "content": head + "\nexit 0"}
                )
            else:
                msgs.append(
                    {
                        "role": self.rng.choice(("user", "assistant")),
                        "content": self.prose(head, self.rng.randint(0, 3)),
                    }
                )
        contents = [m["content"] for m in msgs]
        self.call(
            self.main, "append_many", {"contents": contents, "batch": op}, lambda: self.main.append_many(msgs)
        )

    def op_compress_manual(self) -> None:
        """Compresses a window of older messages with a summary written by hand; a preserved
        message in the middle sometimes splits it into two runs (one transaction)."""
        op = self.op_id()
        cands = list(reversed(self.view_positions(60, 4)))
        if len(cands) < 3:
            return
        k = self.rng.randint(2, min(8, len(cands)))
        start = self.rng.randint(0, len(cands) - k)
        window = [c.commit_hash for c in cands[start : start + k]]
        preserve = [window[k // 2]] if k >= 3 and self.rng.random() < 0.4 else []
        plan = self.main.compress(commits=window, preserve=preserve, dry_run=True)
        runs = len(plan["sources"])
        content = f"summary {op}: {runs} run(s)\n" + self.prose(f"what {op} kept", 1)
        self.call(
            self.main,
            "compress",
            {"runs": runs, "content": content, "sources": plan["sources"]},
            lambda: self.main.compress(commits=window, preserve=preserve, content=content),
        )

    def op_compress_extractive(self) -> None:
        """Compresses one run of older messages with the built-in extractive summarizer (it
        may skip a run whose summary would not be shorter)."""
        self.op_id()
        cands = list(reversed(self.view_positions(60, 4)))
        if len(cands) < 2:
            return
        k = self.rng.randint(2, min(6, len(cands)))
        start = self.rng.randint(0, len(cands) - k)
        window = [c.commit_hash for c in cands[start : start + k]]
        run = self.main.compress(commits=window, dry_run=True)["sources"][0]
        target = self.rng.choice((20, 40))
        self.call(
            self.main,
            "compress",
            {"runs": 1, "content": None, "sources": [run]},
            lambda: self.main.compress(commits=run, target_tokens=target),
        )

    def op_edit(self) -> None:
        """Edits a recent user or assistant message still in view."""
        op = self.op_id()
        cands = [c for c in self.view_positions(30, 0) if c.op == "append"]
        if not cands:
            return
        target = self.rng.choice(cands).commit_hash
        content = self.prose(f"edited {op}", self.rng.randint(0, 2))
        self.call(
            self.main,
            "edit",
            {"target": target, "contents": [content]},
            lambda: self.main.edit(target, content),
        )

    def op_clear(self) -> None:
        """Clears old tool results (edits, one transaction)."""
        self.op_id()
        keep = self.rng.randint(1, 3)
        count = len(self.main.clear_tool_results(keep=keep, dry_run=True)["cleared"])
        self.call(self.main, "clear", {"count": count}, lambda: self.main.clear_tool_results(keep=keep))

    def op_side_merge(self) -> None:
        """A fork that writes a few messages while main goes on, merged back (`append`)."""
        if self.main.head is None:  # nothing to fork yet (forking an empty branch is refused)
            self.op_user()
            return
        op = self.op_id()
        name = f"side/{op}"
        at = self.main.head
        side, _ = self.call(self.main, "fork", {"new_branch": name, "at": at}, lambda: self.main.fork(name))
        for i in range(self.rng.randint(1, 3)):
            self.append(side, {"role": "user", "content": self.prose(f"side {op} note {i}", 1)})
        for i in range(self.rng.randint(0, 2)):
            self.append(self.main, {"role": "user", "content": self.prose(f"main {op} meanwhile {i}", 1)})
        self.call(self.main, "merge", {"merged": name, "strategy": "append"}, lambda: self.main.merge(name))
        if self.rng.random() < 0.8:
            self.call(self.main, "delete", {"deleted": name}, lambda: self.main.delete_branch(name))

    def op_task_merge(self) -> None:
        """A sub-agent: main calls `task`, the sub-agent works on a fork, and its answer comes
        back as the call's result (`tool_result` merge)."""
        op = self.op_id()
        name = f"sub/{op}"
        call_id = f"task-{op}"
        self.append(
            self.main,
            {
                "role": "assistant",
                "content": f"delegating {op}",
                "tool_calls": [{"id": call_id, "name": "task", "arguments": json.dumps({"goal": op})}],
            },
        )
        at = self.main.head
        sub, _ = self.call(self.main, "fork", {"new_branch": name, "at": at}, lambda: self.main.fork(name))
        self.append(sub, {"role": "user", "content": f"goal of {op}"})
        self.append(
            sub,
            {
                "role": "assistant",
                "content": f"searching for {op}",
                "tool_calls": [{"id": f"{op}-g", "name": "grep", "arguments": "{}"}],
            },
        )
        self.tool_result(sub, f"{op}-g", "grep", self.grep_output(op, 3))
        self.append(sub, {"role": "assistant", "content": self.prose(f"answer of {op}", 2)})
        self.call(
            self.main,
            "merge",
            {"merged": name, "strategy": "tool_result"},
            lambda: self.main.merge(name, strategy="tool_result", call_id=call_id),
        )
        if self.rng.random() < 0.8:
            self.call(self.main, "delete", {"deleted": name}, lambda: self.main.delete_branch(name))

    def op_policy(self) -> None:
        """Changes the stored tool-summarization policy."""
        self.op_id()
        instructions = {t: f"keep what matters of {t}" for t in TOOLS if self.rng.random() < 0.4}
        threshold = self.rng.choice((None, 300, 800))
        default = self.rng.choice((None, "keep errors verbatim"))
        policy = {"instructions": instructions, "auto_threshold": threshold, "default_instructions": default}
        self.call(
            self.main,
            "policy",
            {"policy": policy},
            lambda: self.main.configure_tool_summarization(
                instructions, auto_threshold=threshold, default_instructions=default
            ),
        )

    def go(self) -> None:
        """Recovers, then runs operations until killed."""
        self.recover()
        ops: list[tuple[Callable[[], None], int]] = [
            (self.op_user, 18),
            (self.op_assistant, 10),
            (self.op_tool_turn, 18),
            (self.op_batch, 12),
            (self.op_compress_manual, 6),
            (self.op_compress_extractive, 6),
            (self.op_edit, 8),
            (self.op_clear, 4),
            (self.op_side_merge, 5),
            (self.op_task_merge, 5),
            (self.op_policy, 3),
        ]
        fns, weights = zip(*ops)
        while True:
            self.rng.choices(fns, weights)[0]()


def main() -> None:
    """Entry point: STORE ACKS SEED RUN."""
    store, acks, seed, run = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    warnings.simplefilter("ignore", tract.TractWarning)
    Writer(store, acks, seed, run).go()


if __name__ == "__main__":
    main()
