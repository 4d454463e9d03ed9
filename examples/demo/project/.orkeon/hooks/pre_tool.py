"""Demo pre-tool hook: `python3 .orkeon/hooks/pre_tool.py {tool} {path}`.

Refuses writes under calc/generated/ (those files are generated). A non-zero exit refuses
the call; the model reads the first line printed (error output first).

`{path}` is `-` when the path holds a character a command line would have to quote (a
space, `$`, quotes, braces, ...): a guard that matched `-` against calc/generated/ would let
`calc/generated/with space.py` through. So a writing call whose `{path}` is `-` is refused
here; orkeon also passes the full path as ORKEON_HOOK_PATH, and the path is resolved
(`calc/../calc/generated/x.py`, a symlink to the folder) before it is compared.
"""

import os
import sys

WRITES = ("file_write", "file_edit")
GUARDED = "calc/generated"

tool, shown = sys.argv[1], sys.argv[2]
if tool in WRITES:
    if shown == "-":
        full = os.environ.get("ORKEON_HOOK_PATH", "(not shown)")
        print(
            f"refused: the path {full!r} is not shown to this guard as {{path}}; "
            "write to a path of letters, digits and ._/@+=,:- only",
            file=sys.stderr,
        )
        sys.exit(2)
    real = os.path.relpath(os.path.realpath(shown))  # the cwd is the workspace
    if real == GUARDED or real.startswith(GUARDED + "/"):
        print(f"{shown}: calc/generated/ is generated, not edited by hand", file=sys.stderr)
        sys.exit(2)
