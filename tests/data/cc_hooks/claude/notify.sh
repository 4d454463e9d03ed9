#!/usr/bin/env bash
# Notification: keep a log of what needed the user's attention.
msg=$(cat | jq -r '.message // "Claude Code needs your attention"')
echo "$msg" >> "$CLAUDE_PROJECT_DIR/notifications.log"
exit 0
