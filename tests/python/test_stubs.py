"""The hand-written stubs describe exactly what the native module exports."""

import ast
import inspect
import pathlib

import tract
import tract._tract as native

STUB = pathlib.Path(tract.__file__).with_name("_tract.pyi")


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text())


def stub_classes() -> list[ast.ClassDef]:
    """The stubbed classes the native module defines (TypedDicts describe plain dicts)."""
    return [
        n
        for n in stub_tree().body
        if isinstance(n, ast.ClassDef) and not any(getattr(b, "id", "") == "TypedDict" for b in n.bases)
    ]


def public(names) -> set[str]:
    dunders = ("__enter__", "__exit__", "__len__", "__eq__", "__hash__", "__iter__")
    # The seed's documented default handler reads `tract._tool_summarization_config`.
    return {n for n in names if not n.startswith("_") or n in dunders or n == "_tool_summarization_config"}


def test_py_typed_ships_with_the_package() -> None:
    assert STUB.is_file()
    assert STUB.with_name("py.typed").is_file()


def test_module_level_names_match() -> None:
    tree = stub_tree()
    # TypedDicts describe plain dicts: the module defines none of them.
    stubbed = {c.name for c in stub_classes()}
    stubbed |= {
        t.target.id for t in tree.body if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name)
    }
    stubbed |= {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}
    runtime = {n for n in dir(native) if not n.startswith("__") or n == "__version__"}
    runtime -= {"_tract"}
    aliases = {"Role", "Rev", "Summarizer"}
    assert stubbed - aliases == runtime


def test_class_members_match() -> None:
    for cls in stub_classes():
        runtime_cls = getattr(native, cls.name)
        # A constructor is stubbed as __init__; pyo3 defines it as __new__.
        stubbed = {f.name for f in cls.body if isinstance(f, ast.FunctionDef) and f.name != "__init__"}
        runtime = public(
            name
            for name, value in vars(runtime_cls).items()
            if callable(value) or inspect.isdatadescriptor(value) or isinstance(value, staticmethod)
        )
        # __eq__/__hash__ come from pyo3's eq/hash options on CommitInfo only.
        assert stubbed == runtime, f"{cls.name}: stub-only {stubbed - runtime}, runtime-only {runtime - stubbed}"


def test_signatures_match_where_python_can_see_them() -> None:
    for cls in stub_classes():
        runtime_cls = getattr(native, cls.name)
        for f in (f for f in cls.body if isinstance(f, ast.FunctionDef)):
            if any(isinstance(d, ast.Name) and d.id == "property" for d in f.decorator_list):
                continue
            try:
                target = runtime_cls if f.name == "__init__" else getattr(runtime_cls, f.name)
                sig = inspect.signature(target)
            except (ValueError, TypeError):
                continue
            runtime_params = [p for p in sig.parameters if p not in ("self", "cls", "args")]
            stub_params = [a.arg for a in f.args.args + f.args.kwonlyargs if a.arg not in ("self", "cls")]
            if f.name == "__exit__":
                continue
            assert stub_params == runtime_params, f"{cls.name}.{f.name}: {stub_params} != {runtime_params}"


def test_every_public_item_has_a_docstring() -> None:
    for name in tract.__all__:
        obj = getattr(tract, name)
        if inspect.isclass(obj):
            assert obj.__doc__, name
            for member, value in vars(obj).items():
                if not member.startswith("_") and (callable(value) or inspect.isdatadescriptor(value)):
                    assert getattr(value, "__doc__", None), f"{name}.{member}"
