#!/usr/bin/env python3
"""Print the Markdown table for docs/reliability.md: tract's secret scanner and detect-secrets
1.5.0 on the corpus in tests/fixtures/secrets, against its ground truth (planted.json).

Per credential class: how many are planted, how many tract's findings cover (one finding's
span holds all of the credential's bytes, so one redaction hides it), how many detect-secrets
flags (a flag overlaps the credential: detect-secrets reports, it does not redact, and some of
its rules report only part of a token, e.g. "ghp" or the first 24 characters of a Stripe key).
Then precision and recall of each. Precision counts distinct flagged spans: a span that
touches a planted credential is right; one on a never-scrub value (SHA, digest, signature,
certificate, id) or on nothing planted is wrong.

Run with the venv that has detect-secrets, e.g.
``TRACT_BIN=target/debug/tract python scripts/secrets_table.py``. Without the binary it prints
detect-secrets' side alone and says so.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))

import secrets_oracle as so  # noqa: E402


def pct(num: int, den: int) -> str:
    return f"{100 * num / den:.1f}% ({num}/{den})" if den else "n/a"


def main() -> int:
    truths = so.load_truth()
    classes = so.credential_classes()
    have_tract = so.TRACT_BIN.is_file()
    planted = {c: 0 for c in classes}
    by_tract = {c: 0 for c in classes}
    by_ds = {c: 0 for c in classes}
    keep_total = keep_tract = keep_ds = 0
    ds_spans_right = ds_spans_all = 0
    tract_right = tract_all = 0

    for truth in truths.values():
        flags = so.detect_secrets_flags(truth.path)
        spans = {s for f in flags for s in f.spans}  # one value flagged by several plugins counts once
        findings = so.tract_scan(truth.path)[0] if have_tract else []
        for cred in truth.credentials:
            planted[cred.cls] += 1
            by_tract[cred.cls] += so.covered(cred.start, cred.end, findings)
            by_ds[cred.cls] += any(cred.overlaps(s, e) for s, e in spans)
        for keep in truth.never_scrub:
            keep_total += 1
            keep_tract += any(keep.overlaps(f.start, f.end) for f in findings)
            keep_ds += any(keep.overlaps(s, e) for s, e in spans)
        ds_spans_all += len(spans)
        ds_spans_right += sum(any(c.overlaps(s, e) for c in truth.credentials) for s, e in spans)
        tract_all += len(findings)
        tract_right += sum(any(c.overlaps(f.start, f.end) for c in truth.credentials) for f in findings)

    tract_col = (lambda n: str(n)) if have_tract else (lambda n: "–")
    total = sum(planted.values())
    lines = [
        f"Corpus: {len(truths)} files of tool output in `tests/fixtures/secrets/`, "
        f"{total} planted fake credentials in {len(classes)} classes, {keep_total} values that must "
        "never be scrubbed.",
        "",
        "| class | planted | found by tract | found by detect-secrets |",
        "| --- | ---: | ---: | ---: |",
    ]
    for c in classes:
        lines.append(f"| {c} | {planted[c]} | {tract_col(by_tract[c])} | {by_ds[c]} |")
    lines.append(f"| **all credentials** | **{total}** | **{tract_col(sum(by_tract.values()))}** | **{sum(by_ds.values())}** |")
    lines.append(f"| never-scrub values touched | {keep_total} | {tract_col(keep_tract)} | {keep_ds} |")
    lines += [
        "",
        "| scanner | precision | recall |",
        "| --- | ---: | ---: |",
        (f"| tract | {pct(tract_right, tract_all)} | {pct(sum(by_tract.values()), total)} |" if have_tract
         else f"| tract | – | – |"),
        f"| detect-secrets 1.5.0 | {pct(ds_spans_right, ds_spans_all)} | {pct(sum(by_ds.values()), total)} |",
        "",
        "tract: found = one finding covers the whole credential. detect-secrets: found = a flag "
        "overlaps the credential. Precision counts distinct spans; a flag or finding on a "
        "never-scrub value or on nothing planted counts against it.",
    ]
    if not have_tract:
        lines.append(f"\n(no tract binary at {so.TRACT_BIN}: set TRACT_BIN; tract's columns are empty)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
