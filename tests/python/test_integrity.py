"""Verified reads and fsck through the Python API."""

import pathlib

import pytest

import tract


def damage(path: pathlib.Path) -> list[str]:
    """Changes one byte in the middle of the records of each pack beside the store file (where
    its objects live, compressed), as a damaged disk would. The footer's first 8 bytes say
    where a pack's index starts, and its records lie between the 64-byte header and the index
    (docs/format.md, "Packs")."""
    damaged = []
    for pack in sorted(path.with_name(path.name + "-journal").glob("pack-*")):
        data = bytearray(pack.read_bytes())
        index = int.from_bytes(data[-64:-56], "little")
        data[64 + (index - 64) // 2] ^= 0x20
        pack.write_bytes(bytes(data))
        damaged.append(pack.name)
    assert damaged
    return damaged


def test_the_issue_reproduction_a_flipped_byte_is_never_sent_to_the_model(store_path) -> None:
    with tract.Tract.open(store_path) as t:
        t.append_many([{"role": "user", "content": f"msg {i}."} for i in range(16_000)])
        committed = t.log(limit=16_000)[-1 - 1003]
        assert committed.content == "msg 1003."
        assert t.fsck()["clean"]
    packs = damage(store_path)
    with tract.Tract.open(store_path) as t:
        report = t.fsck()
        assert not report["clean"]
        found = [(p["kind"], p["subject"]) for p in report["problems"]]
        # Each pack that does not check, and the one object whose record the byte was in.
        assert found[: len(packs)] == [("corrupt", f"pack {p}") for p in packs]
        [(problem, subject)] = found[len(packs) :]
        kind, id = subject.split(" ")
        assert problem == "corrupt" and kind in ("blob", "commit") and len(id) == 64
        # Where it is read, it is refused: a message when the view is rendered for the model (a
        # compile from the branch's checkpoint reads no text), a commit when it is read (the
        # checkpoint keeps a copy of each position's commit, checked against its id).
        with pytest.raises(tract.CorruptStoreError) as e:
            if kind == "blob":
                t.compile().to_openai()
            else:
                t.get_commit(id)
        assert (e.value.kind, e.value.id) == (kind, id)


def test_fsck_reports_what_it_checked_and_what_nothing_reaches(t: tract.Tract) -> None:
    t.user("hello")
    side = t.fork("side")
    side.user("on the side")
    t.merge("side")
    report = t.fsck()
    assert report["clean"] and report["problems"] == []
    assert report["commits"] == 3 and report["branches"] == 2 and report["counts_replayed"] == 2
    assert report["unreachable"] == {"commits": [], "blobs": [], "chunks": []}


KEY = "sk-PLANTED-key-5a1f9c"
PASSWORD = "pw-PLANTED-77b2"


def test_an_api_key_never_reaches_the_store_an_error_or_any_output(store_path, tmp_path) -> None:
    """A planted key (environment) and a password in the base URL: a server that echoes them
    back in an error page, a failed and a successful compression, every JSON output, the store
    file itself: none of it holds either."""
    import os
    import subprocess

    from conftest import StubLLM, reply
    from test_sessions import TRACT_BIN

    echo = (400, {"error": f"proxy saw Authorization: Bearer {KEY} for user:{PASSWORD}"})
    llm = StubLLM([echo, reply("a summary of the run"), echo])
    try:
        with tract.Tract.open(store_path) as t:
            for i in range(6):
                t.user(f"question {i} " + "with some detail " * 20)
        env = {
            **os.environ,
            "TRACT_STORE": str(store_path),
            "TRACT_LLM_API_KEY": KEY,
            "TRACT_LLM_BASE_URL": llm.url.replace("http://", f"http://user:{PASSWORD}@"),
            "TRACT_LLM_MODEL": "m",
        }

        def tract_cli(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [str(TRACT_BIN), *args], env=env, capture_output=True, text=True, timeout=60
            )

        log = tract_cli("log", "--json")
        first = log.stdout.split('"commit_hash": "')[-1][:10]
        outputs = []
        failed = tract_cli(
            "compress", "--strategy", "llm", "--range", f"{first}..HEAD~1", "--system-prompt", "x"
        )
        # 7: a summarizer error is of the unavailable category (docs/cli.md, "Exit codes").
        assert failed.returncode == 7 and "HTTP 400" in failed.stderr, failed.stderr
        assert "[redacted]" in failed.stderr  # the echoed secrets were there, and scrubbed
        outputs.append(failed.stdout + failed.stderr)
        ok = tract_cli("compress", "--strategy", "llm", "--range", f"{first}..HEAD~1")
        assert ok.returncode == 0, ok.stderr
        assert llm.bodies[-1][1] == f"Bearer {KEY}"  # the key was sent where it belongs
        for args in (["log", "--json"], ["show", "--json"], ["status", "--json"],
                     ["config", "show", "--json"], ["fsck", "--json"], ["branch", "--json"],
                     ["reflog"], ["search", "summary", "--history", "--json"]):
            r = tract_cli(*args)
            outputs.append(r.stdout + r.stderr)
        outputs.append(ok.stdout + ok.stderr)
        summarizer = tract.OpenAICompatible(
            base_url=env["TRACT_LLM_BASE_URL"], model="m", api_key=KEY, retries=0
        )
        outputs.append(repr(summarizer) + summarizer.base_url)
        with tract.Tract.open(store_path) as t:
            run = [t.user("one more " * 30), t.user("and another " * 30)]
            with pytest.raises(tract.SummarizerError) as e:
                t.compress(run, summarizer=summarizer)
            outputs.append(str(e.value) + repr(e.value.__dict__))
            assert "[redacted]" in str(e.value)
            outputs.append(repr([c.summarizer for c in t.log()]))
        stored = store_path.read_bytes()
        for secret in (KEY, PASSWORD):
            assert secret.encode() not in stored
            for out in outputs:
                assert secret not in out, out
    finally:
        llm.close()


def test_redaction_removes_a_secret_for_good_and_keeps_every_id(store_path) -> None:
    secret = "ghp_PLANTEDtoken0123456789"
    with tract.Tract.open(store_path) as t:
        t.user("read the deploy config")
        t.assistant(None, [{"id": "c1", "name": "cat", "arguments": '{"path": "deploy.env"}'}])
        leaked = t.tool_result("c1", "cat", f"GITHUB_TOKEN={secret}\nREGION=eu")
        t.assistant("Configured.")
        hashes = [c.commit_hash for c in t.log()]
        r = t.redact(leaked, "a GitHub token in a tool result")
        assert r["commit"] == leaked.commit_hash and r["reason"].startswith("a GitHub token")
        assert [c.commit_hash for c in t.log()] == hashes
        shown = t.compile().to_openai()[2]
        assert shown["role"] == "tool" and shown["tool_call_id"] == "c1"
        assert secret not in str(t.compile().to_anthropic())
        assert t.search("ghp_", history=True) == []
        report = t.fsck()
        assert report["clean"] and report["redacted"] == [r["blob"]]
        with pytest.raises(tract.InvalidOperationError, match="redacted already"):
            t.redact(leaked, "again")
        with pytest.raises(tract.NotFoundError):
            t.redact("ffffffffff", "x")
        t.compact()  # closes the handle; no freed page keeps the bytes
    assert secret.encode() not in store_path.read_bytes()
    with tract.Tract.open(store_path) as t:
        assert t.fsck()["clean"] and len(t.log()) == 4


def test_a_summary_of_a_secret_is_listed_and_redacted_with_it(store_path) -> None:
    secret = "ghp_PLANTEDtoken0123456789"
    with tract.Tract.open(store_path) as t:
        first = t.user("read the deploy config")
        leaked = t.assistant(f"the token is {secret}")
        t.user("thanks")
        done = t.compress(commits=[first, leaked], content=f"the config holds {secret}")
        summary = done["commits"][0].commit_hash
        r = t.redact(leaked, "a GitHub token")
        assert r["derived"] == [summary] and r["followed"] == []
        assert t.fsck()["derived_from_redacted"] == [summary]
        assert secret in str(t.compile().to_openai())
    with tract.Tract.open(store_path) as t:
        t.user("and a second one")
        other = t.assistant(f"another token {secret}2")
        t.user("ok")
        done = t.compress(commits=[other], content=f"it said {secret}2")
        second = done["commits"][0].commit_hash
        r = t.redact(other, "another token", follow=True)
        assert r["followed"] == [second] and r["derived"] == []
        # The first summary is still listed: it was not followed.
        assert t.fsck()["derived_from_redacted"] == [summary]
        assert f"{secret}2" not in str(t.compile().to_openai())


def test_gc_while_another_process_appends_removes_nothing_it_adds(store_path) -> None:
    import subprocess
    import sys
    import textwrap

    with tract.Tract.open(store_path) as t:
        t.user("root")
        doomed = t.fork("doomed")
        doomed.user("only here")
        doomed.close()
        t.delete_branch("doomed")
    writer = textwrap.dedent(
        f"""
        import tract
        t = tract.Tract.open({str(store_path)!r}, branch="busy")
        for i in range(150):
            c = t.user(f"busy {{i}}")
            print(c.commit_hash, flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True)
    removed = 0
    with tract.Tract.open(store_path) as t:
        while proc.poll() is None:
            removed += t.gc(prune_now=True)["commits"]
        acked = proc.stdout.read().split()
        assert proc.wait() == 0
        removed += t.gc(prune_now=True)["commits"]
        assert removed == 1, "only the deleted branch's commit"
        assert len(acked) == 150
        for h in acked:
            assert t.get_commit(h).content.startswith("busy ")
        assert t.fsck()["clean"]
