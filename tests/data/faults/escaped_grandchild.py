#!/usr/bin/env python3
"""Exits 0 at once, leaving a grandchild that leaves the process group (setsid) and holds
stdout and stderr open for 30 s; its pid goes to argv[1]. No group kill reaches it."""

import os
import sys
import time

pid = os.fork()
if pid == 0:
    os.setsid()
    time.sleep(30)
    os._exit(0)
with open(sys.argv[1], "w") as f:
    f.write(str(pid))
print("escaped", flush=True)
