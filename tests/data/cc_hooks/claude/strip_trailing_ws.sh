#!/usr/bin/env bash
# PostToolUse, matcher "Write|Edit": a formatter, strip trailing blanks from the file the
# tool just wrote (written for Claude Code).
file=$(jq -r '.tool_input.file_path // empty')
if [ -n "$file" ] && [ -f "$file" ]; then
  sed -i 's/[[:space:]]*$//' "$file"
fi
exit 0
