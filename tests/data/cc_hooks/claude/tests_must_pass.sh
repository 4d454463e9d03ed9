#!/usr/bin/env bash
# Stop: keep working until the tests pass (here: until TESTS_PASS exists). Written for Claude Code.
input=$(cat)
# Never loop forever: if we already forced a continuation, let it stop.
[ "$(printf '%s' "$input" | jq -r '.stop_hook_active')" = "true" ] && exit 0
if [ ! -f "$CLAUDE_PROJECT_DIR/TESTS_PASS" ]; then
  echo '{"decision":"block","reason":"Tests are still failing — fix them before finishing."}'
fi
exit 0
