#!/usr/bin/env bash
# Stop hook in the shape of the published "stop until the tests pass" hooks: run the test
# command; when it fails, print a JSON block answer with the failing output on stdout, a
# short line on stderr, and exit 2. Claude Code takes the JSON's reason. Written for
# Claude Code.
input=$(cat)
[ "$(printf '%s' "$input" | jq -r '.stop_hook_active')" = "true" ] && exit 0
cd "$CLAUDE_PROJECT_DIR" || exit 0
if output=$(bash tests/run.sh 2>&1); then
  exit 0
fi
echo "tests failed" >&2
jq -n --arg out "$output" '{"decision": "block", "reason": ("Tests are failing:\n" + $out)}'
exit 2
