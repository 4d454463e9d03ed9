"""userns.py: try to make a user namespace (in which a process would hold every
capability); prints "refused" or "made"."""

import ctypes
import os

CLONE_NEWUSER = 0x10000000
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    os._exit(0 if libc.unshare(CLONE_NEWUSER) == 0 else 1)
_, status = os.waitpid(pid, 0)
print("made" if os.waitstatus_to_exitcode(status) == 0 else "refused")
