"""Gemini CLI sessions, checked against Gemini CLI's own rules: Gemini CLI ships only on npm,
which is not reachable here, so its reader is ported line for line in `gemini_port.py`
(`loadConversationRecord` and `convertSessionToClientHistory`, google-gemini/gemini-cli at
5411f113cafae26161b4969b0237b8e1e024e2c2), and tract's import of each session is compared with
the history that port says a resumed session sends the model.

How each side's shape maps onto the other's:

- A `user` turn is a user message with the same text.
- A `model` turn is an assistant message. Its thought parts (`{"text", "thought": true}`) are
  kept verbatim as parts, its other text parts are its text, and its `functionCall` parts are
  its tool calls (name and arguments).
- The `<id>_response` turn after it is one tool message per `functionResponse` part, named after
  its call, holding the response's `output` (or its `error`).
- What a resumed session leaves out (`info`, `error` and `warning` records, `/` commands, empty
  turns) is not in the view; tract keeps it in history as a record.
"""

import json
import os
import pathlib
import subprocess

import pytest

from gemini_port import resume_view

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))
SESSIONS = sorted((ROOT / "tests" / "fixtures" / "gemini-real").glob("*.json")) + sorted(
    p for p in (ROOT / "tests" / "fixtures" / "gemini-written").glob("*.json*") if "no-metadata" not in p.name
)


def tract(store: pathlib.Path, *args: str) -> str:
    return subprocess.run(
        [str(TRACT_BIN), "--store", str(store), *args], capture_output=True, text=True, check=True
    ).stdout


def texts(parts: list) -> str:
    return "".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    )


def thoughts(parts: list) -> list:
    return [p.get("text") for p in parts if isinstance(p, dict) and p.get("thought")]


def output_of(response) -> str:
    if isinstance(response, dict):
        value = response.get("output", response.get("error", response))
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return json.dumps(response, separators=(",", ":"))


def from_port(history: list) -> list:
    """The messages a resumed session holds, as tract keeps messages."""
    out = []
    for turn in history:
        if turn["role"] == "user" and str(turn.get("id", "")).endswith("_response"):
            for p in turn["parts"]:
                fr = p.get("functionResponse") if isinstance(p, dict) else None
                if fr is not None:
                    out.append(("tool", fr.get("name"), output_of(fr.get("response"))))
        elif turn["role"] == "user":
            out.append(("user", texts(turn["parts"])))
        else:
            calls = [
                (p["functionCall"].get("name"), json.dumps(p["functionCall"].get("args"), sort_keys=True))
                for p in turn["parts"]
                if isinstance(p, dict) and p.get("functionCall")
            ]
            out.append(("assistant", texts(turn["parts"]), thoughts(turn["parts"]), calls))
    return out


def from_tract(lines: list) -> list:
    out = []
    for m in lines:
        # The marked result tract sends for a call that has none (Gemini CLI sends none).
        if m["role"] == "tool" and str(m["content"]).startswith("[tract] No result was recorded"):
            continue
        content = m["content"]
        parts = [{"text": content}] if isinstance(content, str) else content
        if m["role"] == "tool":
            out.append(("tool", m.get("name"), content if isinstance(content, str) else texts(parts)))
        elif m["role"] == "user":
            out.append(("user", texts(parts)))
        else:
            calls = [
                (c["name"], json.dumps(json.loads(c["arguments"]), sort_keys=True)) for c in m.get("tool_calls", [])
            ]
            out.append(("assistant", texts(parts), thoughts(parts), calls))
    return out


@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: p.name)
def test_the_view_is_the_history_a_resumed_session_sends(session: pathlib.Path, tmp_path) -> None:
    expected = resume_view(str(session))
    assert expected["loaded"] is not None and expected.get("error") is None, expected
    store = tmp_path / "store.redb"
    tract(tmp_path / "store.redb", "init")
    report = json.loads(tract(store, "import", "--json", str(session)))[0]
    assert report["format"] == "gemini"
    assert report["branch"].startswith("gemini/") and report["branch"].endswith(expected["loaded"]["sessionId"])
    exported = tract(store, "--branch", report["branch"], "export", "--format", "jsonl")
    view = [json.loads(line) for line in exported.splitlines() if line.strip()]
    assert from_tract(view) == from_port(expected["history"])


def test_a_file_gemini_cli_does_not_load_is_refused_and_nothing_is_written(tmp_path) -> None:
    session = ROOT / "tests" / "fixtures" / "gemini-written" / "jsonl-no-metadata.jsonl"
    assert resume_view(str(session))["loaded"] is None
    store = tmp_path / "store.redb"
    tract(store, "init")
    run = subprocess.run(
        [str(TRACT_BIN), "--store", str(store), "import", "--format", "gemini", str(session)],
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0
    assert "not a Gemini CLI session" in run.stderr and "jsonl-no-metadata.jsonl" in run.stderr
    assert tract(store, "branch").strip() == ""


def test_cut_and_damaged_sessions_read_the_same_way(tmp_path) -> None:
    """A JSON-lines session cut after each of its lines (a session being written), and with a
    line damaged: each read by the port and imported by tract, the same view."""
    source = ROOT / "tests" / "fixtures" / "gemini-written" / "migrated-from-legacy-v0.3x-aim.jsonl"
    lines = source.read_text().splitlines(keepends=True)
    variants = []
    for cut in range(2, len(lines) + 1, 3):
        variants.append("".join(lines[:cut]))
    broken = list(lines)
    broken[4] = broken[4][: len(broken[4]) // 2] + "\n"
    variants.append("".join(broken))
    for k, text in enumerate(variants):
        session = tmp_path / f"v{k}" / "session.jsonl"
        session.parent.mkdir()
        session.write_text(text)
        expected = resume_view(str(session))
        store = tmp_path / f"v{k}" / "store.redb"
        tract(store, "init")
        report = json.loads(tract(store, "import", "--json", str(session)))[0]
        exported = tract(store, "--branch", report["branch"], "export", "--format", "jsonl")
        view = [json.loads(line) for line in exported.splitlines() if line.strip()]
        assert from_tract(view) == from_port(expected["history"]), f"variant {k}"
