#!/usr/bin/env python3
"""PreToolUse for Write/Edit/MultiEdit: deny changes under a secrets/ folder, with a
reason, through the JSON answer (written for Claude Code)."""

import json
import sys

data = json.load(sys.stdin)
if data.get("tool_name") not in ("Write", "Edit", "MultiEdit"):
    sys.exit(0)
path = data.get("tool_input", {}).get("file_path", "")
if "secrets" in path.split("/"):
    print(
        json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": f"{path} is under secrets/; edit it by hand",
                }
            }
        )
    )
sys.exit(0)
