"""The Python surface as an agent uses it (seed 002's contract)."""

import datetime
import json

import pytest

import tract


def agent_turn(t: tract.Tract) -> tuple[tract.CommitInfo, tract.CommitInfo]:
    t.system("You are a coding agent.")
    t.user("Where is DATABASE_URL read?")
    call = t.assistant(
        "Searching.",
        tool_calls=[{"id": "call_1", "name": "grep", "arguments": {"pattern": "DATABASE_URL"}}],
    )
    result = t.tool_result("call_1", "grep", "config.py:42: DATABASE_URL=postgres://db\n" * 50)
    return call, result


def test_messages_compile_for_both_providers(t: tract.Tract) -> None:
    agent_turn(t)
    t.assistant("It is read in config.py line 42.")
    compiled = t.compile()
    assert len(compiled) == 5
    assert [m["role"] for m in compiled.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert compiled.token_count == sum(compiled.message_token_counts) + 3
    oai = compiled.to_openai()
    assert oai[2]["tool_calls"][0]["function"] == {"name": "grep", "arguments": '{"pattern":"DATABASE_URL"}'}
    assert oai[3]["tool_call_id"] == "call_1"
    anth = compiled.to_anthropic()
    assert anth["system"] == "You are a coding agent."
    assert anth["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "grep",
        "input": {"pattern": "DATABASE_URL"},
    }
    assert anth["messages"][2]["content"][0]["type"] == "tool_result"
    assert json.dumps(anth) == json.dumps(t.compile().to_anthropic())


def test_commit_info_fields(t: tract.Tract) -> None:
    call, result = agent_turn(t)
    assert len(result.commit_hash) == 64
    assert result.op == "append"
    assert result.role == "tool"
    assert result.content_type == "tool_result"
    assert result.name == "grep"
    assert result.metadata == {"tool_call_id": "call_1", "name": "grep"}
    assert call.metadata["tool_calls"] == [
        {"id": "call_1", "name": "grep", "arguments": '{"pattern":"DATABASE_URL"}'}
    ]
    assert call.content_type == "tool_call"
    assert result.parents == [call.commit_hash]
    assert result.edit_target is None
    assert result.token_count > 100
    assert isinstance(result.created_at, datetime.datetime)
    assert result.created_at.tzinfo is not None
    assert abs(result.created_at - datetime.datetime.now(datetime.timezone.utc)) < datetime.timedelta(minutes=5)
    assert t.get_commit(result.commit_hash[:12]) == result
    assert t.get_commit(result) == result
    assert "grep" in repr(result)


def test_openai_wire_tool_calls_and_string_arguments(t: tract.Tract) -> None:
    ci = t.assistant(
        None,
        tool_calls=[{"id": "c9", "type": "function", "function": {"name": "bash", "arguments": '{ "cmd" : "ls" }'}}],
    )
    assert ci.metadata["tool_calls"][0]["arguments"] == '{ "cmd" : "ls" }'
    assert t.compile().to_openai()[0]["content"] is None


def test_edit_keeps_identity_and_history(t: tract.Tract) -> None:
    _, result = agent_turn(t)
    edited = t.edit(result.commit_hash, "config.py:42")
    assert edited.op == "edit"
    assert edited.edit_target == result.commit_hash
    assert edited.metadata["tool_call_id"] == "call_1"
    assert edited.name == "grep"
    view = t.compile().messages
    assert view[3]["content"] == "config.py:42"
    assert view[3]["tool_call_id"] == "call_1"
    # The original stays in history, and get_content reads what a commit stored.
    assert t.get_content(result).startswith("config.py:42: DATABASE_URL")
    assert t.get_content(edited.commit_hash) == "config.py:42"
    hashes = [c.commit_hash for c in t.log()]
    assert hashes[:2] == [edited.commit_hash, result.commit_hash]


def test_the_seed_agent_authored_loop(t: tract.Tract) -> None:
    """Seed 002: agents compose log() + get_commit() + metadata themselves."""
    agent_turn(t)
    for entry in t.log():
        ci = t.get_commit(entry.commit_hash)
        meta = ci.metadata or {}
        if meta.get("name") == "grep" and "tool_call_id" in meta:
            t.edit(ci.commit_hash, "config.py:42")
    assert t.compile().messages[3]["content"] == "config.py:42"


def test_log_limit_and_start(t: tract.Tract) -> None:
    for i in range(5):
        t.user(f"m{i}")
    assert [c.content for c in t.log(limit=2)] == ["m4", "m3"]
    assert [c.content for c in t.log(start="HEAD~3")] == ["m1", "m0"]


def test_branches_checkout_and_reset(t: tract.Tract) -> None:
    a = t.user("one")
    b = t.user("two")
    t.branch("alt", at=a)
    t.switch("alt")
    assert t.current_branch == "alt"
    t.user("two on alt")
    assert [m["content"] for m in t.compile().messages] == ["one", "two on alt"]
    t.switch("main")
    assert t.head == b.commit_hash
    t.checkout(a.commit_hash)
    assert t.current_branch is None
    t.switch("main")
    t.reset(a)
    assert len(t.compile()) == 1
    assert t.reflog("main", limit=1)[0]["old"] == b.commit_hash
    t.reset(b)
    assert len(t.compile()) == 2
    assert dict(t.branches()) == {"main": b.commit_hash, "alt": t.resolve("alt")}
    assert t.compile(at=a).messages == [{"role": "user", "content": "one"}]


def test_missing_results_are_repaired_in_compile(t: tract.Tract) -> None:
    t.user("go")
    t.assistant("", tool_calls=[{"id": "c1", "name": "bash", "arguments": "{}"}])
    compiled = t.compile()
    assert compiled.messages[-1]["content"] == tract.SYNTHETIC_RESULT
    assert compiled.messages[-1]["is_error"] is True
    assert compiled.warnings
    assert t.status()["unanswered_tool_calls"] == 1


def test_append_many_is_all_or_nothing(t: tract.Tract) -> None:
    t.user("before")
    with pytest.raises(tract.InvalidInputError, match="message 2"):
        t.append_many([{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}])
    assert len(t.log()) == 1
    infos = t.append_many([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    assert [i.role for i in infos] == ["user", "assistant"]


def test_in_memory_and_reopen(store_path) -> None:
    with tract.Tract.open() as mem:
        mem.user("scratch")
        assert mem.path is None
    with tract.Tract.open(store_path) as t:
        t.user("kept")
    with tract.Tract.open(str(store_path)) as t:
        assert [c.content for c in t.log()] == ["kept"]
        assert t.status()["messages"] == 1


def test_closed_tract_refuses_work(store_path) -> None:
    t = tract.Tract.open(store_path)
    t.close()
    with pytest.raises(tract.InvalidOperationError, match="closed"):
        t.user("late")


def test_gil_is_released_during_store_work(store_path) -> None:
    """Another Python thread runs while appends wait on fsync."""
    import threading

    ticks = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    with tract.Tract.open(store_path) as t:
        thread = threading.Thread(target=spin)
        thread.start()
        try:
            before = ticks
            for i in range(30):
                t.user(f"m{i}")
            during = ticks - before
        finally:
            stop.set()
            thread.join()
    assert during > 0


def test_a_handle_that_never_reads_its_view_leaves_checkpoints_as_it_appends(store_path) -> None:
    # Appends one by one and in a batch, from a handle that never compiles: the branch is
    # checkpointed as it grows, and a new handle walks at most the interval past a checkpoint
    # (a sixteenth of the view, at least 16 commits, for a view this small).
    writer = tract.Tract.open(store_path)
    for i in range(40):
        writer.user(f"message {i}")
    writer.append_many([{"role": "user", "content": f"batch {i}"} for i in range(50)])
    for i in range(10):
        writer.user(f"after the batch {i}")
    report = writer.fsck()
    assert report["clean"] and report["checkpoints_checked"] == 1
    assert report["past_checkpoint"] == {"main": 10}
    reader = tract.Tract.open(store_path)
    assert reader.compile().to_openai() == writer.compile().to_openai()
    # `checkpoint_views` checkpoints what is past the checkpoint now.
    assert writer.checkpoint_views() == 1
    assert writer.checkpoint_views() == 0
    assert writer.fsck()["past_checkpoint"] == {"main": 0}


def test_a_message_with_an_unknown_field_is_refused_with_the_field_meant(t: tract.Tract) -> None:
    # `{"role": "user", "text": "hi"}` was committed empty, `text` kept as metadata.
    with pytest.raises(tract.InvalidInputError, match=r"unknown message field 'text'; did you mean 'content'\?"):
        t.append({"role": "user", "text": "hi"})
    with pytest.raises(tract.InvalidInputError, match=r"message 2: unknown message field 'conent'"):
        t.append_many([{"role": "user", "content": "a"}, {"role": "user", "conent": "b"}])
    assert t.head is None
    # What the OpenAI SDK's message carries is taken; fields of your own go under metadata.
    info = t.append({"role": "assistant", "content": "hi", "refusal": None, "annotations": []})
    assert info.content == "hi"
    mine = t.append({"role": "user", "content": "x", "metadata": {"text": "mine"}})
    assert mine.metadata["text"] == "mine"


def test_an_empty_user_or_system_message_is_refused(t: tract.Tract) -> None:
    # `t.user("")` committed an empty user message.
    with pytest.raises(tract.InvalidInputError, match="a user message cannot be empty"):
        t.user("")
    with pytest.raises(tract.InvalidInputError, match="a system message cannot be empty"):
        t.system("  ")
    with pytest.raises(tract.InvalidInputError, match="a user message cannot be empty"):
        t.append({"role": "user", "content": ""})
    with pytest.raises(tract.InvalidInputError, match="a user message cannot be empty"):
        t.append({"role": "user"})
    assert t.head is None
    # A tool call may come with no text.
    t.assistant("", tool_calls=[{"id": "c1", "name": "grep", "arguments": {}}])
