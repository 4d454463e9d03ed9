"""Demo post-tool hook: `python3 .orkeon/hooks/post_tool.py {tool} {path}`.

Pretends to be a style checker that complains once, about the first file written in the
workspace, so the demo shows what the model reads when a post-tool hook fails: the tool
has run, and the hook's line is added to its result."""

import sys
from pathlib import Path

tool, path = sys.argv[1], sys.argv[2]
marker = Path(".orkeon/demo/post-hook-failed-once")
if tool in ("file_write", "file_edit") and not marker.exists():
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(path + "\n")
    print(f"style: {path}: consider a shorter first line (demo: fails once)", file=sys.stderr)
    sys.exit(1)
