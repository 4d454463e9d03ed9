#!/usr/bin/env bash
# SessionStart: load the team's conventions (plain stdout on exit 0 becomes context).
echo "Project: $(basename "$CLAUDE_PROJECT_DIR")"
cat "$CLAUDE_PROJECT_DIR/CONVENTIONS.md" 2>/dev/null || true
