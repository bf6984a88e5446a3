"""Claude Code session files made from real ones, for comparing tract's import with the Claude
Agent SDK's transcript reader (``test_claude_code_reader.py``).

``cases(path)`` takes one session file and returns it as it is, then changed in the ways a
session file is found changed in practice or by accident: cut short at every line (or in the
middle of a line, as a file being written is), a line missing, a parent that is not in the
file, the second part of a resumed session alone, compact boundaries (well formed, and with
the summary hidden or missing, the logical parent absent, the boundary linked), sidechain, meta
and team lines, repeated uuids, lines out of order, lines that are not JSON; what puts a
parallel response back together changed (times, ``message.id``, call ids, result ids,
``sourceToolAssistantUUID``, ``agentId``); values of other JSON types where the reader wants a
string or a truth value; and the file's bytes (CRLF and CR line ends, a byte-order mark, a lone
surrogate escape, a leading control character Python strips as white space).

``synthetic_cases()`` adds small made-up sessions whose lines link at random.

Everything is deterministic: samples are drawn with ``random.Random`` seeded from the file's
name and the mutation's, so a failing case has the same name and text on every run. Each kind
of change is capped per file (every line of a short file; fewer of a large one; every prefix
up to 200 lines), which keeps the whole comparison well within a minute.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import random
import zlib
from typing import Any, Callable, Iterable, Optional

# The line types that carry `uuid` and `parentUuid` links (the reader's _TRANSCRIPT_ENTRY_TYPES).
ENTRY_TYPES = ("user", "assistant", "progress", "system", "attachment")

# Every prefix up to this many lines, then a sample of the rest.
ALL_PREFIXES_UP_TO = 200
PREFIX_SAMPLE_AFTER = 60
# Positions tried per kind of change (every one when the file has fewer), for the kinds that
# follow the file's own shape (a line cut, removed, swapped) and for the others. A large file
# gets fewer: each kind reads at most about KIND_BYTES of transcript.
PER_KIND_WIDE = 32
PER_KIND = 16
KIND_BYTES = 5_000_000


@dataclasses.dataclass(frozen=True)
class Case:
    """One transcript to compare: what it was made from, how, and its text."""

    source: str
    mutation: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.source} [{self.mutation}]"


class Lines:
    """A session file's lines, raw, with the JSON of each that parses as an object."""

    def __init__(self, text: str) -> None:
        self.trailing_newline = text.endswith("\n")
        raw = text.split("\n")
        if self.trailing_newline:
            raw.pop()
        self.raw: list[str] = raw
        self.json: list[Optional[dict[str, Any]]] = []
        for line in raw:
            try:
                v = json.loads(line)
            except ValueError:
                v = None
            self.json.append(v if isinstance(v, dict) else None)

    def __len__(self) -> int:
        return len(self.raw)

    def uuid(self, i: int) -> Optional[str]:
        v = self.json[i]
        if v is None or v.get("type") not in ENTRY_TYPES:
            return None
        u = v.get("uuid")
        return u if isinstance(u, str) else None

    def kind(self, i: int) -> Optional[str]:
        v = self.json[i]
        return v.get("type") if v is not None else None

    def is_message(self, i: int) -> bool:
        return self.kind(i) in ("user", "assistant") and self.uuid(i) is not None


def _dump(v: dict[str, Any]) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _text(lines: Iterable[str], newline: bool = True) -> str:
    body = "\n".join(lines)
    return body + "\n" if newline and body else body


def _rng(source: str, mutation: str) -> random.Random:
    return random.Random(zlib.crc32(f"{source}\0{mutation}".encode()))


def _sample(source: str, kind: str, candidates: list[Any], limit: int) -> list[Any]:
    """`candidates` when there are at most `limit`, else a seeded sample kept in order."""
    if len(candidates) <= limit:
        return list(candidates)
    picked = _rng(source, kind).sample(range(len(candidates)), limit)
    return [candidates[k] for k in sorted(picked)]


def _replace(ls: Lines, i: int, change: Callable[[dict[str, Any]], None]) -> list[str]:
    """The raw lines with line `i` re-serialized after `change`."""
    v = json.loads(ls.raw[i])
    change(v)
    out = list(ls.raw)
    out[i] = _dump(v)
    return out


def _fake_uuid(tag: str, k: int) -> str:
    h = zlib.crc32(f"{tag}:{k}".encode())
    return f"{h:08x}-0000-4000-8000-{k:012x}"


def _neighbour_field(ls: Lines, i: int, key: str) -> Any:
    """`key` of the nearest line at or before `i` that has it (else after)."""
    order = list(range(min(i, len(ls) - 1), -1, -1)) + list(range(i + 1, len(ls)))
    for j in order:
        v = ls.json[j]
        if v is not None and key in v:
            return v[key]
    return None


def _compact_lines(ls: Lines, at: int, tag: str) -> tuple[list[str], list[str], str]:
    """A compact boundary and its summary line for insertion before line `at`: (boundary and
    summary lines, the raw lines after `at` reparented onto the summary, summary uuid)."""
    prev = next((ls.uuid(j) for j in range(at - 1, -1, -1) if ls.uuid(j)), None)
    before = {ls.uuid(j) for j in range(at) if ls.uuid(j)}
    boundary_uuid = _fake_uuid(f"{tag}-boundary", at)
    summary_uuid = _fake_uuid(f"{tag}-summary", at)
    common = {
        "isSidechain": False,
        "userType": "external",
        "sessionId": _neighbour_field(ls, at, "sessionId") or "s",
        "timestamp": _neighbour_field(ls, at, "timestamp") or "2026-01-01T00:00:00.000Z",
    }
    cwd = _neighbour_field(ls, at, "cwd")
    if cwd is not None:
        common["cwd"] = cwd
    boundary = {
        "parentUuid": None,
        "logicalParentUuid": prev,
        **common,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "level": "info",
        "uuid": boundary_uuid,
        "compactMetadata": {"trigger": "auto", "preTokens": 1234},
    }
    summary = {
        "parentUuid": boundary_uuid,
        **common,
        "type": "user",
        "message": {
            "role": "user",
            "content": f"This session is being continued from a previous conversation. Summary ({tag} at line {at + 1}).",
        },
        "isCompactSummary": True,
        "isVisibleInTranscriptOnly": True,
        "uuid": summary_uuid,
    }
    rest = []
    for j in range(at, len(ls)):
        v = ls.json[j]
        if v is not None and isinstance(v.get("parentUuid"), str) and v["parentUuid"] in before:
            v = dict(v)
            v["parentUuid"] = summary_uuid
            rest.append(_dump(v))
        else:
            rest.append(ls.raw[j])
    return [_dump(boundary), _dump(summary)], rest, summary_uuid


NOT_JSON = [
    "{not json",
    '{"type": "user", "uuid": "cut-off", "message": {"role": "user", "content": "hal',
    "[1, 2, 3]",
    '"a string"',
    "null",
    "\t  ",
    "garbage \u00e9\u6f22 \x7f",
]


def cases(path: pathlib.Path, source: Optional[str] = None) -> list[Case]:
    """The file as it is, then every change below (bounded per kind; see the module doc)."""
    source = source or path.name
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    ls = Lines(text)
    n = len(ls)
    out: list[Case] = [Case(source, "whole file", text)]
    # Fewer of each kind for a large file (the prefixes up to ALL_PREFIXES_UP_TO stay whole).
    scale = min(1.0, KIND_BYTES / max(len(text), 1) / PER_KIND_WIDE)
    wide = max(2, round(PER_KIND_WIDE * scale))
    narrow = max(1, round(PER_KIND * scale))

    def add(mutation: str, lines: list[str], newline: bool = True) -> None:
        out.append(Case(source, mutation, _text(lines, newline)))

    messages = [i for i in range(n) if ls.is_message(i)]
    entries = [i for i in range(n) if ls.uuid(i)]
    with_parent = [i for i in entries if isinstance(ls.json[i].get("parentUuid"), str)]

    # Every prefix (cut after each line), then a sample past ALL_PREFIXES_UP_TO.
    cuts = list(range(1, min(n, ALL_PREFIXES_UP_TO) + 1))
    if n > ALL_PREFIXES_UP_TO:
        later = list(range(ALL_PREFIXES_UP_TO + 1, n + 1))
        cuts += _sample(source, "prefix", later, max(wide, min(PREFIX_SAMPLE_AFTER, 10 * narrow)))
    for k in cuts:
        if k < n:
            add(f"prefix: lines 1-{k}", ls.raw[:k])

    # A file being written: its last line cut in the middle.
    for k in _sample(source, "truncated", list(range(n)), wide):
        line = ls.raw[k]
        if len(line) < 2:
            continue
        cut = _rng(source, f"truncated{k}").randrange(1, len(line))
        add(f"truncated: line {k + 1} cut at character {cut}, after {k} whole lines", ls.raw[:k] + [line[:cut]], False)

    # One line missing: every line of a small file; of a large one, a sample, and as many again
    # of the lines where the file's shape turns.
    turns = _sample(source, "turns", sorted(_turning_points(ls)), 2 * wide)
    for i in sorted(set(_sample(source, "removed", list(range(n)), wide)) | set(turns)):
        add(f"removed: line {i + 1}", ls.raw[:i] + ls.raw[i + 1 :])

    # Credentials in what was said: tract scrubs them as it imports (normalization 8 of the
    # reader test), so the view holds a marker where the reader shows the value.
    for k, i in enumerate(_sample(source, "secrets", messages, narrow)):
        extra = f" export GITHUB_TOKEN={PLANTED_TOKENS[k % len(PLANTED_TOKENS)]} and {PLANTED_DSN}"

        def plant(v: dict[str, Any], extra: str = extra) -> None:
            _mark_text(v, extra)

        changed = _replace(ls, i, plant)
        if changed != ls.raw:
            add(f"secrets: planted in line {i + 1}", changed)

    # A parent that is not in the file.
    for i in _sample(source, "dangling", with_parent, narrow):
        gone = _fake_uuid("gone", i)

        def point_away(v: dict[str, Any], gone: str = gone) -> None:
            v["parentUuid"] = gone

        add(f"dangling parent: line {i + 1} parentUuid -> {gone}", _replace(ls, i, point_away))

    # A session resumed into a second file: the second part alone, whose first parent is in
    # the first file.
    resumable = [i for i in with_parent if i > 0]
    for i in _sample(source, "resumed", resumable, narrow):
        add(f"resumed: lines {i + 1}-{n} alone", ls.raw[i:])

    # Compact boundaries: a boundary and its summary before a line, the lines after it
    # reparented onto the summary; then two of them.
    points = [i for i in entries if i > 0]
    for i in _sample(source, "compact", points, narrow):
        head, rest, _ = _compact_lines(ls, i, "compact")
        add(f"compact boundary before line {i + 1}", ls.raw[:i] + head + rest)
    for i in _sample(source, "compact-resumed", points, max(2, narrow // 3)):
        head, rest, _ = _compact_lines(ls, i, "compact")
        add(f"compact boundary before line {i + 1}, the file from it alone", head + rest)
    pairs = [(a, b) for a, b in zip(points, points[len(points) // 2 :]) if a < b]
    for a, b in _sample(source, "compact-twice", pairs, max(2, narrow // 3)):
        head_a, rest_a, _ = _compact_lines(ls, a, "first")
        first = Lines(_text(ls.raw[:a] + head_a + rest_a))
        at = b + len(head_a)
        head_b, rest_b, _ = _compact_lines(first, at, "second")
        add(f"compact boundaries before lines {a + 1} and {b + 1}", first.raw[:at] + head_b + rest_b)

    # Flags the reader hides a line for.
    def flag(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
        def change(v: dict[str, Any]) -> None:
            v[key] = value

        return change

    for i in _sample(source, "sidechain", messages, narrow):
        add(f"sidechain: line {i + 1}", _replace(ls, i, flag("isSidechain", True)))
    runs = [(i, min(i + 4, n)) for i in messages]
    for a, b in _sample(source, "sidechain-run", runs, max(2, narrow // 3)):
        lines = list(ls.raw)
        for j in range(a, b):
            if ls.uuid(j):
                lines[j] = _replace(ls, j, flag("isSidechain", True))[j]
        add(f"sidechain: lines {a + 1}-{b}", lines)
    for i in _sample(source, "meta", messages, narrow):
        add(f"isMeta: line {i + 1}", _replace(ls, i, flag("isMeta", True)))
    for i in _sample(source, "team", messages, max(2, narrow // 3)):
        add(f"teamName: line {i + 1}", _replace(ls, i, flag("teamName", "blue")))

    # Repeated uuids: a line again later (as it is), and a uuid reused with other content.
    for i in _sample(source, "duplicated", entries, narrow):
        j = _rng(source, f"duplicated{i}").randrange(i + 1, n + 1)
        add(f"duplicated: line {i + 1} again after line {j}", ls.raw[:j] + [ls.raw[i]] + ls.raw[j:])
    for i in _sample(source, "reused", messages, narrow):
        j = _rng(source, f"reused{i}").randrange(i + 1, n + 1)
        v = json.loads(ls.raw[i])
        role = v.get("type")
        v["message"] = {"role": role, "content": [{"type": "text", "text": f"other content for line {i + 1}"}]}
        if role == "assistant":
            v["message"]["id"] = f"msg_reused_{i}"
        add(f"uuid reused: line {i + 1}'s uuid on new content after line {j}", ls.raw[:j] + [_dump(v)] + ls.raw[j:])
    for i in _sample(source, "uuid-taken", entries[:-1], max(2, narrow // 2)):
        j = _rng(source, f"uuid-taken{i}").choice([e for e in entries if e > i])
        uuid = ls.uuid(i)

        def take(v: dict[str, Any], uuid: str = uuid) -> None:
            v["uuid"] = uuid

        add(f"uuid reused: line {j + 1} takes line {i + 1}'s uuid", _replace(ls, j, take))

    # Lines out of order.
    for i in _sample(source, "swapped", list(range(n - 1)), wide):
        lines = list(ls.raw)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
        add(f"swapped: lines {i + 1} and {i + 2}", lines)
    for k in range(min(max(2, narrow // 2), max(n - 2, 0))):
        r = _rng(source, f"shuffled{k}")
        width = r.randint(3, min(12, n))
        start = r.randrange(0, n - width + 1)
        window = ls.raw[start : start + width]
        r.shuffle(window)
        add(
            f"shuffled: lines {start + 1}-{start + width} (seed {k})", ls.raw[:start] + window + ls.raw[start + width :]
        )

    # A line that is not JSON (or JSON that is not an object).
    for k, i in enumerate(_sample(source, "not-json", list(range(n + 1)), narrow)):
        bad = NOT_JSON[k % len(NOT_JSON)]
        add(f"not JSON: {bad!r} before line {i + 1}", ls.raw[:i] + [bad] + ls.raw[i:])

    # What puts a parallel response back together: times, response ids, call ids, the result's
    # source line, the writer.
    assistants = [i for i in messages if ls.kind(i) == "assistant"]
    results = [i for i in messages if ls.kind(i) == "user" and _block_ids(ls.json[i], "tool_result", "tool_use_id")]
    calls = [(i, c) for i in assistants for c in _block_ids(ls.json[i], "tool_use", "id")]
    for k, i in enumerate(_sample(source, "timestamp", messages, narrow)):
        value = [None, "2000-01-01T00:00:00.000Z", "2099-01-01T00:00:00.000Z", 17][k % 4]

        def stamp(v: dict[str, Any], value: Any = value) -> None:
            if value is None:
                v.pop("timestamp", None)
            else:
                v["timestamp"] = value

        add(f"timestamp: line {i + 1} -> {value!r}", _replace(ls, i, stamp))
    response_ids = [_response_id(ls.json[i]) for i in assistants]
    for k, i in enumerate(_sample(source, "response-id", assistants, narrow)):
        others = sorted({r for r in response_ids if r and r != _response_id(ls.json[i])})
        value = None if k % 2 == 0 or not others else _rng(source, f"response{i}").choice(others)

        def respond(v: dict[str, Any], value: Any = value) -> None:
            if isinstance(v.get("message"), dict):
                if value is None:
                    v["message"].pop("id", None)
                else:
                    v["message"]["id"] = value

        add(f"response id: line {i + 1} message.id -> {value!r}", _replace(ls, i, respond))
    for i, c in _sample(source, "call-id", calls, max(2, narrow // 2)):
        others = sorted({d for j, d in calls if _response_id(ls.json[j]) != _response_id(ls.json[i])})
        if not others:
            continue
        taken = _rng(source, f"call{i}{c}").choice(others)

        def recall(v: dict[str, Any], c: str = c, taken: str = taken) -> None:
            for b in v["message"]["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") == c:
                    b["id"] = taken

        add(f"call id: line {i + 1} call {c} -> {taken} (another response's)", _replace(ls, i, recall))
    call_ids = sorted({c for _, c in calls})
    for i in _sample(source, "result-id", results, max(2, narrow // 2)):
        taken = _rng(source, f"result{i}").choice(call_ids) if call_ids else "toolu_none"

        def answer(v: dict[str, Any], taken: str = taken) -> None:
            for b in v["message"]["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    b["tool_use_id"] = taken
                    break

        add(f"result id: line {i + 1} answers {taken}", _replace(ls, i, answer))
    assistant_uuids = [ls.uuid(i) for i in assistants]
    for i in _sample(source, "source", results, max(2, narrow // 2)):
        value = _rng(source, f"source{i}").choice(assistant_uuids + [None])

        def source_line(v: dict[str, Any], value: Any = value) -> None:
            if value is None:
                v.pop("sourceToolAssistantUUID", None)
            else:
                v["sourceToolAssistantUUID"] = value

        add(f"sourceToolAssistantUUID: line {i + 1} -> {value!r}", _replace(ls, i, source_line))
    for i in _sample(source, "agent", messages, max(2, narrow // 3)):
        add(f"agentId: line {i + 1}", _replace(ls, i, flag("agentId", "a0b1c2")))

    # Values of other JSON types where the reader takes a string or a truth value.
    odd = [
        ("parentUuid", ""),
        ("parentUuid", 0),
        ("parentUuid", True),
        ("isSidechain", "false"),
        ("isSidechain", 0),
        ("isMeta", ""),
        ("isMeta", "no"),
        ("isMeta", 1),
    ]
    for k, i in enumerate(_sample(source, "odd", with_parent, narrow)):
        key, value = odd[k % len(odd)]
        add(f"{key}: line {i + 1} -> {value!r}", _replace(ls, i, flag(key, value)))

    # Compact boundaries Claude Code did not quite write: the summary hidden or missing, the
    # logical parent not in the file, the boundary linked to its parent.
    for k, i in enumerate(_sample(source, "compact-odd", points, narrow)):
        head, rest, summary_uuid = _compact_lines(ls, i, "compact")
        boundary, summary = json.loads(head[0]), json.loads(head[1])
        variant = k % 4
        if variant == 0:
            summary["isMeta"] = True
            what = "its summary isMeta"
        elif variant == 1:
            rest = [r.replace(f'"parentUuid":"{summary_uuid}"', f'"parentUuid":"{boundary["uuid"]}"') for r in rest]
            summary = None
            what = "no summary"
        elif variant == 2:
            boundary["logicalParentUuid"] = _fake_uuid("nowhere", i)
            what = "its logical parent not in the file"
        else:
            boundary["parentUuid"] = boundary["logicalParentUuid"]
            what = "parentUuid set"
        inserted = [_dump(boundary)] + ([_dump(summary)] if summary else [])
        add(f"compact boundary before line {i + 1}, {what}", ls.raw[:i] + inserted + rest)

    # The file's bytes: line ends, a byte-order mark, characters JSON escapes but UTF-8 cannot
    # hold, control characters Python counts as white space.
    add("line ends: CRLF", [r + "\r" for r in ls.raw])
    if n > 1:
        add("line ends: CR between lines 1 and 2", [ls.raw[0] + "\r" + ls.raw[1]] + ls.raw[2:])
    add("a byte-order mark first", ["\ufeff" + ls.raw[0]] + ls.raw[1:])
    texts = [i for i in messages if _mark_text(json.loads(ls.raw[i]), "")]
    for i in _sample(source, "surrogate", texts, 2):
        v = json.loads(ls.raw[i])
        _mark_text(v, "\ud83d")
        add(
            f"a lone surrogate (\\ud83d) in line {i + 1}'s text",
            ls.raw[:i] + [json.dumps(v, separators=(",", ":"))] + ls.raw[i + 1 :],
        )
    for i in _sample(source, "x1f", messages, 2):
        add(f"line {i + 1} after a \\x1f", ls.raw[:i] + ["\x1f" + ls.raw[i]] + ls.raw[i + 1 :])

    return out


def _turning_points(ls: Lines) -> set[int]:
    """The lines where a session's shape turns: a parent of two or more lines (a branch, a
    parallel response's fan-out), the first and last line of a response written over several
    lines, compact boundaries and the line after each, meta and sidechain lines, and results
    that name a sub-agent."""
    children: dict[str, int] = {}
    for v in ls.json:
        p = v.get("parentUuid") if v else None
        if isinstance(p, str):
            children[p] = children.get(p, 0) + 1
    spans: dict[str, list[int]] = {}
    out = set()
    for i, v in enumerate(ls.json):
        if v is None or not ls.uuid(i):
            continue
        if children.get(ls.uuid(i) or "", 0) > 1 or v.get("isMeta") or v.get("isSidechain"):
            out.add(i)
        if v.get("subtype") == "compact_boundary":
            out.update({i, i + 1})
        result = v.get("toolUseResult")
        if isinstance(result, dict) and result.get("agentId"):
            out.add(i)
        if ls.kind(i) == "assistant" and _response_id(v):
            spans.setdefault(_response_id(v) or "", []).append(i)
    for lines in spans.values():
        if len(lines) > 1:
            out.update({lines[0], lines[-1]})
    return {i for i in out if i < len(ls)}


def _block_ids(v: Optional[dict[str, Any]], block_type: str, field: str) -> list[str]:
    m = v.get("message") if v else None
    content = m.get("content") if isinstance(m, dict) else None
    if not isinstance(content, list):
        return []
    return [
        b[field]
        for b in content
        if isinstance(b, dict) and b.get("type") == block_type and isinstance(b.get(field), str)
    ]


def _response_id(v: Optional[dict[str, Any]]) -> Optional[str]:
    m = v.get("message") if v else None
    r = m.get("id") if isinstance(m, dict) else None
    return r if isinstance(r, str) and r else None


def _mark_text(v: dict[str, Any], extra: str) -> bool:
    """Appends `extra` to the first text of the line's message; whether it has one."""
    m = v.get("message")
    content = m.get("content") if isinstance(m, dict) else None
    if isinstance(content, str):
        m["content"] = content + extra
        return True
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
            b["text"] += extra
            return True
    return False


# Fake credentials of real shapes, planted by the "secrets" changes.
PLANTED_TOKENS = ["ghp_00000042aB3dE5gH7jK9mN1pQ3sT5vW7yZ1b", "ghp_00000043aB3dE5gH7jK9mN1pQ3sT5vW7yZ1b"]
PLANTED_DSN = "postgresql://app:Tr0ub4dor-fake-9c1@db.internal:5432/app"

SYNTHETIC = "synthetic graphs"


def synthetic_cases(count: int = 300, seed: int = 20260101) -> list[Case]:
    """Small made-up sessions whose lines link at random, for what real files rarely hold
    together: parallel responses whose lines and results fan out and cross, a call id two
    responses claim, results whose `sourceToolAssistantUUID` names another line or writer,
    uuids used twice, parents that are missing or not strings, equal and missing times,
    sidechain, meta and team lines, and compact boundaries anywhere."""
    out = []
    for k in range(count):
        r = random.Random(seed + k)
        n = r.randint(2, 14)
        lines: list[dict[str, Any]] = []
        calls: list[tuple[str, str]] = []
        for i in range(n):
            kind = r.choices(["user", "assistant", "progress", "system", "result", "attachment"], [3, 6, 1, 1, 4, 0.3])[
                0
            ]
            uuid = f"u{r.randrange(i)}" if i and r.random() < 0.08 else f"u{i}"
            parent: Any = None
            if i and r.random() > 0.08:
                parent = r.choice([f"u{j}" for j in range(max(0, i - 4), i)] + (["gone"] if r.random() < 0.1 else []))
            v: dict[str, Any] = {
                "parentUuid": parent,
                "isSidechain": r.random() < 0.07,
                "type": "user" if kind == "result" else kind,
                "uuid": uuid,
                "sessionId": "synthetic",
            }
            if r.random() < 0.9:
                v["timestamp"] = f"2026-01-01T00:00:{r.randint(0, 20):02d}.000Z"
            if r.random() < 0.05:
                v["isMeta"] = True
            if r.random() < 0.05:
                v["agentId"] = "x"
            if kind == "user":
                v["message"] = {"role": "user", "content": f"text {i}"}
                if r.random() < 0.05:
                    v["teamName"] = "t"
            elif kind == "assistant":
                if r.random() < 0.6:
                    call = f"t{r.randint(0, 6)}"
                    calls.append((call, uuid))
                    block: dict[str, Any] = {"type": "tool_use", "id": call, "name": "X", "input": {"i": i}}
                else:
                    block = {"type": "text", "text": f"say {i}"}
                v["message"] = {"id": f"m{r.randint(0, 3)}", "role": "assistant", "content": [block]}
            elif kind == "result":
                call = r.choice(calls)[0] if calls and r.random() < 0.9 else f"t{r.randint(0, 6)}"
                v["message"] = {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call, "content": f"result {i}"}],
                }
                if calls and r.random() < 0.5:
                    v["sourceToolAssistantUUID"] = r.choice(calls)[1]
            elif kind == "system":
                if i and r.random() < 0.3:
                    v["subtype"] = "compact_boundary"
                    v["parentUuid"] = None if r.random() < 0.8 else parent
                    v["logicalParentUuid"] = f"u{r.randrange(i)}" if r.random() < 0.8 else "gone"
                    v["compactMetadata"] = {"trigger": "auto", "preTokens": 5}
                else:
                    v["subtype"] = "stop_hook_summary"
            if r.random() < 0.03:
                v["parentUuid"] = r.choice(["", 0, True, 5])
            lines.append(v)
        out.append(Case(SYNTHETIC, f"graph {k} (seed {seed + k})", _text(_dump(v) for v in lines)))
    return out


def sources(repo: pathlib.Path) -> list[pathlib.Path]:
    """The session files the cases are made from: the two fixtures, then every real one."""
    fixtures = repo / "tests" / "fixtures"
    found = [fixtures / "claude-code-session.jsonl", fixtures / "claude-code-agents.jsonl"]
    real = fixtures / "claude-code-real"
    if real.is_dir():
        found += sorted(real.glob("*.jsonl"))
    return found


def sub_agents(path: pathlib.Path) -> Optional[pathlib.Path]:
    """The folder of sub-agent files Claude Code keeps beside a session file, if any."""
    d = path.with_suffix("") / "subagents"
    return d if d.is_dir() else None
