"""Checks that a compiled request is one the provider accepts: the shape, by the providers'
own SDK request types (validated with pydantic), and the ordering rules the APIs enforce that
types cannot express (every tool call answered right after it, alternating roles)."""

from typing import Any

from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputParam
from pydantic import TypeAdapter

_OPENAI = TypeAdapter(list[ChatCompletionMessageParam])
_ANTHROPIC = TypeAdapter(MessageCreateParamsNonStreaming)
_RESPONSES = TypeAdapter(ResponseInputParam)


def _unique(ids: list[str], what: str) -> None:
    """Providers refuse a request that uses one call id twice (Anthropic: "`tool_use` ids must
    be unique")."""
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    assert not repeated, f"{what} ids used more than once: {repeated}"


def _consume(value: Any) -> None:
    """Pydantic validates `Iterable` fields lazily: walk everything so every part is checked."""
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return
    if isinstance(value, dict):
        value = value.values()
    for item in value:
        _consume(item)


def assert_valid_openai(messages: list[dict[str, Any]]) -> None:
    """A valid Chat Completions `messages` list: every assistant message with tool calls is
    followed at once by exactly one tool message per call, and no tool message stands alone."""
    _consume(_OPENAI.validate_python(messages))
    _unique([c["id"] for m in messages for c in m.get("tool_calls") or []], "tool call")
    i = 0
    while i < len(messages):
        m = messages[i]
        assert m["role"] != "tool", f"message {i}: a tool result that follows no call: {m}"
        i += 1
        calls = [c["id"] for c in m.get("tool_calls") or []]
        if m["role"] != "assistant" or not calls:
            continue
        answered = []
        while i < len(messages) and messages[i]["role"] == "tool":
            answered.append(messages[i]["tool_call_id"])
            i += 1
        assert sorted(answered) == sorted(calls), f"calls {calls} answered by {answered}"


def assert_valid_anthropic(request: dict[str, Any]) -> None:
    """A valid Messages API request: roles alternate starting with the user, and every
    `tool_use` is answered by a `tool_result` at the start of the next user message."""
    _consume(_ANTHROPIC.validate_python({"model": "claude-test", "max_tokens": 1024, **request}))
    messages = request["messages"]
    assert messages and messages[0]["role"] == "user", "the first message must be the user's"
    _unique(
        [b["id"] for m in messages if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"],
        "tool_use",
    )
    for k, (a, b) in enumerate(zip(messages, messages[1:])):
        assert a["role"] != b["role"], f"messages {k} and {k + 1} have the same role"
    for k, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], list) else []
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if results:
            leading = [b["type"] for b in blocks[: len(results)]]
            assert leading == ["tool_result"] * len(results), f"message {k}: results come first"
            previous = messages[k - 1]["content"] if k else []
            asked = [b["id"] for b in previous if isinstance(b, dict) and b["type"] == "tool_use"]
            assert sorted(results) == sorted(asked), f"message {k}: {results} answer {asked}"
        if uses:
            assert k + 1 < len(messages), f"message {k}: tool_use without results"
            following = messages[k + 1]["content"]
            answered = [b["tool_use_id"] for b in following if b["type"] == "tool_result"]
            assert sorted(answered) == sorted(uses), f"message {k}: {uses} answered by {answered}"


def assert_valid_responses(items: list[dict[str, Any]]) -> None:
    """Valid Responses `input` items: each `function_call` id once, and each output answering
    a call made before it."""
    _consume(_RESPONSES.validate_python(items))
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    _unique(calls, "function_call")
    made: set[str] = set()
    for k, item in enumerate(items):
        if item.get("type") == "function_call":
            made.add(item["call_id"])
        elif item.get("type") == "function_call_output":
            assert item["call_id"] in made, f"item {k}: an output answering no earlier call"


def assert_valid(compiled: Any) -> None:
    """Every rendering of one compiled view is a valid request."""
    assert_valid_openai(compiled.to_openai())
    assert_valid_anthropic(compiled.to_anthropic())
    assert_valid_responses(compiled.to_responses())
