"""The exceptions tract raises. Every tract error is a :class:`TractError` carrying the facts of
the failure as attributes (the revision, the candidates, the path, the commit); OS errors on a
store path are raised as the matching :class:`OSError` subclass (``FileNotFoundError``,
``PermissionError``, ...). An exception raised by your own ``tool_result`` handler or
summarizer callable propagates as itself.

Each error also belongs to one category, a base class saying what the caller can do about it
(the same categories as the CLI's exit codes and the web API's statuses):
:class:`NotFoundError` (name something that exists), :class:`InvalidInputError` (fix the
input), :class:`ConflictError` (read the state again and decide anew),
:class:`CorruptError` (stored bytes are damaged: keep a copy, ``fsck()``, restore),
:class:`UnavailableError` (busy or out of reach: retry later) and :class:`InternalError`
(none of these). ``category`` names it: ``"not_found"``, ``"invalid_input"``, ``"conflict"``,
``"corrupt"``, ``"unavailable"`` or ``"internal"``."""

from typing import Any, Dict, List, Optional


class TractError(Exception):
    """Base class of every error tract raises (other than OS errors)."""

    category: str

    def __init__(self, message: str = "", **facts: Any) -> None:
        super().__init__(message)
        for name, value in facts.items():
            setattr(self, name, value)


class NotFoundError(TractError, LookupError):
    """A commit, branch or store that does not exist (also the category of every such error,
    :class:`NotInViewError` included). ``rev`` is the revision given, ``branch`` the branch
    named, ``commit`` the full id looked up (each None when it does not apply); for a branch
    that does not exist, ``similar`` lists the existing branches with a close name (at most 3,
    closest first); for ``NAME@{N}`` past a ref's reflog, ``ref`` is the ref and ``entries``
    how many entries its reflog holds."""

    category = "not_found"

    rev: Optional[str] = None
    branch: Optional[str] = None
    commit: Optional[str] = None
    similar: List[str] = []
    ref: Optional[str] = None
    entries: Optional[int] = None


class InvalidInputError(TractError, ValueError):
    """Input that cannot be understood: malformed JSON, an unknown role, a bad revision or
    branch name, a bad transcript line (also the category of every input that cannot be used
    as given: an ambiguous prefix, a file that is not a store or is of a newer format, a
    rejected tool result). For a message of a batch, ``index`` (its place in a list, from 1)
    or ``line`` (its line in JSONL); for a transcript, ``path`` and ``line``; ``rev`` or
    ``branch`` for a bad revision or branch name."""

    category = "invalid_input"

    index: Optional[int] = None
    line: Optional[int] = None
    path: Optional[str] = None
    rev: Optional[str] = None
    branch: Optional[str] = None


class AmbiguousPrefixError(InvalidInputError, LookupError):
    """A short hash that matches several commits: ``prefix``, and ``candidates`` (full ids)."""

    prefix: str = ""
    candidates: List[str] = []


class ConflictError(TractError):
    """Category: a well-formed request that the store's current state refuses (the branch
    moved, a branch already exists, histories diverged, a call is not pending). Nothing was
    changed; read the state again and decide anew."""

    category = "conflict"


class CorruptError(TractError):
    """Category: stored bytes are damaged. Retrying will not help: keep a copy of the store,
    run ``fsck()`` to list the damage, restore from a backup or another store."""

    category = "corrupt"


class UnavailableError(TractError):
    """Category: something the call needs is busy or out of reach for now (the store's lock,
    the database server, the summarizer's server, disk space). Nothing was committed; retry
    later."""

    category = "unavailable"


class InternalError(TractError):
    """Category: none of the others, such as an unexpected error of the storage engine or a
    handler that failed with an error that is not a Python exception. Nothing was
    committed; the message says what happened. A failure of the search index (derived data:
    ``update_index(rebuild=True)`` makes it anew) says in ``doing`` what it was doing."""

    category = "internal"

    doing: Optional[str] = None


class InvalidOperationError(ConflictError):
    """A well-formed request that cannot be carried out in the current state. ``branch`` names
    the branch when one already exists."""

    branch: Optional[str] = None


class NotInViewError(InvalidOperationError, NotFoundError):
    """A commit that exists but is not a message in the current view: ``commit`` (full id), and
    ``argument``, the parameter that named it (``after``, ``before``), when there was one. Its
    category is not found; it stays an :class:`InvalidOperationError` as it always was."""

    category = "not_found"

    commit: str = ""
    argument: Optional[str] = None


class HeadMovedError(InvalidOperationError):
    """A compare-and-swap found the branch somewhere other than expected: ``branch``,
    ``expected`` and ``actual`` (full ids, None for a branch with no commits)."""

    branch: Optional[str] = None
    expected: Optional[str] = None
    actual: Optional[str] = None


class DivergedError(InvalidOperationError):
    """A push or pull met a receiver's branch that the sender's history does not contain, and
    left it where it was; every other branch moved (raised after the transfer, as ``git push``
    exits non-zero naming the refs it rejected). ``branch``, and the tips ``receiver`` and
    ``sender``, are the first refused branch's; ``report`` is the dict the call returns when
    nothing is refused, whose ``refused`` lists each refused branch (``name``, ``source``,
    ``receiver``, ``sender``, ``reason``) and ``branches`` those that moved. Pulling the branch
    under another name (``pull(src, ["main:theirs/main"])``) and merging it lets it move next
    time; ``force=True`` moves it anyway."""

    branch: str = ""
    receiver: str = ""
    sender: str = ""
    report: Optional[Dict[str, Any]] = None


class ReadOnlyStoreError(InvalidOperationError):
    """A write to a store open for reading only: opened with ``read_only=True``, or one this
    process cannot write (the file's permissions, a read-only file system, a database role that
    may only read). Nothing was written. ``store`` is its path or URL (without the password),
    ``reason`` why it is read-only."""

    store: str = ""
    reason: str = ""


class StoreLockedError(UnavailableError):
    """Another process held the store's write lock for longer than the wait allows: ``path``."""

    path: str = ""


class NotAStoreError(InvalidInputError):
    """The file is not a tract store: ``path``, and ``reason``."""

    path: str = ""
    reason: str = ""


class CorruptStoreError(CorruptError):
    """Stored bytes that do not decode or do not match their id."""


class NewerFormatError(InvalidInputError):
    """The store was written by a newer version of tract: ``found`` and ``supported``
    format versions."""

    found: int = 0
    supported: int = 0


class SummarizerError(UnavailableError):
    """A summarizer failed; nothing was committed. ``summarizer`` names it, ``reason`` says
    what went wrong."""

    summarizer: str = ""
    reason: str = ""


class RejectedError(InvalidInputError):
    """A ``tool_result`` handler rejected the result; nothing was committed: ``reason``."""

    reason: str = ""


class DatabaseError(UnavailableError):
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
    "InvalidInputError",
    "ConflictError",
    "CorruptError",
    "UnavailableError",
    "InternalError",
    "AmbiguousPrefixError",
    "InvalidOperationError",
    "NotInViewError",
    "HeadMovedError",
    "DivergedError",
    "ReadOnlyStoreError",
    "StoreLockedError",
    "NotAStoreError",
    "CorruptStoreError",
    "NewerFormatError",
    "SummarizerError",
    "RejectedError",
    "DatabaseError",
    "TractWarning",
]
