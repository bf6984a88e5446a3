#!/usr/bin/env bash
# Every check tract has: formatting, lints, Rust tests, then the Python suite against a wheel
# built and installed into a fresh virtual environment.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Each phase's wall time, printed at the end however the run ends (docs/development.md holds
# the budget).
phase_names=()
phase_starts=()
phase() {
    phase_names+=("$1")
    phase_starts+=("$SECONDS")
    echo "== $1"
}
timings() {
    local i next n=${#phase_names[@]}
    echo "== seconds per phase"
    for ((i = 0; i < n; i++)); do
        next=$SECONDS
        if ((i + 1 < n)); then next=${phase_starts[i + 1]}; fi
        printf '%5d  %s\n' "$((next - phase_starts[i]))" "${phase_names[i]}"
    done
    printf '%5d  total\n' "$SECONDS"
}
# The PostgreSQL server is stopped however the run ends, keeping the run's exit status.
pgdir=""
python_pid=""
pg_pass=""
kill_tree() {
    local child
    for child in $(pgrep -P "$1"); do kill_tree "$child"; done
    kill "$1" 2>/dev/null || true
}
on_exit() {
    local rc=$?
    if [ -n "$python_pid" ]; then kill_tree "$python_pid"; fi
    if [ -n "$pg_pass" ]; then kill_tree "$pg_pass"; fi
    if [ -n "$pgdir" ]; then "$root/scripts/postgres.sh" stop "$pgdir" || true; fi
    timings
    exit "$rc"
}
trap on_exit EXIT

# Lints ride on the test build: cargo runs clippy's driver (rustc with clippy's lints, the
# compiler `cargo clippy` itself runs) on the workspace's own crates, so one build both lints
# and compiles them and the dependencies are compiled once, for the tests. Exported, so every
# cargo run below (and maturin's) sees the same compiler and reuses what the first one built.
# The Python binding, which `cargo test` does not build (its tests are the Python suite's), is
# linted when the wheel is built.
RUSTC_WORKSPACE_WRAPPER=$(command -v clippy-driver)
CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings"
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS

phase "system packages: PostgreSQL, PgBouncer, Chromium and its driver, when missing"
# A throwaway PostgreSQL on 127.0.0.1 for the database backend (with TLS, and a PgBouncer), and
# the browser that tests `tract serve`'s page: Debian's packages (CI runs as root; elsewhere
# through sudo).
pgdir="$root/target/pg"
pg_url=$(scripts/postgres.sh start "$pgdir")
# The URLs (direct and through PgBouncer), the certificates and the server's directory, as
# written by postgres.sh. The Rust suites are given TRACT_TEST_POSTGRES explicitly below and
# pytest gets both at the end, so these two stay out of the environment until then.
# shellcheck source=/dev/null
source "$pgdir/env"
export -n TRACT_TEST_POSTGRES TRACT_TEST_POSTGRES_DIR
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        chromium chromium-driver >/dev/null
fi
# cargo-nextest runs every test binary's tests side by side in one pool, each test in its own
# process; most wait on processes, fsyncs and servers, so more run at once than there are cores.
if ! cargo nextest --version >/dev/null 2>&1; then
    cargo install --locked cargo-nextest
fi

# The Python side is made in the background while cargo builds: a fresh virtual environment
# with the suite's packages, then, once the build is done, the wheel, compiled while the Rust
# tests run (they mostly wait, and run from the build's list of test binaries without cargo,
# so nothing waits for cargo's lock on the target directory).
venv=target/test-venv
logs=target/test-logs
rm -rf "$venv" target/wheels "$logs"
mkdir -p "$logs"
python_side() {
    python3 -m venv "$venv"
    # The framework drop-ins' packages, read from the wheel's extras, installed with the rest
    # now: once the wheel is built, installing it with its extras then finds them all in place.
    local extras
    mapfile -t extras < <("$venv/bin/python" -c '
import tomllib
with open("crates/tract-py/pyproject.toml", "rb") as f:
    for reqs in tomllib.load(f)["project"]["optional-dependencies"].values():
        print("\n".join(reqs))')
    # The providers' SDKs: their request types check what compile produces
    # (tests/python/providers.py); the MCP client drives `tract mcp`; LangGraph and its
    # checkpointer conformance suite test the LangGraph drop-in; Selenium drives the headless
    # Chromium that tests `tract serve`'s page; pytest-xdist runs the suite on three workers.
    # detect-secrets is the reference scanner that `tract secrets scan` is checked against
    # (test_secrets_oracle.py); pinned, as its findings on the corpus are part of the test.
    # openai-codex-cli-bin is the real Codex binary, whose own reader checks the Codex import
    # (test_codex_reader.py); pinned, as its reading of a rollout changes between releases.
    # `--no-compile`: byte-compiling every module of these packages took about a third of the
    # install's CPU, beside the build; Python compiles what the tests import when they import it.
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile \
        "maturin>=1.9.4,<2" \
        "pytest>=8" "pytest-xdist>=3.5,<4" \
        "openai>=1.60,<4" "anthropic>=0.50,<3" "mcp>=2,<3" "langgraph>=1.2,<2" \
        "langgraph-checkpoint-conformance==0.0.2" "selenium>=4.20,<5" "detect-secrets==1.5.0" \
        "openai-codex-cli-bin==0.163.0" \
        "${extras[@]}"
    # The dev profile, with the features the test build turned on (`test-build`): tract-core
    # and every dependency are the test build's, so only the binding and pyo3 are compiled;
    # the suite spends its time waiting on processes, servers and a browser
    # (docs/development.md).
    while [ ! -e "$logs/built" ]; do sleep 1; done
    "$venv/bin/maturin" build --locked -m crates/tract-py/Cargo.toml -o target/wheels \
        --features test-build
    # With the extras of the framework drop-ins: their tests run the frameworks' own packages.
    local wheel
    wheel=$(ls target/wheels/tract_context-*.whl)
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile \
        "${wheel}[openai-agents,langgraph,claude-agent-sdk]"
}
python_side >"$logs/python.log" 2>&1 &
python_pid=$!

phase "cargo fmt --check"
cargo fmt --all -- --check

phase "build: every crate and target, with clippy's lints (-D warnings); doc tests"
# nextest builds the tests (`cargo test --no-run`) and writes down the binaries, which the runs
# below use as they are.
cargo nextest list --workspace --locked --list-type binaries-only --message-format json \
    >target/nextest-binaries.json
cargo metadata --locked --format-version 1 >target/nextest-cargo-metadata.json
touch "$logs/built"
cargo test --workspace --locked --doc
built=(--binaries-metadata target/nextest-binaries.json
    --cargo-metadata target/nextest-cargo-metadata.json)

phase "Rust tests: unit, the core's integration suite, the CLI end to end"
cargo nextest run "${built[@]}" --no-fail-fast --test-threads 6

phase "python: the virtual environment and the wheel (made in the background since the start), with the PostgreSQL pass started beside them"
# The PostgreSQL pass: the core's integration suite again, every store on PostgreSQL as
# production runs it (TLS to a pooler in transaction mode; the tests that change rows behind
# tract's back reach the server directly). It starts now and runs beside the wheel's build and
# pytest instead of holding a phase of its own; its output is shown when it ends.
pg_log="$logs/postgres-pass.log"
TRACT_TEST_POSTGRES="$TRACT_TEST_PGBOUNCER?sslmode=require" TRACT_TEST_POSTGRES_DIRECT="$pg_url" \
    cargo nextest run "${built[@]}" --no-fail-fast --test-threads 3 -E 'binary(integration)' \
    >"$pg_log" 2>&1 &
pg_pass=$!
rc=0
wait "$python_pid" || rc=$?
python_pid=""
if [ "$rc" -ne 0 ]; then
    cat "$logs/python.log"
    echo "test.sh: the Python environment or the wheel failed (above)" >&2
    exit 1
fi
grep -v '^\s*$' "$logs/python.log" | tail -n 5 || true
# What the wheel compiled beyond the binding, pyo3 and pythonize (which only the binding uses):
# a crate named here was compiled twice, because the test build's features moved away from
# `test-build`'s (crates/tract-py/Cargo.toml).
again=$(sed -n 's/^ *Compiling \([^ ]*\) .*/\1/p' "$logs/python.log" |
    grep -Ev '^(pyo3|pyo3-build-config|pyo3-ffi|pyo3-macros|pyo3-macros-backend|pythonize|target-lexicon|syn|tract-py)$' |
    tr '\n' ' ' || true)
if [ -n "$again" ]; then
    echo "test.sh: the wheel compiled again what the test build had (align test-build's features): $again"
fi

phase "pytest, and the end of the PostgreSQL pass"
# Run from the test folder so `import tract` can only find the installed wheel. The tests that
# run on both backends, and those of PostgreSQL itself, use the server started above.
export TRACT_TEST_POSTGRES TRACT_TEST_POSTGRES_DIR
rc=0
(cd tests/python && "../../$venv/bin/python" -m pytest -q -n 3) || rc=$?
pg_rc=0
wait "$pg_pass" || pg_rc=$?
pg_pass=""
echo "== the core integration suite on PostgreSQL through PgBouncer"
if [ "$pg_rc" -ne 0 ]; then
    cat "$pg_log"
else
    grep -E '^ *(Summary|SLOW)' "$pg_log" || true
fi
if [ "$rc" -ne 0 ] || [ "$pg_rc" -ne 0 ]; then
    echo "test.sh: pytest exited $rc, the PostgreSQL pass $pg_rc" >&2
    exit 1
fi
