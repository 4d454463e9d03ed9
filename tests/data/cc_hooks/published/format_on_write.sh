#!/usr/bin/env bash
# PostToolUse, matcher "Write|Edit": format the file the tool just wrote, in the shape of
# the published format-on-edit hooks (here the "formatter" expands tabs to four spaces and
# strips trailing blanks). Written for Claude Code.
file=$(jq -r '.tool_input.file_path // empty')
case "$file" in
  *.py)
    tmp=$(mktemp)
    expand -t 4 "$file" | sed 's/[[:space:]]*$//' > "$tmp" && cat "$tmp" > "$file"
    rm -f "$tmp" ;;
esac
exit 0
