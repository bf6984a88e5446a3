"""tract as the session store of the OpenAI Agents SDK (``openai-agents``).

Use it where the SDK takes a session::

    from agents import Agent, Runner
    from tract.integrations.openai_agents import TractSession

    session = TractSession("user-42", store="agent.tract")
    Runner.run_sync(agent, "hello", session=session)

Each session is the branch ``sessions/<session_id>`` of the store (or the branch given). Every
item the SDK adds (messages, ``function_call``, ``function_call_output``, reasoning and any
other item) becomes one tract message, so ``tract log``, search, the tool queries, compress
and compile see the conversation; ``get_items`` gives the items back as they were added, with
the current content of anything edited or compressed in tract since, and a marked error output
for a call whose result was never recorded (an agent killed mid-tool). ``pop_item`` removes
the newest item (an edit made after it stays) and ``clear_session`` empties the branch; the
reflog keeps everything.

The module itself needs nothing from the SDK: ``TractSession`` implements its ``Session``
protocol (which is how the SDK asks third-party sessions to plug in).
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any, Optional, Union

from tract._tract import Tract, responses_items
from tract.aio import _appended

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory.session_settings import SessionSettings

__all__ = ["TractSession"]


class TractSession:
    """An OpenAI Agents SDK session kept in a tract store.

    Args:
        session_id: The session's id; its branch is ``sessions/<session_id>`` unless
            ``branch`` is given.
        store: A store file path or a ``postgresql://`` URL; None keeps the session in memory.
        branch: The branch to keep the session on, instead of ``sessions/<session_id>``.
        session_settings: The SDK's ``SessionSettings`` (its ``limit`` is the default of
            ``get_items``).

    Raises:
        tract.InvalidInputError: when the branch name is not valid (a session id with spaces,
            for example: pass ``branch=``).
    """

    session_settings: Optional["SessionSettings"] = None

    def __init__(
        self,
        session_id: str,
        store: Union[str, "os.PathLike[str]", None] = None,
        *,
        branch: Optional[str] = None,
        session_settings: Optional["SessionSettings"] = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self.session_id = session_id
        self.branch = branch if branch is not None else f"sessions/{session_id}"
        self.session_settings = session_settings
        self._tract = Tract.open(store, branch=self.branch)

    @property
    def tract(self) -> Tract:
        """The tract handle on the session's branch (log, search, compress, fork, ...)."""
        return self._tract

    def _limit(self, limit: Optional[int]) -> Optional[int]:
        if limit is not None:
            return limit
        return getattr(self.session_settings, "limit", None)

    def _get_items(self, limit: Optional[int]) -> list["TResponseInputItem"]:
        limit = self._limit(limit)
        if limit is not None and limit <= 0:
            return []
        items: list[Any] = self._tract.compile().to_responses(limit)
        return items

    def _pop_item(self) -> Optional["TResponseInputItem"]:
        message = self._tract.pop()
        if message is None:
            return None
        items: list[Any] = responses_items(message)
        return items[-1] if items else None

    async def get_items(self, limit: Optional[int] = None) -> list["TResponseInputItem"]:
        """The session's items, oldest first; with ``limit``, the latest ``limit`` of them."""
        return await asyncio.to_thread(self._get_items, limit)

    async def add_items(self, items: list["TResponseInputItem"]) -> None:
        """Adds items in one transaction: all of them, or none (a bad item raises
        ``tract.InvalidInputError`` naming its place, and nothing is added)."""
        if not items:
            return
        await _appended(self._tract, items, None)

    async def pop_item(self) -> Optional["TResponseInputItem"]:
        """Removes and returns the latest item (None when the session is empty) and nothing
        else: edits, compressions and clears made in tract after it stay (see
        ``Tract.pop``); the reflog keeps it."""
        return await asyncio.to_thread(self._pop_item)

    async def clear_session(self) -> None:
        """Empties the session: its branch has no commits again; the reflog keeps its old
        tip, so ``tract reset`` can bring it back."""
        await asyncio.to_thread(self._tract.clear_branch)

    def close(self) -> None:
        """Closes the store handle."""
        self._tract.close()

    def __repr__(self) -> str:
        return f"TractSession(session_id={self.session_id!r}, branch={self.branch!r})"
