"""tract as a LangGraph checkpointer (``langgraph-checkpoint``).

Use it where LangGraph takes a checkpointer::

    from tract.integrations.langgraph import TractSaver

    graph = builder.compile(checkpointer=TractSaver("agent.tract"))
    graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})

Each thread is the branch ``threads/<thread_id>`` of the store. A checkpoint is a *record* on
that branch (a commit the view skips, see ``Tract.record``) holding what LangGraph saved,
serialized with the saver's serializer, so ``get_tuple`` gives back exactly what was put. The
messages the graph adds to its ``messages`` channel are also appended to the branch as tract
messages, in the same transaction as the checkpoint, so ``tract log``, search, the tool
queries and compile see the conversation. Deleting a thread deletes its branch (the reflog
keeps it); copying a thread forks its branch (nothing is copied).

Layout of a checkpoint record (kind ``langgraph.checkpoint``, JSON):
``{"ns", "id", "parent", "checkpoint", "metadata", "blobs", "refs", "mirror"}`` where
``checkpoint`` and ``metadata`` are ``[type, base64]`` from the serializer, ``blobs`` holds
the channel values new at this checkpoint (``{channel: {version: [type, base64]}}``), and
``refs`` names, for every other channel of ``channel_versions``, the record holding its value
(``{channel: [version, commit]}``), so reading a checkpoint reads at most one record per
channel however long the thread. Pending writes are records of kind ``langgraph.writes``
(``{"ns", "id", "task", "path", "writes": [[idx, channel, [type, base64]], ...]}``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from tract._tract import Tract

try:
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        SerializerProtocol,
        get_checkpoint_id,
        get_checkpoint_metadata,
        writes_sort_key,
    )
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "tract.integrations.langgraph needs langgraph-checkpoint: pip install "
        "langgraph-checkpoint (or install tract with its langgraph extra)"
    ) from e

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ["TractSaver"]

CHECKPOINT = "langgraph.checkpoint"
WRITES = "langgraph.writes"
_KINDS = "langgraph"
# Characters kept as they are in a thread id's branch name; every other byte is `_xx`.
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.")
# Record pages read while walking back from the head: the record wanted is usually the
# newest, and a checkpoint record can be megabytes, so the first pages are small.
_PAGES = (1, 4, 16, 64)


def _branch_part(thread_id: str) -> str:
    """A thread id as a branch name segment, reversibly (see `_thread_of`)."""
    out = []
    for ch in thread_id:
        if ch in _SAFE:
            out.append(ch)
        else:
            out.extend(f"_{b:02x}" for b in ch.encode())
    return "".join(out)


def _thread_of(part: str) -> Optional[str]:
    """The thread id a branch segment encodes, or None when it is not one of ours."""
    raw = bytearray()
    i = 0
    try:
        while i < len(part):
            if part[i] == "_":
                raw.append(int(part[i + 1 : i + 3], 16))
                i += 3
            else:
                raw.extend(part[i].encode())
                i += 1
        return raw.decode()
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def _pack(typed: tuple[str, bytes]) -> list[str]:
    return [typed[0], base64.b64encode(typed[1]).decode("ascii")]


def _unpack(packed: Sequence[str]) -> tuple[str, bytes]:
    return (packed[0], base64.b64decode(packed[1]))


def _version_key(version: Any) -> str:
    return json.dumps(version)


def _text_of(content: Any) -> str:
    """The text of LangChain message content (a string, or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return str(content)


def _usage_of(message: Any) -> Optional[dict[str, Any]]:
    """What an AI message cost, from LangChain's ``usage_metadata`` (its ``input_tokens`` count
    the cached ones too, read and written, in ``input_token_details``), in Anthropic's names,
    with the model ``response_metadata`` names. None when the message reports none, or counts
    that do not add up."""
    meta = getattr(message, "usage_metadata", None)
    if not isinstance(meta, dict):
        return None
    details = meta.get("input_token_details") or {}
    counts = [meta.get("input_tokens"), meta.get("output_tokens"), details.get("cache_read") or 0, details.get("cache_creation") or 0]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        return None
    total_in, out, read, written = counts
    if read + written > total_in:
        return None
    usage: dict[str, Any] = {
        "input_tokens": total_in - read - written,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
    }
    response = getattr(message, "response_metadata", None) or {}
    model = response.get("model_name") or response.get("model")
    if isinstance(model, str) and model:
        usage["model"] = model
    return usage


def _tract_message(message: Any) -> Optional[dict[str, Any]]:
    """A LangChain message as a tract message dict; None for what is not one (a removal)."""
    kind = getattr(message, "type", None)
    content = _text_of(getattr(message, "content", ""))
    metadata: dict[str, Any] = {}
    if getattr(message, "id", None):
        metadata["langgraph.message_id"] = message.id
    if kind == "human":
        out: dict[str, Any] = {"role": "user", "content": content}
    elif kind == "system":
        out = {"role": "system", "content": content}
    elif kind == "ai":
        out = {"role": "assistant", "content": content}
        calls = [
            {"id": c["id"], "name": c["name"], "arguments": json.dumps(c.get("args", {}))}
            for c in getattr(message, "tool_calls", None) or []
            if c.get("id") and c.get("name")
        ]
        if calls:
            out["tool_calls"] = calls
        usage = _usage_of(message)
        if usage is not None:
            out["usage"] = usage
    elif kind == "tool":
        out = {
            "role": "tool",
            "content": content,
            "tool_call_id": getattr(message, "tool_call_id", None) or "",
            "name": getattr(message, "name", None) or "tool",
            "is_error": getattr(message, "status", None) == "error",
        }
    else:
        return None
    if metadata:
        out["metadata"] = metadata
    return out


class TractSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer that keeps every thread on a branch of a tract store.

    Args:
        store: A store file path or a ``postgresql://`` URL (the same store can hold the
            threads of many graphs and processes).
        serde: The serializer for checkpoints and writes (LangGraph's default when None).
        branch_prefix: Where threads live: ``threads/`` gives ``threads/<thread_id>``.

    A thread id is kept in its branch name as it is when it holds only letters, digits, ``-``
    and ``.``; any other character is written as ``_`` and its UTF-8 bytes in hex, so every
    thread id has a branch and the branch gives the id back (``list`` across threads).
    """

    def __init__(
        self,
        store: Union[str, "os.PathLike[str]"],
        *,
        serde: Optional[SerializerProtocol] = None,
        branch_prefix: str = "threads/",
    ) -> None:
        super().__init__(serde=serde)
        if not branch_prefix or not branch_prefix.endswith("/"):
            raise ValueError("branch_prefix must be a non-empty prefix ending with '/'")
        self.store = os.fspath(store)
        self.branch_prefix = branch_prefix
        self._root = Tract.open(self.store)
        # Parsed records by commit: commits never change, so this never goes stale.
        self._parsed: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    # ----- branches -----

    def branch_of(self, thread_id: str) -> str:
        """The branch a thread lives on."""
        if not isinstance(thread_id, str) or not thread_id:
            raise ValueError(f"a thread id must be a non-empty string, not {thread_id!r}")
        return self.branch_prefix + _branch_part(thread_id)

    def _tract(self, thread_id: str) -> Tract:
        # Handles share the open store; one per call sees branch moves made anywhere.
        return Tract.open(self.store, branch=self.branch_of(thread_id))

    def _threads(self) -> list[str]:
        out = []
        for b in self._root.branches():
            if b.name.startswith(self.branch_prefix):
                thread = _thread_of(b.name[len(self.branch_prefix) :])
                if thread is not None and self.branch_of(thread) == b.name:
                    out.append(thread)
        return out

    # ----- records -----

    def _data(self, commit: str, data: Optional[str] = None) -> dict[str, Any]:
        parsed = self._parsed.get(commit)
        if parsed is None:
            parsed = json.loads(data) if data is not None else {}
            with self._lock:
                if len(self._parsed) > 4096:
                    self._parsed.clear()
                self._parsed[commit] = parsed
        return parsed

    def _walk(self, t: Tract) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """The thread's records, newest first: (commit, kind, data)."""
        before: Optional[str] = None
        page = 0
        while True:
            limit = _PAGES[min(page, len(_PAGES) - 1)]
            page += 1
            records = t.records(_KINDS, limit=limit, before=before)
            for r in records:
                parsed = self._parsed.get(r.commit_hash)
                if parsed is None:
                    parsed = self._data(r.commit_hash, r.data)
                yield r.commit_hash, r.kind, parsed
            if len(records) < limit:
                return
            before = records[-1].commit_hash

    def _record_at(self, t: Tract, commit: str) -> dict[str, Any]:
        parsed = self._parsed.get(commit)
        if parsed is None:
            parsed = self._data(commit, t.get_record(commit).data)
        return parsed

    def _find(
        self, t: Tract, ns: str, checkpoint_id: Optional[str]
    ) -> Optional[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
        """The checkpoint record of `ns` with that id (the newest when None), and the write
        records of it made since (newest first)."""
        writes: list[dict[str, Any]] = []
        for commit, kind, data in self._walk(t):
            if data.get("ns") != ns:
                continue
            if kind == WRITES:
                writes.append(data)
            elif kind == CHECKPOINT and (checkpoint_id is None or data.get("id") == checkpoint_id):
                return commit, data, [w for w in writes if w.get("id") == data.get("id")]
        return None

    def _tuple(
        self,
        t: Tract,
        thread_id: str,
        commit: str,
        data: dict[str, Any],
        writes: list[dict[str, Any]],
    ) -> CheckpointTuple:
        ns = data["ns"]
        checkpoint: dict[str, Any] = self.serde.loads_typed(_unpack(data["checkpoint"]))
        values: dict[str, Any] = {}
        for channel, version in checkpoint.get("channel_versions", {}).items():
            packed = self._value(t, commit, data, channel, version)
            if packed is not None and packed[0] != "empty":
                values[channel] = self.serde.loads_typed(_unpack(packed))
        parent = data.get("parent")
        return CheckpointTuple(
            config={
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": data["id"],
                }
            },
            checkpoint={**checkpoint, "channel_values": values},  # type: ignore[typeddict-item]
            metadata=self.serde.loads_typed(_unpack(data["metadata"])),
            parent_config=(
                {
                    "configurable": {
                        "thread_id": thread_id,
                        "checkpoint_ns": ns,
                        "checkpoint_id": parent,
                    }
                }
                if parent
                else None
            ),
            pending_writes=self._pending(writes),
        )

    def _value(
        self, t: Tract, commit: str, data: dict[str, Any], channel: str, version: Any
    ) -> Optional[Sequence[str]]:
        key = _version_key(version)
        own = data.get("blobs", {}).get(channel, {})
        if key in own:
            return own[key]  # type: ignore[no-any-return]
        ref = data.get("refs", {}).get(channel)
        if ref is not None and ref[0] == key:
            held = self._record_at(t, ref[1])
            return held.get("blobs", {}).get(channel, {}).get(key)  # type: ignore[no-any-return]
        # Not where the parent said: any value of that version the thread holds (LangGraph
        # keys values by thread, namespace, channel and version).
        for _, kind, other in self._walk(t):
            if kind == CHECKPOINT and other.get("ns") == data.get("ns"):
                found = other.get("blobs", {}).get(channel, {}).get(key)
                if found is not None:
                    return found  # type: ignore[no-any-return]
        return None

    def _pending(self, writes: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
        """Pending writes as LangGraph keeps them: per (task, index), the first write of a
        regular channel and the last of a special one (an error, an interrupt), in
        `writes_sort_key` order. `writes` is newest first."""
        kept: dict[tuple[str, int], tuple[str, str, list[str], str]] = {}
        for record in writes:  # newest first: the oldest regular write stays
            for idx, channel, packed in record["writes"]:
                key = (record["task"], idx)
                if idx < 0 and key in kept:
                    continue  # a newer special write is already kept
                kept[key] = (record["task"], channel, packed, record.get("path", ""))
        ordered = sorted(kept.items(), key=lambda kv: writes_sort_key(kv[1][3], kv[0][0], kv[0][1]))
        return [
            (task, channel, self.serde.loads_typed(_unpack(packed)))
            for (_, _), (task, channel, packed, _) in ordered
        ]

    # ----- BaseCheckpointSaver -----

    def get_tuple(self, config: "RunnableConfig") -> Optional[CheckpointTuple]:
        """The checkpoint `config` names (its `checkpoint_id`, else the thread's newest in its
        namespace) with its pending writes; None when there is none."""
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        t = self._tract(thread_id)
        found = self._find(t, ns, get_checkpoint_id(config))
        if found is None:
            return None
        commit, data, writes = found
        return self._tuple(t, thread_id, commit, data, writes)

    def list(
        self,
        config: Optional["RunnableConfig"],
        *,
        filter: Optional[dict[str, Any]] = None,
        before: Optional["RunnableConfig"] = None,
        limit: Optional[int] = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of one thread (and namespace, and id) when `config` says,
        else of every thread; only those whose metadata holds `filter`, older than
        `before`, at most `limit`."""
        if config is not None:
            threads = [config["configurable"]["thread_id"]]
            want_ns = config["configurable"].get("checkpoint_ns")
            want_id = get_checkpoint_id(config)
        else:
            threads = self._threads()
            want_ns, want_id = None, None
        before_id = get_checkpoint_id(before) if before else None
        remaining = limit
        for thread_id in threads:
            t = self._tract(thread_id)
            found: list[tuple[str, dict[str, Any]]] = []
            writes: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for commit, kind, data in self._walk(t):
                ns = data.get("ns", "")
                if want_ns is not None and ns != want_ns:
                    continue
                if kind == WRITES:
                    writes.setdefault((ns, data.get("id", "")), []).append(data)
                elif kind == CHECKPOINT:
                    found.append((commit, data))
            # LangGraph orders checkpoints by id (time-ordered uuids), per namespace.
            by_ns: dict[str, list[tuple[str, dict[str, Any]]]] = {}
            for commit, data in found:
                by_ns.setdefault(data["ns"], []).append((commit, data))
            for ns_found in by_ns.values():
                latest: dict[str, tuple[str, dict[str, Any]]] = {}
                for commit, data in ns_found:
                    latest.setdefault(data["id"], (commit, data))  # newest put of an id wins
                for checkpoint_id in sorted(latest, reverse=True):
                    commit, data = latest[checkpoint_id]
                    if want_id and checkpoint_id != want_id:
                        continue
                    if before_id and checkpoint_id >= before_id:
                        continue
                    if filter:
                        metadata = self.serde.loads_typed(_unpack(data["metadata"]))
                        if not all(metadata.get(k) == v for k, v in filter.items()):
                            continue
                    if remaining is not None:
                        if remaining <= 0:
                            return
                        remaining -= 1
                    yield self._tuple(
                        t, thread_id, commit, data, writes.get((data["ns"], checkpoint_id), [])
                    )

    def put(
        self,
        config: "RunnableConfig",
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> "RunnableConfig":
        """Writes a checkpoint as a record on the thread's branch, with the messages new in
        its ``messages`` channel appended before it in the same transaction."""
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        parent_id = config["configurable"].get("checkpoint_id")
        t = self._tract(thread_id)
        parent = self._find(t, ns, parent_id) if parent_id else None
        parent_data = parent[1] if parent else {}
        parent_commit = parent[0] if parent else None

        rest = dict(checkpoint)
        values: dict[str, Any] = rest.pop("channel_values", {})  # type: ignore[misc]
        blobs: dict[str, dict[str, list[str]]] = {}
        for channel, version in new_versions.items():
            packed = (
                _pack(self.serde.dumps_typed(values[channel]))
                if channel in values
                else ["empty", ""]
            )
            blobs.setdefault(channel, {})[_version_key(version)] = packed
        refs: dict[str, list[str]] = {}
        for channel, version in checkpoint.get("channel_versions", {}).items():
            key = _version_key(version)
            if channel in blobs and key in blobs[channel]:
                continue
            if key in parent_data.get("blobs", {}).get(channel, {}) and parent_commit:
                refs[channel] = [key, parent_commit]
            elif parent_data.get("refs", {}).get(channel, [None])[0] == key:
                refs[channel] = parent_data["refs"][channel]

        messages: list[dict[str, Any]] = []
        mirror = parent_data.get("mirror", [0, None])
        if ns == "" and "messages" in new_versions and isinstance(values.get("messages"), list):
            messages, mirror = self._mirror(values["messages"], mirror)
        data = {
            "ns": ns,
            "id": checkpoint["id"],
            "parent": parent_id,
            "checkpoint": _pack(self.serde.dumps_typed(rest)),
            "metadata": _pack(self.serde.dumps_typed(get_checkpoint_metadata(config, metadata))),
            "blobs": blobs,
            "refs": refs,
            "mirror": mirror,
        }
        text = json.dumps(data, separators=(",", ":"))
        try:
            info = t.record(CHECKPOINT, text, messages=messages)
        except Exception:
            if not messages:
                raise
            # The mirror is a view for people and tools; the checkpoint is what must land.
            info = t.record(CHECKPOINT, text)
        self._data(info.commit_hash, text)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    @staticmethod
    def _mirror(
        channel: list[Any], mirror: Sequence[Any]
    ) -> tuple[list[dict[str, Any]], list[Any]]:
        """The messages of the channel not mirrored yet, and the new mirror state (how many
        messages of the channel are mirrored, and the id of the last). A channel rewritten
        since (a message removed or replaced) mirrors nothing more of what came before."""
        count, last_id = int(mirror[0]), mirror[1]
        fresh = channel[count:] if count <= len(channel) else []
        if count and (count > len(channel) or getattr(channel[count - 1], "id", None) != last_id):
            fresh = []
        out = [m for m in (_tract_message(x) for x in fresh) if m is not None]
        last = getattr(channel[-1], "id", None) if channel else None
        return out, [len(channel), last]

    def put_writes(
        self,
        config: "RunnableConfig",
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Writes a task's pending writes for a checkpoint as one record."""
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        checkpoint_id = config["configurable"]["checkpoint_id"]
        packed = [
            [WRITES_IDX_MAP.get(channel, idx), channel, _pack(self.serde.dumps_typed(value))]
            for idx, (channel, value) in enumerate(writes)
        ]
        data = {"ns": ns, "id": checkpoint_id, "task": task_id, "path": task_path, "writes": packed}
        text = json.dumps(data, separators=(",", ":"))
        info = self._tract(thread_id).record(WRITES, text)
        self._data(info.commit_hash, text)

    def delete_thread(self, thread_id: str) -> None:
        """Deletes the thread's branch: its checkpoints are gone for LangGraph, while the
        reflog keeps the branch's last tip (``tract reflog threads/<id>``)."""
        branch = self.branch_of(thread_id)
        if any(b.name == branch for b in self._root.branches()):
            self._root.delete_branch(branch)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Forks the source thread's branch as the target's: every checkpoint and write,
        shared, nothing copied. Refused when the target thread exists."""
        source = self.branch_of(source_thread_id)
        target = self.branch_of(target_thread_id)
        names = {b.name for b in self._root.branches()}
        if target in names:
            raise ValueError(f"thread {target_thread_id!r} exists already (branch {target})")
        if source not in names:
            return  # nothing to copy, as LangGraph's own savers do
        self._tract(source_thread_id).fork(target)

    def get_next_version(self, current: Optional[str], channel: None) -> str:
        """Versions as LangGraph's own savers make them: a counter, then a random part so
        that versions written on two forks of a thread differ."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # ----- async twins: the sync code in a worker thread -----

    async def aget_tuple(self, config: "RunnableConfig") -> Optional[CheckpointTuple]:
        """Awaitable twin of :meth:`get_tuple`."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: Optional["RunnableConfig"],
        *,
        filter: Optional[dict[str, Any]] = None,
        before: Optional["RunnableConfig"] = None,
        limit: Optional[int] = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Awaitable twin of :meth:`list`."""
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: "RunnableConfig",
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> "RunnableConfig":
        """Awaitable twin of :meth:`put`."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: "RunnableConfig",
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Awaitable twin of :meth:`put_writes`."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Awaitable twin of :meth:`delete_thread`."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Awaitable twin of :meth:`copy_thread`."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    def close(self) -> None:
        """Closes the store handle."""
        self._root.close()

    def __repr__(self) -> str:
        return f"TractSaver(store={self.store!r}, branch_prefix={self.branch_prefix!r})"
