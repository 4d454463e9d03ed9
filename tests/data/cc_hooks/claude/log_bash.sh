#!/usr/bin/env bash
# PreToolUse, matcher "Bash": log every command with its description (written for Claude Code).
mkdir -p "$CLAUDE_PROJECT_DIR/.claude"
jq -r '"\(.tool_input.command) - \(.tool_input.description // "No description")"' \
  >> "$CLAUDE_PROJECT_DIR/.claude/bash-command-log.txt"
