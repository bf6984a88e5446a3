"""Bad input gets a typed exception and changes nothing."""

import os
import re

import pytest

import tract


def snapshot(t: tract.Tract):
    return [c.commit_hash for c in t.log()], t.branches(), t.reflog()


# The category classes, by the core's category names.
CATEGORIES = {
    "not_found": tract.NotFoundError,
    "invalid_input": tract.InvalidInputError,
    "conflict": tract.ConflictError,
    "corrupt": tract.CorruptError,
    "unavailable": tract.UnavailableError,
    "internal": tract.InternalError,
}


def test_the_error_hierarchy() -> None:
    for cls in (
        tract.NotFoundError,
        tract.AmbiguousPrefixError,
        tract.InvalidInputError,
        tract.InvalidOperationError,
        tract.StoreLockedError,
        tract.ReadOnlyStoreError,
        tract.CorruptStoreError,
        tract.NewerFormatError,
        tract.NotAStoreError,
        tract.SummarizerError,
        *CATEGORIES.values(),
    ):
        assert issubclass(cls, tract.TractError)
    assert issubclass(tract.InvalidInputError, ValueError)
    assert issubclass(tract.NotFoundError, LookupError)
    assert issubclass(tract.AmbiguousPrefixError, LookupError)
    # The classes that were there before their categories still derive from what they did.
    for cls in (
        tract.NotInViewError,
        tract.HeadMovedError,
        tract.DivergedError,
        tract.ReadOnlyStoreError,
    ):
        assert issubclass(cls, tract.InvalidOperationError)
    for name, cls in CATEGORIES.items():
        assert cls.category == name
        assert getattr(tract.errors, cls.__name__) is cls and cls.__name__ in tract.__all__


def test_unknown_and_ambiguous_references(t: tract.Tract) -> None:
    infos = t.append_many([{"role": "user", "content": f"m{i}"} for i in range(1500)])
    before = snapshot(t)
    with pytest.raises(tract.NotFoundError):
        t.get_commit("0" * 64)
    with pytest.raises(tract.NotFoundError):
        t.get_commit("no-such-branch")
    seen: dict[str, str] = {}
    shared = next(i.commit_hash[:4] for i in infos if seen.setdefault(i.commit_hash[:4], i.commit_hash) != i.commit_hash)
    with pytest.raises(tract.AmbiguousPrefixError, match=shared):
        t.get_commit(shared)
    with pytest.raises(tract.NotFoundError):
        t.edit("f" * 40, "x")
    assert snapshot(t) == before


def test_malformed_messages(t: tract.Tract) -> None:
    t.user("kept")
    before = snapshot(t)
    bad = [
        {"content": "no role"},
        {"role": "robot", "content": "x"},
        {"role": "tool", "content": "no call id"},
        {"role": "user", "content": 5},
        {"role": "assistant", "tool_calls": [{"name": "no id"}]},
    ]
    for message in bad:
        with pytest.raises(tract.InvalidInputError):
            t.append(message)
    with pytest.raises(tract.InvalidInputError):
        t.assistant("x", tool_calls=[{"id": "c1", "name": "grep", "arguments": {"bad": float("nan")}}])
    with pytest.raises(tract.InvalidInputError):
        t.assistant("x", tool_calls=[{"id": "c1", "name": "grep", "arguments": object()}])
    assert snapshot(t) == before


def test_bad_store_paths(tmp_path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_bytes(b"not a database")
    with pytest.raises(tract.NotAStoreError):
        tract.Tract.open(junk)
    assert junk.read_bytes() == b"not a database"
    with pytest.raises(FileNotFoundError):
        tract.Tract.open(tmp_path / "missing" / "store.redb")
    assert not (tmp_path / "missing").exists()
    with pytest.raises(tract.NotAStoreError):
        tract.Tract.open(tmp_path)


def test_unwritable_directory(tmp_path) -> None:
    if os.geteuid() == 0:
        # Root ignores permission bits; sysfs refuses new files even to root.
        target = "/sys/tract-test-store.redb"
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        target = str(ro / "store.redb")
    with pytest.raises(PermissionError):
        tract.Tract.open(target)
    assert not os.path.exists(target)
    with pytest.raises(NotADirectoryError):
        (tmp_path / "file").write_text("x")
        tract.Tract.open(tmp_path / "file" / "store.redb")


HEX = re.compile("^[0-9a-f]{64}$")

# Every variant of the core's error: the exception class it raises and the facts it carries.
EXPECTED = {
    "UnknownRevision": (tract.NotFoundError, {"rev": "nope"}),
    "UnknownBranch": (
        tract.NotFoundError,
        {"branch": "feature", "similar": ["features", "feature-2"]},
    ),
    "BranchDeleted": (tract.NotFoundError, {"branch": "session-1"}),
    "UnbornBranch": (tract.NotFoundError, {"branch": "main"}),
    "HistoryTooShort": (tract.NotFoundError, {"rev": "HEAD~9"}),
    "ReflogTooShort": (tract.NotFoundError, {"rev": "main@{9}", "ref": "main", "entries": 3}),
    "MissingCommit": (tract.NotFoundError, {"commit": HEX}),
    "AmbiguousPrefix": (tract.AmbiguousPrefixError, {"prefix": "abcd"}),
    "NotInView": (tract.NotInViewError, {"commit": HEX, "argument": "after"}),
    "InvalidRevision": (tract.InvalidInputError, {"rev": "HEAD~x"}),
    "InvalidBranchName": (tract.InvalidInputError, {"branch": "-x"}),
    "InvalidMessage": (tract.InvalidInputError, {"index": 2, "line": None}),
    "InvalidTranscript": (tract.InvalidInputError, {"path": "session.jsonl", "line": 7}),
    "InvalidInput": (tract.InvalidInputError, {}),
    "BranchExists": (tract.InvalidOperationError, {"branch": "main"}),
    "InvalidOperation": (tract.InvalidOperationError, {}),
    "CorruptJournal": (
        tract.CorruptStoreError,
        {
            "path": "/srv/agents/.tract/store.redb-journal/0000000000000007",
            "reason": "the frame at offset 4096 is damaged (its check does not match) and frames follow it",
        },
    ),
    "CorruptObject": (
        tract.CorruptStoreError,
        {"kind": "blob", "id": HEX, "reason": "its bytes do not hash to its id"},
    ),
    "NoMergeBase": (
        tract.InvalidOperationError,
        {"branch": "imported", "head": HEX, "other": HEX},
    ),
    "CallNotPending": (tract.InvalidOperationError, {"call_id": "call_9", "pending": ["call_1"]}),
    "HeadMoved": (tract.HeadMovedError, {"branch": "main", "expected": HEX, "actual": HEX}),
    "StoreLocked": (tract.StoreLockedError, {"path": "/tmp/store.redb"}),
    "ReadOnly": (
        tract.ReadOnlyStoreError,
        {"store": "/tmp/store.redb", "reason": "its file cannot be written (Permission denied)"},
    ),
    "NotAStore": (tract.NotAStoreError, {"path": "/tmp/store.redb", "reason": "the file is empty"}),
    "Corrupt": (tract.CorruptStoreError, {}),
    "NewerFormat": (tract.NewerFormatError, {"found": 9, "supported": 1}),
    "Io": (FileNotFoundError, {"filename": "/tmp/store.redb"}),
    "Summarizer": (tract.SummarizerError, {"reason": "HTTP 500"}),
    "Model": (
        tract.UnavailableError,
        {"endpoint": "http://127.0.0.1:9/v1", "reason": "no answer within 30000 ms"},
    ),
    "Handler": (tract.InternalError, {}),
    "Rejected": (tract.RejectedError, {"reason": "holds a password"}),
    "Diverged": (tract.DivergedError, {"branch": "main", "receiver": HEX, "sender": HEX}),
    "Database": (
        tract.DatabaseError,
        {
            "store": "postgresql://ann:***@db:5432/agents?schema=tract",
            "reason": "the connection to the server was lost",
        },
    ),
    "Storage": (tract.InternalError, {}),
    "SearchIndex": (tract.InternalError, {"doing": "committing a batch"}),
}


def test_every_core_error_maps_to_its_exception_with_its_facts() -> None:
    examples = {variant: exc for variant, _, exc in tract._tract._error_examples()}
    # A variant added to the core without a mapping checked here fails this line.
    assert set(examples) == set(EXPECTED)
    for variant, exc in examples.items():
        cls, facts = EXPECTED[variant]
        assert type(exc) is cls, (variant, type(exc))
        assert str(exc), variant
        for name, want in facts.items():
            got = getattr(exc, name)
            if want is HEX:
                assert isinstance(got, str) and HEX.match(got), (variant, name, got)
            else:
                assert got == want, (variant, name, got)
    ambiguous = examples["AmbiguousPrefix"]
    assert len(ambiguous.candidates) == 2 and all(HEX.match(c) for c in ambiguous.candidates)
    assert all(isinstance(e, tract.TractError) for v, e in examples.items() if v != "Io")


def test_every_core_error_is_of_its_categorys_class() -> None:
    examples = tract._tract._error_examples()
    # Every category is reached, and the core names no other.
    assert {category for _, category, _ in examples} == set(CATEGORIES)
    for variant, category, exc in examples:
        if variant == "Io":
            # OS errors stay Python's own OSError subclasses, whatever their category.
            assert isinstance(exc, OSError), (variant, type(exc))
            continue
        assert isinstance(exc, CATEGORIES[category]), (variant, category, type(exc))
        assert exc.category == category, (variant, exc.category)
        others = [name for name, cls in CATEGORIES.items() if name != category and isinstance(exc, cls)]
        # NotInViewError was an InvalidOperationError before categories, and stays one.
        assert others == (["conflict"] if variant == "NotInView" else []), (variant, others)


def test_a_category_catches_what_it_names(t: tract.Tract) -> None:
    first = t.user("hello")
    t.user("again")
    t.branch("side")
    t.switch("side")
    on_side = t.user("only on side")
    t.switch("main")
    with pytest.raises(tract.NotFoundError):
        t.get_commit("no-such-branch")
    with pytest.raises(tract.NotFoundError) as not_in_view:
        t.find_tool_results(after=on_side)
    assert isinstance(not_in_view.value, tract.NotInViewError)
    with pytest.raises(tract.ConflictError):
        t.branch("side")
    with pytest.raises(tract.ConflictError) as moved:
        t.user("late", expected_head=first)
    assert isinstance(moved.value, tract.HeadMovedError)
    with pytest.raises(tract.InvalidInputError):
        t.get_commit("HEAD~x")


def test_errors_carry_their_facts(t: tract.Tract) -> None:
    infos = t.append_many([{"role": "user", "content": f"m{i}"} for i in range(1500)])
    by_prefix: dict[str, list[str]] = {}
    for i in infos:
        by_prefix.setdefault(i.commit_hash[:4], []).append(i.commit_hash)
    prefix, hashes = next((p, h) for p, h in by_prefix.items() if len(h) > 1)
    with pytest.raises(tract.AmbiguousPrefixError) as e:
        t.get_commit(prefix)
    assert e.value.prefix == prefix and set(hashes) <= set(e.value.candidates)
    with pytest.raises(tract.NotFoundError) as nf:
        t.get_commit("no-such-branch")
    assert nf.value.rev == "no-such-branch"
    with pytest.raises(tract.InvalidInputError) as bad:
        t.append_many([{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}])
    assert bad.value.index == 2
    # One prefix only: the batch position is named once.
    assert str(bad.value).count("invalid input") == 1 and "message 2: unknown role 'robot'" in str(bad.value)
    with pytest.raises(tract.InvalidInputError) as rev:
        t.get_commit("HEAD~x")
    assert rev.value.rev == "HEAD~x"
    t.branch("side", at=infos[0])
    with pytest.raises(tract.InvalidOperationError) as exists:
        t.branch("side")
    assert exists.value.branch == "side"
    t.switch("side")
    with pytest.raises(tract.NotInViewError) as nv:
        t.find_tool_results(after=infos[-1])
    assert nv.value.commit == infos[-1].commit_hash and nv.value.argument == "after"

