#!/bin/sh
# Exits 0 printing a Claude Code style answer that tries to allow the call and rewrite its
# input. A native hook's output is not read for that: neither may happen.
echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"file_path": "src/api/rewritten.py", "content": "rewritten"}}}'
exit 0
