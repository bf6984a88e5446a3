"""Ranked search from Python (`Tract.search`, `SearchHit`, `Tract.update_index`): the syntax,
the ranking, the filters, branches, paging, the regular-expression scan, freshness, redaction
and bad input."""

import asyncio
import datetime
import time

import pytest

import tract
from tract.aio import AsyncTract


def ids(hits) -> list[str]:
    return [h.commit_hash for h in hits]


def marked(hit) -> list[str]:
    """The parts of the snippet the hit highlights."""
    return [hit.snippet[start:end] for start, end in hit.highlights]


def state(t: tract.Tract) -> tuple:
    """What a call that changes nothing leaves as it was."""
    return (t.head, [c.commit_hash for c in t.log(graph=True)], [(b.name, b.head) for b in t.branches()])


# Ranking


def test_a_rare_word_planted_among_many_messages_comes_first(t: tract.Tract) -> None:
    t.append_many(
        [{"role": "user", "content": f"step {i}: the request hit a timeout and was retried"} for i in range(300)]
    )
    needle = t.tool_result("c9", "fetch", "timeout, then a kraken ate the response")
    t.append_many([{"role": "assistant", "content": f"timeout number {i} noted"} for i in range(300)])
    hits = t.search("kraken OR timeout")
    assert len(hits) == 601
    assert hits[0].commit_hash == needle.commit_hash
    assert marked(hits[0]) == ["timeout", "kraken"]
    scores = [h.score for h in hits]
    assert all(isinstance(s, float) and s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert len(set(ids(hits))) == len(hits)


def test_more_occurrences_and_shorter_messages_rank_higher(t: tract.Tract) -> None:
    once = t.user("the disk is full, clean it up")
    thrice = t.user("disk disk disk: full again")
    long = t.user("cache miss while loading the settings page for every user that logged in today")
    short = t.user("cache miss")
    assert ids(t.search("disk")) == [thrice.commit_hash, once.commit_hash]
    assert ids(t.search("cache")) == [short.commit_hash, long.commit_hash]
    first, second = t.search("cache")
    assert first.score > second.score


# Syntax


def test_words_are_all_required_in_any_order_and_case(t: tract.Tract) -> None:
    both = t.user("Connection REFUSED by the server")
    t.user("the connection was fine")
    reversed_ = t.user("refused: connection pool exhausted")
    assert set(ids(t.search("refused connection"))) == {both.commit_hash, reversed_.commit_hash}
    assert ids(t.search("connection refused server")) == [both.commit_hash]


def test_phrases_keep_their_order(t: tract.Tract) -> None:
    phrase = t.user("error: connection refused on port 5432")
    t.user("the server refused the connection")
    assert ids(t.search('"connection refused"')) == [phrase.commit_hash]
    assert len(t.search("connection refused")) == 2
    (hit,) = t.search('"connection refused" port')
    assert marked(hit) == ["connection", "refused", "port"]


def test_excluded_words_and_or(t: tract.Tract) -> None:
    timeout = t.user("the connection timed out: timeout after 30s")
    refused = t.user("the connection was refused")
    kraken = t.user("a kraken appeared")
    leviathan = t.user("a leviathan appeared")
    assert ids(t.search("connection -timeout")) == [refused.commit_hash]
    assert ids(t.search('connection -"was refused"')) == [timeout.commit_hash]
    assert set(ids(t.search("kraken OR leviathan"))) == {kraken.commit_hash, leviathan.commit_hash}
    # OR binds the clauses beside it; the other words stay required.
    assert ids(t.search("kraken OR leviathan -leviathan")) == [kraken.commit_hash]
    assert ids(t.search("appeared kraken OR timeout")) == [kraken.commit_hash]


def test_identifiers_and_paths_are_searched_by_their_parts(t: tract.Tract) -> None:
    camel = t.user("getUserName() returns the display name")
    snake = t.user("call get_user_name here")
    env = t.tool_result("g1", "grep", "config.py:42: DATABASE_URL = env('DATABASE_URL')")
    path = t.user("the bug is in src/main.rs line 4")
    t.user("a user and a name, far apart: user ... name")
    assert set(ids(t.search("user name"))) >= {camel.commit_hash, snake.commit_hash}
    # An identifier is a phrase of its parts, whichever way it is written.
    for query in ("getUserName", "get_user_name", "GetUserName"):
        assert set(ids(t.search(query))) == {camel.commit_hash, snake.commit_hash}, query
    assert ids(t.search("database url")) == [env.commit_hash]
    assert ids(t.search("DATABASE_URL")) == [env.commit_hash]
    assert ids(t.search("main.rs")) == [path.commit_hash]
    assert ids(t.search("src main")) == [path.commit_hash]
    (hit,) = t.search("DATABASE_URL")
    assert {w.upper() for w in marked(hit)} == {"DATABASE", "URL"}


def test_tool_call_names_and_arguments_are_searched(t: tract.Tract) -> None:
    call = t.assistant("", tool_calls=[{"id": "c1", "name": "read_file", "arguments": {"path": "deploy/kraken.yaml"}}])
    assert ids(t.search("kraken yaml")) == [call.commit_hash]
    assert ids(t.search("read file")) == [call.commit_hash]


# The hit


def test_highlights_are_character_offsets_into_the_snippet(t: tract.Tract) -> None:
    # Characters of two, three and four bytes before the word: byte offsets would be off.
    hit_commit = t.user("Ça va? Le café est très naïve — ünïcödé 🦑 kraken ici")
    (hit,) = t.search("kraken")
    assert hit.commit_hash == hit_commit.commit_hash
    assert marked(hit) == ["kraken"]
    (hit,) = t.search("café naïve")
    assert marked(hit) == ["café", "naïve"]
    assert all(isinstance(a, int) and isinstance(b, int) and 0 <= a < b <= len(hit.snippet) for a, b in hit.highlights)
    # A regular expression's hit in a long line: cut around the match, marked where it is.
    t.user("é" * 120 + " needle " + "ü" * 120)
    (scan,) = t.search("need+le", regex=True)
    assert scan.snippet.startswith("…") and scan.snippet.endswith("…")
    assert marked(scan) == ["needle"]
    assert scan.score is None


def test_a_hit_carries_its_commit_snippet_score_and_branches(t: tract.Tract) -> None:
    c = t.user("where is the kraken configured?")
    (hit,) = t.search("kraken")
    assert isinstance(hit, tract.SearchHit)
    assert hit.commit == c and hit.commit_hash == c.commit_hash and hit.commit.role == "user"
    assert "kraken" in hit.snippet
    assert hit.branches == ["main"]
    assert isinstance(hit.score, float) and hit.score > 0
    assert "SearchHit(" in repr(hit) and "score=" in repr(hit)
    with pytest.raises(AttributeError):
        hit.score = 1.0  # type: ignore[misc]


# Filters


def test_role_tool_and_error_filters(t: tract.Tract) -> None:
    user = t.user("run the kraken tests")
    call = t.assistant("", tool_calls=[{"id": "b1", "name": "bash", "arguments": {"cmd": "pytest -k kraken"}}])
    failed = t.tool_result("b1", "bash", "kraken test failed: 1 failed", is_error=True)
    t.assistant("", tool_calls=[{"id": "g1", "name": "grep", "arguments": {"pattern": "kraken"}}])
    grep = t.tool_result("g1", "grep", "tests/test_kraken.py:3: def test_kraken()")
    assert ids(t.search("kraken", role="user")) == [user.commit_hash]
    assert set(ids(t.search("kraken", role="tool"))) == {failed.commit_hash, grep.commit_hash}
    # A tool: its results and the calls to it.
    assert set(ids(t.search("kraken", tool="bash"))) == {call.commit_hash, failed.commit_hash}
    assert ids(t.search("kraken", errors=True)) == [failed.commit_hash]
    assert ids(t.search("kraken", tool="grep", role="tool")) == [grep.commit_hash]
    assert t.search("kraken", tool="nope") == []


def test_operation_filter(t: tract.Tract) -> None:
    t.user("find the kraken")
    t.assistant("", tool_calls=[{"id": "g1", "name": "grep", "arguments": {"pattern": "x"}}])
    original = t.tool_result("g1", "grep", "kraken.py:1 kraken.py:2 kraken.py:3")
    edit = t.tool_result("g1", "grep", "kraken.py (3 lines)", edit=original)
    assert ids(t.search("kraken", op="edit")) == [edit.commit_hash]
    assert ids(t.search("kraken py", op="append")) == []  # the original is out of view
    assert ids(t.search("kraken py", op="append", history=True)) == [original.commit_hash]
    summary = t.compress(commits=[t.log()[-1].commit_hash], content="the user asks where the kraken is")
    (compressed,) = summary["commits"]
    assert ids(t.search("kraken", op="compress")) == [compressed.commit_hash]
    # A merge: the sub-agent's answer, as the result of the call that started it.
    t.assistant("", tool_calls=[{"id": "task_1", "name": "task", "arguments": {"q": "kraken?"}}])
    sub = t.fork("sub-agent")
    answer = sub.assistant("The kraken sleeps in the harbour.")
    merge = t.merge("sub-agent", strategy="tool_result", call_id="task_1")
    assert ids(t.search("harbour", op="merge")) == [merge.commit_hash]
    assert ids(t.search("harbour", op="append")) == []
    assert ids(t.search("harbour", op="append", history=True)) == [answer.commit_hash]


def test_since_and_until_take_datetimes_and_seconds(t: tract.Tract) -> None:
    made = []
    for i in range(3):
        made.append(t.user(f"kraken sighting {i}"))
        time.sleep(0.005)
    first, second, third = (c.commit_hash for c in made)
    at = made[1].created_at
    assert at.tzinfo is not None
    # since: inclusive; until: exclusive.
    assert set(ids(t.search("kraken", since=at))) == {second, third}
    assert ids(t.search("kraken", until=at)) == [first]
    assert ids(t.search("kraken", since=at, until=made[2].created_at)) == [second]
    # A naive datetime is UTC; another zone is the same instant.
    assert set(ids(t.search("kraken", since=at.replace(tzinfo=None)))) == {second, third}
    tokyo = datetime.timezone(datetime.timedelta(hours=9))
    assert ids(t.search("kraken", until=at.astimezone(tokyo))) == [first]
    # Seconds since the epoch, int or float.
    assert set(ids(t.search("kraken", since=at.timestamp()))) == {second, third}
    assert len(t.search("kraken", since=0)) == 3
    assert len(t.search("kraken", until=int(time.time()) + 3600)) == 3
    assert t.search("kraken", since=int(time.time()) + 3600) == []
    assert t.search("kraken", until=0.5) == []
    # The scan takes them too.
    assert ids(t.search("kraken s", regex=True, since=at, until=made[2].created_at)) == [second]


# Branches


def test_branch_all_branches_and_a_fork_shared_by_both(t: tract.Tract) -> None:
    shared = t.user("the kraken was seen before the fork")
    side = t.fork("side")
    on_side = side.user("a kraken on the side branch")
    on_main = t.user("a kraken on the main branch")
    assert set(ids(t.search("kraken"))) == {shared.commit_hash, on_main.commit_hash}
    assert set(ids(side.search("kraken"))) == {shared.commit_hash, on_side.commit_hash}
    assert set(ids(t.search("kraken", branch="side"))) == {shared.commit_hash, on_side.commit_hash}
    everywhere = t.search("kraken", all_branches=True)
    # The commit from before the fork is one hit, naming both branches.
    assert sorted(ids(everywhere)) == sorted([shared.commit_hash, on_side.commit_hash, on_main.commit_hash])
    by_id = {h.commit_hash: h.branches for h in everywhere}
    assert by_id == {shared.commit_hash: ["main", "side"], on_side.commit_hash: ["side"], on_main.commit_hash: ["main"]}
    assert {h.commit_hash: h.branches for h in t.search("kraken")}[shared.commit_hash] == ["main", "side"]
    assert ids(t.search("kraken on the s", regex=True, branch="side")) == [on_side.commit_hash]
    assert ids(t.search("kraken", all_branches=True, history=True, role="user", limit=1))[0] in by_id


# Paging


def test_offset_and_limit_page_through_stable_non_overlapping_pages(t: tract.Tract) -> None:
    # Equal scores (the same text) as well as different ones: pages still tile the list.
    t.append_many([{"role": "user", "content": "the same kraken words again"} for _ in range(25)])
    t.append_many([{"role": "user", "content": f"kraken {'x ' * i}"} for i in range(15)])
    full = ids(t.search("kraken"))
    assert len(full) == 40 and len(set(full)) == 40
    assert ids(t.search("kraken")) == full
    for size in (1, 7, 40):
        pages = []
        for offset in range(0, 45, size):
            pages.extend(ids(t.search("kraken", offset=offset, limit=size)))
        assert pages == full, size
    assert ids(t.search("kraken", limit=5)) == full[:5]
    assert ids(t.search("kraken", offset=35)) == full[35:]
    assert t.search("kraken", offset=40) == [] and t.search("kraken", limit=0) == []
    # Once indexed, the same order.
    t.update_index()
    assert ids(t.search("kraken")) == full
    # The scan pages oldest first.
    scanned = ids(t.search("kraken", regex=True))
    assert ids(t.search("kraken", regex=True, offset=10, limit=10)) == scanned[10:20]


# Freshness


def test_what_was_just_written_is_found_at_once(store_path) -> None:
    with tract.Tract.open(store_path) as t:
        first = t.user("a kraken")
        assert ids(t.search("kraken")) == [first.commit_hash]
        # Past a background batch (1,024) and past what a search indexes itself (2,048).
        for n in (1_100, 2_500):
            t.append_many([{"role": "user", "content": f"routine message {i}"} for i in range(n)])
            latest = t.user(f"leviathan number {n}")
            assert ids(t.search(f"leviathan {n}")) == [latest.commit_hash]
            assert ids(t.search("kraken")) == [first.commit_hash]
        # Another handle, another process's view of the same store: found too.
        with tract.Tract.open(store_path) as other:
            written = other.user("a narwhal")
            assert ids(t.search("narwhal")) == [written.commit_hash]
        # An edit is found at once; the original only in history.
        t.assistant("", tool_calls=[{"id": "g1", "name": "grep", "arguments": {}}])
        original = t.tool_result("g1", "grep", "squid.py:1")
        edit = t.tool_result("g1", "grep", "octopus.py:1", edit=original)
        assert ids(t.search("octopus")) == [edit.commit_hash]
        assert t.search("squid") == [] and ids(t.search("squid", history=True)) == [original.commit_hash]


def test_update_index_reports_what_it_did(store_path) -> None:
    with tract.Tract.open(store_path) as t:
        t.append_many([{"role": "user", "content": f"kraken {i}"} for i in range(10)])
        r = t.update_index()
        assert set(r) == {"added", "removed", "rebuilt", "documents", "bytes", "path", "in_database"}
        assert r["in_database"] is False
        assert r["added"] == 10 and r["documents"] == 10 and r["rebuilt"] is False
        assert r["bytes"] > 0 and r["path"] is not None and r["path"].startswith(str(store_path))
        again = t.update_index()
        assert again["added"] == 0 and again["documents"] == 10
        rebuilt = t.update_index(rebuild=True)
        assert rebuilt["rebuilt"] is True and rebuilt["documents"] == 10
        report = t.fsck()
        assert report["clean"] and report["index_documents"] == 10
        assert len(t.search("kraken")) == 10
    # A store in memory keeps its index in the process's memory.
    with tract.Tract.open() as m:
        m.user("kraken")
        r = m.update_index()
        assert r["path"] is None and r["bytes"] == 0 and r["documents"] == 1
        assert m.fsck()["index_documents"] == 0


def test_the_index_on_each_backend_finds_ranks_and_forgets(any_store: str) -> None:
    """A store file's index in its files, a store in PostgreSQL's in the database's own
    full-text search: the same searches, before and after the index holds the commits."""
    with tract.Tract.open(any_store) as t:
        t.append_many([{"role": "user", "content": f"the kraken log {i}"} for i in range(30)])
        rare = t.user("the kraken log names a zebrafish twice: zebrafish")
        side = t.fork("side")
        side.user("a side note about the zebrafish tank")
        before = [(h.commit_hash, h.branches) for h in t.search("zebrafish", all_branches=True, history=True)]
        r = t.update_index()
        postgres = any_store.startswith("postgresql")
        assert r["in_database"] is postgres and (r["path"] is None) is postgres
        assert r["documents"] == 32 and r["bytes"] > 0
        after = [(h.commit_hash, h.branches) for h in t.search("zebrafish", all_branches=True, history=True)]
        assert after == before and after[0] == (rare.commit_hash, ["main", "side"])
        assert ids(t.search('"kraken log 7"')) == [ids(t.search("kraken 7"))[0]]
        assert len(t.search("kraken", limit=None)) == 31
        t.redact(rare, "a fish")
        assert ids(t.search("zebrafish", all_branches=True, history=True)) == [
            h.commit_hash for h in side.search("zebrafish")
        ]
        report = t.fsck()
        assert report["clean"], report["problems"]
        assert report["index_documents"] == 32


# Redaction


def test_redaction_takes_the_text_out_of_the_results(store_path) -> None:
    secret = "ghp_PLANTEDsecret0123"
    with tract.Tract.open(store_path) as t:
        # What scrubbing missed (here: it is off) is what a person redacts.
        t.set_secrets_policy({"enabled": False})
        t.user("read the deploy config")
        t.assistant("", tool_calls=[{"id": "c1", "name": "cat", "arguments": {"path": "deploy.env"}}])
        leaked = t.tool_result("c1", "cat", f"GITHUB_TOKEN={secret}\nREGION=eu-kraken-1")
        t.assistant("Configured the kraken region.")
        t.update_index()  # the index file holds the secret now
        assert ids(t.search("ghp_PLANTEDsecret0123")) == [leaked.commit_hash]
        assert ids(t.search(secret, regex=True)) == [leaked.commit_hash]
        t.redact(leaked, "a token in a tool result")
        for history in (False, True):
            assert t.search("ghp_PLANTEDsecret0123", history=history) == []
            assert t.search("github token", history=history) == []
            assert t.search("ghp_", regex=True, history=history) == []
        assert t.search("ghp PLANTEDsecret0123", all_branches=True, history=True) == []
        assert len(t.search("kraken")) == 1  # the rest is still found
        report = t.fsck()
        assert report["clean"], report["problems"]
    with tract.Tract.open(store_path) as t:
        assert t.search("ghp_PLANTEDsecret0123", history=True) == []
        t.update_index(rebuild=True)
        assert t.search("ghp_PLANTEDsecret0123", history=True) == []


# Bad input


@pytest.mark.parametrize(
    ("query", "kwargs", "error", "match"),
    [
        ("", {}, tract.InvalidInputError, "empty"),
        ("   ", {}, tract.InvalidInputError, "empty"),
        ("...", {}, tract.InvalidInputError, "no word"),
        ("-kraken", {}, tract.InvalidInputError, "no word"),
        ("kraken OR", {}, tract.InvalidInputError, "OR"),
        ('"kraken', {}, tract.InvalidInputError, "quote"),
        ("(", {"regex": True}, tract.InvalidInputError, "regular expression"),
        ("kraken", {"regex": True, "all_branches": True}, tract.InvalidInputError, "all_branches"),
        ("kraken", {"branch": "main", "all_branches": True}, tract.InvalidInputError, "not both"),
        ("kraken", {"branch": "nope"}, tract.NotFoundError, "nope"),
        ("kraken", {"role": "robot"}, tract.InvalidInputError, "robot"),
        ("kraken", {"op": "record"}, tract.InvalidInputError, "operation"),
        ("kraken", {"since": 20, "until": 10}, tract.InvalidInputError, "ends before"),
        ("kraken", {"since": -1}, tract.InvalidInputError, "1970"),
        ("kraken", {"until": float("nan")}, tract.InvalidInputError, "1970"),
        ("kraken", {"since": datetime.datetime(1969, 12, 31, 23, 0)}, tract.InvalidInputError, "1970"),
        ("kraken", {"offset": -1}, tract.InvalidInputError, "offset"),
        ("kraken", {"limit": -1}, tract.InvalidInputError, "limit"),
        ("kraken", {"since": "yesterday"}, TypeError, "datetime"),
        ("kraken", {"until": datetime.date(2024, 1, 1)}, TypeError, "datetime"),
        ("kraken", {"since": True}, TypeError, "bool"),
    ],
)
def test_bad_input_raises_its_class_and_changes_nothing(t: tract.Tract, query, kwargs, error, match) -> None:
    t.user("a kraken")
    t.branch("side")
    before = state(t)
    with pytest.raises(error, match=match):
        t.search(query, **kwargs)
    assert state(t) == before
    assert len(t.search("kraken")) == 1


def test_invalid_input_is_a_value_error(t: tract.Tract) -> None:
    t.user("a kraken")
    with pytest.raises(ValueError):
        t.search("kraken", branch="main", all_branches=True)


# The positional parameters of before, and asyncio


def test_the_positional_parameters_keep_their_places(t: tract.Tract) -> None:
    t.user("kraken one")
    t.assistant("kraken two")
    # query, role, tool, history, regex, limit
    assert [h.commit.content for h in t.search("kraken", "assistant")] == ["kraken two"]
    assert len(t.search("kraken", None, None, True, False, 1)) == 1
    assert [h.commit.content for h in t.search("kraken t", None, None, False, True)] == ["kraken two"]


def test_the_awaitable_twins(store_path) -> None:
    async def main() -> None:
        async with await AsyncTract.open(store_path) as t:
            shared = await t.user("a kraken before the fork")
            side = await t.fork("side")
            await side.user("a kraken on the side")
            hits = await t.search("kraken", all_branches=True, since=shared.created_at, offset=0, limit=10)
            assert {h.commit_hash: h.branches for h in hits}[shared.commit_hash] == ["main", "side"]
            assert len(hits) == 2
            report = await t.update_index(rebuild=True)
            assert report["rebuilt"] and report["documents"] == 2

    asyncio.run(main())
