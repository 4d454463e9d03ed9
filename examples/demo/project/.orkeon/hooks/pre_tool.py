"""Demo pre-tool hook: `python3 .orkeon/hooks/pre_tool.py {tool} {path}`.

Refuses writes under calc/generated/ (those files are generated). A non-zero exit refuses
the call; the model reads the first line printed (error output first)."""

import sys

tool, path = sys.argv[1], sys.argv[2]
if tool in ("file_write", "file_edit") and path.lstrip("./").startswith("calc/generated/"):
    print(f"{path}: calc/generated/ is generated, not edited by hand", file=sys.stderr)
    sys.exit(2)
