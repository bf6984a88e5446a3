"""tract: version control for LLM context.

Every message an agent sees or produces is a content-addressed commit in an append-only
history. Messages can be edited while the original stays in history, and ``compile()``
renders what the model sees for OpenAI or Anthropic, valid by construction.

>>> import tract
>>> with tract.Tract.open() as t:
...     _ = t.system("You are terse.")
...     _ = t.user("hi")
...     len(t.compile().messages)
2
"""

import os

from tract._tract import (
    SYNTHETIC_RESULT,
    TOOL_SUMMARIZE_SYSTEM,
    BranchInfo,
    CommitInfo,
    Compiled,
    OpenAICompatible,
    PendingToolResult,
    Record,
    SearchHit,
    ToolCall,
    ToolSummarization,
    ToolTurn,
    Tract,
    __version__,
)
from tract import aio, errors
from tract.errors import (
    AmbiguousPrefixError,
    ConflictError,
    CorruptError,
    CorruptStoreError,
    HeadMovedError,
    InternalError,
    InvalidInputError,
    InvalidOperationError,
    NewerFormatError,
    NotAStoreError,
    NotFoundError,
    NotInViewError,
    RejectedError,
    DatabaseError,
    DivergedError,
    ReadOnlyStoreError,
    StoreLockedError,
    SummarizerError,
    TractError,
    TractWarning,
    UnavailableError,
)

__all__ = [
    "Tract",
    "clone",
    "BranchInfo",
    "Record",
    "CommitInfo",
    "Compiled",
    "ToolTurn",
    "ToolCall",
    "SearchHit",
    "OpenAICompatible",
    "PendingToolResult",
    "ToolSummarization",
    "SYNTHETIC_RESULT",
    "TOOL_SUMMARIZE_SYSTEM",
    "__version__",
    *errors.__all__,
]


def clone(src: "str | os.PathLike[str]", dest: "str | os.PathLike[str]") -> Tract:
    """Copies the store at ``src`` into a new store at ``dest`` (files or ``postgresql://``
    URLs, either way): every branch with its history, the settings and HEAD; every id stays
    the same. Returns a handle on the copy."""
    return Tract.clone_store(src, dest)
