"""traces.py leave MARK | look: `leave` leaves what a command could leave behind for the
next one in a shared sandbox (a daemon `sleep MARK` in a session of its own, a file in
/tmp and in /dev/shm, a SysV shared memory segment, a SysV message queue) and exits;
`look` prints as JSON which of them it finds, and what it can see of other processes
and descriptors."""

import ctypes
import json
import os
import subprocess
import sys

IPC_PRIVATE, IPC_CREAT = 0, 0o1000
libc = ctypes.CDLL(None, use_errno=True)


def sysv(kind: str) -> list[str]:
    with open(f"/proc/sysvipc/{kind}") as f:
        return f.read().splitlines()[1:]


if sys.argv[1] == "leave":
    subprocess.Popen(["sleep", sys.argv[2]], start_new_session=True)
    for path in ("/tmp/left", "/dev/shm/left"):
        with open(path, "w") as f:
            f.write("left")
    assert libc.shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600) >= 0
    assert libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600) >= 0
    assert sysv("shm") and sysv("msg")
    print("left")
else:
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    print(
        json.dumps(
            {
                "tmp": os.listdir("/tmp"),
                "shm": os.listdir("/dev/shm"),
                "sysv": sysv("shm") + sysv("msg"),
                "pids": pids,
                "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
            }
        )
    )
