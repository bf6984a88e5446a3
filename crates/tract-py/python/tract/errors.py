"""The exceptions tract raises. Every tract error is a :class:`TractError`; OS errors on a
store path are raised as the matching :class:`OSError` subclass (``FileNotFoundError``,
``PermissionError``, ...)."""


class TractError(Exception):
    """Base class of every error tract raises (other than OS errors)."""


class NotFoundError(TractError, LookupError):
    """A commit, branch or store that does not exist."""


class AmbiguousPrefixError(TractError, LookupError):
    """A short hash that matches several commits; the message lists them."""


class InvalidInputError(TractError, ValueError):
    """Input that cannot be understood: malformed JSON, an unknown role, a bad id."""


class InvalidOperationError(TractError):
    """A well-formed request that cannot be carried out in the current state."""


class HeadMovedError(InvalidOperationError):
    """A compare-and-swap append found the branch somewhere other than expected."""


class StoreLockedError(TractError):
    """Another process held the store's write lock for longer than the wait allows."""


class NotAStoreError(TractError):
    """The file is not a tract store."""


class CorruptStoreError(TractError):
    """Stored bytes that do not decode or do not match their id."""


class NewerFormatError(TractError):
    """The store was written by a newer version of tract."""


class SummarizerError(TractError):
    """A summarizer failed; nothing was committed."""


class RejectedError(TractError):
    """A ``tool_result`` handler rejected the result; nothing was committed."""


class TractWarning(UserWarning):
    """Something the caller should know that did not stop the call: a tool result whose
    summary failed (the original was kept), a handler that decided nothing."""


__all__ = [
    "TractError",
    "NotFoundError",
    "AmbiguousPrefixError",
    "InvalidInputError",
    "InvalidOperationError",
    "HeadMovedError",
    "StoreLockedError",
    "NotAStoreError",
    "CorruptStoreError",
    "NewerFormatError",
    "SummarizerError",
    "RejectedError",
    "TractWarning",
]
