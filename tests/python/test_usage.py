"""What an answer cost, kept with it: `usage` on an assistant message, in either provider's
names, kept in Anthropic's in the message's metadata (`tract.usage`); bad usage appends nothing."""

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
