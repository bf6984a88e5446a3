"""tract as the session store of the Claude Agent SDK (``claude-agent-sdk``).

Use it where the SDK takes a session store::

    from claude_agent_sdk import ClaudeAgentOptions
    from tract.integrations.claude_agent_sdk import TractSessionStore

    options = ClaudeAgentOptions(session_store=TractSessionStore("agent.tract"))

Each session (``project_key``, ``session_id``) is the branch
``claude/<project_key>/<session_id>`` of the store, and each of its sub-agent transcripts
(``subpath``) the branch ``claude/<project_key>/<session_id>/<subpath>``. Every ``append`` is
one *record* on that branch (a commit the view skips, see ``Tract.record``) holding the
entries exactly as given, so ``load`` returns them deep-equal and in order; the user and
assistant messages among them (text, thinking, tool calls and tool results, and what each
response cost, once per response) are appended to
the branch as tract messages in the same transaction, so ``tract log``, search, the tool
queries and compile see the session. Deleting a session deletes its branches; the reflog keeps
them.

In branch names, letters, digits, ``-`` and ``.`` are kept and any other character is written
as ``_`` with its UTF-8 bytes in hex, so every key has a branch and the branch gives the key
back.

The module needs nothing from the SDK until a session's summary is folded (``append`` of a
main transcript), which uses the SDK's own ``fold_session_summary``.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Optional, Union

from tract._tract import Tract

if TYPE_CHECKING:
    from claude_agent_sdk.types import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

__all__ = ["TractSessionStore"]

ENTRIES = "claude.entries"
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.")


def _segment(text: str) -> str:
    """A key part as one branch name segment, reversibly (see `_unsegment`)."""
    return "".join(ch if ch in _SAFE else "".join(f"_{b:02x}" for b in ch.encode()) for ch in text)


def _unsegment(segment: str) -> Optional[str]:
    raw = bytearray()
    i = 0
    try:
        while i < len(segment):
            if segment[i] == "_":
                raw.append(int(segment[i + 1 : i + 3], 16))
                i += 3
            else:
                raw.extend(segment[i].encode())
                i += 1
        return raw.decode()
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def _text(content: Any) -> str:
    """The text of a tool result's content (a string, or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return "" if content is None else json.dumps(content)


class _Mirror:
    """What the mirror of one transcript knows between appends: the tool names by call id,
    the uuids stored, and the conversation's current line (`tip`), so that a retried request
    Claude Code abandoned (a line branching off an earlier one) is not mirrored as if it
    followed the last message."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.uuids: set[str] = set()
        self.tip: Optional[str] = None
        self.chain: set[str] = set()  # uuids of user, assistant and system lines
        self.off: set[str] = set()
        # The responses whose usage a message carries already: (message id, request id).
        self.paid: set[tuple[str, str]] = set()

    def copy(self) -> "_Mirror":
        other = _Mirror()
        other.names, other.uuids = dict(self.names), set(self.uuids)
        other.tip, other.chain, other.off = self.tip, set(self.chain), set(self.off)
        other.paid = set(self.paid)
        return other

    def on_line(self, entry: dict[str, Any]) -> bool:
        """Whether a user, assistant or system line continues the conversation (and moves
        its tip). A line whose parent is an earlier line, not the tip, starts a retry: not
        mirrored, unless the conversation goes on from it (then the mirror follows)."""
        uuid, parent = entry.get("uuid"), entry.get("parentUuid")
        if not isinstance(uuid, str):
            return True
        # A parent that is no conversation line seen (another session's, a progress line's)
        # does not make a retry.
        on = parent is None or parent == self.tip or parent not in self.chain or parent in self.off
        self.chain.add(uuid)
        if on:
            self.tip = uuid
        else:
            self.off.add(uuid)
        return on


_COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _usage(entry: dict[str, Any], message: dict[str, Any], state: _Mirror) -> Optional[dict[str, Any]]:
    """What the response a line begins cost, as tract's Claude Code import reads it: the first
    line of each response (by message id and request id, as ccusage counts) carries its
    `message.usage`, with the model and request id; Claude Code's `<synthetic>` messages were no
    request. Usage whose counts are not whole numbers is left out (the line is kept as it is)."""
    usage = message.get("usage")
    model = message.get("model")
    if not isinstance(usage, dict) or model == "<synthetic>":
        return None
    if not all(usage.get(k) is None or (isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool) and usage[k] >= 0) for k in _COUNTS):
        return None
    response, request = message.get("id"), entry.get("requestId")
    if isinstance(response, str) and isinstance(request, str):
        if (response, request) in state.paid:
            return None
        state.paid.add((response, request))
    out = {k: v for k, v in usage.items() if k not in ("model", "request_id", "time")}
    if isinstance(model, str):
        out["model"] = model
    if isinstance(request, str):
        out["request_id"] = request
    if isinstance(entry.get("timestamp"), str):
        out["time"] = entry["timestamp"]
    return out


def _messages(entries: Iterable[Any], state: _Mirror, sub_agent: bool) -> list[dict[str, Any]]:
    """The tract messages a batch of Claude Code transcript lines holds, as tract's Claude Code
    import reads them: user text, assistant text and thinking (kept as Anthropic blocks; the
    lines of one response make one message), tool calls, and tool results. `state` carries
    what earlier batches told (and learns this one's uuids); a main transcript's sidechain
    lines belong to sub-agents and are left to their own transcripts."""
    names = state.names
    out: list[dict[str, Any]] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("uuid"), str):
            state.uuids.add(entry["uuid"])
        if entry.get("isSidechain") and not sub_agent:
            continue  # a sub-agent's line: its own chain, not the conversation's
        mirrored = True
        if entry.get("type") in ("user", "assistant", "system"):
            mirrored = state.on_line(entry)
        if not mirrored or entry.get("type") not in ("user", "assistant"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        meta = {"claude.uuid": entry["uuid"]} if isinstance(entry.get("uuid"), str) else {}
        if entry["type"] == "user":
            if isinstance(content, str):
                out.append({"role": "user", "content": content, "metadata": meta})
                continue
            texts = []
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                    result: dict[str, Any] = {
                        "role": "tool",
                        "tool_call_id": block["tool_use_id"],
                        "content": _text(block.get("content")),
                        "is_error": bool(block.get("is_error")),
                        "metadata": meta,
                    }
                    if block["tool_use_id"] in names:
                        result["name"] = names[block["tool_use_id"]]
                    out.append(result)
                elif block.get("type") == "text" and isinstance(block.get("text"), str):
                    texts.append({"type": "text", "text": block["text"]})
            if texts:
                out.append({"role": "user", "content": texts, "metadata": meta})
        else:
            parts: list[dict[str, Any]] = []
            calls = []
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "tool_use" and isinstance(block.get("id"), str) and block.get("name"):
                    names[block["id"]] = str(block["name"])
                    calls.append(
                        {
                            "id": block["id"],
                            "name": str(block["name"]),
                            "arguments": json.dumps(block.get("input", {}), separators=(",", ":"), ensure_ascii=False),
                        }
                    )
                elif kind == "text" and isinstance(block.get("text"), str):
                    parts.append({"type": "text", "text": block["text"]})
                elif kind in ("thinking", "redacted_thinking"):
                    parts.append(block)  # kept verbatim, signature included
            if not (parts or calls):
                continue
            usage = _usage(entry, message, state)
            # Claude Code writes one line per content block of a response: the lines of one
            # response (one message id) make one assistant message, as `tract import` does.
            response = message.get("id")
            last = out[-1] if out else None
            if (
                last is not None
                and last["role"] == "assistant"
                and response is not None
                and last.get("_response") == response
            ):
                last["content"].extend(parts)
                if calls:
                    last.setdefault("tool_calls", []).extend(calls)
                if usage is not None and "usage" not in last:
                    last["usage"] = usage
                continue
            msg: dict[str, Any] = {"role": "assistant", "content": parts, "metadata": meta}
            if calls:
                msg["tool_calls"] = calls
            if usage is not None:
                msg["usage"] = usage
            msg["_response"] = response
            out.append(msg)
    for m in out:
        m.pop("_response", None)
        content = m.get("content")
        # One text block is plain text, as the import writes it.
        if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text":
            m["content"] = content[0]["text"]
    return out


class TractSessionStore:
    """A Claude Agent SDK session store kept in a tract store (its ``SessionStore`` protocol:
    ``append``, ``load``, ``list_sessions``, ``list_session_summaries``, ``delete``,
    ``list_subkeys``).

    Args:
        store: A store file path or a ``postgresql://`` URL.
        branch_prefix: Where sessions live: ``claude/`` gives
            ``claude/<project_key>/<session_id>``.

    Entries carrying a ``uuid`` are idempotent: an entry whose uuid the transcript already
    holds is not stored again (the SDK retries a batch whose write it did not see land).
    """

    def __init__(
        self, store: Union[str, "os.PathLike[str]"], *, branch_prefix: str = "claude/"
    ) -> None:
        if not branch_prefix or not branch_prefix.endswith("/"):
            raise ValueError("branch_prefix must be a non-empty prefix ending with '/'")
        self.store = os.fspath(store)
        self.branch_prefix = branch_prefix
        self._root = Tract.open(self.store)
        # Per branch: the newest record seen, and what the mirror knew then.
        self._seen: dict[str, tuple[Optional[str], _Mirror]] = {}
        self._lock = threading.Lock()

    # ----- keys and branches -----

    def branch_of(self, key: "SessionKey") -> str:
        """The branch a session (or one of its sub-agent transcripts) lives on."""
        project, session = key.get("project_key"), key.get("session_id")
        for name, value in (("project_key", project), ("session_id", session)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"a session key needs a non-empty {name}, not {value!r}")
        branch = f"{self.branch_prefix}{_segment(project)}/{_segment(session)}"  # type: ignore[arg-type]
        subpath = key.get("subpath")
        if subpath is not None:
            if not isinstance(subpath, str) or not subpath:
                raise ValueError("a subpath must be a non-empty string (omit it for the main transcript)")
            branch += "/" + _segment(subpath)
        return branch

    def _branches(self) -> dict[str, Any]:
        return {b.name: b for b in self._root.branches()}

    def _tract(self, branch: str) -> Tract:
        # Handles share the open store; one per call sees branch moves made anywhere.
        return Tract.open(self.store, branch=branch)

    # ----- the protocol (sync bodies, run in a worker thread) -----

    def _known(self, t: Tract, branch: str, sub_agent: bool) -> tuple[Optional[str], _Mirror]:
        """What the branch's mirror knows, brought up to date from its records."""
        newest = t.records(ENTRIES, limit=1)
        head = newest[0].commit_hash if newest else None
        cached = self._seen.get(branch)
        if cached is not None and cached[0] == head:
            return cached
        state = _Mirror()
        for record in reversed(t.records(ENTRIES)):
            _messages(json.loads(record.data)["entries"], state, sub_agent)
        return head, state

    def _append(self, key: "SessionKey", entries: list["SessionStoreEntry"]) -> None:
        branch = self.branch_of(key)
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise TypeError("entries must be a list of JSON objects (dicts)")
        if not entries:
            return
        sub_agent = key.get("subpath") is not None
        with self._lock:
            t = self._tract(branch)
            # A copy: the cache changes only once the write has landed.
            state = self._known(t, branch, sub_agent)[1].copy()
            fresh = []
            batch: set[str] = set()
            for e in entries:
                uuid = e.get("uuid")
                if isinstance(uuid, str):
                    if uuid in state.uuids or uuid in batch:
                        continue  # a retried batch: stored already
                    batch.add(uuid)
                fresh.append(e)
            if not fresh:
                return
            data: dict[str, Any] = {"entries": fresh}
            if not sub_agent:
                from claude_agent_sdk import fold_session_summary

                previous = self._summary(t, key)
                data["summary"] = fold_session_summary(previous, key, fresh)["data"]
            try:
                text = json.dumps(data, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ValueError(f"session entries must be JSON: {e}") from e
            messages = _messages(fresh, state, sub_agent)
            try:
                info = t.record(ENTRIES, text, messages=messages)
            except Exception:
                if not messages:
                    raise
                # The mirror is a view for people and tools; the entries are what must land.
                info = t.record(ENTRIES, text)
            self._seen[branch] = (info.commit_hash, state)

    def _summary(self, t: Tract, key: "SessionKey") -> Optional["SessionSummaryEntry"]:
        newest = t.records(ENTRIES, limit=1)
        if not newest:
            return None
        data = json.loads(newest[0].data)
        if "summary" not in data:
            return None
        return {
            "session_id": key["session_id"],
            "mtime": int(newest[0].created_at.timestamp() * 1000),
            "data": data["summary"],
        }

    def _load(self, key: "SessionKey") -> Optional[list["SessionStoreEntry"]]:
        branch = self.branch_of(key)
        records = self._tract(branch).records(ENTRIES)
        if not records:
            return None
        out: list[Any] = []
        seen: set[str] = set()
        for record in reversed(records):
            for e in json.loads(record.data)["entries"]:
                uuid = e.get("uuid") if isinstance(e, dict) else None
                if isinstance(uuid, str):
                    if uuid in seen:
                        continue  # two processes stored one retried entry
                    seen.add(uuid)
                out.append(e)
        return out

    def _sessions(self, project_key: str) -> list[tuple[str, Any]]:
        if not isinstance(project_key, str) or not project_key:
            raise ValueError("a project_key must be a non-empty string")
        prefix = f"{self.branch_prefix}{_segment(project_key)}/"
        out = []
        for name, info in self._branches().items():
            rest = name[len(prefix) :] if name.startswith(prefix) else None
            if rest and "/" not in rest:
                session = _unsegment(rest)
                if session is not None:
                    out.append((session, info))
        return out

    def _list_sessions(self, project_key: str) -> list["SessionStoreListEntry"]:
        return [
            {"session_id": session, "mtime": info.last_activity_us // 1000}
            for session, info in self._sessions(project_key)
        ]

    def _list_session_summaries(self, project_key: str) -> list["SessionSummaryEntry"]:
        out = []
        for session, info in self._sessions(project_key):
            key: SessionKey = {"project_key": project_key, "session_id": session}
            summary = self._summary(self._tract(info.name), key)
            if summary is not None:
                out.append(summary)
        return out

    def _delete(self, key: "SessionKey") -> None:
        branch = self.branch_of(key)
        names = self._branches()
        doomed = [branch] if key.get("subpath") is not None else [
            n for n in names if n == branch or n.startswith(branch + "/")
        ]
        with self._lock:
            for name in doomed:
                if name in names:
                    self._root.delete_branch(name)
                self._seen.pop(name, None)

    def _list_subkeys(self, key: "SessionListSubkeysKey") -> list[str]:
        prefix = self.branch_of({"project_key": key["project_key"], "session_id": key["session_id"]}) + "/"
        out = []
        for name in self._branches():
            if name.startswith(prefix):
                subpath = _unsegment(name[len(prefix) :])
                if subpath is not None:
                    out.append(subpath)
        return sorted(out)

    async def append(self, key: "SessionKey", entries: list["SessionStoreEntry"]) -> None:
        """Stores a batch of transcript entries in one transaction, in call order; entries
        whose uuid is stored already are skipped. A batch that is not JSON raises and stores
        nothing."""
        await asyncio.to_thread(self._append, key, entries)

    async def load(self, key: "SessionKey") -> Optional[list["SessionStoreEntry"]]:
        """Every entry of the transcript, in the order appended; None when it was never
        written (or was deleted)."""
        return await asyncio.to_thread(self._load, key)

    async def list_sessions(self, project_key: str) -> list["SessionStoreListEntry"]:
        """The project's sessions (not their sub-agent transcripts), with the time of their
        last write in epoch milliseconds."""
        return await asyncio.to_thread(self._list_sessions, project_key)

    async def list_session_summaries(self, project_key: str) -> list["SessionSummaryEntry"]:
        """The SDK's summary of each of the project's sessions, folded at each append and
        kept with it (``mtime``: that append's storage time)."""
        return await asyncio.to_thread(self._list_session_summaries, project_key)

    async def delete(self, key: "SessionKey") -> None:
        """Deletes a sub-agent transcript, or a session with all of its sub-agent
        transcripts: their branches are deleted, and the reflog keeps their last tips."""
        await asyncio.to_thread(self._delete, key)

    async def list_subkeys(self, key: "SessionListSubkeysKey") -> list[str]:
        """The subpaths of a session's sub-agent transcripts."""
        return await asyncio.to_thread(self._list_subkeys, key)

    def close(self) -> None:
        """Closes the store handle."""
        self._root.close()

    def __repr__(self) -> str:
        return f"TractSessionStore(store={self.store!r}, branch_prefix={self.branch_prefix!r})"
