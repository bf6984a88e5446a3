#!/usr/bin/env bash
# The long fault runs of docs/reliability.md, beyond the short ones the test command runs: the
# crash torture at 1,000 kills (about an hour on two cores) and the concurrency soak at 60 s,
# both with one seed (the first argument; random if none, and printed so a failure replays).
# They use what ./scripts/test.sh built: the CLI (target/debug/tract) and the virtual
# environment with the wheel (target/test-venv). TRACT_TORTURE_KILLS and TRACT_SOAK_SECONDS
# change the lengths.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/test-venv
if [ ! -x "$venv/bin/python" ] || [ ! -x target/debug/tract ]; then
    echo "soak.sh: run ./scripts/test.sh first: it builds the CLI and the wheel these runs use" >&2
    exit 2
fi
seed=${1:-$((RANDOM * 32768 + RANDOM))}
case $seed in
'' | *[!0-9]*)
    echo "soak.sh: the seed must be a number, not '$seed'" >&2
    exit 2
    ;;
esac
echo "== seed $seed"
cd tests/python
echo "== crash torture: ${TRACT_TORTURE_KILLS:-1000} kills"
TRACT_TORTURE_KILLS=${TRACT_TORTURE_KILLS:-1000} TRACT_TORTURE_SEED=$seed \
    "../../$venv/bin/python" -m pytest -q -s test_torture.py -k sigkilled
echo "== concurrency soak: ${TRACT_SOAK_SECONDS:-60} s"
TRACT_SOAK_SECONDS=${TRACT_SOAK_SECONDS:-60} TRACT_SOAK_SEED=$seed \
    "../../$venv/bin/python" -m pytest -q -s test_soak.py
