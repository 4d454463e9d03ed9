#!/usr/bin/env python3
"""PreToolUse for Read: remind the model that generated files are not to be edited."""

import json
import sys

data = json.load(sys.stdin)
path = data["tool_input"].get("file_path", "")
if path.startswith("generated/") or "/generated/" in path:
    print(
        json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "additionalContext": f"{path} is generated; change its source instead.",
                }
            }
        )
    )
