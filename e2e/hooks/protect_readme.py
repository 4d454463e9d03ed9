"""A Claude Code PreToolUse hook (JSON on stdin, exit 2 blocks), as written for Claude Code:
README.md is kept by hand, so a Write or Edit of it is blocked. Every call it sees is
appended to the JSON Lines file named by its argument (what `e2e/local.py` reports)."""

import json
import sys

event = json.load(sys.stdin)
path = str((event.get("tool_input") or {}).get("file_path", ""))
blocked = path.lstrip("./") == "README.md"
with open(sys.argv[1], "a", encoding="utf-8") as log:
    record = {"tool_name": event.get("tool_name"), "path": path,
              "decision": "block" if blocked else "allow"}  # fmt: skip
    log.write(json.dumps(record) + "\n")
if blocked:
    print("README.md is maintained by hand; change the code and the tests only", file=sys.stderr)
    sys.exit(2)
