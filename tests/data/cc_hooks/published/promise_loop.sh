#!/usr/bin/env bash
# Stop hook in the shape of the published "keep looping until the promise" hooks (Ralph
# Wiggum style): read the transcript Claude Code names in transcript_path, take the last
# assistant line's text blocks with jq, and block the stop until that text holds the
# completion promise. Written for Claude Code.
set -euo pipefail

HOOK_INPUT=$(cat)
PROMISE="DONE"
TRANSCRIPT_PATH=$(echo "$HOOK_INPUT" | jq -r '.transcript_path')

if [[ ! -f "$TRANSCRIPT_PATH" ]]; then
  echo "promise loop: transcript not found" >&2
  exit 0
fi
if ! grep -q '"role":"assistant"' "$TRANSCRIPT_PATH"; then
  echo "promise loop: no assistant messages in transcript" >&2
  exit 0
fi

LAST_LINE=$(grep '"role":"assistant"' "$TRANSCRIPT_PATH" | tail -1)
LAST_OUTPUT=$(echo "$LAST_LINE" | jq -r '
  .message.content |
  map(select(.type == "text")) |
  map(.text) |
  join("\n")
')
# How many tool calls the model made so far, by Claude Code's tool name.
WRITES=$(jq -s '[.[] | select(.type == "assistant") | .message.content[] | select(.type == "tool_use" and .name == "Write")] | length' "$TRANSCRIPT_PATH")

if echo "$LAST_OUTPUT" | grep -q "<promise>$PROMISE</promise>"; then
  exit 0
fi

jq -n --arg last "$LAST_OUTPUT" --arg writes "$WRITES" '{
  "decision": "block",
  "reason": ("Not done yet (you said: " + $last + "; Write calls so far: " + $writes + "). Output <promise>DONE</promise> when the task is complete.")
}'
exit 0
