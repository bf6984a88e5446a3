"""What an answer cost, kept with it: `usage` on an assistant message, in either provider's
names, kept in Anthropic's in the message's metadata (`tract.usage`); bad usage appends nothing."""

import json

import pytest

import tract


def usage_of(info: tract.CommitInfo) -> dict:
    return info.message["metadata"]["tract.usage"]


def test_usage_in_either_providers_names_is_kept_in_anthropics() -> None:
    with tract.Tract.open() as t:
        t.user("how big is the repo?")
        openai = t.assistant(
            "about 3 MB",
            usage={
                "prompt_tokens": 1200,
                "completion_tokens": 40,
                "total_tokens": 1240,
                "prompt_tokens_details": {"cached_tokens": 1024},
                "model": "gpt-4.1",
            },
        )
        u = usage_of(openai)
        assert (u["input_tokens"], u["cache_read_input_tokens"], u["output_tokens"]) == (176, 1024, 40)
        assert u["model"] == "gpt-4.1" and u["other"]["total_tokens"] == 1240
        anthropic = t.append(
            {
                "role": "assistant",
                "content": "done",
                "usage": {"input_tokens": 3, "output_tokens": 4, "cache_creation_input_tokens": 700},
            }
        )
        assert usage_of(anthropic)["cache_creation_input_tokens"] == 700
        # What the model is sent carries no usage.
        assert "tract.usage" not in str(t.compile().to_openai())
        # An edit keeps what the answer cost.
        edited = t.edit(openai.commit_hash, "about 3.1 MB")
        assert usage_of(t.get_commit(edited.commit_hash)) == u


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": -1, "output_tokens": 2},
        {"input_tokens": 1.5, "output_tokens": 2},
        {"prompt_tokens": 1, "input_tokens": 1},
        {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 11}},
        {"model": "m"},
    ],
)
def test_bad_usage_appends_nothing(usage: dict) -> None:
    with tract.Tract.open() as t:
        t.user("hi")
        head = t.head
        with pytest.raises(tract.InvalidInputError):
            t.assistant("x", usage=usage)
        with pytest.raises(tract.InvalidInputError):
            t.append({"role": "assistant", "content": "x", "usage": usage})
        assert t.head == head


def test_usage_goes_with_an_assistant_message_only() -> None:
    with tract.Tract.open() as t:
        with pytest.raises(tract.InvalidInputError):
            t.append({"role": "user", "content": "x", "usage": {"input_tokens": 1, "output_tokens": 1}})
        assert t.head is None


def test_a_branch_sums_what_its_answers_cost_along_its_history() -> None:
    with tract.Tract.open() as t:
        assert t.usage()["totals"] == {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        }
        t.user("one")
        first = t.assistant("a", usage={"input_tokens": 100, "output_tokens": 10, "model": "m1"})
        t.user("two")
        t.assistant(
            "b",
            usage={"prompt_tokens": 200, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 150}, "model": "m2"},
        )
        u = t.usage()
        assert u["totals"] == {
            "input_tokens": 150,
            "output_tokens": 15,
            "cache_read_input_tokens": 150,
            "cache_creation_input_tokens": 0,
        }
        assert u["request_count"] == 2 and u["largest_input_tokens"] == 200
        assert u["cache_hit_rate"] == pytest.approx(150 / 300)
        assert [m["model"] for m in u["by_model"]] == ["m1", "m2"]
        # Compressed out of view, still paid for.
        t.compress(content="the story so far")
        assert t.usage()["totals"] == u["totals"]
        # A fork at the first answer has its history's totals.
        fork = t.fork("earlier", at=first.commit_hash)
        assert fork.usage()["request_count"] == 1
        assert t.usage("earlier")["totals"]["input_tokens"] == 100


def test_a_claude_code_sessions_totals_are_the_sum_of_its_lines_each_response_once() -> None:
    import json
    import pathlib

    session = (
        pathlib.Path(__file__).resolve().parents[2]
        / "tests"
        / "fixtures"
        / "claude-code-real"
        / "v2.0.76-compact-boundary.jsonl"
    )
    seen: set = set()
    sums = [0, 0, 0, 0]
    for line in session.read_text().splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        m = v.get("message")
        if v.get("type") != "assistant" or v.get("isSidechain") or not isinstance(m, dict):
            continue
        if not isinstance(m.get("usage"), dict) or m.get("model") == "<synthetic>":
            continue
        if m.get("id") and v.get("requestId"):
            if (m["id"], v["requestId"]) in seen:
                continue
            seen.add((m["id"], v["requestId"]))
        for k, key in enumerate(
            ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]
        ):
            sums[k] += m["usage"].get(key) or 0
    with tract.Tract.open() as t:
        branch = t.import_file(str(session))["branch"]
        totals = t.usage(branch)["totals"]
        assert list(totals.values()) == sums


def test_a_price_table_prices_the_models_it_names_and_no_other() -> None:
    with tract.Tract.open() as t:
        t.user("one")
        t.assistant("a", usage={"input_tokens": 1_000_000, "output_tokens": 1_000_000, "model": "claude-x-1"})
        t.assistant("b", usage={"input_tokens": 1_000_000, "output_tokens": 0, "model": "other"})
        assert "cost" not in t.usage()
        t.set_prices({"currency": "EUR", "models": {"claude-x*": {"input": 3, "output": 15}}})
        u = t.usage()
        assert u["currency"] == "EUR" and u["unpriced_models"] == ["other"]
        assert u["cost"] is None
        assert {m["model"]: m["cost"] for m in u["by_model"]} == {"claude-x-1": 18.0, "other": None}
        with pytest.raises(tract.InvalidInputError):
            t.set_prices({"models": {"m": {"input": -1, "output": 1}}})
        assert t.prices()["currency"] == "EUR"
        t.set_prices({})
        assert t.prices()["models"] == {} and "cost" not in t.usage()


def test_a_response_body_is_appended_with_what_it_cost() -> None:
    anthropic = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Reading it."}, {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.py"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 4, "output_tokens": 60, "cache_read_input_tokens": 20000, "cache_creation_input_tokens": 300},
    }
    chat = {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "model": "gpt-4.1",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Done.", "refusal": None}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020, "prompt_tokens_details": {"cached_tokens": 900}},
    }
    with tract.Tract.open() as t:
        t.user("read a.py")
        [call] = t.append_response(anthropic)
        assert call.message["tool_calls"][0]["id"] == "toolu_1"
        u = usage_of(call)
        assert (u["model"], u["request_id"], u["cache_read_input_tokens"]) == ("claude-sonnet-4-5", "msg_01", 20000)
        t.tool_result("toolu_1", "Read", "print(1)")
        t.append_response(json.dumps(chat))
        report = t.usage()
        assert report["request_count"] == 2
        assert report["totals"]["input_tokens"] == 4 + 100 and report["totals"]["cache_read_input_tokens"] == 20900
        head = t.head
        for bad in [{"hello": 1}, {**chat, "usage": {"prompt_tokens": -1}}, "not json"]:
            with pytest.raises(tract.InvalidInputError):
                t.append_response(bad)
        assert t.head == head


def test_the_cache_report_names_what_broke_the_prefix() -> None:
    """Each request against the one before as tract renders them: the edit between the second
    and the third answer is named with its full id; the report is `tract cache --json`'s."""

    def answer(n: int, read: int) -> dict:
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": f"answer {n}"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 5, "output_tokens": 3, "cache_read_input_tokens": read, "cache_creation_input_tokens": 7},
        }

    with tract.Tract.open() as t:
        t.system("Be brief.")
        first = t.user("What is in a.py?")
        t.append_response(answer(1, 0))
        t.user("And in b.py?")
        t.append_response(answer(2, 40))
        edit = t.edit(first.commit_hash, "What is in a.py, line by line?")
        t.user("And in c.py?")
        t.append_response(answer(3, 9))
        for fmt in ["anthropic", "openai", "responses"]:
            r = t.cache_report(format=fmt)
            assert (r["format"], r["request_count"], r["break_count"]) == (fmt, 3, 1)
            q = r["requests"]
            assert q[0]["break"] is None and q[1]["break"] is None
            assert q[2]["break"] == {"commit_hash": edit.commit_hash, "cause": "edit"}
            assert q[1]["shared_prefix_tokens"] == q[0]["request_tokens"]
            # Only the system prompt is shared after the edit.
            assert 0 < q[2]["shared_prefix_tokens"] < q[1]["request_tokens"]
            assert [x["cache_read_input_tokens"] for x in q] == [0, 40, 9]
            assert r["cache_read_input_tokens"] == 49
        assert t.cache_report(ttl=3600)["ttl_seconds"] == 3600
        with pytest.raises(tract.InvalidInputError, match="unknown format 'gemini'"):
            t.cache_report(format="gemini")  # type: ignore[arg-type]
        with pytest.raises(tract.NotFoundError):
            t.cache_report(branch="nope")
