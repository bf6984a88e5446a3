#!/usr/bin/env python3
"""Takes the screenshots docs/serve.md shows, from a demo store built as the tests build theirs
(tests/python/serve_store.py):

- docs/images/serve-session.png: a session page with its tool cards (two parallel calls, one ok
  and one failed, their results open; an edited grep result);
- docs/images/serve-history.png: the history page of a branch with a sub-agent's merge.

Needs the `tract` Python package installed, the `tract` binary built (target/debug/tract, or
TRACT_BIN), Chromium with chromedriver and Selenium (scripts/test.sh installs all of them).
Run from anywhere: `python scripts/screenshots.py [--out DIR]`."""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))

import serve_store as ss  # noqa: E402

WIDTH, HEIGHT = 1280, 900


def wait(cond, timeout: float = 20, what: str = "") -> object:
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise SystemExit(f"screenshots: timed out waiting for {what}")
        time.sleep(0.05)


def open_route(driver, base: str, route: str) -> None:
    driver.get("about:blank")
    driver.get(base.rstrip("/") + "/" + route)
    wait(lambda: driver.execute_script("return document.body.dataset.ready") == "1", what=f"{route} to render")


def open_result(driver, call_id: str) -> None:
    driver.execute_script(
        "const d = document.querySelector(`[data-testid=tool-card][data-call-id='${arguments[0]}'] "
        "details[data-testid=tool-result]`); if (d) d.open = true;",
        call_id,
    )


def scroll_to(driver, css: str, offset: int) -> None:
    """Scrolls the first element matching `css` to `offset` pixels below the top of the window."""
    driver.execute_script(
        "const el = document.querySelector(arguments[0]);"
        "if (el) window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - arguments[1]);",
        css,
        offset,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "images")
    args = ap.parse_args()
    missing = ss.chromium_missing()
    if missing:
        raise SystemExit(f"screenshots: {missing}")
    args.out.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory() as tmp:
        store = pathlib.Path(tmp) / "demo" / ".tract" / "store.redb"
        store.parent.mkdir(parents=True)
        ss.build_rich_store(store)
        with ss.Serve(store, cwd=tmp) as server:
            driver = ss.new_chrome(WIDTH, HEIGHT)
            try:
                # A session: the parallel calls with their results open, then the edited grep.
                open_route(driver, server.url, "#/session/main")
                for call_id in ("call_read", "call_test", "call_grep"):
                    open_result(driver, call_id)
                scroll_to(driver, '[data-testid=entry][data-index="1"]', 70)
                time.sleep(0.3)
                path = args.out / "serve-session.png"
                driver.save_screenshot(str(path))
                print(f"screenshots: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")

                # The history of main: the merge of the sub-agent's branch and the commits it brought in.
                open_route(driver, server.url, "#/history/main")
                scroll_to(driver, '[data-testid=history-row][data-op="merge"]', 260)
                time.sleep(0.3)
                path = args.out / "serve-history.png"
                driver.save_screenshot(str(path))
                print(f"screenshots: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
            finally:
                driver.quit()


if __name__ == "__main__":
    main()
