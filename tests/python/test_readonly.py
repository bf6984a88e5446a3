"""A store opened to read only: everything reads, nothing of the store changes (not a byte of its
files), and a write raises ReadOnlyStoreError, changing nothing. A store the process may not
write opens that way by itself (the CLI's suite runs that as another user)."""

import asyncio
import pathlib

import pytest

import tract
from tract.aio import AsyncTract


def files(root: pathlib.Path) -> dict:
    """Every file under `root`, with its bytes."""
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_store_opened_to_read_keeps_every_byte_and_refuses_writes(tmp_path) -> None:
    path = tmp_path / "store.redb"
    with tract.Tract.open(path) as t:
        t.user("where is the config?")
        last = t.assistant("in config.py")
        assert t.read_only is None
    before = files(tmp_path)
    with tract.Tract.open(path, read_only=True) as r:
        assert r.read_only == "it was opened to read"
        assert [m["content"] for m in r.compile().messages] == [
            "where is the config?",
            "in config.py",
        ]
        assert r.log()[0].commit_hash == last.commit_hash
        assert [h.commit for h in r.search("config")]
        with pytest.raises(tract.ReadOnlyStoreError) as refused:
            r.user("one more")
        assert refused.value.reason == "it was opened to read"
        assert refused.value.store == str(path)
        assert isinstance(refused.value, tract.InvalidOperationError)
        with pytest.raises(tract.ReadOnlyStoreError):
            r.branch("other")
    assert files(tmp_path) == before


def test_an_open_to_read_needs_a_store_and_makes_none(tmp_path) -> None:
    missing = tmp_path / "store.redb"
    with pytest.raises(FileNotFoundError):
        tract.Tract.open(missing, read_only=True)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(tract.InvalidInputError):
        tract.Tract.open(read_only=True)


def test_the_async_handle_opens_to_read_too(tmp_path) -> None:
    path = tmp_path / "store.redb"
    with tract.Tract.open(path) as t:
        t.user("hello")

    async def read() -> list:
        r = await AsyncTract.open(path, read_only=True)
        assert r.read_only == "it was opened to read"
        with pytest.raises(tract.ReadOnlyStoreError):
            await r.user("no")
        messages = (await r.compile()).messages
        await r.close()
        return messages

    assert [m["content"] for m in asyncio.run(read())] == ["hello"]
