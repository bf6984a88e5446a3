"""Verified reads and fsck through the Python API."""

import pathlib

import pytest

import tract


def damage(path: pathlib.Path, old: bytes, new: bytes) -> None:
    """Changes every copy of `old` in the file, as a damaged disk or a hand edit would."""
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new))


def test_the_issue_reproduction_a_flipped_byte_is_never_sent_to_the_model(store_path) -> None:
    with tract.Tract.open(store_path) as t:
        t.append_many([{"role": "user", "content": f"msg {i}."} for i in range(16_000)])
        committed = t.log(limit=16_000)[-1 - 1003]
        assert committed.content == "msg 1003."
        assert t.fsck()["clean"]
    damage(store_path, b"msg 1003.", b"msg 1103.")
    with tract.Tract.open(store_path) as t:
        with pytest.raises(tract.CorruptStoreError) as e:
            t.compile()
        assert e.value.kind == "blob" and len(e.value.id) == 64
        with pytest.raises(tract.CorruptStoreError):
            t.get_commit(committed.commit_hash)
        report = t.fsck()
        assert not report["clean"]
        assert [(p["kind"], p["subject"]) for p in report["problems"]] == [
            ("corrupt", f"blob {e.value.id}")
        ]


def test_fsck_reports_what_it_checked_and_what_nothing_reaches(t: tract.Tract) -> None:
    t.user("hello")
    side = t.fork("side")
    side.user("on the side")
    t.merge("side")
    report = t.fsck()
    assert report["clean"] and report["problems"] == []
    assert report["commits"] == 3 and report["branches"] == 2 and report["counts_replayed"] == 2
    assert report["unreachable"] == {"commits": [], "blobs": [], "chunks": []}
