"""daemon.py STARTED MARK: start `sleep MARK` in a session of its own (a daemon that
escapes the process group), then write STARTED and sleep itself."""

import subprocess
import sys
import time

subprocess.Popen(["sleep", sys.argv[2]], start_new_session=True)
subprocess.Popen(["sleep", sys.argv[2]])
with open(sys.argv[1], "w") as f:
    f.write("started")
time.sleep(3600)
