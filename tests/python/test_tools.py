"""Tool calls and results (seed 002 layers 1 and 2; seeds 000, 001, 003, 004)."""

import pytest

import tract

GREP_OUTPUT = "\n".join(f"src/mod{i}.py:{i}: DATABASE_URL = env('DATABASE_URL')" for i in range(200))


def session(t: tract.Tract) -> dict[str, tract.CommitInfo]:
    c = {}
    c["user"] = t.user("Where is DATABASE_URL read?")
    c["call"] = t.assistant(
        "Searching.",
        tool_calls=[
            {"id": "g1", "name": "grep", "arguments": {"pattern": "DATABASE_URL"}},
            {"id": "r1", "name": "read_file", "arguments": {"path": "config.py"}},
        ],
    )
    c["read"] = t.tool_result("r1", "read_file", "DATABASE_URL = env()")
    c["grep"] = t.tool_result("g1", "grep", GREP_OUTPUT)
    c["bash_call"] = t.assistant("", tool_calls=[{"id": "b1", "name": "bash", "arguments": {"cmd": "pytest"}}])
    c["bash"] = t.tool_result("b1", "bash", "1 failed", is_error=True)
    c["answer"] = t.assistant("It is read in config.py.")
    return c


def test_edit_with_provenance(t: tract.Tract) -> None:
    c = session(t)
    ci = c["grep"]
    edited = t.tool_result("g1", "grep", "src/mod0.py ... src/mod199.py", edit=ci.commit_hash)
    assert edited.role == "tool"
    assert edited.metadata["tool_call_id"] == "g1"
    assert edited.name == "grep"
    assert edited.edit_target == ci.commit_hash
    compiled = t.compile().to_openai()
    grep_msg = next(m for m in compiled if m.get("tool_call_id") == "g1")
    assert grep_msg["content"] == "src/mod0.py ... src/mod199.py"
    assert t.get_content(ci) == GREP_OUTPUT
    # Edits of edits resolve to the original position.
    again = t.tool_result("g1", "grep", "v3", edit=edited)
    history = t.edit_history(ci)
    assert [h.commit_hash for h in history] == [ci.commit_hash, edited.commit_hash, again.commit_hash]
    assert [m["role"] for m in t.compile().messages].count("tool") == 3


def test_bad_edits_commit_nothing(t: tract.Tract) -> None:
    c = session(t)
    head = t.head
    with pytest.raises(tract.InvalidOperationError, match="not a tool result"):
        t.tool_result("g1", "grep", "x", edit=c["user"])
    with pytest.raises(tract.InvalidOperationError, match="answers tool call 'g1'"):
        t.tool_result("r1", "grep", "x", edit=c["grep"])
    with pytest.raises(tract.InvalidOperationError, match="tool 'grep'"):
        t.tool_result("g1", "bash", "x", edit=c["grep"])
    with pytest.raises(tract.NotFoundError):
        t.tool_result("g1", "grep", "x", edit="f" * 40)
    assert t.head == head


def test_queries_in_view_order(t: tract.Tract) -> None:
    c = session(t)
    assert [r.commit_hash for r in t.find_tool_results()] == [c["read"].commit_hash, c["grep"].commit_hash, c["bash"].commit_hash]
    grep = t.find_tool_results(name="grep")
    assert [r.name for r in grep] == ["grep"]
    assert t.find_tool_results(name="grep", after=c["grep"]) == []
    assert [r.name for r in t.find_tool_results(after=c["read"], before=c["answer"])] == ["grep", "bash"]
    assert t.find_tool_results(name="no-such-tool") == []
    assert [x.commit_hash for x in t.find_tool_calls()] == [c["call"].commit_hash, c["bash_call"].commit_hash]
    assert [x.commit_hash for x in t.find_tool_calls(name="read_file")] == [c["call"].commit_hash]
    # An edited result is returned once, as its position, with the current content reachable.
    edited = t.tool_result("g1", "grep", "short", edit=c["grep"])
    grep = t.find_tool_results(name="grep")
    assert len(grep) == 1
    assert grep[0].commit_hash == c["grep"].commit_hash
    assert grep[0].current_hash == edited.commit_hash
    assert grep[0].current_content == "short"
    assert repr(grep[0]).startswith("CommitInfo(role=tool, name=grep,")


def test_after_outside_the_view_is_an_error(t: tract.Tract) -> None:
    c = session(t)
    t.branch("side", at=c["user"])
    t.switch("side")
    other = t.user("elsewhere")
    t.switch("main")
    with pytest.raises(tract.InvalidOperationError, match="not in the current view"):
        t.find_tool_results(after=other)


def test_turns_and_lifecycle(t: tract.Tract) -> None:
    c = session(t)
    t.assistant("", tool_calls=[{"id": "x1", "name": "edit_file", "arguments": "{}"}])
    turns = t.find_tool_turns()
    assert len(turns) == 3
    first = turns[0]
    assert first.call == c["call"]
    assert first.tool_names == ["grep", "read_file"]
    assert first.result_hashes == [c["grep"].commit_hash, c["read"].commit_hash]
    assert first.all_hashes == [c["call"].commit_hash, c["grep"].commit_hash, c["read"].commit_hash]
    assert [call.state for call in first.calls] == ["ok", "ok"]
    assert first.calls[0].arguments == '{"pattern":"DATABASE_URL"}'
    assert first.calls[0].duration_ms is not None and first.calls[0].duration_ms >= 0
    assert first.calls[0].result_bytes == len(GREP_OUTPUT)
    assert turns[1].calls[0].state == "error"
    assert turns[2].results == []
    assert turns[2].calls[0].state == "pending"
    assert turns[2].calls[0].duration_ms is None
    assert len(t.find_tool_turns(name="grep")) == 1
    assert t.find_tool_turns(name="nope") == []
    # Frozen and hashable: usable in sets and as dict keys.
    assert len({turns[0], t.find_tool_turns()[0]}) == 1
    with pytest.raises(AttributeError):
        turns[0].call = None  # type: ignore[misc]


def test_repair_after_a_crash(store_path) -> None:
    with tract.Tract.open(store_path) as t:
        session(t)
        t.assistant("", tool_calls=[{"id": "x1", "name": "edit_file", "arguments": "{}"}])
    # A new process (here: a new handle) resumes: the pending call is found and answered.
    with tract.Tract.open(store_path) as t:
        assert [p.call_id for p in t.pending_tool_calls()] == ["x1"]
        repaired = t.repair()
        assert len(repaired) == 1 and repaired[0].is_error
        assert t.pending_tool_calls() == []
        assert t.repair() == []
        assert t.compile().warnings == []


def test_search_view_and_history(t: tract.Tract) -> None:
    c = session(t)
    # Ranked, best first: the grep result and the call to grep.
    hits = t.search("database_url", tool="grep")
    assert {h.commit_hash for h in hits} == {c["call"].commit_hash, c["grep"].commit_hash}
    grep = next(h for h in hits if h.commit_hash == c["grep"].commit_hash)
    assert "DATABASE_URL" in grep.snippet
    assert grep.commit.name == "grep"
    # A regular expression scans, oldest first.
    scanned = t.search("database_url", tool="grep", regex=True)
    assert [h.commit_hash for h in scanned] == [c["call"].commit_hash, c["grep"].commit_hash]
    t.tool_result("g1", "grep", "trimmed", edit=c["grep"])
    assert t.search("mod199") == []
    old = t.search("mod199", history=True)
    assert [h.commit_hash for h in old] == [c["grep"].commit_hash]
    assert [h.commit.role for h in t.search(r"1 fail(ed)?", regex=True)] == ["tool"]
    assert len(t.search("database", role="user", limit=1)) == 1
    assert t.search("a", role="user") == []  # words, not substrings
    with pytest.raises(tract.InvalidInputError, match="regular expression"):
        t.search("(", regex=True)


def test_seed_composition_examples(t: tract.Tract) -> None:
    """The examples of seed 002, as written."""
    session(t)

    def extract_filenames(text: str) -> str:
        return "\n".join(sorted({line.split(":")[0] for line in text.splitlines()}))

    for ci in t.find_tool_results(name="grep"):
        t.tool_result(
            ci.metadata["tool_call_id"], "grep",
            extract_filenames(t.get_content(ci)),
            edit=ci.commit_hash,
        )
    grep_msg = next(m for m in t.compile().messages if m.get("name") == "grep")
    assert grep_msg["content"].startswith("src/mod0.py\nsrc/mod1.py")
    turns = t.find_tool_turns()
    all_tool_hashes = [h for turn in turns for h in turn.all_hashes]
    assert len(all_tool_hashes) == 5
    grep_hashes = [h for turn in t.find_tool_turns(name="grep") for h in turn.all_hashes]
    assert len(grep_hashes) == 3


def test_clear_tool_results(store_path) -> None:
    with tract.Tract.open(store_path) as t:
        for i in range(5):
            tool = "memory" if i == 1 else "grep"
            t.assistant("", tool_calls=[{"id": f"c{i}", "name": tool, "arguments": "{}"}])
            t.tool_result(f"c{i}", tool, f"line {i}\n" * 200)
        placeholder = "[cleared {tool} {commit}]"
        dry = t.clear_tool_results(keep=2, exclude_tools=("memory",), placeholder=placeholder, dry_run=True)
        assert len(dry["cleared"]) == 2 and all(isinstance(h, str) for h in dry["cleared"])
        assert t.clear_tool_results(keep=2, clear_at_least=10**9)["cleared"] == []
        out = t.clear_tool_results(keep=2, exclude_tools=["memory"], placeholder=placeholder)
        assert [c.edit_target for c in out["cleared"]] == dry["cleared"]
        assert out["tokens_after"] == dry["tokens_after"] < out["tokens_before"]
        contents = [m["content"] for m in t.compile().messages if m["role"] == "tool"]
        assert contents[0] == f"[cleared grep {dry['cleared'][0][:12]}]"
        assert contents[1].startswith("line 1") and contents[4].startswith("line 4")
        assert t.get_content(dry["cleared"][0]).startswith("line 0")
        with pytest.raises(tract.InvalidInputError):
            t.clear_tool_results(placeholder=" ")
    with tract.Tract.open(store_path) as t:
        assert [m["content"] for m in t.compile().messages if m["role"] == "tool"] == contents
