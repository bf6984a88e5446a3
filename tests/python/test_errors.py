"""Bad input gets a typed exception and changes nothing."""

import os

import pytest

import tract


def snapshot(t: tract.Tract):
    return [c.commit_hash for c in t.log()], t.branches(), t.reflog()


def test_the_error_hierarchy() -> None:
    for cls in (
        tract.NotFoundError,
        tract.AmbiguousPrefixError,
        tract.InvalidInputError,
        tract.InvalidOperationError,
        tract.StoreLockedError,
        tract.CorruptStoreError,
        tract.NewerFormatError,
        tract.NotAStoreError,
        tract.SummarizerError,
    ):
        assert issubclass(cls, tract.TractError)
    assert issubclass(tract.InvalidInputError, ValueError)
    assert issubclass(tract.NotFoundError, LookupError)


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
