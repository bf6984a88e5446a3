"""tract.aio: an awaitable twin of every method of Tract, off the event loop."""

import asyncio
import inspect
import subprocess
import sys

import pytest

import tract
from tract.aio import AsyncTract


def test_every_method_has_an_awaitable_twin_with_the_same_parameters() -> None:
    native = {
        name
        for name, value in vars(tract.Tract).items()
        if callable(value) and not name.startswith("_") and name != "open"
    }
    for name in native:
        twin = getattr(AsyncTract, name, None)
        assert twin is not None and inspect.iscoroutinefunction(twin), name
        ours = [p for p in inspect.signature(twin).parameters if p != "self"]
        theirs = [p for p in inspect.signature(getattr(tract.Tract, name)).parameters if p not in ("self", "args")]
        assert ours == theirs, (name, ours, theirs)
        assert twin.__doc__ and getattr(tract.Tract, name).__doc__ in twin.__doc__, name
    assert inspect.iscoroutinefunction(AsyncTract.open)
    for prop in ("head", "current_branch", "path"):
        assert isinstance(inspect.getattr_static(AsyncTract, prop), property), prop


def test_a_hundred_sessions_append_and_compile_at_once(store_path) -> None:
    async def session(k: int) -> list:
        async with await AsyncTract.open(store_path, branch=f"chat-{k}") as t:
            for i in range(10):
                await t.user(f"chat {k} question {i}")
                await t.assistant(f"chat {k} answer {i}")
                compiled = await t.compile()
                assert len(compiled) == 2 * (i + 1)
            return [m["content"] for m in (await t.compile()).messages]

    async def main() -> list:
        return await asyncio.gather(*(session(k) for k in range(100)))

    results = asyncio.run(main())
    for k, contents in enumerate(results):
        assert contents == [x for i in range(10) for x in (f"chat {k} question {i}", f"chat {k} answer {i}")]
    with tract.Tract.open(store_path, branch="chat-42") as t:
        assert len(t.log()) == 20


def test_errors_and_handlers_work_through_the_twin(store_path) -> None:
    async def main() -> None:
        t = await AsyncTract.open(store_path)
        await t.user("x")
        with pytest.raises(tract.NotFoundError):
            await t.get_commit("no-such-branch")

        def handler(p: tract.PendingToolResult) -> None:
            p.edit("short")

        await t.on("tool_result", handler)
        await t.assistant("", tool_calls=[{"id": "c1", "name": "grep", "arguments": {}}])
        info = await t.tool_result("c1", "grep", "long output " * 50)
        assert info.current_content == "short"
        assert t.current_branch == "main" and t.head is not None
        await t.close()
        with pytest.raises(tract.InvalidOperationError):
            await t.user("after close")

    asyncio.run(main())


def test_append_items_runs_on_tracts_threads_and_settles_in_the_loop(store_path) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        problems: list = []
        loop.set_exception_handler(lambda _loop, context: problems.append(context))
        t = await AsyncTract.open(store_path)
        call = {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"}
        [info] = await t.append_items([call])
        output = {"type": "function_call_output", "call_id": "c1", "output": "found"}
        [result] = await t.append_items([output], expected_head=info.commit_hash)
        assert result.message["name"] == "grep"
        # A compare-and-swap that fails raises in the awaiting task, and adds nothing.
        with pytest.raises(tract.HeadMovedError):
            await t.append_items([{"role": "user", "content": "late"}], expected_head=info.commit_hash)
        with pytest.raises(TypeError):
            await t.append_items("not a list")  # type: ignore[arg-type]
        # A caller that stops waiting does not stop the append, and the loop sees no error.
        task = asyncio.ensure_future(t.append_items([{"role": "user", "content": "kept"}]))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # Appends from many tasks at once all land.
        await asyncio.gather(*(t.append_items([{"role": "user", "content": f"m{i}"}]) for i in range(50)))
        await asyncio.sleep(0.2)
        texts = [m["content"] for m in (await t.compile()).messages if m["role"] == "user"]
        # The cancelled caller's append may land among the 50: order between them is not promised.
        assert sorted(texts) == sorted(["kept"] + [f"m{i}" for i in range(50)])
        assert problems == []
        await t.close()

    asyncio.run(main())


def test_loops_in_many_threads_each_take_their_own_appends_and_leave_no_descriptor(tmp_path) -> None:
    """Each event loop watches a pipe of its own for the appends it awaits: loops on several
    threads at once get their own commits back, and a loop closed and gone leaves no pipe open."""
    import os
    import threading

    path = str(tmp_path / "loops.tract")
    tract.Tract.open(path).close()

    def session(name: str, got: dict) -> None:
        async def main() -> None:
            t = await AsyncTract.open(path, branch=name)
            for i in range(20):
                [info] = await t.append_items([{"role": "user", "content": f"{name} {i}"}])
                assert info.message["content"] == f"{name} {i}"
            got[name] = [m["content"] for m in (await t.compile()).messages]
            await t.close()

        asyncio.run(main())

    def descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    got: dict = {}
    session("warm", got)
    before = descriptors()
    for round in range(5):
        threads = [threading.Thread(target=session, args=(f"s{round}-{k}", got)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    import gc

    gc.collect()
    assert len(got) == 21
    for name, texts in got.items():
        assert texts == [f"{name} {i}" for i in range(20)], name
    # 20 loops made and closed: their pipes (two descriptors each) are closed with them.
    assert descriptors() <= before + 2


def test_a_loop_that_watches_no_descriptors_awaits_appends_all_the_same(store_path) -> None:
    """An event loop without add_reader (asyncio's proactor on Windows, some embedded loops)
    gets its appends through asyncio.to_thread instead."""

    class NoReaders(asyncio.SelectorEventLoop):
        def add_reader(self, *args, **kwargs):  # type: ignore[override]
            raise NotImplementedError

    async def main() -> None:
        t = await AsyncTract.open(store_path)
        [info] = await t.append_items([{"role": "user", "content": "hello"}])
        assert info.message["content"] == "hello"
        with pytest.raises(tract.HeadMovedError):
            await t.append_items([{"role": "user", "content": "late"}], expected_head="0" * 64)
        assert [m["content"] for m in (await t.compile()).messages] == ["hello"]
        await t.close()

    loop = NoReaders()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()


def test_appends_started_finish_before_the_interpreter_exits(tmp_path) -> None:
    """The worker threads are tract's, not Python's: the interpreter waits for them at exit, so
    an append started is made, though no event loop ever takes its outcome."""
    script = (
        "import sys, tract\n"
        "from tract._tract import _Finished\n"
        "t = tract.Tract.open(sys.argv[1])\n"
        "finished = _Finished()\n"
        "for i in range(20):\n"
        "    t._append_items_to([{'role': 'user', 'content': f'm{i}'}], finished, i)\n"
    )
    for k in range(3):
        path = tmp_path / f"exit-{k}.tract"
        done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "Fatal" not in done.stderr, done.stderr
        texts = [m["content"] for m in tract.Tract.open(str(path)).compile().messages]
        assert sorted(texts) == sorted(f"m{i}" for i in range(20))


def test_a_forked_child_appends_on_threads_of_its_own(tmp_path) -> None:
    """A child made by fork has none of its parent's worker threads: its awaited appends still
    run, and neither waits at exit for the other's."""
    script = (
        "import asyncio, os, sys, tract\n"
        "from tract.aio import AsyncTract\n"
        "async def add(path, branch, text):\n"
        "    t = await AsyncTract.open(path, branch=branch)\n"
        "    await asyncio.wait_for(t.append_items([{'role': 'user', 'content': text}]), 30)\n"
        "    await t.close()\n"
        "asyncio.run(add(sys.argv[1], 'parent', 'before the fork'))\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    asyncio.run(add(sys.argv[1], 'child', 'from the child'))\n"
        "    sys.exit(0)\n"
        "asyncio.run(add(sys.argv[1], 'parent', 'after the fork'))\n"
        "_, status = os.waitpid(pid, 0)\n"
        "sys.exit(os.waitstatus_to_exitcode(status))\n"
    )
    path = tmp_path / "fork.tract"
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    texts = lambda branch: [m["content"] for m in tract.Tract.open(str(path), branch=branch).compile().messages]
    assert texts("parent") == ["before the fork", "after the fork"]
    assert texts("child") == ["from the child"]


def test_the_module_example_runs() -> None:
    import doctest

    import tract.aio

    failures, tried = doctest.testmod(tract.aio)
    assert tried > 0 and failures == 0


def test_the_python_guide_asyncio_example_runs(tmp_path, monkeypatch) -> None:
    import pathlib
    import re

    guide = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
    block = re.search(r"## asyncio.*?```python\n(.*?)```", guide.read_text(), re.S)
    assert block is not None
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(block.group(1), str(guide), "exec"), scope)
    assert len(scope["requests"]) == 100
    assert scope["requests"][7] == [{"role": "user", "content": "hello"}]
