"""Transcripts in and out of Python: import_file and export."""

import json
import pathlib

import pytest

import tract

from conftest import REPO

SESSION = REPO / "tests" / "fixtures" / "claude-code-session.jsonl"


def test_a_claude_code_session_imports_once_with_its_tool_results(any_store) -> None:
    with tract.Tract.open(any_store, branch="cc") as t:
        report = t.import_file(SESSION)
        assert report["format"] == "claude-code"
        assert (report["added"], report["already"], report["skipped"], report["off_path"]) == (10, 0, 3, 1)
        assert t.import_file(SESSION)["added"] == 0
        grep = [c for c in t.log() if c.role == "tool" and c.name == "Grep"]
        assert grep[0].content.startswith("config.py:42")
        assert [m["content"] for m in t.compile().messages][-1] == "Fixed: the test expected the old URL."
        hits = t.search("DATABASE_URL", history=True)
        assert len(hits) >= 2


def test_history_exports_import_back_to_identical_ids(tmp_path: pathlib.Path, any_store) -> None:
    with tract.Tract.open(tmp_path / "a.redb", branch="main") as a:
        a.system("be brief")
        a.user("hello")
        a.edit(a.head, "hello there")
        history = a.export("jsonl", history=True)
        (tmp_path / "h.jsonl").write_text(history)
        with tract.Tract.open(any_store, branch="copy") as b:
            report = b.import_file(tmp_path / "h.jsonl")
            assert report["tip"] == a.head
            # Named as `format=` takes it (it was None).
            assert report["format"] == "jsonl"
            assert [c.commit_hash for c in b.log()] == [c.commit_hash for c in a.log()]
        md = a.export("markdown")
        assert "## User\n\nhello there" in md
        body = json.loads(a.export("anthropic"))
        assert body["system"] == "be brief"


def test_a_bad_line_raises_with_its_file_and_line_and_writes_nothing(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "fine"}\n{"role": "user"\n')
    with tract.Tract.open(tmp_path / "s.redb") as t:
        with pytest.raises(tract.InvalidInputError, match="bad.jsonl: line 2: malformed JSON") as e:
            t.import_file(bad)
        assert e.value.line == 2 and e.value.path.endswith("bad.jsonl")
        assert t.head is None
        with pytest.raises(tract.InvalidInputError, match="unknown transcript format"):
            t.import_file(bad, format="yaml")  # type: ignore[arg-type]
        with pytest.raises(tract.InvalidInputError, match="history goes to jsonl or markdown"):
            t.export("openai", history=True)
