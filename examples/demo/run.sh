#!/usr/bin/env bash
# The orkeon demo: dev-spec -> dev-plan -> dev-batches on a copy of examples/demo/project,
# with the scripted model (no network, no key) and two native hooks.
#
#   examples/demo/run.sh [WORKDIR]
#
# WORKDIR (default: a new temporary folder) receives the project as a fresh git repository.
# ORKEON may name the command to run, as shell words (quote a path that holds a space;
# default: the checkout's .venv/bin/orkeon, else `orkeon` on PATH, else
# `python3 -m orkeon_run` from the checkout).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [ -n "${ORKEON:-}" ]; then
  eval "orkeon=($ORKEON)"  # shell words, so a quoted path may hold a space
elif [ -x "$root/.venv/bin/orkeon" ]; then
  orkeon=("$root/.venv/bin/orkeon")
elif command -v orkeon >/dev/null 2>&1; then
  orkeon=(orkeon)
else
  orkeon=(python3 -m orkeon_run)
  export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
fi
python="${PYTHON:-python3}"
# orkeon logs go to stderr; the demo prints each run's report, so only warnings show.
export ORKEON_LOG_LEVEL="${ORKEON_LOG_LEVEL:-warning}"

work="${1:-$(mktemp -d "${TMPDIR:-/tmp}/orkeon-demo.XXXXXX")}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
cp -R "$here/project/." "$work/"
git -C "$work" init -q
git -C "$work" add -A
git -C "$work" -c user.name=orkeon-demo -c user.email=demo@example.invalid commit -q -m "demo project"

echo "orkeon demo: the workspace is $work"
echo "hooks: #1 pre-tool refuses writes under calc/generated/; #2 post-tool fails once"
for step in dev-spec dev-plan dev-batches; do
  run_dir="$work/.orkeon/runs/$step"
  echo
  echo "== orkeon run $step"
  set +e
  result="$("${orkeon[@]}" run "$step" --inputs "@$here/inputs/$step.json" \
    --workspace "$work" --run-dir "$run_dir" --output text)"
  code=$?
  set -e
  "${orkeon[@]}" report "$run_dir"
  printf '%s\n' "$result"
  if [ "$code" -ne 0 ]; then
    echo "$step exited $code; the run is in $run_dir"
    exit "$code"
  fi
done

echo
echo "== what the crew changed (git status --short)"
git -C "$work" status --short
"${orkeon[@]}" report "$work/.orkeon/runs/dev-batches" --format html -o "$work/.orkeon/runs/dev-batches.html"
echo
echo "Runs, events and transcripts: $work/.orkeon/runs/"
echo "The batches as one page (timeline, every call, what the model read): $work/.orkeon/runs/dev-batches.html"
