"""tmpdir.py MARK [OTHER]: write MARK into $TMPDIR/mark.txt, then print as JSON the
TMPDIR, what the private folder holds, and whether OTHER (a host path) can be seen."""

import json
import os
import sys
import tempfile

folder = tempfile.gettempdir()
before = sorted(os.listdir(folder))
with open(os.path.join(folder, "mark.txt"), "w") as f:
    f.write(sys.argv[1])
other = sys.argv[2] if len(sys.argv) > 2 else None
print(
    json.dumps(
        {
            "TMPDIR": os.environ.get("TMPDIR"),
            "gettempdir": folder,
            "before": before,
            "other_seen": os.path.exists(other) if other else None,
        }
    )
)
