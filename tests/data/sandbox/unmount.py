"""unmount.py PATH...: try to lift the sandbox's mounts on each PATH (unmount it, or
remount it read-write), then to write PATH/probe; prints one line per attempt that
worked and exits 0 only when none did."""

import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
MNT_DETACH, MS_REMOUNT, MS_BIND = 2, 32, 4096
worked = []
for path in sys.argv[1:]:
    raw = os.fsencode(path)
    if libc.umount2(raw, MNT_DETACH) == 0:
        worked.append(f"unmounted {path}")
    if libc.mount(None, raw, None, MS_REMOUNT | MS_BIND, None) == 0:
        worked.append(f"remounted {path} read-write")
    try:
        with open(os.path.join(path, "probe"), "w") as f:
            f.write("x")
        worked.append(f"wrote {path}/probe")
    except OSError:
        pass
print("\n".join(worked))
sys.exit(1 if worked else 0)
