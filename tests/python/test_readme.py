"""The README's 30-second tour, run as written in a project folder, then its Python snippet on
the same store: every request compiled after them is one both providers' SDK types accept,
each call id once."""

import json
import os
import pathlib
import re
import subprocess

from providers import assert_valid, assert_valid_anthropic, assert_valid_openai, assert_valid_responses

import tract

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))


def tour_and_snippet() -> tuple[list[str], str]:
    """The tour's shell lines and the Python snippet, as the README holds them."""
    text = (ROOT / "README.md").read_text()
    tour = text.split("## A 30-second tour", 1)[1]
    shell = re.search(r"```sh\n(.*?)```", tour, flags=re.S)
    python = re.search(r"```python\n(.*?)```", tour, flags=re.S)
    assert shell and python, "the tour has a shell block and a Python block"
    return [line for line in shell.group(1).splitlines() if line.strip()], python.group(1)


def test_the_readme_tour_and_snippet_compile_requests_both_providers_accept(tmp_path, monkeypatch) -> None:
    assert TRACT_BIN.is_file(), f"{TRACT_BIN} is missing: build it with `cargo build -p tract-cli`"
    (tmp_path / "config.py").write_text('import os\nDATABASE_URL = os.environ["DATABASE_URL"]\n')
    env = {
        "PATH": f"{TRACT_BIN.parent}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    lines, snippet = tour_and_snippet()
    ran = []
    for line in lines:
        command = line.strip()
        # Installing is the checkout's build; the web view runs until Ctrl-C.
        if command.startswith(("cargo install", "tract serve")):
            continue
        run = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True)
        # grep exits 0 here: the folder has a file that names DATABASE_URL.
        assert run.returncode == 0, f"{line}\n{run.stderr}"
        ran.append((line, run))
    assert len(ran) >= 10
    log = next(r for line, r in ran if line.startswith("tract log"))
    assert "grep" in log.stdout and "config.py" in log.stdout
    compress = next(r for line, r in ran if line.startswith("tract compress"))
    assert "compressed 0 run" not in compress.stdout, compress.stdout

    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "README.md", "exec"), {"tract": tract})

    for fmt, check in [("openai", assert_valid_openai), ("anthropic", assert_valid_anthropic), ("responses", assert_valid_responses)]:
        run = subprocess.run([str(TRACT_BIN), "compile", "--format", fmt], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        check(json.loads(run.stdout))
    with tract.Tract.open(tmp_path / ".tract" / "store.redb") as t:
        assert_valid(t.compile())
        # Both recorded a call `c1`: at each commit the snippet made, each id is sent once.
        for c in t.log(limit=4):
            assert_valid(t.compile(at=c.commit_hash))
