"""Records: data of the caller's own on a branch, beside its messages, never in the view."""

import asyncio

import pytest

import tract
from tract.aio import AsyncTract


def test_records_come_back_exactly_newest_first_and_stay_out_of_the_view(any_store):
    with tract.Tract.open(any_store, branch="threads/t1") as t:
        t.user("hello")
        first = t.record("app.state", '{"step": 1}')
        assert first.op == "record" and first.record_kind == "app.state"
        second = t.record(
            "app.state.delta",
            "\u00e9\u00e8 \x00 raw",
            messages=[{"role": "assistant", "content": "hi there"}],
        )
        assert [m["content"] for m in t.compile().to_openai()] == ["hello", "hi there"]
        records = t.records()
        assert [r.data for r in records] == ["\u00e9\u00e8 \x00 raw", '{"step": 1}']
        assert [r.commit_hash for r in records] == [second.commit_hash, first.commit_hash]
        assert records[0].kind == "app.state.delta"
        assert [r.kind for r in t.records("app.state")] == ["app.state.delta", "app.state"]
        assert t.records("app") == records and t.records("ap") == []
        assert t.records(limit=1) == records[:1]
        assert t.records(before=second.commit_hash) == records[1:]
        assert t.get_record(first.commit_hash) == records[1]
        assert t.get_record(first).created_at == first.created_at
        assert t.fsck()["clean"]


def test_a_bad_record_is_refused_and_writes_nothing(store_path):
    with tract.Tract.open(store_path) as t:
        head = t.user("hello").commit_hash
        for kind in ["", "two words", ".x", "x."]:
            with pytest.raises(tract.InvalidInputError, match="record kind"):
                t.record(kind, "x", messages=[{"role": "user", "content": "lost?"}])
        with pytest.raises(tract.InvalidInputError):
            t.record("ok", "x", messages=[{"role": "tool", "content": "no call id"}])
        assert t.log()[0].commit_hash == head
        with pytest.raises(tract.InvalidInputError, match="not a record"):
            t.get_record(head)


def test_async_twins(store_path):
    async def main() -> list[str]:
        async with await AsyncTract.open(store_path) as t:
            await t.record("app.state", "a")
            await t.record("app.state", "b")
            got = await t.records("app.state", limit=5)
            assert (await t.get_record(got[0].commit_hash)).data == "b"
            return [r.data for r in got]

    assert asyncio.run(main()) == ["b", "a"]
