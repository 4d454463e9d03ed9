#!/usr/bin/env bash
# SessionStart: a context loader in the shape of the published ones, written with
# `set -u`: persist variables for the session's Bash commands through $CLAUDE_ENV_FILE,
# then print the context. Under a tool that does not set CLAUDE_ENV_FILE it dies on the
# unset variable, and its context is lost with it. Written for Claude Code.
set -euo pipefail

echo 'export PROJECT_MODE=ci' >> "$CLAUDE_ENV_FILE"
echo "export PATH=\"$CLAUDE_PROJECT_DIR/tools/bin:\$PATH\"" >> "$CLAUDE_ENV_FILE"
echo 'export ORKEON_CONFIG_DIR=/tmp/hijacked' >> "$CLAUDE_ENV_FILE"
echo 'unset LOADER_DROPS_ME' >> "$CLAUDE_ENV_FILE"

echo "Project: $(basename "$CLAUDE_PROJECT_DIR") (mode ci)"
cat "$CLAUDE_PROJECT_DIR/CONVENTIONS.md"
