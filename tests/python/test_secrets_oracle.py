"""`tract secrets scan` against the field's reference scanner, detect-secrets 1.5.0, and against
the ground truth of a corpus of realistic tool outputs (tests/fixtures/secrets, written by its
make_corpus.py with fake credentials and values that must never be scrubbed).

For each corpus file: every value detect-secrets flags lies inside one tract finding (unless it
is a planted never-scrub value: detect-secrets' entropy plugins flag SHAs, digests and
signatures by design); every planted credential lies inside one tract finding; no finding
touches a never-scrub value. On real Claude Code sessions (no credentials in them) tract finds
nothing. The first tests check the oracle itself and need no tract binary.
"""

from __future__ import annotations

import functools
import json
import pathlib

import pytest

import secrets_oracle as so

TRUTH = so.load_truth()
FILES = sorted(TRUTH)
REAL = sorted(so.REAL_SESSIONS.rglob("*.jsonl"))


@functools.cache
def flags(name: str) -> list[so.Flag]:
    return so.detect_secrets_flags(TRUTH[name].path)


def test_the_ground_truth_is_where_it_says() -> None:
    """planted.json names the bytes in the files; the corpus holds every file it names."""
    on_disk = {p.name for p in so.CORPUS.iterdir()} - {"README.md", "make_corpus.py", "planted.json"}
    assert on_disk == set(FILES)
    classes: dict[str, int] = {}
    for truth in TRUTH.values():
        data = truth.path.read_bytes()
        for span in truth.credentials + truth.never_scrub:
            assert data[span.start : span.end] == span.value.encode(), (truth.name, span.cls, span.line)
            assert data.count(b"\n", 0, span.start) + 1 == span.line, (truth.name, span)
        for cred in truth.credentials:
            classes[cred.cls] = classes.get(cred.cls, 0) + 1
    assert set(classes) == set(so.credential_classes())
    assert min(classes.values()) >= 2, classes


@pytest.mark.parametrize("name", FILES)
def test_detect_secrets_flags_only_planted_values(name: str) -> None:
    """Each detect-secrets flag is found on its line and touches a planted credential or a
    planted never-scrub value: the ground truth leaves nothing detect-secrets sees unexplained,
    so the never-scrub exception below cannot hide a real credential."""
    found = flags(name)
    assert all(f.spans for f in found), [f for f in found if not f.spans]
    assert so.unexplained_flags(TRUTH[name], found) == []


def perfect_findings(truth: so.Truth, data: bytes) -> list[so.Finding]:
    """What a scanner that exactly covers the ground truth would print."""
    starts = so.line_starts(data)
    out = []
    for cred in truth.credentials:
        line = sum(1 for s in starts if s <= cred.start)
        out.append(so.Finding(cred.cls, line, cred.start - starts[line - 1] + 1, cred.start, cred.end, "fp"))
    return out


@pytest.mark.parametrize("name", FILES)
def test_the_oracle_fails_a_scanner_that_misses_or_overreaches(name: str) -> None:
    """The verdict passes exactly-right findings and fails each kind of mistake, on every file:
    the tract test below can fail."""
    truth = TRUTH[name]
    data = truth.path.read_bytes()
    right = perfect_findings(truth, data)
    assert so.evaluate(truth, data, flags(name), right) == []
    # One credential left out.
    assert so.evaluate(truth, data, flags(name), right[1:]), "a missed credential passed"
    # A finding that reaches into a never-scrub value.
    if truth.never_scrub:
        keep = truth.never_scrub[0]
        line = data.count(b"\n", 0, keep.start) + 1
        column = keep.start - (data.rfind(b"\n", 0, keep.start) + 1) + 1
        wrong = right + [so.Finding("x", line, column, keep.start, keep.end, "fp")]
        assert so.evaluate(truth, data, flags(name), wrong), "a scrubbed never-scrub value passed"
    # A finding whose line and column do not name its start.
    first = right[0]
    shifted = [so.Finding(first.rule, first.line, first.column + 1, first.start, first.end, "fp"), *right[1:]]
    assert so.evaluate(truth, data, flags(name), shifted), "a wrong column passed"


def tract_bin() -> pathlib.Path:
    assert so.TRACT_BIN.is_file(), f"{so.TRACT_BIN} is missing: build it with `cargo build -p tract-cli`"
    return so.TRACT_BIN


@pytest.mark.parametrize("name", FILES)
def test_tract_covers_detect_secrets_and_the_ground_truth(name: str) -> None:
    tract_bin()
    truth = TRUTH[name]
    data = truth.path.read_bytes()
    findings, proc = so.tract_scan(truth.path)
    # The scanner never prints a secret.
    for cred in truth.credentials:
        assert cred.value not in proc.stdout and cred.value not in proc.stderr, f"{cred.cls} on line {cred.line} printed"
    problems = so.evaluate(truth, data, flags(name), findings)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(so.REAL_SESSIONS)))
def test_tract_finds_nothing_in_real_sessions(path: pathlib.Path) -> None:
    """Real Claude Code sessions hold SHAs, UUIDs, thinking signatures, tool output and no
    credentials: a scrubber that fires there would damage what an agent sees."""
    tract_bin()
    findings, proc = so.tract_scan(path)
    assert json.loads(proc.stdout) == [], proc.stdout[:2000]
    assert findings == []


def test_real_sessions_are_there() -> None:
    # The parametrization above would silently be empty if the fixtures moved.
    assert len(REAL) >= 8, REAL
