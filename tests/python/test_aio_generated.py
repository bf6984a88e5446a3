"""tract.aio is written from the stub by scripts/gen_aio.py: the committed file is what the
script writes, every member of Tract has its awaitable twin, a hand-written one, or is listed as
staying synchronous, and each generated twin hands its call to a worker thread as declared."""

import ast
import asyncio
import importlib.util
import inspect
import pathlib
import threading

import pytest

import tract
from tract.aio import AsyncTract

REPO = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gen_aio", REPO / "scripts" / "gen_aio.py")
assert _spec is not None and _spec.loader is not None
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


def test_the_committed_aio_is_what_the_generator_writes() -> None:
    current = gen.AIO.read_text()
    assert gen.generate(gen.STUB.read_text(), current) == current, (
        f"tract/aio.py is not what the stub gives: run `{gen.COMMAND}`"
    )


def test_the_installed_stub_and_aio_are_the_checkouts() -> None:
    installed = pathlib.Path(tract.__file__).parent
    for path in (gen.STUB, gen.AIO):
        assert (installed / path.name).read_text() == path.read_text(), (
            f"the installed {path.name} is not the checkout's: build and install the wheel again"
        )


def parameters(f) -> list[tuple]:
    return [
        (p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values() if p.name not in ("self", "cls")
    ]


def same_parameters(ours, theirs) -> bool:
    """pyo3 shows a default it cannot write as Python as `...`: any default matches it."""
    return len(ours) == len(theirs) and all(
        (a[0], a[1]) == (b[0], b[1]) and (a[2] == b[2] or (b[2] is Ellipsis and a[2] is not inspect.Parameter.empty))
        for a, b in zip(ours, theirs)
    )


def tract_members() -> list[str]:
    """The members of Tract the stub declares (test_stubs.py checks they are the binary's)."""
    tree = ast.parse(gen.STUB.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tract")
    return [f.name for f in cls.body if isinstance(f, ast.FunctionDef)]


def test_every_member_of_tract_has_a_twin_or_is_listed() -> None:
    members = tract_members()
    assert {"user", "compile", "head", "__exit__"} <= set(members)
    for name in members:
        native = inspect.getattr_static(tract.Tract, name)
        if name in gen.HAND_WRITTEN:
            twin_name = gen.HAND_WRITTEN[name][0]
            twin = inspect.getattr_static(AsyncTract, twin_name)
            function = twin.__func__ if isinstance(twin, (staticmethod, classmethod)) else twin
            assert inspect.iscoroutinefunction(function), twin_name
            if twin_name == name:
                ours, theirs = parameters(getattr(AsyncTract, name)), parameters(getattr(tract.Tract, name))
                assert same_parameters(ours, theirs), name
        elif name in gen.SYNC:
            twin = inspect.getattr_static(AsyncTract, name)
            if inspect.isdatadescriptor(native):
                assert isinstance(twin, property), name
            else:
                assert callable(twin) and not inspect.iscoroutinefunction(twin), name
        else:
            twin = inspect.getattr_static(AsyncTract, name, None)
            assert inspect.iscoroutinefunction(twin), f"Tract.{name} has no awaitable twin"
            assert same_parameters(parameters(twin), parameters(getattr(tract.Tract, name))), name


class Recorder:
    """Stands in for a Tract: each method records its arguments and the thread it ran on."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __getattr__(self, name: str):
        def method(*args, **kwargs):
            self.calls.append((name, args, kwargs, threading.get_ident()))
            return f"result of {name}"

        return method


def test_each_generated_twin_passes_its_call_to_a_worker_thread() -> None:
    generated = [n for n in tract_members() if n not in gen.HAND_WRITTEN and n not in gen.SYNC]
    assert len(generated) > 40

    async def main() -> None:
        loop_thread = threading.get_ident()
        for name in generated:
            recorder = Recorder()
            args, kwargs = [], {}
            for p in inspect.signature(getattr(AsyncTract, name)).parameters.values():
                if p.name == "self":
                    continue
                value = object()
                if p.kind is p.KEYWORD_ONLY:
                    kwargs[p.name] = value
                else:
                    args.append(value)
            result = await getattr(AsyncTract(recorder), name)(*args, **kwargs)  # type: ignore[arg-type]
            assert result == f"result of {name}"
            ((called, called_args, called_kwargs, thread),) = recorder.calls
            assert (called, list(called_args), called_kwargs) == (name, args, kwargs), name
            assert thread != loop_thread, f"{name} ran on the event loop's thread"

    asyncio.run(main())


MINI_AIO = f'''"""A twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

{gen.BEGIN}
{gen.END}


class AsyncTract:
    """Twins."""

    def __init__(self, tract) -> None:
        self._tract = tract

    {gen.BEGIN}
    {gen.END}
'''


def mini(members: str) -> str:
    return 'from typing import Optional\n\nclass Tract:\n    """A store."""\n\n' + members


def test_the_generator_writes_twins_and_their_imports() -> None:
    stub = mini(
        '    def user(self, text: str, n: int = 1, *, expected_head: Optional[str] = None) -> str:\n'
        '        """Appends."""\n'
        "    @property\n"
        '    def head(self) -> Optional[str]:\n        """The commit."""\n'
        '    def size(self) -> int:\n        """Counts."""\n'
    )
    out = gen.generate(stub, MINI_AIO, hand_written={}, sync=("head", "size"))
    assert "    from typing import Optional\n" in out
    assert (
        "    async def user(self, text: str, n: int = 1, *, expected_head: Optional[str] = None) -> str:\n"
        '        """Awaitable twin of :meth:`Tract.user`, run in a worker thread."""\n'
        "        return await self._run(self._tract.user, text, n, expected_head=expected_head)\n"
        "\n"
        "    @property\n"
        "    def head(self) -> Optional[str]:\n"
        '        """The commit."""\n'
        "        return self._tract.head\n"
        "\n"
        "    def size(self) -> int:\n"
        '        """Counts."""\n'
        "        return self._tract.size()\n"
    ) in out
    assert gen.generate(stub, out, hand_written={}, sync=("head", "size")) == out


@pytest.mark.parametrize(
    ("members", "hand_written", "sync", "error"),
    [
        ('    @property\n    def head(self) -> str:\n        """H."""\n', {}, (), "list it in SYNC"),
        ('    @staticmethod\n    def open() -> int:\n        """O."""\n', {}, (), "list it in HAND_WRITTEN"),
        ('    @staticmethod\n    def open() -> int:\n        """O."""\n', {}, ("open",), "list it in HAND_WRITTEN"),
        ('    def user(self) -> int: ...\n', {}, ("user",), "no docstring"),
        ('    def fork(self, name: str) -> Tract:\n        """F."""\n', {}, (), "returns a Tract"),
        ('    def __enter__(self) -> int: ...\n', {}, (), "protocol method"),
        ('    def fork(self) -> int: ...\n', {"fork": ("fork", "why")}, (), "no hand-written AsyncTract.fork"),
        ('    def __init__(self) -> None: ...\n', {}, (), "writes AsyncTract.__init__ by hand"),
        ('    def user(self) -> int: ...\n', {"gone": ("gone", "why")}, (), "which the stub does not declare"),
        ('    def user(self) -> Unknown: ...\n', {}, (), "use Unknown"),
        ('    def user(self): ...\n', {}, (), "no return type"),
    ],
)
def test_the_generator_refuses_what_it_cannot_twin(members, hand_written, sync, error) -> None:
    with pytest.raises(gen.GenError, match=error):
        gen.generate(mini(members), MINI_AIO, hand_written=hand_written, sync=sync)


def test_the_generator_needs_both_generated_parts() -> None:
    one_part = MINI_AIO.replace(f"    {gen.BEGIN}\n    {gen.END}\n", "")
    with pytest.raises(gen.GenError, match="two generated parts"):
        gen.generate(mini('    def user(self) -> int: ...\n'), one_part, hand_written={}, sync=())
