#!/usr/bin/env python3
"""PostToolUse for Bash: tell the model when a command wrote to stderr (written for Claude Code)."""

import json
import sys

data = json.load(sys.stdin)
if data.get("tool_name") != "Bash":
    sys.exit(0)
response = data.get("tool_response") or {}
err = (response.get("stderr") or "").strip()
if err:
    print(json.dumps({"decision": "block", "reason": f"the command wrote to stderr: {err}"}))
sys.exit(0)
