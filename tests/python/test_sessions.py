"""Each handle works on its own branch: other handles, other processes and `tract switch` in a
terminal never move it."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import tract
from providers import assert_valid

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))


def contents(t: tract.Tract) -> list:
    return [m["content"] for m in t.compile().messages]


def test_two_handles_keep_their_own_branch(store_path) -> None:
    t = tract.Tract.open(store_path)
    t.user("root")
    t.branch("session-b")
    t2 = tract.Tract.open(store_path)
    t2.switch("session-b")  # another session, or `tract switch` in a terminal
    t.user("for main")  # stays on main: handle t never switched
    t2.user("for b")
    assert t.current_branch == "main" and t2.current_branch == "session-b"
    assert contents(t) == ["root", "for main"]
    assert contents(t2) == ["root", "for b"]
    assert [c.content for c in t.log()] == ["for main", "root"]
    # A handle opened later binds to the branch HEAD names then, which no handle moved.
    assert tract.Tract.open(store_path).current_branch == "main"


def test_open_on_a_branch_creates_it_with_its_first_message(store_path) -> None:
    with tract.Tract.open(store_path) as main:
        main.user("on main")
    with tract.Tract.open(store_path, branch="user-42") as t:
        assert t.current_branch == "user-42" and t.head is None
        assert len(t.compile()) == 0
        first = t.user("hello")
        assert first.parents == []
        assert dict(t.branches())["user-42"] == first.commit_hash
    with tract.Tract.open(store_path, branch="user-42") as again:
        again.user("again")
        assert contents(again) == ["hello", "again"]
    with tract.Tract.open(store_path) as main:
        assert contents(main) == ["on main"]
    for bad in ["", "HEAD", "-x", "a b", "a..b"]:
        with pytest.raises(tract.InvalidInputError) as e:
            tract.Tract.open(store_path, branch=bad)
        assert e.value.branch == bad


def test_expected_head_is_a_compare_and_swap(t: tract.Tract) -> None:
    a = t.user("one")
    b = t.user("two")
    c = t.user("three", expected_head=b)
    with pytest.raises(tract.HeadMovedError) as e:
        t.user("late", expected_head=a)
    assert (e.value.branch, e.value.expected, e.value.actual) == ("main", a.commit_hash, c.commit_hash)
    with pytest.raises(tract.HeadMovedError):
        t.append_many([{"role": "user", "content": "x"}], expected_head=b.commit_hash)
    t.append({"role": "assistant", "content": "ok"}, expected_head="HEAD")
    assert [x.content for x in t.log()][:2] == ["ok", "three"]


def test_fork_returns_a_handle_on_a_new_branch(t: tract.Tract) -> None:
    t.system("be brief")
    q = t.user("plan the work")
    sub = t.fork("sub-agent")
    assert sub.current_branch == "sub-agent" and sub.head == q.commit_hash
    sub.user("searching on the side")
    t.user("main goes on")
    assert contents(sub) == ["be brief", "plan the work", "searching on the side"]
    assert contents(t) == ["be brief", "plan the work", "main goes on"]
    early = t.fork("early", at=q.parents[0])
    assert contents(early) == ["be brief"]
    with pytest.raises(tract.InvalidOperationError) as e:
        t.fork("sub-agent")
    assert e.value.branch == "sub-agent"
    with pytest.raises(tract.InvalidInputError):
        t.fork("bad name")


def test_branches_list_sessions_with_their_counts(store_path) -> None:
    import datetime

    with tract.Tract.open(store_path) as t:
        t.user("root")
        for k in range(3):
            with tract.Tract.open(store_path, branch=f"user-{k}") as s:
                for i in range(k + 1):
                    s.user(f"question {i}")
                    s.assistant(f"answer {i}")
        listed = {b.name: b for b in t.branches()}
        assert set(listed) == {"main", "user-0", "user-1", "user-2"}
        assert listed["main"].current and not listed["user-0"].current
        for k in range(3):
            b = listed[f"user-{k}"]
            with tract.Tract.open(store_path, branch=b.name) as s:
                assert b.head == s.head
                assert b.messages == 2 * (k + 1) == s.status()["messages"]
                assert b.token_count == s.status()["token_count"]
            assert b.last_activity.tzinfo is not None
            assert b.last_activity <= datetime.datetime.now(datetime.timezone.utc)
        # Each unpacks as (name, head).
        assert dict(t.branches())["main"] == t.head
        assert "BranchInfo(name=" in repr(listed["main"])


def test_a_deleted_branch_stops_its_handles_and_its_name_can_start_afresh(store_path) -> None:
    t = tract.Tract.open(store_path)
    t.user("root")
    agent = t.fork("agent")
    tip = agent.user("work")
    with pytest.raises(tract.InvalidOperationError):
        t.delete_branch("main")  # this handle's own branch
    assert t.delete_branch("agent") == tip.commit_hash
    assert "agent" not in dict(t.branches())
    assert t.reflog("agent", limit=1)[0]["old"] == tip.commit_hash
    with pytest.raises(tract.NotFoundError) as e:
        agent.user("more")  # no silent new history under a running agent
    assert e.value.branch == "agent"
    with tract.Tract.open(store_path, branch="agent") as reused:
        reused.user("new session")
        assert contents(reused) == ["new session"]


AGENT = textwrap.dedent(
    """
    import sys, tract
    path, count = sys.argv[1], int(sys.argv[2])
    with tract.Tract.open(path) as t:
        print(t.current_branch, flush=True)
        for i in range(count):
            t.user(f"agent {i}")
            print(i, flush=True)
    """
)


def test_tract_switch_in_a_terminal_does_not_redirect_a_running_agent(store_path) -> None:
    assert TRACT_BIN.is_file(), f"{TRACT_BIN} is missing: build it with `cargo build -p tract-cli`"
    with tract.Tract.open(store_path) as t:
        t.user("root")
        t.branch("look-around")

    def terminal(*args: str) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("TRACT_STORE", "TRACT_BRANCH")}
        out = subprocess.run(
            [str(TRACT_BIN), "--store", str(store_path), *args], capture_output=True, text=True, env=env
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    agent = subprocess.Popen([sys.executable, "-c", AGENT, str(store_path), "300"], stdout=subprocess.PIPE, text=True)
    assert agent.stdout is not None
    assert agent.stdout.readline().strip() == "main"
    switched = 0
    for line in agent.stdout:
        i = int(line)
        # A user looks at other branches from a terminal while the agent writes.
        if i % 50 == 10:
            terminal("switch", "look-around")
            terminal("add", f"typed in the terminal at {i}")
            switched += 1
        if i % 50 == 30:
            terminal("switch", "main")
    assert agent.wait() == 0
    assert switched == 6
    with tract.Tract.open(store_path, branch="main") as main:
        assert contents(main) == ["root"] + [f"agent {i}" for i in range(300)]
    with tract.Tract.open(store_path, branch="look-around") as side:
        assert [m for m in contents(side) if m.startswith("agent")] == []
        assert len(contents(side)) == 1 + 6


THREADED = textwrap.dedent(
    """
    import sys, threading, tract
    path, sessions = sys.argv[1], int(sys.argv[2])
    lock = threading.Lock()

    def session(k):
        # One handle per session, each on its own branch; appends from all of them share
        # transactions (group commit).
        with tract.Tract.open(path, branch=f"s{k}") as t:
            for i in range(1_000_000):
                t.user(f"s{k} {i}")
                with lock:  # acknowledged only after the append returned
                    print(k, i, flush=True)

    for k in range(sessions):
        threading.Thread(target=session, args=(k,), daemon=True).start()
    threading.Event().wait()
    """
)


def test_threads_in_one_process_share_commits_and_a_sigkill_loses_nothing_acknowledged(
    store_path,
) -> None:
    import signal

    tract.Tract.open(store_path).close()
    sessions = 16
    proc = subprocess.Popen(
        [sys.executable, "-c", THREADED, str(store_path), str(sessions)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    acked: dict = {}
    total = 0
    for line in proc.stdout:
        k, i = map(int, line.split())
        acked[k] = max(acked.get(k, -1), i)
        total += 1
        if total >= 3000:
            # Killed while groups of appends are being made durable.
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    # What the process acknowledged before the kill and this one had not read yet; a line cut
    # short by the kill is not an acknowledgment.
    for line in proc.stdout:
        if line.endswith("\n"):
            k, i = map(int, line.split())
            acked[k] = max(acked.get(k, -1), i)
    for k in range(sessions):
        with tract.Tract.open(store_path, branch=f"s{k}") as t:
            log = t.log()
            got = [c.content for c in reversed(log)]
            for newer, older in zip(log, log[1:]):
                assert newer.parents == [older.commit_hash], "one linear chain per session"
        last = acked.get(k, -1)
        # Every acknowledged message is there, in order; only writes in flight may follow.
        assert got[: last + 1] == [f"s{k} {i}" for i in range(last + 1)]
        assert all(m.startswith(f"s{k} ") for m in got)


def delegate(t: tract.Tract) -> tract.Tract:
    """The main agent calls a `task` tool; a sub-agent works on its own branch and answers."""
    t.system("you are the main agent")
    t.user("fix the failing test")
    t.assistant(None, [{"id": "task_1", "name": "task", "arguments": '{"goal": "find the bug"}'}])
    sub = t.fork("sub-agent")
    sub.user("find why test_login fails")
    sub.assistant(None, [{"id": "g1", "name": "grep", "arguments": '{"pattern": "expiry"}'}])
    sub.tool_result("g1", "grep", "auth.py:12: if now > expiry + 1:")
    sub.assistant("The expiry check in auth.py:12 is off by one.")
    return sub


def test_a_sub_agent_answers_its_task_call_through_a_tool_result_merge(store_path) -> None:
    t = tract.Tract.open(store_path)
    sub = delegate(t)
    for handle in (t, sub):  # both valid before the merge (main's call gets a synthetic result)
        assert_valid(handle.compile())
    before = t.head
    m = t.merge("sub-agent", strategy="tool_result", call_id="task_1")
    assert m.op == "merge" and m.merged_branch == "sub-agent" and m.merge_strategy == "tool_result"
    assert m.parents == [before, sub.head]
    assert m.content == "The expiry check in auth.py:12 is off by one."
    compiled = t.compile()
    assert compiled.warnings == []
    assert_valid(compiled)
    assert [c.role for c in t.log()] == ["tool", "assistant", "user", "system"]
    assert len(t.log(graph=True)) == 8
    # The sub-agent's work is searchable through the merge, and its turn is whole.
    assert [h.commit.content for h in t.search("if now > expiry", history=True)] == [
        "auth.py:12: if now > expiry + 1:"
    ]
    assert [turn.results[0].content for turn in t.find_tool_turns(name="task")] == [m.content]
    # A new process sees the same view.
    again = tract.Tract.open(store_path, branch="main")
    assert again.compile().to_openai() == compiled.to_openai()


def test_a_summarized_merge_and_an_append_merge_stay_valid(t: tract.Tract) -> None:
    delegate(t)
    seen = []

    def summarizer(messages: list) -> str:
        seen.append(messages)
        return "auth.py:12 compares with expiry + 1"

    m = t.merge("sub-agent", strategy="tool_result", call_id="task_1", summarize=True,
                summarizer=summarizer)
    assert m.summarizer.endswith(".summarizer") and m.content.startswith("auth.py:12")
    assert "find why test_login fails" in seen[0][-1]["content"]
    assert_valid(t.compile())
    # A second sub-agent whose messages continue the main view.
    side = t.fork("side")
    side.user("also check the session cookie")
    side.assistant(None, [{"id": "r1", "name": "read_file", "arguments": '{"path": "s.py"}'}])
    side.tool_result("r1", "read_file", "SESSION_COOKIE_SECURE = False")
    side.assistant("The cookie is not marked secure.")
    t.user("thanks; what else?")
    merged = t.merge("side", note="bring the side findings")
    assert merged.merge_strategy == "append" and merged.content is None
    assert merged.note == "bring the side findings"
    assert [m["content"] for m in t.compile().messages][-4:] == [
        "also check the session cookie", "", "SESSION_COOKIE_SECURE = False",
        "The cookie is not marked secure.",
    ]
    assert_valid(t.compile())


def test_bad_merges_raise_and_commit_nothing(t: tract.Tract) -> None:
    delegate(t)
    head = t.head
    with pytest.raises(tract.InvalidOperationError, match="into itself"):
        t.merge("main")
    with pytest.raises(tract.InvalidOperationError, match="not pending") as e:
        t.merge("sub-agent", strategy="tool_result", call_id="nope")
    assert e.value.call_id == "nope" and e.value.pending == ["task_1"]
    with pytest.raises(tract.NotFoundError):
        t.merge("ghost")
    with pytest.raises(tract.InvalidInputError, match="needs call_id"):
        t.merge("sub-agent", strategy="tool_result")
    with pytest.raises(tract.InvalidInputError, match="unknown merge strategy"):
        t.merge("sub-agent", strategy="rebase")
    with pytest.raises(tract.InvalidInputError):
        t.merge("bad name!")
    stranger = tract.Tract.open(t.path, branch="stranger")
    stranger.user("unrelated")
    with pytest.raises(tract.InvalidOperationError, match="shares no history") as e:
        t.merge("stranger")
    assert e.value.branch == "stranger"
    assert t.head == head and t.pending_tool_calls()[0].call_id == "task_1"


async def _merge_async(path: str) -> None:
    from tract.aio import AsyncTract

    t = await AsyncTract.open(path)
    await t.system("sys")
    await t.assistant(None, [{"id": "task_1", "name": "task", "arguments": "{}"}])
    sub = await t.fork("sub")
    await sub.assistant("done on the side")
    m = await t.merge("sub", strategy="tool_result", call_id="task_1")
    assert m.content == "done on the side"
    assert len(await t.log(graph=True)) == 4


def test_merge_has_an_awaitable_twin(store_path) -> None:
    import asyncio

    asyncio.run(_merge_async(store_path))
