#!/usr/bin/env bash
# `make test-stress`: the suite five times in a row while two other processes keep both
# cores busy. A test whose verdict depends on the machine's speed fails here.
#
#   scripts/test-stress.sh [RUNS] [PYTEST ARGS...]   (default 5 runs of `make test`)
#
# With pytest arguments (test files, -k, -m "not slow"), each run is those tests on two
# workers instead of the whole suite. Works from a checkout whose path holds spaces.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
shift || true
burners=()
cleanup() { for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
for _ in 1 2; do
  python3 -c 'while True: pass' &
  burners+=("$!")
done
for i in $(seq 1 "$runs"); do
  if [ "$#" -gt 0 ]; then
    echo "== pytest $*, run $i of $runs, both cores busy"
    make --no-print-directory install
    .venv/bin/pytest -n 2 -q "$@"
  else
    echo "== make test, run $i of $runs, both cores busy"
    make --no-print-directory test
  fi
done
echo "== $runs runs passed"
