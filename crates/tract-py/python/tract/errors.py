"""The exceptions tract raises. Every tract error is a :class:`TractError` carrying the facts of
the failure as attributes (the revision, the candidates, the path, the commit); OS errors on a
store path are raised as the matching :class:`OSError` subclass (``FileNotFoundError``,
``PermissionError``, ...). An exception raised by your own ``tool_result`` handler or
summarizer callable propagates as itself."""

from typing import Any, List, Optional


class TractError(Exception):
    """Base class of every error tract raises (other than OS errors)."""

    def __init__(self, message: str = "", **facts: Any) -> None:
        super().__init__(message)
        for name, value in facts.items():
            setattr(self, name, value)


class NotFoundError(TractError, LookupError):
    """A commit, branch or store that does not exist. ``rev`` is the revision given, ``branch``
    the branch named, ``commit`` the full id looked up (each None when it does not apply);
    for a branch that does not exist, ``similar`` lists the existing branches with a close name
    (at most 3, closest first)."""

    rev: Optional[str] = None
    branch: Optional[str] = None
    commit: Optional[str] = None
    similar: List[str] = []


class AmbiguousPrefixError(TractError, LookupError):
    """A short hash that matches several commits: ``prefix``, and ``candidates`` (full ids)."""

    prefix: str = ""
    candidates: List[str] = []


class InvalidInputError(TractError, ValueError):
    """Input that cannot be understood: malformed JSON, an unknown role, a bad revision or
    branch name, a bad transcript line. For a message of a batch, ``index`` (its place in a
    list, from 1) or ``line`` (its line in JSONL); for a transcript, ``path`` and ``line``;
    ``rev`` or ``branch`` for a bad revision or branch name."""

    index: Optional[int] = None
    line: Optional[int] = None
    path: Optional[str] = None
    rev: Optional[str] = None
    branch: Optional[str] = None


class InvalidOperationError(TractError):
    """A well-formed request that cannot be carried out in the current state. ``branch`` names
    the branch when one already exists."""

    branch: Optional[str] = None


class NotInViewError(InvalidOperationError):
    """A commit that exists but is not a message in the current view: ``commit`` (full id), and
    ``argument``, the parameter that named it (``after``, ``before``), when there was one."""

    commit: str = ""
    argument: Optional[str] = None


class HeadMovedError(InvalidOperationError):
    """A compare-and-swap found the branch somewhere other than expected: ``branch``,
    ``expected`` and ``actual`` (full ids, None for a branch with no commits)."""

    branch: Optional[str] = None
    expected: Optional[str] = None
    actual: Optional[str] = None


class DivergedError(InvalidOperationError):
    """A push or pull met a receiver's branch that the sender's history does not contain;
    nothing moved. ``branch``, and the tips ``receiver`` and ``sender``."""

    branch: str = ""
    receiver: str = ""
    sender: str = ""


class StoreLockedError(TractError):
    """Another process held the store's write lock for longer than the wait allows: ``path``."""

    path: str = ""


class NotAStoreError(TractError):
    """The file is not a tract store: ``path``, and ``reason``."""

    path: str = ""
    reason: str = ""


class CorruptStoreError(TractError):
    """Stored bytes that do not decode or do not match their id."""


class NewerFormatError(TractError):
    """The store was written by a newer version of tract: ``found`` and ``supported``
    format versions."""

    found: int = 0
    supported: int = 0


class SummarizerError(TractError):
    """A summarizer failed; nothing was committed. ``summarizer`` names it, ``reason`` says
    what went wrong."""

    summarizer: str = ""
    reason: str = ""


class RejectedError(TractError):
    """A ``tool_result`` handler rejected the result; nothing was committed: ``reason``."""

    reason: str = ""


class DatabaseError(TractError):
    """A database store could not be reached or refused a statement (the server is down or went
    away, wrong credentials, a timeout); nothing of the call was committed. ``store`` is its URL
    without the password, ``reason`` what the client or the server said."""

    store: str = ""
    reason: str = ""


class TractWarning(UserWarning):
    """Something the caller should know that did not stop the call: a tool result whose
    summary failed (the original was kept), a handler that decided nothing."""


__all__ = [
    "TractError",
    "NotFoundError",
    "AmbiguousPrefixError",
    "InvalidInputError",
    "InvalidOperationError",
    "NotInViewError",
    "HeadMovedError",
    "DivergedError",
    "StoreLockedError",
    "NotAStoreError",
    "CorruptStoreError",
    "NewerFormatError",
    "SummarizerError",
    "RejectedError",
    "DatabaseError",
    "TractWarning",
]
