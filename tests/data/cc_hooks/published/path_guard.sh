#!/usr/bin/env bash
# PreToolUse, matcher "Write|Edit": a write validator in the shape of the published ones:
# refuse any path with "..", and any path outside "$CLAUDE_PROJECT_DIR". Written for
# Claude Code, which gives it tool_input.file_path absolute and normalized.
input=$(cat)
file=$(printf '%s' "$input" | jq -r '.tool_input.file_path // empty')
[ -z "$file" ] && exit 0
case "$file" in
  *..*)
    echo "Path traversal is not allowed: $file" >&2
    exit 2 ;;
esac
case "$file" in
  "$CLAUDE_PROJECT_DIR"/*) ;;
  *)
    echo "Refusing to write outside the project: $file" >&2
    exit 2 ;;
esac
exit 0
