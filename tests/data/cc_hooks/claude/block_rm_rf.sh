#!/usr/bin/env bash
# PreToolUse, matcher "Bash": refuse destructive rm -rf (written for Claude Code).
input=$(cat)
cmd=$(printf '%s' "$input" | jq -r '.tool_input.command // empty')
if printf '%s' "$cmd" | grep -Eq 'rm -rf (/|~|\*)'; then
  echo "Refusing to run a destructive command: $cmd" >&2
  exit 2          # exit 2 = block the tool; stderr is sent back to the model
fi
exit 0
