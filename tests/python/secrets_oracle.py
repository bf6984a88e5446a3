"""The secret-scrubbing oracle's shared parts: the corpus's ground truth, detect-secrets run
in-process, `tract secrets scan --json` run as a process, and where each one's findings fall
in the file's bytes.

Used by ``test_secrets_oracle.py`` and ``scripts/secrets_table.py``. Positions are byte
offsets into the file, spans are ``[start, end)``, lines are 1-based: the same terms as
``tract secrets scan --json`` and ``tests/fixtures/secrets/planted.json``.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any, Iterator

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "secrets"
REAL_SESSIONS = ROOT / "tests" / "fixtures" / "claude-code-real"
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))


@dataclass(frozen=True)
class Span:
    """A value in a file: what it is and where its bytes are."""

    cls: str
    value: str
    line: int
    start: int
    end: int

    def overlaps(self, start: int, end: int) -> bool:
        return self.start < end and start < self.end

    def contains(self, start: int, end: int) -> bool:
        return self.start <= start and end <= self.end


@dataclass(frozen=True)
class Truth:
    """One corpus file's ground truth (written by make_corpus.py)."""

    name: str
    credentials: tuple[Span, ...]
    never_scrub: tuple[Span, ...]

    @property
    def path(self) -> pathlib.Path:
        return CORPUS / self.name


def load_truth() -> dict[str, Truth]:
    planted = json.loads((CORPUS / "planted.json").read_text())

    def spans(entries: list[dict[str, Any]]) -> tuple[Span, ...]:
        return tuple(Span(e["class"], e["value"], e["line"], e["start"], e["end"]) for e in entries)

    return {
        name: Truth(name, spans(t["credentials"]), spans(t["never_scrub"]))
        for name, t in planted["files"].items()
    }


def credential_classes() -> list[str]:
    return list(json.loads((CORPUS / "planted.json").read_text())["credential_classes"])


# --- detect-secrets -------------------------------------------------------------------------


@dataclass(frozen=True)
class Flag:
    """One detect-secrets finding, placed in the file: every occurrence of its value on its line."""

    type: str
    line: int
    value: str
    spans: tuple[tuple[int, int], ...]  # byte spans of the value on that line; () if not found


def line_starts(data: bytes) -> list[int]:
    """Byte offset of each line's first byte (index 0 is line 1)."""
    starts = [0]
    starts += [i + 1 for i, b in enumerate(data) if b == 0x0A]
    return starts


def flagged_value(kind: str, value: str) -> str:
    """The secret's own bytes in what detect-secrets reports, where its report holds more:

    - the Azure plugin reports ``AccountKey=<key>``: the name is not the secret;
    - the base64 entropy plugin's character class holds a backslash (its charset string
      ``'\\\\-_'``, meant as an escaped hyphen, is a backslash and a hyphen, and ``re.escape``
      keeps both), so in a JSON-escaped string (``\\"value\\"``) the value it reports ends
      with the escape's backslash.
    """
    if kind == "Azure Storage Account access key" and value.startswith("AccountKey="):
        return value[len("AccountKey="):]
    if kind == "Base64 High Entropy String":
        return value.strip("\\")
    return value


def detect_secrets_flags(path: pathlib.Path) -> list[Flag]:
    """detect-secrets 1.5.0 with its default settings (every plugin, keyword and entropy ones
    included, and its default filters), in-process.

    This uses ``detect_secrets.core.scan.scan_file``, the generator that
    ``SecretsCollection.scan_file`` drains into a set: the set keeps one finding per
    (file, secret, type), so a value on two lines would be reported once; the generator
    yields each line's finding, which is what is compared with tract line by line.
    """
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings

    data = path.read_bytes()
    starts = line_starts(data)
    flags: list[Flag] = []
    with default_settings():
        for secret in scan_file(str(path)):
            assert secret.secret_value is not None
            lo = starts[secret.line_number - 1]
            hi = starts[secret.line_number] if secret.line_number < len(starts) else len(data)
            line = data[lo:hi]
            needle = flagged_value(secret.type, secret.secret_value).encode()
            spans = []
            at = line.find(needle)
            while at != -1 and needle:
                spans.append((lo + at, lo + at + len(needle)))
                at = line.find(needle, at + 1)
            flags.append(Flag(secret.type, secret.line_number, needle.decode(), tuple(spans)))
    return flags


# --- tract ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One object of `tract secrets scan FILE --json`."""

    rule: str
    line: int
    column: int
    start: int
    end: int
    fingerprint: str


FINDING_KEYS = {"rule": str, "line": int, "column": int, "start": int, "end": int, "fingerprint": str}


_STORE: pathlib.Path | None = None


def scan_store() -> pathlib.Path:
    """A new store the scans run in (made once per process): a file is scanned by its rules and
    fingerprinted with its key, as before an import into it."""
    global _STORE
    if _STORE is None:
        path = pathlib.Path(tempfile.mkdtemp(prefix="tract-secrets-oracle-")) / "store.redb"
        subprocess.run([str(TRACT_BIN), "--store", str(path), "init"], check=True,
                       capture_output=True, timeout=60)
        _STORE = path
    return _STORE


def tract_scan(path: pathlib.Path) -> tuple[list[Finding], subprocess.CompletedProcess[str]]:
    """Run the scanner in a store; check the output's contract (one JSON list of objects with
    exactly the documented keys and types); return the findings and the process (for its
    stdout)."""
    proc = subprocess.run(
        [str(TRACT_BIN), "--store", str(scan_store()), "secrets", "scan", str(path), "--json"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, f"tract secrets scan {path.name} exited {proc.returncode}: {proc.stderr}"
    out = json.loads(proc.stdout)
    assert isinstance(out, list), f"{path.name}: the output is not one JSON list: {proc.stdout[:200]}"
    findings = []
    for obj in out:
        assert isinstance(obj, dict) and set(obj) == set(FINDING_KEYS), f"{path.name}: {obj}"
        for key, kind in FINDING_KEYS.items():
            assert type(obj[key]) is kind, f"{path.name}: {key} is not {kind.__name__}: {obj}"
        findings.append(Finding(**obj))
    return findings, proc


def check_positions(data: bytes, findings: list[Finding]) -> list[str]:
    """What is wrong with the findings' positions: line and column must name the byte at start
    (1-based line, 1-based byte column), and the span must be non-empty and inside the file."""
    starts = line_starts(data)
    problems = []
    for f in findings:
        if not 0 <= f.start < f.end <= len(data):
            problems.append(f"span [{f.start}, {f.end}) is empty or outside the file ({len(data)} bytes): {f}")
            continue
        line = sum(1 for s in starts if s <= f.start)
        column = f.start - starts[line - 1] + 1
        if (f.line, f.column) != (line, column):
            problems.append(f"start {f.start} is line {line} column {column}, the finding says {f.line}:{f.column}: {f}")
    return problems


def covered(start: int, end: int, findings: list[Finding]) -> bool:
    """Whether one finding's span contains all of [start, end): one redaction hides the value."""
    return any(f.start <= start and end <= f.end for f in findings)


def iter_corpus() -> Iterator[Truth]:
    yield from load_truth().values()


# --- The oracle's verdict -------------------------------------------------------------------


def evaluate(truth: Truth, data: bytes, flags: list[Flag], findings: list[Finding]) -> list[str]:
    """Everything tract's findings on one corpus file get wrong, as readable lines ([] = none):

    - a finding's position that does not name its own start byte;
    - a planted credential that no single finding covers (recall on the ground truth);
    - a finding that overlaps a planted never-scrub value;
    - a detect-secrets flag that no finding covers, unless the flagged bytes lie within a
      planted never-scrub value (detect-secrets' entropy plugins flag SHAs, digests and
      signatures by design; tract keeps them; nothing else is excused).
    """
    problems = check_positions(data, findings)
    for cred in truth.credentials:
        if not covered(cred.start, cred.end, findings):
            problems.append(f"planted {cred.cls} on line {cred.line} is not covered by one finding")
    for keep in truth.never_scrub:
        for f in findings:
            if keep.overlaps(f.start, f.end):
                problems.append(f"finding {f.rule} [{f.start}, {f.end}) overlaps never-scrub {keep.cls} on line {keep.line}")
    for flag in flags:
        if not flag.spans:
            problems.append(f"detect-secrets' {flag.type} value on line {flag.line} is not on that line (oracle bug)")
        for start, end in flag.spans:
            if covered(start, end, findings):
                continue
            if any(keep.contains(start, end) for keep in truth.never_scrub):
                continue
            problems.append(f"detect-secrets' {flag.type} on line {flag.line} ([{start}, {end})) is not covered by a finding")
    return problems


def unexplained_flags(truth: Truth, flags: list[Flag]) -> list[str]:
    """detect-secrets flags that touch neither a planted credential nor a never-scrub value: the
    ground truth would be missing something (or detect-secrets flagged harmless text)."""
    out = []
    for flag in flags:
        for start, end in flag.spans:
            if not any(p.overlaps(start, end) for p in truth.credentials + truth.never_scrub):
                out.append(f"line {flag.line}: {flag.type} {flag.value[:30]!r}...")
    return out
