"""Type stubs of the native module ``tract._tract`` (re-exported by ``tract``): the one
declaration of the synchronous Python API. tests/python/test_stubs.py checks its names,
parameters, defaults and docstrings against the built module (``scripts/gen_aio.py
--stub-docs`` copies the docstrings over); ``scripts/gen_aio.py`` writes the twins of
``tract.aio.AsyncTract`` from its ``Tract``."""

import datetime
import os
from types import TracebackType
from typing import Any, Callable, Iterator, Literal, Optional, Sequence, TypedDict, Union

from typing_extensions import NotRequired

__version__: str
SYNTHETIC_RESULT: str
TOOL_SUMMARIZE_SYSTEM: str

def responses_items(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The Responses input items of one message dict (the neutral form, as `Tract.pop` returns
    it): the item it was added as, or its plain input form."""
    ...

def _error_examples() -> list[tuple[str, str, BaseException]]:
    """One exception per variant of the core's error, as `(variant, category, exception)`: what
    the test of the mapping raises."""
    ...

Role = Literal["system", "user", "assistant", "tool"]
Rev = Union[str, "CommitInfo"]

class ClearResult(TypedDict):
    """What `Tract.clear_tool_results` did (with `dry_run`: would do; `cleared` then holds
    hashes, and `cached_tokens_invalidated` the tokens a provider's cache takes in again)."""

    cleared: Union[list[CommitInfo], list[str]]
    tokens_before: int
    tokens_after: int
    cached_tokens_invalidated: NotRequired[int]

class OpenAICompatible:
    """A summarizer that asks an OpenAI-compatible chat-completions server (OpenAI, vLLM,
    Ollama, llama.cpp server). Pass it as `summarizer=` to `compress`, `compress_tool_calls`
    or `Tract.open`. Retries 429 and 5xx replies with backoff."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        model: Optional[str] = None,
        api_key: Optional[str] = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
    ) -> None: ...

    @property
    def base_url(self) -> str:
        """The base URL requests go to, without a user and password it may hold."""

    @property
    def model(self) -> str:
        """The model asked."""

Summarizer = Union[Callable[[list[dict[str, Any]]], str], OpenAICompatible]

class CompressResult(TypedDict):
    """What `Tract.compress` did: one commit per run, with the positions each replaced, and the
    runs left as they were because their summary was not shorter, with what was said of each."""

    commits: list[CommitInfo]
    sources: list[list[str]]
    skipped: list[list[str]]
    warnings: list[str]
    tokens_before: int
    tokens_after: int

class CompressPlan(TypedDict):
    """What `Tract.compress(dry_run=True)` would replace: the runs and their tokens, and the
    cached tokens it invalidates (those of the view from its first run on, which a provider's
    cache takes in again at the next request)."""

    sources: list[list[str]]
    tokens: list[int]
    cached_tokens_invalidated: int

class ToolSummarization:
    """The store's tool-summarization policy, as `Tract.tool_summarization()` returns it."""

    @property
    def instructions(self) -> dict[str, str]:
        """Tool name to the instructions its results are summarized with."""

    @property
    def auto_threshold(self) -> Optional[int]:
        """Results over this many tokens are summarized (None: no threshold)."""

    @property
    def default_instructions(self) -> Optional[str]:
        """The instructions used for results over the threshold (None: the tool prompt alone)."""

class PendingToolResult:
    """A tool result waiting for a `tool_result` handler's decision. Call exactly one of
    `approve()`, `summarize()`, `edit()` or `reject()`; a handler that calls none approves
    (with a `TractWarning`)."""

    @property
    def tool_name(self) -> str:
        """The tool that produced the result."""

    @property
    def tool_call_id(self) -> str:
        """The call the result answers."""

    @property
    def content(self) -> str:
        """The result's text, as it is stored: what looks like a credential already scrubbed."""

    @property
    def is_error(self) -> bool:
        """Whether the tool reported a failure."""

    @property
    def token_count(self) -> int:
        """The result's tokens (without message framing)."""

    @property
    def tract(self) -> "Tract":
        """The Tract the result is for."""

    @property
    def decision(self) -> Optional[Literal["approve", "summarize", "edit", "reject"]]:
        """`"approve"`, `"summarize"`, `"edit"`, `"reject"`, or None before a decision."""

    def approve(self) -> None:
        """Record the result unchanged."""

    def summarize(
        self, instructions: Optional[str] = None, target_tokens: Optional[int] = None
    ) -> None:
        """Record the result, then its summary as an edit of it (the model sees the summary;
        history keeps the original). `instructions` follow the tool prompt."""

    def edit(self, text: str) -> None:
        """Record the result, then `text` as an edit of it."""

    def reject(self, reason: str) -> None:
        """Record nothing: `tool_result()` raises `RejectedError` with `reason`."""

class _Finished:
    """Appends finished on tract's worker threads, for one event loop to take: the loop watches
    `fileno()` and calls `take()` when it can be read."""

    def __init__(self) -> None:
        """An empty queue with a pipe of its own."""

    def fileno(self) -> int:
        """The descriptor to watch for reading; it stays open as long as this object does."""

    def take(self) -> list[tuple[int, Optional[list[CommitInfo]], Optional[BaseException]]]:
        """Every outcome queued, oldest first, as `(token, commits, None)` or `(token, None,
        error)`; the pipe is drained first, so an outcome queued meanwhile wakes the loop again."""

class CommitInfo:
    """One commit: its id, operation, message fields and provenance."""

    @property
    def commit_hash(self) -> str:
        """The commit's id: 64 hex digits."""

    @property
    def short_hash(self) -> str:
        """The first 10 hex digits of the id."""

    @property
    def op(self) -> Literal["append", "edit", "compress", "merge", "record"]:
        """`append`, `edit`, `compress`, `merge` or `record`."""

    @property
    def record_kind(self) -> Optional[str]:
        """A record's kind (None for any other commit)."""

    @property
    def role(self) -> Optional[Role]:
        """`system`, `user`, `assistant` or `tool` (None for a commit without a message)."""

    @property
    def content_type(self) -> Optional[Literal["instruction", "dialogue", "tool_call", "tool_result"]]:
        """`instruction`, `dialogue`, `tool_call` or `tool_result`."""

    @property
    def name(self) -> Optional[str]:
        """The tool name of a tool result (or a participant name)."""

    @property
    def metadata(self) -> dict[str, Any]:
        """`name`, `tool_call_id`, `tool_calls`, `is_error` where they apply, and extra fields."""

    @property
    def content(self) -> Optional[str]:
        """The message's text (text parts joined by newlines)."""

    @property
    def message(self) -> Optional[dict[str, Any]]:
        """The full message as a dict (role, content, name, tool_calls, tool_call_id, …)."""

    @property
    def token_count(self) -> int:
        """Tokens of the message with its framing (o200k_base)."""

    @property
    def parents(self) -> list[str]:
        """Parent commit ids."""

    @property
    def edit_target(self) -> Optional[str]:
        """The commit an edit replaces."""

    @property
    def is_error(self) -> bool:
        """Whether this tool result reports an error."""

    @property
    def created_at(self) -> datetime.datetime:
        """When it was committed (timezone-aware, UTC)."""

    @property
    def note(self) -> Optional[str]:
        """The note stored on the commit, if any."""

    @property
    def sources(self) -> list[str]:
        """For a compress commit: the positions its summary replaced."""

    @property
    def summarizer(self) -> Optional[str]:
        """For a compress commit or a summarized merge: who summarized (`extractive`, `manual`,
        `callable:…`, `openai:…`)."""

    @property
    def merged_branch(self) -> Optional[str]:
        """For a merge: the branch merged (its name when it was merged; its tip is the second
        parent)."""

    @property
    def merge_strategy(self) -> Optional[Literal["append", "tool_result"]]:
        """For a merge: `append` or `tool_result`."""

    @property
    def current_hash(self) -> str:
        """The commit whose content is in view: the newest edit of this position when a query
        returned an edited one, otherwise this commit."""

    @property
    def current_content(self) -> Optional[str]:
        """The text the model sees for this position (the newest edit's, when edited)."""

    def __eq__(self, value: object, /) -> bool: ...

    def __hash__(self) -> int: ...

class ToolCall:
    """One tool call with its lifecycle: input, state, result and duration."""

    @property
    def call_id(self) -> str:
        """The provider's call id."""

    @property
    def name(self) -> str:
        """The tool's name."""

    @property
    def arguments(self) -> str:
        """The arguments as the model wrote them (JSON text, verbatim)."""

    @property
    def state(self) -> Literal["pending", "ok", "error"]:
        """`pending`, `ok` or `error`."""

    @property
    def call_hash(self) -> str:
        """The assistant commit that made the call."""

    @property
    def result_hash(self) -> Optional[str]:
        """The result's commit (its view position), None while pending."""

    @property
    def duration_ms(self) -> Optional[float]:
        """Milliseconds from the call's commit to the result's, None while pending."""

    @property
    def result_tokens(self) -> Optional[int]:
        """Tokens of the result as it is in view."""

    @property
    def result_bytes(self) -> Optional[int]:
        """Bytes of the result's text as it is in view."""

class ToolTurn:
    """An assistant tool-call commit with its result commits, matched by call id."""

    @property
    def call(self) -> CommitInfo:
        """The assistant message with tool calls."""

    @property
    def results(self) -> list[CommitInfo]:
        """The tool results, in call order (a call without a result contributes none)."""

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools called in this turn, in call order."""

    @property
    def all_hashes(self) -> list[str]:
        """All commit hashes in this turn (call + results)."""

    @property
    def result_hashes(self) -> list[str]:
        """Just the result commit hashes."""

    @property
    def calls(self) -> list[ToolCall]:
        """Each call's lifecycle (state, input, result, duration), in call order."""

    def __eq__(self, value: object, /) -> bool: ...

    def __hash__(self) -> int: ...

class SearchHit:
    """One search match: the commit, a snippet of where it matched with the matching words
    marked, its score when ranked, and the branches that hold it."""

    @property
    def commit(self) -> CommitInfo:
        """The commit whose message matched (for a search of the view: the version in view)."""

    @property
    def commit_hash(self) -> str:
        """Its hash."""

    @property
    def snippet(self) -> str:
        """Where it matched, on one line: a ranked hit's best passage (some 160 characters), a
        regular expression's matching line cut around the match; `…` where it cuts the text."""

    @property
    def highlights(self) -> list[tuple[int, int]]:
        """The parts of `snippet` that matched, in order, as `(start, end)` character offsets into
        it: `snippet[start:end]` is a word of the query (or a regular expression's match)."""

    @property
    def score(self) -> Optional[float]:
        """How well it matched (BM25 on a store file, PostgreSQL's `ts_rank_cd` on a database:
        higher is better; hits come best first), or None for a
        regular expression's hit."""

    @property
    def branches(self) -> list[str]:
        """Every branch whose history holds the commit, sorted by name: a commit from before a
        fork is one hit naming the branch and its forks."""

class Compiled:
    """What the model would see at a commit, valid by construction. It holds what each message is
    (role, calls, tokens), not its text: a message's text is read from the store the first time
    this compile renders it (one redacted since shows its tombstone)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages in sending order, in tract's neutral form (dicts with role, content and,
        where they apply, name, tool_calls, tool_call_id, is_error)."""

    @property
    def message_token_counts(self) -> list[int]:
        """Tokens of each message in `messages`, framing included."""

    @property
    def token_count(self) -> int:
        """Total tokens of the request (framing and reply priming included)."""

    @property
    def head(self) -> Optional[str]:
        """The commit compiled (None for an empty branch)."""

    def prompt_cache_key(self) -> Optional[str]:
        """OpenAI's `prompt_cache_key` for this conversation's requests (pass it with
        `client.chat.completions.create(..., prompt_cache_key=...)`): derived from the first
        commit of the branch's history, so the same in every process for the branch and its
        forks. None for an empty branch."""

    @property
    def warnings(self) -> list[str]:
        """Problems repaired while compiling: calls without results, results without calls,
        call ids sent under a new id."""

    @property
    def reused_call_ids(self) -> list[dict[str, Any]]:
        """The tool calls sent under another id than they hold, because an earlier call in view
        has theirs (each id is sent once per request): dicts with `position` (the commit of the
        message making the call), `index` (which of its calls), `id` (the id it holds) and
        `sent_as` (the id it is sent with, its result's `tool_call_id` with it), in view order."""

    def to_openai(self) -> list[dict[str, Any]]:
        """OpenAI chat-completions `messages`. Each call returns objects of its own; a message
        rendered by an earlier call of the same handle is not rendered again (from the
        handle's second rendering on: its first keeps nothing, so a process that reads a view
        once makes one set of objects)."""

    def to_anthropic(self, cache_breakpoints: bool = False) -> dict[str, Any]:
        """Anthropic Messages body: `{"system": ..., "messages": [...]}`. Each call returns
        objects of its own; a message rendered by an earlier call of the same handle is not
        rendered again. With `cache_breakpoints`, `cache_control` breakpoints where the prefix
        stays the same from request to request (at most 4: the end of the system prompt, then a
        list of one text block; of the newest summary; of the newest message), the whole body
        rendered anew."""

    def to_responses(self, limit: Optional[int] = None) -> list[dict[str, Any]]:
        """OpenAI Responses `input` items in view order (with `limit`, the last `limit` of them);
        items added with `append_items` come back as they were added (with the current content
        where it was edited since). Each call returns objects of its own; a message rendered
        by an earlier call of the same handle is not rendered again (from the handle's second
        rendering on, as for `to_openai`)."""

    def __len__(self) -> int: ...

class Record:
    """A record: its commit, its kind and its data, exactly as written."""

    @property
    def commit_hash(self) -> str:
        """The record's commit: a full hash."""

    @property
    def kind(self) -> str:
        """What the data is (`langgraph.checkpoint`)."""

    @property
    def data(self) -> str:
        """The data, exactly as written."""

    @property
    def created_at(self) -> datetime.datetime:
        """When it was written (UTC)."""

    def __eq__(self, value: object, /) -> bool: ...

class BranchInfo:
    """A branch: its name and tip, the messages and tokens in its view, when it last moved, and
    whether this handle is on it. Unpacks as `(name, head)`, so `dict(t.branches())` maps
    names to tips."""

    @property
    def name(self) -> str:
        """The branch's name."""

    @property
    def head(self) -> str:
        """Its tip: a full commit hash."""

    @property
    def current(self) -> bool:
        """Whether this handle is on it."""

    @property
    def messages(self) -> int:
        """Messages in its view."""

    @property
    def token_count(self) -> int:
        """Tokens compile would send for it."""

    @property
    def last_activity_us(self) -> int:
        """When its tip was committed, in microseconds since the Unix epoch."""

    @property
    def last_activity(self) -> datetime.datetime:
        """When its tip was committed (timezone-aware, UTC)."""

    @property
    def agent(self) -> Optional[str]:
        """The agent whose session the branch holds (`"claude-code"`, `"codex"`, `"gemini"`), when
        an agent's session was imported or captured onto it; else `None`."""

    @property
    def agent_version(self) -> Optional[str]:
        """That agent's version, as the session names it (`None` when it names none: Gemini CLI
        writes no version)."""

    def __iter__(self) -> Iterator[str]: ...

    def __eq__(self, value: object, /) -> bool: ...

class Tract:
    """A tract store. Open one with `Tract.open(path)` (in memory without a path) and use it as a
    context manager; every append is durable when the call returns."""

    @staticmethod
    def open(
        path: Optional[Union[str, os.PathLike[str]]] = None,
        summarizer: Optional[Summarizer] = None,
        *,
        branch: Optional[str] = None,
        read_only: bool = False,
    ) -> Tract:
        """Opens the store file at `path` (created if missing; its directory must exist), or a new
        in-memory store when `path` is None. The handle works on `branch` (created by its first
        message), else on the branch `HEAD` names now; other handles and `tract switch` never
        move it. `summarizer` is used when a call names none (else the LLM the `TRACT_LLM_*`
        environment names, else the built-in extractive one). With `read_only`, the store must
        exist and nothing of it changes (not a byte of its file, not its format); a store this
        process cannot write opens that way by itself. A write then raises
        `ReadOnlyStoreError`."""

    @property
    def path(self) -> Optional[str]:
        """Where the store is: its file, or its URL without the password (None in memory)."""

    @property
    def read_only(self) -> Optional[str]:
        """Why this handle may only read (None: it may write): it was opened with `read_only`, or
        this process cannot write the store."""

    def close(self) -> None:
        """Closes the store; later calls raise InvalidOperationError."""

    def __enter__(self) -> Tract: ...

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

    def system(self, text: str, *, expected_head: Optional[Rev] = None) -> CommitInfo:
        """Appends a system message. With `expected_head` (a commit), only if the handle's
        branch is still there (else `HeadMovedError`, nothing committed); the same on every
        append."""

    def user(self, text: str, *, expected_head: Optional[Rev] = None) -> CommitInfo:
        """Appends a user message."""

    def assistant(
        self,
        text: Optional[str] = None,
        tool_calls: Optional[Sequence[dict[str, Any]]] = None,
        *,
        usage: Optional[dict[str, Any]] = None,
        expected_head: Optional[Rev] = None,
    ) -> CommitInfo:
        """Appends an assistant message. `tool_calls` is a list of `{"id", "name", "arguments"}`
        (arguments a dict or a JSON string) or OpenAI `{"id", "type", "function": {...}}`.
        `usage` is what the answer cost, as the provider reported it: Anthropic's names
        (`input_tokens`, `output_tokens`, `cache_read_input_tokens`,
        `cache_creation_input_tokens`) or OpenAI's (`prompt_tokens`, `completion_tokens`,
        `prompt_tokens_details.cached_tokens`), with `model` and `request_id`; it is kept in
        Anthropic's names in the message's metadata (`tract.usage`)."""

    def tool_result(
        self,
        call_id: str,
        name: str,
        content: str,
        is_error: bool = False,
        edit: Optional[Rev] = None,
    ) -> CommitInfo:
        """Records the result of tool call `call_id` from tool `name`. The `tool_result` handler
        registered with `on` decides what the model sees, else the store's tool-summarization
        policy; a summarized or edited result is committed first and its new text as an edit
        of it. Returns the recorded position (with its original content). With `edit=hash`,
        replaces the content of that tool result instead (it must answer `call_id` from
        `name`); no handler runs then."""

    def on(self, event: Literal["tool_result"], handler: Callable[["PendingToolResult"], Any]) -> None:
        """Registers `handler` for `event` (`"tool_result"`), replacing the default handler (the
        store's tool-summarization policy) and any handler registered before. The handler is
        called with a `PendingToolResult` and decides with its methods; an exception it raises
        propagates and nothing is committed."""

    def off(self, event: Literal["tool_result"]) -> None:
        """Removes the handler registered for `event`: the store's policy applies again."""

    def configure_tool_summarization(
        self,
        instructions: Optional[dict[str, str]] = None,
        *,
        auto_threshold: Optional[int] = None,
        default_instructions: Optional[str] = None,
    ) -> None:
        """Sets the store's tool-summarization policy (replacing the stored one; every process
        and the CLI apply it). `instructions`: tool name to instructions, whose results are
        summarized with them; `auto_threshold`: results over this many tokens are summarized
        with `default_instructions` (or the tool prompt alone). The instructions apply when an
        LLM summarizer is set (an `OpenAICompatible` or a callable as `summarizer=` on open,
        or the LLM `TRACT_LLM_MODEL` names); until then the built-in extractive summarizer
        shortens those results and ignores them. Called with nothing, it clears the policy."""

    def tool_summarization(self) -> ToolSummarization:
        """The store's tool-summarization policy (empty when none is configured)."""

    @property
    def _tool_summarization_config(self) -> Optional[ToolSummarization]:
        """The policy as the default handler reads it, None when nothing is configured (so a
        handler written as `if config and ...` works as in the documentation)."""

    def find_tool_results(
        self,
        name: Optional[str] = None,
        after: Optional[Rev] = None,
        before: Optional[Rev] = None,
    ) -> list[CommitInfo]:
        """Tool result commits in the current view, in view order, each position once."""

    def find_tool_calls(self, name: Optional[str] = None) -> list[CommitInfo]:
        """Assistant commits in the current view that call tools (`name`: that tool)."""

    def find_tool_turns(self, name: Optional[str] = None) -> list[ToolTurn]:
        """Tool-call commits paired with their results, matched by tool_call_id."""

    def pending_tool_calls(self) -> list[ToolCall]:
        """Tool calls in the current view that have no result yet."""

    def edit_history(self, commit: Rev) -> list[CommitInfo]:
        """Every version of a message in view, oldest first: the original, then each edit."""

    def repair(self) -> list[CommitInfo]:
        """Commits a marked synthetic error result for every tool call left without one (after a
        crash), in one transaction; returns them."""

    def clear_tool_results(
        self,
        keep: int = 3,
        exclude_tools: Sequence[str] = (),
        clear_at_least: int = 0,
        placeholder: Optional[str] = None,
        dry_run: bool = False,
        keep_prefix: bool = False,
    ) -> ClearResult:
        """Replaces the results of all but the last `keep` tool turns with a short placeholder
        naming the original commit (`{tool}`, `{commit}`, `{tokens}`, `{bytes}` are filled in),
        as edits in one transaction; results of `exclude_tools` stay; nothing is cleared unless
        at least `clear_at_least` tokens are freed. With `keep_prefix=True`, no result up to the
        newest summary in view is cleared (what a provider has cached before it stays). With
        `dry_run=True` nothing is committed, `cleared` lists the positions that would be and
        `cached_tokens_invalidated` the tokens a provider's cache takes in again. Returns a
        dict: `cleared`, `tokens_before`, `tokens_after`, as `tract clear --json` says."""

    def compress(
        self,
        commits: Optional[Sequence[Rev]] = None,
        system_prompt: Optional[str] = None,
        instructions: Optional[str] = None,
        preserve: Optional[Sequence[Rev]] = None,
        target_tokens: Optional[int] = None,
        content: Optional[str] = None,
        summarizer: Optional[Summarizer] = None,
        dry_run: bool = False,
        keep_prefix: bool = False,
    ) -> Union[CompressResult, CompressPlan]:
        """Replaces the selected positions (default: the whole view but system messages) with one
        summary per contiguous run; `preserve` positions stay and split runs. The summary comes
        from `content` (written by you), `summarizer` (a callable `fn(messages) -> str` given
        OpenAI-style messages, system prompt first), the one given to `Tract.open`, or the
        built-in extractive summarizer. With `keep_prefix=True`, the positions up to the newest
        summary in view are left out of the selection, so the summary goes after what a
        provider has cached. All or nothing. Returns a dict: `commits`, `sources`, `skipped`,
        `warnings`, `tokens_before`, `tokens_after` (with `dry_run=True`: the runs' `sources`
        and `tokens`, and `cached_tokens_invalidated`, nothing committed), as
        `tract compress --json` says."""

    def compress_tool_calls(
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
        """Compresses whole tool turns with `TOOL_SUMMARIZE_SYSTEM` by default: `commits` (any
        part of a turn takes the whole turn) or every turn (of tool `name`). The final answer
        (the last assistant message without tool calls in the selection) is kept unless
        `preserve_answer=False`."""

    def search(
        self,
        query: str,
        role: Optional[Role] = None,
        tool: Optional[str] = None,
        history: bool = False,
        regex: bool = False,
        limit: Optional[int] = None,
        *,
        branch: Optional[str] = None,
        all_branches: bool = False,
        op: Optional[Literal["append", "edit", "compress", "merge"]] = None,
        errors: bool = False,
        since: Optional[Union[datetime.datetime, float]] = None,
        until: Optional[Union[datetime.datetime, float]] = None,
        offset: int = 0,
    ) -> list[SearchHit]:
        """Searches message text, tool-call names and arguments, and tool results. By words, the
        hits ranked best first (BM25; on PostgreSQL the database's `ts_rank_cd`, among a
        query's newest 1,000 matches when it has more and the page reaches no further): every
        word must appear (case does not matter),
        `"some words"` in this order, `-word` must not, `a OR b` either; `getUserName`,
        `src/main.rs` and `DATABASE_URL` are searched as their parts (`user name` finds
        `getUserName`), and punctuation is not searched. With `regex=True`, a regular
        expression (case-insensitive), the hits oldest first. What was just written is found at
        once.

        It searches the current view of this handle's position, of `branch`, or of every branch
        (`all_branches=True`; not with `regex`); with `history=True` every version in history
        (originals of edited messages, compressed messages, what merges brought in). Filters:
        `role`, `tool` (its results and the calls to it), `op` (`append`, `edit`, `compress`,
        `merge`), `errors` (tool results marked as errors), `since` (inclusive) and `until`
        (exclusive), each a `datetime` (naive: UTC) or seconds since the epoch. `offset` hits
        are skipped, then at most `limit` returned (None: all). A commit several branches
        share is one hit naming them all in `branches`."""

    def append(self, message: dict[str, Any], *, expected_head: Optional[Rev] = None) -> CommitInfo:
        """Appends one message given as a dict (`role`, `content`, `tool_calls`, …)."""

    def append_many(
        self, messages: Sequence[dict[str, Any]], *, expected_head: Optional[Rev] = None
    ) -> list[CommitInfo]:
        """Appends several message dicts in one transaction: all of them, or none. With
        `expected_head`, only if the handle's branch is still at that commit."""

    def append_items(
        self, items: Sequence[dict[str, Any]], *, expected_head: Optional[Rev] = None
    ) -> list[CommitInfo]:
        """Appends OpenAI Responses input items (dicts) in one transaction, one message each:
        all of them, or none. They come back as they were from `compile().to_responses()`."""

    def append_response(
        self, body: dict[str, Any] | str, *, expected_head: Optional[Rev] = None
    ) -> list[CommitInfo]:
        """Appends what a provider's response body answers with (a dict, or its JSON text, as the
        API returned it: an OpenAI Chat Completions, OpenAI Responses or Anthropic Messages
        response; `response.model_dump()` of the SDKs' objects), in one transaction: all of
        them, or none. The first assistant message carries the body's usage, in Anthropic's
        names, with its model and id."""

    def _append_items_to(
        self,
        items: Sequence[dict[str, Any]],
        finished: _Finished,
        token: int,
        *,
        expected_head: Optional[Rev] = None,
    ) -> None:
        """`append_items` without waiting: the items are read here (a value that is not a list
        raises here), appended on a worker thread without the GIL, and the commits or the error
        queued in `finished` under `token`, which wakes the event loop watching it."""

    def record(
        self, kind: str, data: str, *, messages: Optional[Sequence[dict[str, Any]]] = None
    ) -> CommitInfo:
        """Appends `messages` (message dicts), then a record of `kind` holding `data`, in one
        transaction: all of it, or none. Records keep data of the caller's own (a framework's
        checkpoints) on the branch; the view never shows them. Returns the record's commit."""

    def records(
        self, kind: Optional[str] = None, *, limit: Optional[int] = None, before: Optional[Rev] = None
    ) -> list[Record]:
        """The records on the branch's first-parent line from the head (or from just before the
        commit `before`), newest first: of `kind` or a kind under it (`"langgraph"` takes
        `"langgraph.checkpoint"`), at most `limit`."""

    def get_record(self, commit: Rev) -> Record:
        """The record a commit holds (an InvalidInputError for any other commit)."""

    def clear_branch(self) -> Optional[str]:
        """Empties the handle's branch (a session started over): every handle on it sees it
        empty, and the old tip stays in the reflog. Returns that tip, or None."""

    def pop(self) -> Optional[dict[str, Any]]:
        """Takes the last message off the view and nothing else: the branch moves back to just
        before it was appended, and what was committed since (edits, a compression or a clear
        of earlier messages, records) is written again on top; the reflog keeps the old tip.
        Returns it as a message dict, or None for an empty branch; refused when it is a summary
        or came from a merge."""

    def edit(self, commit: Rev, content: str) -> CommitInfo:
        """Replaces the content of a message in the current view; the original stays in history."""

    def compile(self, at: Optional[Rev] = None) -> Compiled:
        """Compiles the view at HEAD (or at commit `at`)."""

    def log(
        self, limit: Optional[int] = None, start: Optional[Rev] = None, *, graph: bool = False
    ) -> list[CommitInfo]:
        """History from `start` (default HEAD) back along first parents, newest first. With
        `graph=True`, every commit reachable through both parents of merges (a merged branch's
        commits too), newest first."""

    def get_commit(self, commit: Rev) -> CommitInfo:
        """One commit by hash (a unique prefix works), branch name or `HEAD~N`."""

    def get_content(self, commit: Rev) -> Union[str, list[dict[str, Any]], None]:
        """The content stored in that commit: a string, or a list of part dicts."""

    def resolve(self, rev: Rev) -> str:
        """Resolves a reference to a full commit hash."""

    def diff(self, a: Rev, b: Optional[Rev] = None, *, history: bool = False) -> dict[str, Any]:
        """How the views of revisions `a` and `b` differ, as the model saw them: `a` and `b`
        (each with `rev`, `commit_hash`, `message_count`, `token_count`), `token_delta`,
        `shared_prefix_count` (they part after that many messages), `shared_count`, `only_a`
        and `only_b` (the messages only one holds, with their text), `changed` (the positions
        both hold with other content: `a` and `b` messages). With `b` None: what commit `a` did
        to its view (its first parent's view against its own, with `commit`). With
        `history=True`: the commits only each history holds (`only_a`, `only_b`) and
        `merge_base`. The fields of `tract diff --json`."""

    def replay(
        self,
        branch: str,
        *,
        model: Optional[str] = None,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        provider: Literal["openai", "anthropic"] = "openai",
        from_: Optional[Rev] = None,
        system: Optional[str] = None,
        tools: Optional[list[dict[str, Any]]] = None,
        new_branch: Optional[str] = None,
        resume: bool = False,
        max_requests: int = 100,
        timeout: float = 30.0,
        retries: int = 3,
        on_divergence: Optional[Callable[[dict[str, Any]], Optional[str]]] = None,
    ) -> dict[str, Any]:
        """Reruns the recorded session on `branch` on another model, onto a new branch
        (`new_branch`, default `replay/<branch>/<n>`) forked at `from_` (default: its first
        user message): each model answer is committed with its usage, each tool call it makes
        is answered with the result the session recorded for the same tool and canonical
        arguments, and the user messages the session was sent follow in order. A call with no
        recorded result is a divergence: the replay stops there, unless `on_divergence`
        (called with a dict of `step`, `tool`, `arguments`, `call_id`) returns the result's
        text (None stops). `provider` is `"openai"` (chat completions) or `"anthropic"`
        (Messages API); the key and defaults come from the environment as for
        `OpenAICompatible`. `system` replaces the system prompt; `tools` is a list of OpenAI or
        Anthropic tool definitions (default: inferred from the recorded calls). With
        `resume=True`, goes on with `new_branch` (default: the newest replay of `branch`) from
        its tip. Returns the fields of `tract replay --json`: `branch`, `request_count`,
        `matched_call_count`, `user_messages_sent`, `divergence`, `finished`, the tokens, and
        `diff_command`. A request that fails within its tries (all within 2 minutes) raises
        `UnavailableError`; every answer received before stays on the branch."""

    def compressed_into(self, commit: Rev) -> Optional[CommitInfo]:
        """The compress commit whose summary replaced this message, if any."""

    @property
    def head(self) -> Optional[str]:
        """The commit this handle is at (None on a branch with no commits yet)."""

    @property
    def current_branch(self) -> Optional[str]:
        """The branch this handle is on (None when detached)."""

    def branches(self) -> list[BranchInfo]:
        """Every branch (every session) with its tip, messages and tokens in view and last
        activity, as kept while it moved (nothing is compiled). Each unpacks as `(name, head)`."""

    def branch(self, name: str, at: Optional[Rev] = None) -> str:
        """Creates branch `name` at `at` (default HEAD); returns the commit it starts at."""

    def fork(self, name: str, at: Optional[Rev] = None) -> Tract:
        """A new branch `name` at this handle's position (or at `at`), returned as a handle bound
        to it, on the same store, with this handle's hooks and default summarizer. Nothing is
        copied: a fork costs the same at any history size."""

    def merge(
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
        """Merges branch `name` into this handle's branch with a commit of two parents (the
        branch's whole history stays reachable). `strategy="append"`: the view continues with
        the branch's messages since it forked. `strategy="tool_result", call_id=ID`: the branch's
        final assistant answer (or, with `summarize=True`, a summary of its work by `summarizer`,
        the handle's, or the extractive one) becomes the result of that pending call. A branch
        merged into itself, one with no common history or nothing new, or a call that is not
        pending raises, and nothing is committed. Returns the merge commit."""

    def delete_branch(self, name: str) -> str:
        """Deletes branch `name` (not the one this handle or the store's HEAD is on); its reflog
        keeps the tip, which this returns. A handle still bound to it raises NotFoundError
        rather than start a new history there."""

    def switch(self, name: str) -> None:
        """Puts this handle on branch `name` (other handles and the store's HEAD stay put)."""

    def checkout(self, rev: Rev) -> None:
        """Puts this handle on a branch, or detaches it at a commit (time travel)."""

    def reset(self, rev: Rev) -> None:
        """Moves this handle's branch to `rev`; the old head stays in the reflog."""

    def reflog(self, name: str = "HEAD", limit: Optional[int] = None) -> list[dict[str, Any]]:
        """The moves of a ref, newest first: dicts with `old`, `new`, `reason`, `timestamp_us`."""

    def status(self) -> dict[str, Any]:
        """Branch, head, message and token counts of the current view: `branch` (None when
        detached), `head`, `detached`, `messages`, `token_count`, `unanswered_tool_calls`,
        `reused_call_ids` (tool calls whose id an earlier call in view used: compile sends each
        under a new id), `path`: the fields of `tract status --json`."""

    def usage(
        self,
        branch: str | None = None,
        since: datetime.datetime | float | None = None,
        by_day: bool = False,
    ) -> dict[str, Any]:
        """What the model requests of a branch cost (`branch`: this handle's position when None),
        summed along its first parents: `branch`, `commit_hash`, `since`, `totals` (the four
        Anthropic counts: `input_tokens`, `output_tokens`, `cache_read_input_tokens`,
        `cache_creation_input_tokens`), `request_count`, `largest_input_tokens`,
        `cache_hit_rate`, `rewrite_factor`, `by_model` (a list of dicts with `model` and the
        same figures), `by_day` (with `by_day=True`), `unknown_kinds`: the fields of
        `tract usage --json`; with a price table (`set_prices`), `cost` in each (None when a
        model is not priced), `currency` and `unpriced_models`. `since` (a `datetime`, naive:
        UTC, or seconds since the epoch) sums only the requests from then on."""

    def cache_report(
        self,
        branch: str | None = None,
        format: Literal["anthropic", "openai", "responses"] = "anthropic",
        ttl: int = 300,
    ) -> dict[str, Any]:
        """What a provider's prompt cache could have served each model request of a branch
        (`branch`: this handle's position when None), as tract renders the view each answer
        was given in `format` (`"anthropic"`, `"openai"` or `"responses"`), against the request
        before; `ttl` is the provider's cache lifetime in seconds. The fields of
        `tract cache --json`: `requests` (each with `commit_hash`, `created_at`, `model`, the
        reported `input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`,
        `request_tokens`, `shared_prefix_tokens`, and `break`: None, or `commit_hash` and
        `cause`, one of `edit`, `compress`, `clear`, `redaction`, `system`, `model`, `ttl`,
        `append`, `merge`), their sums, `break_count`, `notes`."""

    def fsck(self) -> dict[str, Any]:
        """Checks the whole store (every branch): re-hashes every object and chunk, checks every
        link, ref and reflog entry and the kept per-branch counts, lists what nothing reaches.
        Returns a dict: `clean`, the counts checked (`commits`, `blobs`, `chunks`, `bytes`,
        `branches`, `reflog_entries`, `counts_replayed`, `checkpoints_checked`, `journal_frames`,
        `index_documents`: the search index's documents checked against the store, 0 without an
        index file), `problems` (dicts with `kind`, `subject`, `detail`; the search index's are
        of kind `index`, and `update_index(rebuild=True)` repairs them), `unreachable`
        (`commits`, `blobs`, `chunks`: full ids), `redacted` (blob ids) and
        `derived_from_redacted` (commits whose content was made from redacted content:
        `redact(..., follow=True)` removes them too), `reused_call_ids` (branch name to how
        many tool calls in its view reuse an id an earlier call used: not a problem, compile
        sends each under a new id), `secrets_in_view` (branch name to how many messages in its
        view hold what looks like a credential: a warning, `redact_secrets()` scrubs them), and
        `past_checkpoint` (every branch's name to the commits a new handle reads past its view
        checkpoint: at most the checkpoint interval, the whole history without a checkpoint)."""

    def redact(self, commit: Rev, reason: str, *, follow: bool = False) -> dict[str, Any]:
        """Removes the content of the message `commit` names from the store for good: a tombstone
        keeps when and `reason`; ids stay valid; views show a placeholder with the message's
        role and call structure; search no longer finds it. With `follow=True`, every commit
        whose content was made from the removed content (a summary or compression of it, or of such
        a summary) is redacted too. Returns a dict: `commit`, `blob`, `redacted_at` (RFC 3339
        UTC) and `redacted_at_us`, `reason`, `chunks_removed`, `derived` (commits made from the
        removed content that still hold it) and `followed` (those redacted with it), as `tract
        redact --json` says. `compact()` afterwards makes sure no freed page of the file keeps
        the bytes."""

    def push(
        self,
        dest: str | os.PathLike[str],
        branches: Optional[list[str]] = None,
        *,
        force: bool = False,
        settings: bool = False,
    ) -> dict[str, Any]:
        """Sends branches (all, or `branches`) and the history they reach to the store at `dest`
        (a file or a postgresql:// URL; it must be a tract store): only the objects it lacks,
        each hashed again as it is stored. A branch is a name, or `"SRC:DST"` to send the
        branch SRC as DST (`"main:theirs/main"`). Each branch moves only by fast-forward; one
        that has diverged is refused and the others move: then DivergedError is raised after
        the transfer, naming each refused branch, with `report` (the dict below, its `refused`
        listing them); `force` moves them anyway (the old tip stays in the reflog). `settings`
        sends the tool-summarization, retention and secrets policies too. Returns a dict: `branches`
        (each `name`, `source`, `old`, `new`, `up_to_date`, `forced`, `ahead_of`: the
        sender's tip when the receiver's branch already contained it, and stayed), `refused`
        (each `name`, `source`, `receiver`, `sender`, `reason`), `commits`, `blobs`,
        `settings`."""

    def import_file(
        self,
        path: str | os.PathLike[str],
        format: Literal["auto", "claude-code", "codex", "gemini", "openai", "openai-responses", "anthropic", "jsonl"] = "auto",
    ) -> dict[str, Any]:
        """Imports the transcript file at `path` onto this handle's branch (`format`: auto,
        claude-code, codex, gemini, openai, openai-responses, anthropic or jsonl), in one
        transaction; only what the branch does not hold yet (a Claude Code session is keyed by line: each line
        once, a response that grew edited, a rewound conversation followed). Returns a dict:
        `file` (`path` as given), `branch`, `format`, `added`, `already`, `skipped`, `off_path`,
        `recorded` (lines kept as records, out of the view), `edited`, `rewound`,
        `session_store` (the branch is the Claude Agent SDK session store's: nothing imported),
        `waiting_agents` (sub-agents still running), `warnings` (dicts with `line` and
        `warning`: lines that are not JSON, skipped as Claude Code skips them), `tip`: the
        report of `tract import --json`. A bad line raises InvalidInputError naming the file
        and line (`path`, `line`), and nothing is written."""

    def export(
        self, format: Literal["openai", "anthropic", "jsonl", "markdown"] = "jsonl", *, history: bool = False
    ) -> str:
        """This handle's branch written out as text: `format` openai or anthropic (a request
        body of the view, JSON), jsonl (the view's messages; with `history`, every commit,
        which `import_file` reads back to identical ids) or markdown."""

    def pull(
        self,
        src: str | os.PathLike[str],
        branches: Optional[list[str]] = None,
        *,
        force: bool = False,
        settings: bool = False,
    ) -> dict[str, Any]:
        """Receives branches (all, or `branches`, each a name or `"SRC:DST"`: the sender's SRC
        as this store's DST) and their history from the store at `src` into this one, as
        `push` sends them: a diverged branch is refused (DivergedError with `report`, after
        the others moved); `pull(src, ["main:theirs/main"])` then brings it in under another
        name, to `merge("theirs/main")`. Returns the same dict as `push`."""

    @staticmethod
    def clone_store(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> Tract:
        """Copies the store at `src` into a new store at `dest` (a file that does not exist yet, or
        a postgresql:// URL whose schema holds no store): every branch with its history, the
        settings and HEAD, every id the same. Returns a handle on the copy."""

    def gc(
        self, *, grace_days: float = 14.0, prune_now: bool = False, dry_run: bool = False
    ) -> dict[str, Any]:
        """Applies the store's retention policy (see `set_retention_policy`; nothing without a
        rule), then removes the objects nothing reaches: not a branch, not HEAD, not a reflog
        entry younger than `grace_days` (older entries are expired); `prune_now=True` for no
        grace; `dry_run=True` changes nothing and says what would go. Returns a dict:
        `commits`, `blobs`, `chunks`, `bytes`, `reflog_entries`, and the view checkpoints (all
        but each branch's newest; not counted in a dry run) and their chunks, `checkpoints`,
        `checkpoint_chunks`, removed; `dry_run`; and `retention`, one dict per rule in the
        policy's order: `rule`, `deleted_branches` (`branch`, `commit_hash`, `idle_since`: RFC
        3339 UTC),
        `replaced_results` (`commits`, `summary`: the summary's hash or None for a
        placeholder), `bytes` and `kept` (`pinned`, `current`, `shared`, `newest`,
        `unsummarized`: what the rule covers but kept, by why), as `tract gc --json` says."""

    def retention_policy(self) -> dict[str, Any]:
        """The store's retention policy as a dict (`rules`, `pinned`), in the JSON form `tract
        config show --json` prints under `retention`; `{"rules": [], "pinned": []}` when none
        was set."""

    def set_retention_policy(self, policy: dict[str, Any]) -> None:
        """Replaces the store's retention policy, which only `gc` applies (`gc(dry_run=True)`
        shows what it would do). `policy` is a dict: `rules`, a list of rules, each with a
        `name`, `branches` (name patterns: `*` any run of characters, `/` included) and either
        `replace_tool_results` (`older_than_days`, `keep_newest`: the newest messages of each
        view kept, `with`: `"summary"` (only results that have one, by it) or
        `"placeholder"`) or `delete_idle_branches` (`idle_days`); and `pinned`, branch
        patterns no rule touches. An invalid policy raises `InvalidInputError` and the stored
        one is kept; `{}` clears it."""

    def prices(self) -> dict[str, Any]:
        """The store's price table as a dict (`currency`, `models`: model name or pattern to its
        prices per million tokens, `input`, `output`, `cache_read`, `cache_creation`), as
        `tract config prices --json` prints it; `{"currency": "USD", "models": {}}` when none
        was set."""

    def set_prices(self, table: dict[str, Any]) -> None:
        """Replaces the store's price table, which `usage()` prices requests with: a dict with
        `currency` (`"USD"` unless given) and `models`, model name or pattern (`*` any run of
        characters) to `input`, `output` and optionally `cache_read` and `cache_creation`, per
        million tokens (the cache prices default to `input`). A model the table does not price
        has an unknown cost, never zero. An invalid table raises `InvalidInputError` and the
        stored one is kept; `{}` clears it."""

    def secrets_policy(self) -> dict[str, Any] | None:
        """The store's secrets policy as a dict (`enabled`, `rules`: your own, name to regex,
        `disabled`: built-in rule ids turned off, `allow`: values, or `/regex/` patterns, never
        scrubbed), in the JSON form `tract config show --json` prints under `secrets`; `None`
        for a store an older tract made, which scrubs nothing until it is given one."""

    def set_secrets_policy(self, policy: dict[str, Any]) -> None:
        """Replaces the store's secrets policy, which every write applies: what looks like a
        credential is replaced by `[REDACTED:<rule>:<fingerprint>]` before a message is stored.
        `policy` is a dict with the keys `secrets_policy()` returns (those left out take their
        default: on, every built-in rule, nothing of your own). An invalid policy (an unknown
        key, a rule that does not compile or would match every message, an allowed pattern
        that would turn every rule off) raises `InvalidInputError` and the stored one is kept."""

    def scan_secrets(self, *, history: bool = False, all: bool = False) -> list[dict[str, Any]]:
        """What looks like a credential in what the store holds already (written before it
        scrubbed, or with scrubbing off), by the store's rules: the handle's view, or with
        `history` every commit it reaches, with `all` on every branch. A list of dicts
        (`commit_hash`, `branch`, `rule`, `fingerprint`, `field`, `start`, `end`), never the
        values."""

    def redact_secrets(self, *, history: bool = False, all: bool = False) -> dict[str, Any]:
        """Scans as `scan_secrets` does, then scrubs every finding where it is stored, in one
        transaction: each message becomes a tombstone showing it with its findings replaced by
        their markers, what was made from it (summaries, compressions) follows, the search index
        forgets the text; ids stay valid. Returns a dict: `findings` (how many), `scrubbed` and
        `followed` (commit ids)."""

    def update_index(self, *, rebuild: bool = False) -> dict[str, Any]:
        """Brings the store's search index up to date: the commits written since it was last
        brought up to date (by any process), and the text redactions and `gc` removed; with
        `rebuild=True`, builds it anew from every branch. Searching never needs this (a search
        finds what is not indexed yet itself, and the processes that write index in batches);
        it is for after a bulk import, and to repair an index `fsck` finds wrong. Waits up to a
        minute for another process that is indexing (`StoreLockedError` after that). Returns a
        dict: `added` (commits), `removed` (documents dropped or rewritten), `rebuilt`,
        `documents` (one per commit), `bytes` (of its files, or of its tables in a database),
        `path` (its directory beside the store file; None for a store in memory or in
        PostgreSQL) and `in_database` (True for a store in PostgreSQL, whose index is the
        database's own full-text search, beside the store's tables)."""

    def checkpoint_views(self) -> int:
        """Checkpoints the view of every branch whose tip has no checkpoint of this layout (a
        store written by older code, a clone, a pull), so a new handle builds it from there
        instead of replaying its history; what `tract upgrade` does. Returns how many were
        written."""

    def compact(self) -> None:
        """Closes this handle and compacts the store file: it shrinks, and no freed page keeps the
        bytes of what `gc` removed or `redact` replaced. Needs the only open handle on the store
        in this process (forks included) and no transaction of another process under way."""
