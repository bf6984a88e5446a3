"""push, pull and clone by hash between stores: files and PostgreSQL schemas, both directions;
a push killed part way leaves the receiver valid and a second run completes it."""

import os
import random
import signal
import subprocess
import time

import pytest

import tract
from conftest import fresh_schema_url, postgres_url
from test_sessions import TRACT_BIN


def history(t: tract.Tract, n: int) -> None:
    t.system("be brief")
    for i in range(n):
        t.user(f"question {i}")
        t.assistant("", [{"id": f"c{i}", "name": "grep", "arguments": '{"q": "x"}'}])
        t.tool_result(f"c{i}", "grep", f"result {i} " + "x" * (i % 50))
        t.assistant(f"answer {i}")


def ids(t: tract.Tract) -> list[str]:
    return [c.commit_hash for c in t.log()]


def test_push_pull_round_trip_between_a_file_and_any_store(any_store, tmp_path) -> None:
    origin = tmp_path / "origin.redb"
    with tract.Tract.open(origin) as src, tract.Tract.open(any_store) as dst:
        history(src, 20)
        report = src.push(any_store)
        assert report["commits"] == len(src.log())
        assert [b["name"] for b in report["branches"]] == ["main"]
        assert ids(dst) == ids(src)
        assert dst.compile().to_openai() == src.compile().to_openai()
        # The other way: the receiver adds, the origin pulls; only the new commit travels.
        dst.user("from the other side")
        back = src.pull(any_store)
        assert back["commits"] == 1 and back["branches"][0]["old"] == ids(src)[1]
        assert ids(src) == ids(dst)
        assert src.push(any_store)["commits"] == 0
        assert dst.fsck()["clean"] and src.fsck()["clean"]


def test_a_clone_of_a_clone_has_identical_ids_across_backends(tmp_path) -> None:
    origin = tmp_path / "origin.redb"
    with tract.Tract.open(origin) as src:
        history(src, 10)
        src.fork("side").user("on side")
        expected = ids(src)
    middle = fresh_schema_url() if postgres_url() else str(tmp_path / "middle.redb")
    with tract.clone(origin, middle) as one:
        assert ids(one) == expected
    with tract.clone(middle, tmp_path / "last.redb") as two:
        assert ids(two) == expected
        assert {b.name for b in two.branches()} == {"main", "side"}
        assert two.fsck()["clean"]


def test_a_diverged_branch_raises_and_force_keeps_the_old_tip(any_store, tmp_path) -> None:
    origin = tmp_path / "origin.redb"
    with tract.Tract.open(origin) as src:
        src.user("shared")
        with tract.clone(origin, any_store) as dst:
            ours = dst.user("receiver only").commit_hash
            theirs = src.user("sender only").commit_hash
            with pytest.raises(tract.DivergedError) as e:
                src.push(any_store)
            assert (e.value.branch, e.value.receiver, e.value.sender) == ("main", ours, theirs)
            assert dst.head == ours
            report = src.push(any_store, force=True)
            assert report["branches"][0]["forced"]
            assert dst.head == theirs
            assert dst.get_commit(ours).content == "receiver only"


def test_a_diverged_branch_does_not_hold_the_others_back_and_merges_under_another_name(
    any_store, tmp_path
) -> None:
    origin = tmp_path / "origin.redb"
    with tract.Tract.open(origin) as src:
        src.user("shared")
        src.fork("side")
        with tract.clone(origin, any_store) as dst:
            ours = dst.user("receiver only").commit_hash
            theirs = src.user("sender only").commit_hash
            with tract.Tract.open(origin, branch="side") as side:
                side_tip = side.user("more on side").commit_hash
            # side moves; main is refused, named, and its history not sent.
            with pytest.raises(tract.DivergedError) as e:
                src.push(any_store)
            assert (e.value.branch, e.value.receiver, e.value.sender) == ("main", ours, theirs)
            assert "branch 'main' has diverged" in str(e.value)
            report = e.value.report
            assert [(b["name"], b["new"]) for b in report["branches"]] == [("side", side_tip)]
            assert report["refused"] == [
                {
                    "name": "main",
                    "source": "main",
                    "receiver": ours,
                    "sender": theirs,
                    "reason": "diverged",
                }
            ]
            assert report["commits"] == 1
            with tract.Tract.open(any_store, branch="side") as moved:
                assert moved.head == side_tip
            assert dst.head == ours
            with pytest.raises(tract.NotFoundError):
                dst.get_commit(theirs)
            # The receiver's main comes in as theirs/main, is merged, and then moves.
            pulled = src.pull(any_store, ["main:theirs/main"])
            assert [(b["name"], b["source"], b["new"]) for b in pulled["branches"]] == [
                ("theirs/main", "main", ours)
            ]
            assert pulled["refused"] == []
            src.merge("theirs/main")
            again = src.pull(any_store)
            main = next(b for b in again["branches"] if b["name"] == "main")
            assert (main["ahead_of"], main["up_to_date"]) == (ours, True)
            pushed = src.push(any_store, ["main"])
            assert pushed["branches"][0]["old"] == ours
            assert dst.head == src.head
            # A bad branch spec raises and sends nothing.
            with pytest.raises(tract.InvalidInputError):
                src.push(any_store, ["+main"])


def test_bad_sync_input_raises_and_changes_nothing(tmp_path) -> None:
    with tract.Tract.open(tmp_path / "a.redb") as src:
        src.user("hello")
        tract.Tract.open(tmp_path / "b.redb").close()
        with pytest.raises(tract.NotFoundError):
            src.push(tmp_path / "b.redb", ["nope"])
        notes = tmp_path / "notes.txt"
        notes.write_text("hello")
        with pytest.raises(tract.NotAStoreError):
            src.push(notes)
        assert notes.read_text() == "hello"
        with pytest.raises(FileNotFoundError):
            src.pull(tmp_path / "missing.redb")
        with pytest.raises(tract.InvalidInputError):
            tract.clone(tmp_path / "a.redb", notes)


def test_a_push_killed_part_way_leaves_the_receiver_valid_and_a_rerun_completes_it(
    tmp_path,
) -> None:
    origin = tmp_path / "origin.redb"
    receivers = [str(tmp_path / "copy.redb")]
    if postgres_url():
        receivers.append(fresh_schema_url())
    with tract.Tract.open(origin) as src:
        batch = []
        for i in range(6000):
            batch.append({"role": "user", "content": f"message {i} " + "y" * (i % 300)})
        src.append_many(batch)
        expected = ids(src)
    rng = random.Random(7)
    env = {k: v for k, v in os.environ.items() if k != "TRACT_STORE"}
    for receiver in receivers:
        tract.Tract.open(receiver).close()
        kills = 0
        # Killed at random moments eight times (each run may have committed some batches),
        # then run to the end: every time the receiver is valid, and the last run completes it.
        for attempt in range(9):
            push = subprocess.Popen(
                [str(TRACT_BIN), "--store", str(origin), "push", receiver],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            if attempt < 8:
                time.sleep(rng.uniform(0.05, 0.3) * (1 + attempt))
                if push.poll() is None:
                    push.send_signal(signal.SIGKILL)
                    kills += 1
            push.wait()
            with tract.Tract.open(receiver) as dst:
                report = dst.fsck()
                assert report["clean"], (receiver, attempt, report["problems"])
                done = dst.head == expected[0]
            if done:
                break
        assert done, f"{receiver}: the push never completed"
        assert kills > 0, f"{receiver}: no push was killed part way"
        with tract.Tract.open(receiver) as dst:
            assert ids(dst) == expected
