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
on_exit() {
    local rc=$?
    if [ -n "$pgdir" ]; then "$root/scripts/postgres.sh" stop "$pgdir" || true; fi
    timings
    exit "$rc"
}
trap on_exit EXIT

phase "cargo fmt --check"
cargo fmt --all -- --check

phase "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

phase "PostgreSQL: a throwaway server on 127.0.0.1 for the database backend"
pgdir="$root/target/pg"
pg_url=$(scripts/postgres.sh start "$pgdir")
# The URLs (direct and through PgBouncer), the certificates and the server's directory, as
# written by postgres.sh. The Rust suites are given TRACT_TEST_POSTGRES explicitly below and
# pytest gets both at the end, so these two stay out of the environment until then.
# shellcheck source=/dev/null
source "$pgdir/env"
export -n TRACT_TEST_POSTGRES TRACT_TEST_POSTGRES_DIR

phase "cargo test"
cargo test --workspace --locked

phase "cargo test: the core integration suite again, every store on PostgreSQL through PgBouncer"
# As production runs it: TLS to a pooler in transaction mode. The tests that change rows behind
# tract's back reach the server directly. (The Python suite uses the server directly.)
# `--workspace` resolves features as the run above did, so its test binary is reused, not built
# again (tract-core's PostgreSQL backend is already on: the CLI enables it).
TRACT_TEST_POSTGRES="$TRACT_TEST_PGBOUNCER?sslmode=require" TRACT_TEST_POSTGRES_DIRECT="$pg_url" \
    cargo test --workspace --locked --test integration

phase "browser: Chromium and its driver, for the tests of the page \`tract serve\` serves"
# Debian's packages, installed when missing (CI runs as root; elsewhere through sudo).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        chromium chromium-driver >/dev/null
fi

phase "python: build the wheel into a fresh venv"
venv=target/test-venv
rm -rf "$venv" target/wheels
python3 -m venv "$venv"
# The providers' SDKs: their request types check what compile produces (tests/python/providers.py);
# the MCP client drives `tract mcp`; LangGraph and its checkpointer conformance suite test the
# LangGraph drop-in; Selenium drives the headless Chromium that tests `tract serve`'s page;
# pytest-xdist runs the suite on two workers.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.9.4,<2" "pytest>=8" \
    "pytest-xdist>=3.5,<4" \
    "openai>=1.60,<4" "anthropic>=0.50,<3" "mcp>=2,<3" "langgraph>=1.2,<2" \
    "langgraph-checkpoint-conformance==0.0.2" "selenium>=4.20,<5"
# The dev profile (dependencies optimized, as `cargo test` built them above, so only the
# bindings and the core are compiled again): a release build would compile every dependency
# a second time for a suite that spends its time waiting on processes and servers.
"$venv/bin/maturin" build --locked -m crates/tract-py/Cargo.toml -o target/wheels
# With the extras of the framework drop-ins: their tests run the frameworks' own packages.
wheel=$(ls target/wheels/tract_context-*.whl)
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${wheel}[openai-agents,langgraph,claude-agent-sdk]"

phase "pytest"
# Run from the test folder so `import tract` can only find the installed wheel. The tests that
# run on both backends, and those of PostgreSQL itself, use the server started above.
export TRACT_TEST_POSTGRES TRACT_TEST_POSTGRES_DIR
cd tests/python
"../../$venv/bin/python" -m pytest -q -n 2
