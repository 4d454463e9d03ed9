#!/usr/bin/env python3
"""Forks a grandchild that leaves the process group (setsid), keeps stdout and stderr open
for 10 minutes (the test kills it), and whose pid goes to argv[1]; the script itself exits
at once. No group kill can reach the grandchild: the caller must stop waiting for the
pipes on its own."""

import os
import sys
import time

pid = os.fork()
if pid == 0:
    os.setsid()
    time.sleep(600)
    os._exit(0)
with open(sys.argv[1], "w") as f:
    f.write(str(pid))
print("parent done", flush=True)
