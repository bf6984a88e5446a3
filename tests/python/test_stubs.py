"""The stub `_tract.pyi` describes exactly what the native module exports: names, kinds of
member, parameters and their defaults, docstrings."""

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
    # The seed's documented default handler reads `tract._tool_summarization_config`; tract.aio
    # awaits appends through `_append_items_to`.
    typed = ("_tool_summarization_config", "_append_items_to")
    return {n for n in names if not n.startswith("_") or n in dunders or n in typed}


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


# What the binary's signatures cannot show: `__exit__` takes `*_args`, the stub declares the
# protocol's three parameters so a type checker knows them.
UNSIGNED = {"Tract.__exit__"}


def described() -> list[tuple[str, ast.FunctionDef, object]]:
    """Every function the stub declares for a native object, as (name, node, that object): the
    module's functions and the methods and properties of its classes."""
    out = []
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            out.append((node.name, node, getattr(native, node.name)))
    for cls in stub_classes():
        runtime_cls = getattr(native, cls.name)
        for f in cls.body:
            if isinstance(f, ast.FunctionDef):
                target = runtime_cls if f.name == "__init__" else inspect.getattr_static(runtime_cls, f.name)
                out.append((f"{cls.name}.{f.name}", f, target))
    return out


def decorated(f: ast.FunctionDef, name: str) -> bool:
    return any(isinstance(d, ast.Name) and d.id == name for d in f.decorator_list)


def stub_parameters(f: ast.FunctionDef) -> list[tuple[str, object, object]]:
    """The parameters as the stub declares them: name, kind, default (its literal value)."""
    a = f.args
    empty = inspect.Parameter.empty
    positional = [(x, inspect.Parameter.POSITIONAL_ONLY) for x in a.posonlyargs]
    positional += [(x, inspect.Parameter.POSITIONAL_OR_KEYWORD) for x in a.args]
    defaults = [empty] * (len(positional) - len(a.defaults)) + [ast.literal_eval(d) for d in a.defaults]
    out = [(x.arg, kind, d) for (x, kind), d in zip(positional, defaults)]
    if a.vararg:
        out.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, empty))
    for x, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((x.arg, inspect.Parameter.KEYWORD_ONLY, empty if d is None else ast.literal_eval(d)))
    if a.kwarg:
        out.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, empty))
    return out


def test_each_member_is_the_kind_the_stub_declares() -> None:
    for name, f, target in described():
        if decorated(f, "property"):
            assert inspect.isdatadescriptor(target), f"{name}: a property in the stub only"
        elif decorated(f, "staticmethod"):
            assert isinstance(target, staticmethod), f"{name}: a static method in the stub only"
        else:
            assert callable(target) and not isinstance(target, staticmethod), f"{name}: not a method"


def test_parameters_kinds_and_defaults_match_the_binarys() -> None:
    """pyo3 gives each function the signature its `#[pyo3(signature = ...)]` declares; a default
    it cannot write as Python is shown as `...`, and then the stub's is only required to exist."""
    checked = 0
    for name, f, target in described():
        if decorated(f, "property") or name in UNSIGNED:
            continue
        runtime = inspect.signature(target.__func__ if isinstance(target, staticmethod) else target)
        theirs = [(p.name, p.kind, p.default) for p in runtime.parameters.values()]
        ours = stub_parameters(f)
        # A method's `self` (pyo3 makes it positional-only); a class's signature has none.
        if not decorated(f, "staticmethod") and "." in name:
            ours = ours[1:]
            if f.name != "__init__":
                theirs = theirs[1:]
        assert [(n, k) for n, k, _ in ours] == [(n, k) for n, k, _ in theirs], f"{name}: {ours} != {theirs}"
        for (param, _, stub_default), (_, _, default) in zip(ours, theirs):
            if default is Ellipsis:
                assert stub_default is not inspect.Parameter.empty, f"{name}({param}): the binary has a default"
            else:
                assert (type(stub_default), stub_default) == (type(default), default), f"{name}({param})"
        checked += 1
    assert checked > 60


def test_docstrings_are_the_binarys() -> None:
    """The stub carries each native class's, method's and property's docstring as the binary has
    it (IDEs read docstrings from the stub). Dunder methods keep the protocol's."""
    nodes = [(f.name, f, getattr(native, f.name)) for f in stub_tree().body if isinstance(f, ast.FunctionDef)]
    for cls in stub_classes():
        runtime_cls = getattr(native, cls.name)
        nodes.append((cls.name, cls, runtime_cls))
        nodes += [
            (f"{cls.name}.{f.name}", f, getattr(runtime_cls, f.name))
            for f in cls.body
            if isinstance(f, ast.FunctionDef) and not f.name.startswith("__")
        ]
    differ = [name for name, node, target in nodes if ast.get_docstring(node) != inspect.cleandoc(target.__doc__ or "")]
    assert len(nodes) > 100
    assert not differ, (
        f"the stub's docstrings of {differ} are not the binary's: install a wheel built from this "
        "checkout, then run `target/test-venv/bin/python scripts/gen_aio.py --stub-docs`"
    )


def test_every_public_item_has_a_docstring() -> None:
    for name in tract.__all__:
        obj = getattr(tract, name)
        if inspect.isclass(obj):
            assert obj.__doc__, name
            for member, value in vars(obj).items():
                if not member.startswith("_") and (callable(value) or inspect.isdatadescriptor(value)):
                    assert getattr(value, "__doc__", None), f"{name}.{member}"
