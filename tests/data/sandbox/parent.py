"""parent.py WORKSPACE MARK PIDFILE MODE: an orkeon-like parent that writes its pid to
PIDFILE and runs `sleep MARK` in a sandbox with the workspace (MODE: "kept-up", the
policy's kept-up sandbox, or "per-call", one of its own); the test SIGKILLs it."""

import os
import sys
from pathlib import Path

from orkeon_run.tools.sandbox import SandboxPolicy, run, session

session.ENABLED = sys.argv[4] == "kept-up"

ws = Path(sys.argv[1])
Path(sys.argv[3]).write_text(str(os.getpid()))
policy = SandboxPolicy.for_role(ws, None, run_dir=None)
run(policy, ["sleep", sys.argv[2]], cwd=ws, timeout=3600, env={"PATH": os.environ["PATH"]})
