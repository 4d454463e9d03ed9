#!/usr/bin/env python3
"""A plugin hook as published plugins write them: the event on stdin, state kept in
$CLAUDE_PLUGIN_DATA across runs, exit 2 with a reason on stderr to refuse."""

import json
import os
import sys

event = json.load(sys.stdin)
data = os.environ["CLAUDE_PLUGIN_DATA"]
path = event.get("tool_input", {}).get("file_path", "")
with open(os.path.join(data, "seen.jsonl"), "a", encoding="utf-8") as f:
    entry = {"path": path, "root": os.environ["CLAUDE_PLUGIN_ROOT"], "script": __file__}
    f.write(json.dumps(entry) + "\n")
if "/secrets/" in path:
    sys.stderr.write("suite-guard: files under secrets/ are not written by agents\n")
    sys.exit(2)
