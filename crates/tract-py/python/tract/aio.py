"""asyncio for tract: :class:`AsyncTract`, an awaitable twin of every method of
:class:`tract.Tract`.

Each call runs in a worker thread (``asyncio.to_thread``) and tract releases the GIL while it
works, so the event loop keeps serving other sessions; appends from many sessions at once share
commits (group commit, docs/sessions.md).

>>> import asyncio, tract.aio
>>> async def main():
...     async with await tract.aio.AsyncTract.open() as t:
...         await t.user("hi")
...         return len(await t.compile())
>>> asyncio.run(main())
1
"""

from __future__ import annotations

import asyncio
import os
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Literal, Optional, Sequence, TypeVar, Union

from tract._tract import Tract

if TYPE_CHECKING:
    # Names the stubs define (type aliases and TypedDicts) and the classes results come as.
    from tract._tract import (
        BranchInfo,
        ClearResult,
        CommitInfo,
        Compiled,
        CompressPlan,
        CompressResult,
        PendingToolResult,
        Record,
        Rev,
        Role,
        SearchHit,
        Summarizer,
        ToolCall,
        ToolSummarization,
        ToolTurn,
    )

T = TypeVar("T")

__all__ = ["AsyncTract"]


class AsyncTract:
    """A :class:`tract.Tract` for asyncio: every method is awaitable and runs off the event
    loop. Open one with ``await AsyncTract.open(...)`` (the arguments of
    :meth:`tract.Tract.open`) or wrap an open ``Tract``; use it as an async context manager."""

    def __init__(self, tract: Tract) -> None:
        self._tract = tract

    @classmethod
    async def open(
        cls,
        path: Optional[Union[str, os.PathLike[str]]] = None,
        summarizer: Optional[Summarizer] = None,
        *,
        branch: Optional[str] = None,
    ) -> AsyncTract:
        """Awaitable :meth:`Tract.open`: the store at ``path`` (in memory without one), this
        handle working on ``branch`` (else on the branch ``HEAD`` names now)."""
        return cls(await asyncio.to_thread(Tract.open, path, summarizer, branch=branch))

    @property
    def sync(self) -> Tract:
        """The synchronous handle underneath (same position, same store)."""
        return self._tract

    @property
    def path(self) -> Optional[str]:
        """Where the store is: its file, or its URL without the password (None in memory)."""
        return self._tract.path

    @property
    def head(self) -> Optional[str]:
        """The commit this handle is at (None on a branch with no commits yet)."""
        return self._tract.head

    @property
    def current_branch(self) -> Optional[str]:
        """The branch this handle is on (None when detached)."""
        return self._tract.current_branch

    @property
    def _tool_summarization_config(self) -> Optional[ToolSummarization]:
        return self._tract._tool_summarization_config

    async def _run(self, f: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(f, *args, **kwargs)

    async def close(self) -> None:
        """Awaitable twin of :meth:`Tract.close`, run in a worker thread."""
        await self._run(self._tract.close)

    async def __aenter__(self) -> AsyncTract:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        await self.close()
        return False

    def __repr__(self) -> str:
        return f"Async{self._tract!r}"

    async def system(self, text: str, *, expected_head: Optional[Rev] = None) -> CommitInfo:
        """Awaitable twin of :meth:`Tract.system`, run in a worker thread."""
        return await self._run(self._tract.system, text, expected_head=expected_head)

    async def user(self, text: str, *, expected_head: Optional[Rev] = None) -> CommitInfo:
        """Awaitable twin of :meth:`Tract.user`, run in a worker thread."""
        return await self._run(self._tract.user, text, expected_head=expected_head)

    async def assistant(
        self,
        text: Optional[str] = None,
        tool_calls: Optional[Sequence[dict[str, Any]]] = None,
        *,
        expected_head: Optional[Rev] = None,
    ) -> CommitInfo:
        """Awaitable twin of :meth:`Tract.assistant`, run in a worker thread."""
        return await self._run(self._tract.assistant, text, tool_calls, expected_head=expected_head)

    async def tool_result(
        self,
        call_id: str,
        name: str,
        content: str,
        is_error: bool = False,
        edit: Optional[Rev] = None,
    ) -> CommitInfo:
        """Awaitable twin of :meth:`Tract.tool_result`, run in a worker thread."""
        return await self._run(self._tract.tool_result, call_id, name, content, is_error, edit)

    async def on(self, event: Literal["tool_result"], handler: Callable[["PendingToolResult"], Any]) -> None:
        """Awaitable twin of :meth:`Tract.on`, run in a worker thread."""
        return await self._run(self._tract.on, event, handler)

    async def off(self, event: Literal["tool_result"]) -> None:
        """Awaitable twin of :meth:`Tract.off`, run in a worker thread."""
        return await self._run(self._tract.off, event)

    async def configure_tool_summarization(
        self,
        instructions: Optional[dict[str, str]] = None,
        *,
        auto_threshold: Optional[int] = None,
        default_instructions: Optional[str] = None,
    ) -> None:
        """Awaitable twin of :meth:`Tract.configure_tool_summarization`, run in a worker thread."""
        return await self._run(self._tract.configure_tool_summarization, instructions, auto_threshold=auto_threshold, default_instructions=default_instructions)

    async def tool_summarization(self) -> ToolSummarization:
        """Awaitable twin of :meth:`Tract.tool_summarization`, run in a worker thread."""
        return await self._run(self._tract.tool_summarization)

    async def find_tool_results(
        self,
        name: Optional[str] = None,
        after: Optional[Rev] = None,
        before: Optional[Rev] = None,
    ) -> list[CommitInfo]:
        """Awaitable twin of :meth:`Tract.find_tool_results`, run in a worker thread."""
        return await self._run(self._tract.find_tool_results, name, after, before)

    async def find_tool_calls(self, name: Optional[str] = None) -> list[CommitInfo]:
        """Awaitable twin of :meth:`Tract.find_tool_calls`, run in a worker thread."""
        return await self._run(self._tract.find_tool_calls, name)

    async def find_tool_turns(self, name: Optional[str] = None) -> list[ToolTurn]:
        """Awaitable twin of :meth:`Tract.find_tool_turns`, run in a worker thread."""
        return await self._run(self._tract.find_tool_turns, name)

    async def pending_tool_calls(self) -> list[ToolCall]:
        """Awaitable twin of :meth:`Tract.pending_tool_calls`, run in a worker thread."""
        return await self._run(self._tract.pending_tool_calls)

    async def edit_history(self, commit: Rev) -> list[CommitInfo]:
        """Awaitable twin of :meth:`Tract.edit_history`, run in a worker thread."""
        return await self._run(self._tract.edit_history, commit)

    async def repair(self) -> list[CommitInfo]:
        """Awaitable twin of :meth:`Tract.repair`, run in a worker thread."""
        return await self._run(self._tract.repair)

    async def clear_tool_results(
        self,
        keep: int = 3,
        exclude_tools: Sequence[str] = (),
        clear_at_least: int = 0,
        placeholder: Optional[str] = None,
        dry_run: bool = False,
    ) -> ClearResult:
        """Awaitable twin of :meth:`Tract.clear_tool_results`, run in a worker thread."""
        return await self._run(self._tract.clear_tool_results, keep, exclude_tools, clear_at_least, placeholder, dry_run)

    async def compress(
        self,
        commits: Optional[Sequence[Rev]] = None,
        system_prompt: Optional[str] = None,
        instructions: Optional[str] = None,
        preserve: Optional[Sequence[Rev]] = None,
        target_tokens: Optional[int] = None,
        content: Optional[str] = None,
        summarizer: Optional[Summarizer] = None,
        dry_run: bool = False,
    ) -> Union[CompressResult, CompressPlan]:
        """Awaitable twin of :meth:`Tract.compress`, run in a worker thread."""
        return await self._run(self._tract.compress, commits, system_prompt, instructions, preserve, target_tokens, content, summarizer, dry_run)

    async def compress_tool_calls(
        self,
        commits: Optional[Sequence[Rev]] = None,
        *,
        name: Optional[str] = None,
        target_tokens: Optional[int] = None,
        instructions: Optional[str] = None,
        system_prompt: Optional[str] = None,
        preserve_answer: bool = True,
        content: Optional[str] = None,
        summarizer: Optional[Summarizer] = None,
    ) -> CompressResult:
        """Awaitable twin of :meth:`Tract.compress_tool_calls`, run in a worker thread."""
        return await self._run(self._tract.compress_tool_calls, commits, name=name, target_tokens=target_tokens, instructions=instructions, system_prompt=system_prompt, preserve_answer=preserve_answer, content=content, summarizer=summarizer)

    async def search(
        self,
        query: str,
        role: Optional[Role] = None,
        tool: Optional[str] = None,
        history: bool = False,
        regex: bool = False,
        limit: Optional[int] = None,
    ) -> list[SearchHit]:
        """Awaitable twin of :meth:`Tract.search`, run in a worker thread."""
        return await self._run(self._tract.search, query, role, tool, history, regex, limit)

    async def append(self, message: dict[str, Any], *, expected_head: Optional[Rev] = None) -> CommitInfo:
        """Awaitable twin of :meth:`Tract.append`, run in a worker thread."""
        return await self._run(self._tract.append, message, expected_head=expected_head)

    async def append_many(
        self, messages: Sequence[dict[str, Any]], *, expected_head: Optional[Rev] = None
    ) -> list[CommitInfo]:
        """Awaitable twin of :meth:`Tract.append_many`, run in a worker thread."""
        return await self._run(self._tract.append_many, messages, expected_head=expected_head)

    async def append_items(
        self, items: Sequence[dict[str, Any]], *, expected_head: Optional[Rev] = None
    ) -> list[CommitInfo]:
        """Awaitable twin of :meth:`Tract.append_items`, run in a worker thread."""
        return await self._run(self._tract.append_items, items, expected_head=expected_head)

    async def record(
        self, kind: str, data: str, *, messages: Optional[Sequence[dict[str, Any]]] = None
    ) -> CommitInfo:
        """Awaitable twin of :meth:`Tract.record`, run in a worker thread."""
        return await self._run(self._tract.record, kind, data, messages=messages)

    async def records(
        self, kind: Optional[str] = None, *, limit: Optional[int] = None, before: Optional[Rev] = None
    ) -> list[Record]:
        """Awaitable twin of :meth:`Tract.records`, run in a worker thread."""
        return await self._run(self._tract.records, kind, limit=limit, before=before)

    async def get_record(self, commit: Rev) -> Record:
        """Awaitable twin of :meth:`Tract.get_record`, run in a worker thread."""
        return await self._run(self._tract.get_record, commit)

    async def clear_branch(self) -> Optional[str]:
        """Awaitable twin of :meth:`Tract.clear_branch`, run in a worker thread."""
        return await self._run(self._tract.clear_branch)

    async def pop(self) -> Optional[dict[str, Any]]:
        """Awaitable twin of :meth:`Tract.pop`, run in a worker thread."""
        return await self._run(self._tract.pop)

    async def import_file(self, path: "str | os.PathLike[str]", format: str = "auto") -> dict[str, Any]:
        """Awaitable twin of :meth:`Tract.import_file`, run in a worker thread."""
        return await self._run(self._tract.import_file, path, format)

    async def export(self, format: str = "jsonl", *, history: bool = False) -> str:
        """Awaitable twin of :meth:`Tract.export`, run in a worker thread."""
        return await self._run(self._tract.export, format, history=history)

    async def edit(self, commit: Rev, content: str) -> CommitInfo:
        """Awaitable twin of :meth:`Tract.edit`, run in a worker thread."""
        return await self._run(self._tract.edit, commit, content)

    async def compile(self, at: Optional[Rev] = None) -> Compiled:
        """Awaitable twin of :meth:`Tract.compile`, run in a worker thread."""
        return await self._run(self._tract.compile, at)

    async def log(
        self, limit: Optional[int] = None, start: Optional[Rev] = None, *, graph: bool = False
    ) -> list[CommitInfo]:
        """Awaitable twin of :meth:`Tract.log`, run in a worker thread."""
        return await self._run(self._tract.log, limit, start, graph=graph)

    async def get_commit(self, commit: Rev) -> CommitInfo:
        """Awaitable twin of :meth:`Tract.get_commit`, run in a worker thread."""
        return await self._run(self._tract.get_commit, commit)

    async def get_content(self, commit: Rev) -> Union[str, list[dict[str, Any]], None]:
        """Awaitable twin of :meth:`Tract.get_content`, run in a worker thread."""
        return await self._run(self._tract.get_content, commit)

    async def resolve(self, rev: Rev) -> str:
        """Awaitable twin of :meth:`Tract.resolve`, run in a worker thread."""
        return await self._run(self._tract.resolve, rev)

    async def compressed_into(self, commit: Rev) -> Optional[CommitInfo]:
        """Awaitable twin of :meth:`Tract.compressed_into`, run in a worker thread."""
        return await self._run(self._tract.compressed_into, commit)

    async def branches(self) -> list[BranchInfo]:
        """Awaitable twin of :meth:`Tract.branches`, run in a worker thread."""
        return await self._run(self._tract.branches)

    async def branch(self, name: str, at: Optional[Rev] = None) -> str:
        """Awaitable twin of :meth:`Tract.branch`, run in a worker thread."""
        return await self._run(self._tract.branch, name, at)

    async def fork(self, name: str, at: Optional[Rev] = None) -> AsyncTract:
        """Awaitable twin of :meth:`Tract.fork`, run in a worker thread: the fork as an
        ``AsyncTract``."""
        return AsyncTract(await self._run(self._tract.fork, name, at))

    async def merge(
        self,
        branch: str,
        *,
        strategy: Literal["append", "tool_result"] = "append",
        call_id: Optional[str] = None,
        summarize: bool = False,
        summarizer: Optional[Summarizer] = None,
        target_tokens: Optional[int] = None,
        note: Optional[str] = None,
    ) -> CommitInfo:
        """Awaitable twin of :meth:`Tract.merge`, run in a worker thread."""
        return await self._run(
            self._tract.merge,
            branch,
            strategy=strategy,
            call_id=call_id,
            summarize=summarize,
            summarizer=summarizer,
            target_tokens=target_tokens,
            note=note,
        )

    async def delete_branch(self, name: str) -> str:
        """Awaitable twin of :meth:`Tract.delete_branch`, run in a worker thread."""
        return await self._run(self._tract.delete_branch, name)

    async def switch(self, name: str) -> None:
        """Awaitable twin of :meth:`Tract.switch`, run in a worker thread."""
        return await self._run(self._tract.switch, name)

    async def checkout(self, rev: Rev) -> None:
        """Awaitable twin of :meth:`Tract.checkout`, run in a worker thread."""
        return await self._run(self._tract.checkout, rev)

    async def reset(self, rev: Rev) -> None:
        """Awaitable twin of :meth:`Tract.reset`, run in a worker thread."""
        return await self._run(self._tract.reset, rev)

    async def reflog(self, name: str = "HEAD", limit: Optional[int] = None) -> list[dict[str, Any]]:
        """Awaitable twin of :meth:`Tract.reflog`, run in a worker thread."""
        return await self._run(self._tract.reflog, name, limit)

    async def status(self) -> dict[str, Any]:
        """Awaitable twin of :meth:`Tract.status`, run in a worker thread."""
        return await self._run(self._tract.status)

    async def fsck(self) -> dict[str, Any]:
        """Awaitable twin of :meth:`Tract.fsck`, run in a worker thread."""
        return await self._run(self._tract.fsck)

    async def redact(self, commit: Rev, reason: str) -> dict[str, Any]:
        """Awaitable twin of :meth:`Tract.redact`, run in a worker thread."""
        return await self._run(self._tract.redact, commit, reason)

    async def gc(self, *, grace_days: float = 14.0, prune_now: bool = False) -> dict[str, Any]:
        """Awaitable twin of :meth:`Tract.gc`, run in a worker thread."""
        return await self._run(self._tract.gc, grace_days=grace_days, prune_now=prune_now)

    async def compact(self) -> None:
        """Awaitable twin of :meth:`Tract.compact`, run in a worker thread."""
        return await self._run(self._tract.compact)

    async def push(
        self,
        dest: Union[str, os.PathLike[str]],
        branches: Optional[list[str]] = None,
        *,
        force: bool = False,
        settings: bool = False,
    ) -> dict[str, Any]:
        """Awaitable twin of :meth:`Tract.push`, run in a worker thread."""
        return await self._run(self._tract.push, dest, branches, force=force, settings=settings)

    async def pull(
        self,
        src: Union[str, os.PathLike[str]],
        branches: Optional[list[str]] = None,
        *,
        force: bool = False,
        settings: bool = False,
    ) -> dict[str, Any]:
        """Awaitable twin of :meth:`Tract.pull`, run in a worker thread."""
        return await self._run(self._tract.pull, src, branches, force=force, settings=settings)

    @staticmethod
    async def clone_store(
        src: Union[str, os.PathLike[str]], dest: Union[str, os.PathLike[str]]
    ) -> AsyncTract:
        """Awaitable twin of :meth:`Tract.clone_store`, run in a worker thread: a handle on
        the copy."""
        return AsyncTract(await asyncio.to_thread(Tract.clone_store, src, dest))


# Each twin's help says what the method does, from the native method's own docstring.
for _name, _twin in list(vars(AsyncTract).items()):
    _native = getattr(Tract, _name, None)
    if isinstance(_twin, staticmethod):
        _twin = _twin.__func__
    if callable(_twin) and not _name.startswith("_") and _native is not None and _native.__doc__:
        _twin.__doc__ = f"{_twin.__doc__}\n\n{_native.__doc__}"
