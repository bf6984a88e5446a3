"""tract's import of a Claude Code session holds what Claude Code's own reader shows.

The reference is the Claude Agent SDK's transcript reader, ``get_session_messages`` (it reads
``$CLAUDE_CONFIG_DIR/projects/*/<session>.jsonl``). Each transcript is written where the reader
looks for it and imported from that same file (with the session's ``subagents/`` folder beside
it, as Claude Code keeps it) into an in-memory store; then both are flattened to one sequence
of ``(role, content block)`` pairs and compared:

- Reader: for each message, its ``type`` as the role, and the blocks of ``message["content"]``
  (a string is one ``{"type": "text", "text": s}`` block).
- tract: the view's messages as ``compile()`` sends them: a user or assistant message's content
  as blocks (the same rule for strings), then an assistant message's tool calls as
  ``{"type": "tool_use", "id", "name", "input": json.loads(arguments)}``; a tool message as a
  ``user`` block ``{"type": "tool_result", "tool_use_id", "content", "is_error"}``. The
  synthetic error result compile adds for a call with no result (``[tract] No result was
  recorded...``) is dropped: the reader shows that call pending, with no result.

Compared on content, not on how lines are grouped into messages: tract joins the lines of one
API response (``message.id``) into one message and splits a user line's ``tool_result`` blocks
into tool messages; flattening makes both invisible.

Normalizations, each a difference of representation, not of content:

1. A ``tool_use`` block is compared on ``id``, ``name`` and ``input``: tract's tool call holds
   exactly these three (Claude Code's other fields, such as ``caller``, have no place in a
   neutral tool call).
2. A ``tool_result``'s missing ``content`` is ``""`` and its missing ``is_error`` is ``false``:
   a tract tool message always has both, and these are the API's defaults.
3. Results are compared where compile sends them: each ``tool_result`` is moved to directly
   after the ``tool_use`` it answers (the newest open call with its id before it, the pairing
   compile uses), on both sides. The API requires every result right after its call, so
   compile places them there (in call order, after the message that holds the calls); the
   reader leaves them in file or timestamp order. A result that answers no open call (its call
   not shown, or answered already) cannot be sent: it must be absent from compile's messages
   and reported by ``compile().warnings`` ("answers no earlier tool call"), once per such
   result; that is checked, not skipped.
4. A message the reader shows with no content (its ``message`` not an object, or its
   ``content`` missing or neither a string nor a list) contributes no block: what is compared
   is content, and it has none. tract cannot make a message of such a line and keeps it as a
   record instead; that is checked (by its uuid).

6. A content block no provider API takes (see ``left_out``: no string ``type``, a text block
   without text, a tool call without its id or name or in a user's message, a tool result
   without the call it answers or in an assistant's) is left out on the reader's side: tract
   cannot put it in a message, so it leaves it out of the view with a warning naming the line,
   and keeps the whole line verbatim as a record (allowed by the records check).
5. A lone UTF-16 surrogate in a string (JavaScript writes one as ``\\ud83d`` when it cuts an
   emoji in two; Python keeps it) is U+FFFD on the reader's side: tract's strings are UTF-8,
   which cannot hold it, and it reads such an escape as U+FFFD instead of leaving the line out.

7. A call whose id an earlier call in view has is sent by compile under a new id (an API
   takes each id once), its result with it; those compile lists in ``reused_call_ids`` are
   mapped back to the id the session holds, which the reader shows.

8. A value tract scrubbed as it imported (a credential: ``[REDACTED:<rule>:<fingerprint>]`` in
   its text, DESIGN §16) matches whatever non-empty text the reader shows in its place; the rest
   of the block, before and after each marker, compares verbatim.

Normalizations 1 and 2 apply to both sides alike. Nothing else is normalized: text, thinking
blocks with their signatures, images and every other block compare verbatim.

The transcripts (``claude_code_cases.py``): the two fixtures and every real session file in
``tests/fixtures/claude-code-real/``, each as it is and changed in many ways, and a few hundred
small made-up sessions whose lines link at random. Then the transcript fuzz corpus, forced to
Claude Code's format: where tract raises, the reader must show nothing; an input the reader
itself fails on (a list or object where it hashes a value) is not compared.

The records check: every user or assistant line the reader leaves out (off the conversation's
path, or hidden on it: meta, sidechain and team lines) is kept, verbatim, as a
``claude_code.line`` record, and the import report counts them (``off_path``, ``recorded``).
Two kinds of left-out line are kept otherwise, as messages: what came before a compact boundary
(tract follows ``logicalParentUuid`` into history, where the reader stops) and sidechain lines
off the path (a sub-agent's conversation); and a line whose JSON is that of a line tract holds
as a message (a line written twice) is held already.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
from typing import Any, Optional

import pytest

import tract

from conftest import REPO

import claude_code_cases

sdk = pytest.importorskip(
    "claude_agent_sdk",
    reason="claude_agent_sdk is not installed (scripts/test.sh installs it with the wheel's "
    "[claude-agent-sdk] extra): it is the reference these tests compare tract's import with",
)

SESSION_ID = "3f0c2a4e-8b1d-4c5e-9a7f-1d2e3c4b5a69"
SYNTHETIC_RESULT = "[tract] No result was recorded"
ORPHAN_WARNING = "answers no earlier tool call"
LINE_RECORD = "claude_code.line"
CORPUS = REPO / "fuzz" / "corpus" / "transcript_parse"
# The session files the cases are made from, then the made-up sessions.
SOURCES: list[Any] = [*claude_code_cases.sources(REPO), claude_code_cases.SYNTHETIC]
SOURCE_IDS = [s if isinstance(s, str) else s.name for s in SOURCES]


# ----- both sides, flattened -----


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return list(content)
    return []  # normalization 4


def _block(b: Any) -> Any:
    """A block as compared (normalizations 1 and 2), on either side."""
    if isinstance(b, dict) and b.get("type") == "tool_use":
        return {"type": "tool_use", "id": b.get("id"), "name": b.get("name"), "input": b.get("input")}
    if isinstance(b, dict) and b.get("type") == "tool_result":
        b = {"type": "tool_result", **{k: v for k, v in b.items() if k != "type"}}
        b.setdefault("content", "")
        b.setdefault("is_error", False)
    return b


def has_content(m: Any) -> bool:
    """Whether a reader message has content blocks to compare (normalization 4)."""
    return isinstance(m.message, dict) and isinstance(m.message.get("content"), (str, list))


def _utf8(v: Any) -> Any:
    """Normalization 5: a lone UTF-16 surrogate (a JSON escape such as ``\\ud83d`` not part of a
    pair) as U+FFFD, which is how a string that must be UTF-8 holds it."""
    if isinstance(v, str):
        return v.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(v, list):
        return [_utf8(x) for x in v]
    if isinstance(v, dict):
        return {_utf8(k): _utf8(x) for k, x in v.items()}
    return v


def left_out(b: Any, role: str) -> bool:
    """Normalization 6: a block no provider API takes, which tract leaves out of the view (with
    a warning, the line kept verbatim as a record): not an object with a string ``type``; a
    text block without a string ``text``; a ``tool_use`` without a non-empty string ``id`` and
    ``name``, or in a user's message; a ``tool_result`` without a non-empty string
    ``tool_use_id``, with content neither a string nor a list of such blocks, or in an
    assistant's."""
    if not isinstance(b, dict) or not isinstance(b.get("type"), str):
        return True
    kind = b["type"]
    if kind == "text":
        return not isinstance(b.get("text"), str)
    if kind == "tool_use":
        ok = all(isinstance(b.get(k), str) and b.get(k) for k in ("id", "name"))
        return role != "assistant" or not ok
    if kind == "tool_result":
        ok = isinstance(b.get("tool_use_id"), str) and bool(b.get("tool_use_id"))
        content = b.get("content")
        if isinstance(content, list):
            # Its content's blocks are held as parts: each needs what a part needs.
            ok = ok and not any(
                not isinstance(p, dict)
                or not isinstance(p.get("type"), str)
                or (p["type"] == "text" and not isinstance(p.get("text"), str))
                for p in content
            )
        elif content is not None and not isinstance(content, str):
            ok = False
        return role != "user" or not ok
    return False


def reader_flat(messages: list[Any]) -> list[tuple[str, Any]]:
    out = []
    for m in messages:
        if not has_content(m):
            continue
        for b in _blocks(_utf8(m.message["content"])):
            if not left_out(b, m.type):
                out.append((m.type, _block(b)))
    return out


def tract_flat(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for m in messages:
        role = m["role"]
        if role == "tool":
            content = m.get("content", "")
            if m.get("is_error") and isinstance(content, str) and content.startswith(SYNTHETIC_RESULT):
                continue
            result = {
                "type": "tool_result",
                "tool_use_id": m.get("tool_call_id"),
                "content": content,
                "is_error": bool(m.get("is_error", False)),
            }
            out.append(("user", result))
            continue
        for b in _blocks(m.get("content", "")):
            out.append((role, _block(b)))
        for c in m.get("tool_calls") or []:
            call = {"type": "tool_use", "id": c["id"], "name": c["name"], "input": json.loads(c["arguments"])}
            out.append((role, _block(call)))
    return out


def placed(flat: list[tuple[str, Any]]) -> tuple[list[tuple[str, Any]], list[str]]:
    """Normalization 3: each tool_result right after the tool_use it answers (the newest open
    call with its id before it); the ids of results that answer no open call, left out."""
    slots: list[list[tuple[str, Any]]] = []  # each item, followed by its results
    open_calls: dict[str, int] = {}
    orphans: list[str] = []
    for role, b in flat:
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "tool_result":
            call = b.get("tool_use_id")
            at = open_calls.pop(call, None) if isinstance(call, str) else None
            if at is None:
                orphans.append(str(call))
            else:
                slots[at].append((role, b))
            continue
        slots.append([(role, b)])
        if kind == "tool_use" and isinstance(b.get("id"), str):
            open_calls[b["id"]] = len(slots) - 1
    return [item for slot in slots for item in slot], orphans


MARKER = re.compile(r"\[REDACTED:[a-z0-9._-]+:[0-9a-f]{12}\]")


def same(reader: Any, held: Any) -> bool:
    """Equal, or equal but where tract holds a marker (normalization 8): the block's JSON with
    each marker matching a non-empty run of one JSON string's characters."""
    if reader == held:
        return True
    return same_json(
        json.dumps(reader, sort_keys=True, ensure_ascii=False),
        json.dumps(held, sort_keys=True, ensure_ascii=False),
    )


def same_json(reader: str, held: str) -> bool:
    """Normalization 8 on two JSON texts: equal, or equal but where `held` has a marker, which
    matches a non-empty run of one JSON string's characters in `reader`."""
    if reader == held:
        return True
    if not MARKER.search(held):
        return False
    pattern = "".join(
        re.escape(part) if k % 2 == 0 else r'(?:[^"\\]|\\.)+?' for k, part in enumerate(_split(held))
    )
    return re.fullmatch(pattern, reader, re.S) is not None


def _split(text: str) -> list[str]:
    """`text` cut at its markers: the text between them at even places, a marker at odd ones."""
    out: list[str] = []
    at = 0
    for m in MARKER.finditer(text):
        out += [text[at : m.start()], m.group(0)]
        at = m.end()
    return out + [text[at:]]


def first_difference(a: list[Any], b: list[Any]) -> Optional[int]:
    for i, (x, y) in enumerate(zip(a, b)):
        if not same(x, y):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _show(item: Any, limit: int = 600) -> str:
    s = json.dumps(item, ensure_ascii=False, default=str)
    s = s.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate prints escaped
    return s if len(s) <= limit else s[:limit] + f"... ({len(s)} chars)"


# ----- running a transcript through both -----


class Session:
    """The session file both sides read: ``$CLAUDE_CONFIG_DIR/projects/p/<id>.jsonl``."""

    def __init__(self, root: pathlib.Path) -> None:
        self.dir = root / "projects" / "p"
        self.dir.mkdir(parents=True)
        self.path = self.dir / f"{SESSION_ID}.jsonl"
        self.agents = self.dir / SESSION_ID / "subagents"
        self._agents_from: Optional[pathlib.Path] = None

    def write(self, text: str, agents: Optional[pathlib.Path] = None) -> None:
        if agents != self._agents_from:
            if self.agents.parent.exists():
                shutil.rmtree(self.agents.parent)
            if agents is not None:
                shutil.copytree(agents, self.agents)
            self._agents_from = agents
        with open(self.path, "w", encoding="utf-8", newline="") as f:
            f.write(text)

    def reader(self) -> list[Any]:
        return sdk.get_session_messages(SESSION_ID)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("claude-config")
    before = os.environ.get("CLAUDE_CONFIG_DIR")
    os.environ["CLAUDE_CONFIG_DIR"] = str(root)
    try:
        yield Session(root)
    finally:
        if before is None:
            del os.environ["CLAUDE_CONFIG_DIR"]
        else:
            os.environ["CLAUDE_CONFIG_DIR"] = before


class Imported:
    """What tract made of the session file: the view's messages, compile's warnings, the
    records of left-out lines and the import report."""

    def __init__(self, path: pathlib.Path, fmt: str = "auto") -> None:
        with tract.Tract.open(None, branch="cc") as t:
            self.report = t.import_file(path, format=fmt)
            compiled = t.compile()
            self.messages = held_ids(compiled.messages, compiled.reused_call_ids)
            self.warnings = compiled.warnings
            self.records = [r.data for r in t.records(LINE_RECORD)]


def held_ids(messages: list[dict[str, Any]], reused: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with the call ids the session holds: compile sends a call whose id an
    earlier call has under a new one (an API takes each id once), its result with it, and the
    reader shows the ids the file holds. Only the ids compile lists as reused are mapped back."""
    back = {r["sent_as"]: r["id"] for r in reused}
    if not back:
        return messages
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [{**c, "id": back.get(c["id"], c["id"])} for c in m["tool_calls"]]
        if m.get("tool_call_id") in back:
            m["tool_call_id"] = back[m["tool_call_id"]]
        out.append(m)
    return out


def compare(reader_messages: list[Any], imported: Imported) -> Optional[str]:
    """None when tract's view holds what the reader shows, else what differs first."""
    r, r_orphans = placed(reader_flat(reader_messages))
    t, t_orphans = placed(tract_flat(imported.messages))
    if t_orphans:
        return f"compile sent results that answer no call: {t_orphans}"
    i = first_difference(r, t)
    if i is not None:
        lines = [f"first difference at flattened index {i} (reader {len(r)} blocks, tract {len(t)}):"]
        lines.append(f"  reader: {_show(r[i]) if i < len(r) else '(ends)'}")
        lines.append(f"  tract:  {_show(t[i]) if i < len(t) else '(ends)'}")
        if i > 0:
            lines.append(f"  (both before it: {_show(r[i - 1], 200)})")
        return "\n".join(lines)
    recorded = {json.loads(d).get("uuid") for d in imported.records}
    lost = [m.uuid for m in reader_messages if not has_content(m) and m.uuid not in recorded]
    if lost:
        return f"lines the reader shows without content are not kept as records: {lost[:5]}"
    reported = sum(ORPHAN_WARNING in w for w in imported.warnings)
    if reported != len(r_orphans):
        return (
            f"the reader shows {len(r_orphans)} results that answer no open call ({r_orphans}); "
            f"compile reports {reported}: {imported.warnings}"
        )
    return None


def with_warnings(problem: Optional[str], imported: Imported) -> Optional[str]:
    """A difference, with what the import said about the lines it read (when it said anything)."""
    warnings = imported.report.get("warnings") or []
    if problem is None or not warnings:
        return problem
    return f"{problem}\n  the import's warnings: {_show(warnings, 400)}"


# ----- (c): the lines the reader leaves out -----


def _reader_internals() -> Any:
    """The reader's own chain functions (private to the SDK; only the records check needs them)."""
    from claude_agent_sdk._internal import sessions

    return sessions


def expected_records(text: str) -> tuple[list[dict[str, Any]], int]:
    """The user and assistant lines tract must keep as records, and how many of them are off the
    conversation's path (the report's ``off_path``), from the reader's own chain.

    Kept as records: the hidden lines on the reader's chain (meta, sidechain or team lines), and
    the lines off it, except sidechain lines (a sub-agent's conversation) and what came before
    a compact boundary with its summary: tract follows the boundary's ``logicalParentUuid``
    (the reader stops there) and keeps that part as the history the summary compresses, as
    messages, not records. Before a boundary without a summary the lines are records (and off
    the path). A copy of a line tract holds as a message, written twice, is kept too."""
    sdk_sessions = _reader_internals()
    # As the reader reads the file: Python's universal newlines.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    entries = sdk_sessions._parse_transcript_entries(text)
    if not entries:
        return [], 0
    chain = sdk_sessions._build_conversation_chain(entries)
    by_uuid = {e["uuid"]: e for e in entries}
    used = {id(e) for e in chain}
    parts = [chain]
    # The parts before compact boundaries, as tract walks them (crate::claude_code::before_boundary).
    while parts[0] and parts[0][0].get("type") == "system" and parts[0][0].get("subtype") == "compact_boundary":
        start = by_uuid.get(parts[0][0].get("logicalParentUuid"))  # type: ignore[arg-type]
        if start is None:
            break
        walk: list[dict[str, Any]] = []
        seen: set[str] = set()
        cur: Optional[dict[str, Any]] = start
        while cur is not None and cur["uuid"] not in seen:
            seen.add(cur["uuid"])
            walk.append(cur)
            p = cur.get("parentUuid")
            cur = by_uuid.get(p) if isinstance(p, str) and p else None
        walk.reverse()
        before = [
            e for e in sdk_sessions._recover_orphaned_parallel_tool_results(by_uuid, walk, seen) if id(e) not in used
        ]
        if not before:
            break
        used.update(id(e) for e in before)
        parts.insert(0, before)
    # A boundary compresses what came before it only with its summary (the first line the reader
    # shows after it, a user's without a tool result); before the last one without, the lines
    # are not in the view (the reader shows none of them): records, counted as off the path.
    def summarized(part: list[dict[str, Any]]) -> bool:
        shown = next((e for e in part[1:] if sdk_sessions._is_visible_message(e)), None)
        if shown is None or shown.get("type") != "user":
            return False
        content = shown.get("message", {}).get("content") if isinstance(shown.get("message"), dict) else None
        if not isinstance(content, (str, list)):
            return False
        return not (
            isinstance(content, list)
            and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        )

    first_shown = next((k for k in range(len(parts) - 1, 0, -1) if not summarized(parts[k])), 0)
    records = []
    hidden_before = 0
    for k, part in enumerate(parts):
        for j, e in enumerate(part):
            if e.get("type") not in ("user", "assistant"):
                continue
            if k < first_shown:
                records.append(e)
                hidden_before += 1
            elif not sdk_sessions._is_visible_message(e):
                records.append(e)
    off_path = [
        e for e in entries if id(e) not in used and e.get("type") in ("user", "assistant") and not e.get("isSidechain")
    ]
    return records + off_path, len(off_path) + hidden_before


def _canonical(v: Any) -> str:
    return json.dumps(v, sort_keys=True, ensure_ascii=False)


def check_records(text: str, reader_messages: list[Any], imported: Imported) -> Optional[str]:
    expected, off_path = expected_records(text)
    got = [_canonical(json.loads(d)) for d in imported.records]
    missing = []
    for e in expected:
        c = _canonical(_utf8(e))
        # A line kept as a record is scrubbed as a message is (normalization 8).
        match = next((g for g in got if same_json(c, g)), None)
        if match is not None:
            got.remove(match)
        else:
            missing.append(e)
    # A line the reader shows that tract could not make a message of is kept as a record too
    # (the view comparison reports it): allowed here.
    shown = {_canonical(_utf8(m.message)) for m in reader_messages}

    def explained(line: Any) -> bool:
        message = line.get("message") if isinstance(line, dict) else None
        if _canonical(message) in shown:
            return True
        content = message.get("content") if isinstance(message, dict) else None
        role = line.get("type") if isinstance(line, dict) else ""
        return isinstance(content, list) and any(left_out(b, role) for b in content)

    extra = [g for g in got if not explained(json.loads(g))]
    if missing or extra:
        return (
            f"records of left-out lines: {len(missing)} missing, {len(extra)} unexpected\n"
            f"  missing: {_show(missing[:2])}\n  unexpected: {_show(extra[:2])}"
        )
    if imported.report.get("off_path") != off_path:
        got_off = imported.report.get("off_path")
        return f"import report off_path {got_off}, expected {off_path} (lines off the reader's path)"
    if "recorded" in imported.report and imported.report["recorded"] != len(imported.records):
        return f"import report recorded {imported.report['recorded']}, records {len(imported.records)}"
    return None


# ----- (a) and (c): every case of every source -----


def run_source(session: Session, source: Any) -> list[tuple[claude_code_cases.Case, Optional[str], Optional[str]]]:
    """Each case of `source` through both sides: the case, the view's difference and the
    records' difference (None when they agree)."""
    if source == claude_code_cases.SYNTHETIC:
        agents, cases = None, claude_code_cases.synthetic_cases()
    else:
        agents, cases = claude_code_cases.sub_agents(source), claude_code_cases.cases(source)
    out = []
    for case in cases:
        session.write(case.text, agents)
        messages = session.reader()
        try:
            imported = Imported(session.path)
        except tract.TractError as e:
            problem = (
                None
                if not messages
                else f"tract raised {type(e).__name__}: {e}; the reader shows {len(messages)} messages"
            )
            out.append((case, problem, None))
            continue
        out.append(
            (case, with_warnings(compare(messages, imported), imported), check_records(case.text, messages, imported))
        )
    return out


def _report(failures: list[tuple[claude_code_cases.Case, str]], total: int) -> str:
    head = f"{len(failures)} of {total} cases differ:"
    shown = [f"--- {c.name}\n{p}" for c, p in failures[:8]]
    more = (
        [f"... and {len(failures) - 8} more: " + "; ".join(c.mutation for c, _ in failures[8:40])]
        if len(failures) > 8
        else []
    )
    return "\n".join([head, *shown, *more])


@pytest.mark.parametrize("source", SOURCES, ids=SOURCE_IDS)
def test_the_view_holds_what_the_reader_shows_and_left_out_lines_are_kept_as_records(
    session: Session, source: Any
) -> None:
    # One test for both checks: each case goes through both sides once, and the two checks'
    # failures are reported apart.
    results = run_source(session, source)
    views = [(c, p) for c, p, _ in results if p is not None]
    records = [(c, p) for c, _, p in results if p is not None]
    reports = []
    if views:
        reports.append("the view: " + _report(views, len(results)))
    if records:
        reports.append("the records of left-out lines: " + _report(records, len(results)))
    if reports:
        pytest.fail("\n\n".join(reports), pytrace=False)


# ----- (b): the fuzz corpus -----


def test_the_fuzz_corpus_reads_as_the_reader_reads_it(session: Session) -> None:
    files = sorted(CORPUS.iterdir()) if CORPUS.is_dir() else []
    if not files:
        pytest.skip(f"no fuzz corpus at {CORPUS}")
    failures = []
    unreadable = 0
    for f in files:
        text = f.read_bytes().decode("utf-8", errors="ignore")
        case = claude_code_cases.Case(f"fuzz/corpus/transcript_parse/{f.name}", "as it is", text)
        session.write(text)
        try:
            messages = session.reader()
        except TypeError as e:
            # The reader itself fails on a JSON value it hashes (a list or object as a line's
            # `type` or `parentUuid`): there is nothing to compare with.
            assert "unhashable" in str(e), e
            unreadable += 1
            continue
        try:
            imported = Imported(session.path, fmt="claude-code")
        except tract.TractError as e:
            if messages:
                failures.append(
                    (case, f"tract raised {type(e).__name__}: {e}; the reader shows {len(messages)} messages")
                )
            continue
        problem = with_warnings(compare(messages, imported), imported)
        if problem is not None:
            failures.append((case, problem))
    if failures:
        pytest.fail(_report(failures, len(files) - unreadable), pytrace=False)
