"""The exec server of a kept-up sandbox (docs/security.md, "The kept-up sandbox").

It runs inside one bubblewrap sandbox made from a role's `SandboxPolicy` (bwrap.py, the
same command line a single command gets, plus three capabilities for this server alone),
started as `python -I -S -c SOURCE FD` by session.py: the standard library only, nothing
of orkeon imported (the package may lie where the sandbox hides it). FD is its end of a
SOCK_SEQPACKET socket pair with orkeon.

Spares, and one request a command. The server keeps an init ready for the next command
(pid 1 of a new PID namespace, forked before a command asks for it: a fork costs more
than the command's own start) and hands orkeon its end of the init's socket pair:
`{"spare": PID}` with that socket attached, on the main socket; orkeon asks for one more
with `{"spare": true}` when it has none at hand (commands at the same time). Orkeon sends
the command straight to the init, on that socket: a JSON object `{"argv", "cwd", "env"}`
with the descriptors [stdout, stderr, stdin?] attached (no stdin: /dev/null). The init,
in a new mount and IPC namespace, mounts its own /proc (only its own processes in it), a
fresh /tmp and /dev/shm, makes /dev read-only, drops every capability (bounding set
included; no new privileges is bubblewrap's), and starts the command from `cwd`. When the
command exits the init kills whatever it left in its namespace, sends `{"exit": CODE}`
(128 + N for a signal N) and exits; its /tmp, /dev/shm and SysV IPC objects go with their
namespaces. `{"error": TEXT}` instead: it could not start. The server makes the next
spare once an init that ran a command has exited.

On the init's socket orkeon may send `{"signal": N}`: N reaches every process of the
command's namespace. Orkeon closing that socket kills everything in it. Orkeon closing
the main socket ends the server, and with it the sandbox.

Why a command cannot reach the server: it sees no process outside its namespace (its
/proc is its own), holds none of the server's descriptors (close-on-exec, and closed in
the init), has no capability and cannot get one (no user namespace can be made in the
sandbox: the server sets their limit to 0, as `--disable-userns` would), and the server
is not dumpable.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import select
import signal
import socket
import sys
import warnings  # noqa: F401  os.get_exec_path imports it: here, before the inits are forked (1.2 ms a command)

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID = 0x00020000, 0x08000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAPS = (8, 21, 24)  # CAP_SETPCAP, CAP_SYS_ADMIN, CAP_SYS_RESOURCE: the server's, never a command's
PROC_COVERS = ("sys", "sysrq-trigger", "irq", "bus")  # read-only, as bubblewrap leaves them
PASSED_ON = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
DEFAULTS = (*PASSED_ON, signal.SIGPIPE, signal.SIGXFSZ)  # python's own dispositions, undone
MAX_MESSAGE = 1 << 22

libc = ctypes.CDLL(None, use_errno=True)
UNDER_TMP: list[str] = []  # the sandbox's mounts under /tmp, found when the server starts


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]  # fmt: skip


def check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source, target, fstype, flags, data=None):
    enc = [None if x is None else x.encode() for x in (source, target, fstype, data)]
    check(libc.mount(enc[0], enc[1], enc[2], flags, enc[3]), f"mount {target}")


def drop_capabilities():
    """No capability left in any set; the bounding set emptied of what the server kept."""
    for cap in CAPS:
        check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop the bounding set")
    check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient")
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    check(libc.capset(ctypes.byref(header), data), "capset")


def mounted_under(top):
    """The mount points right under the mount that shows `top` (the workspace and the
    policy's paths, when they lie in /tmp), from this sandbox's mount table; those the
    mounts on `top` cover (the host's own, under the host's /tmp) are not among them."""
    entries = []  # (mount id, parent id, mount point)
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split(" ", 5)
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            entries.append((fields[0], fields[1], point))
    on_top = [e for e in entries if e[2] == top]
    covered = {e[1] for e in on_top}
    shown = [e[0] for e in on_top if e[0] not in covered]
    if not shown:
        return []
    return sorted({point for _id, parent, point in entries if parent == shown[-1] and point != top})


def fresh_tmp(under):
    """A new, empty /tmp holding again what the sandbox mounted under its own (`under`),
    bound from the old one with every mount below (their read-only state with them)."""
    old = os.open("/tmp", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for point in under:
        source = f"/proc/self/fd/{old}{point[len('/tmp') :]}"
        if os.path.isdir(source):
            os.makedirs(point, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(point), exist_ok=True)
            os.close(os.open(point, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
        mount(source, point, None, MS_BIND | MS_REC)
    os.close(old)


def own_namespace(under_tmp):
    """In the init: the command's mounts, in a mount namespace of its own."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the server's
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for name in PROC_COVERS:
        path = "/proc/" + name
        if os.path.exists(path):
            mount(path, path, None, MS_BIND | MS_REC)
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
                  | MS_NOEXEC)  # fmt: skip
    fresh_tmp(under_tmp)
    # /dev is the sandbox's, shared by every command: read-only here (its devices, each a
    # mount of its own, stay usable), /dev/shm a fresh one.
    mount(None, "/dev", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    if os.path.isdir("/dev/shm"):
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")


def program(argv0, env):
    """The file `argv0` names, found on the command's PATH as execvp would."""
    if "/" in argv0:
        return argv0
    for folder in os.get_exec_path(env):
        candidate = os.path.join(folder, argv0)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(2, "No such file or directory", argv0)


def could_not_run(prog, exc):
    """The words proc uses for a program that cannot start."""
    if exc.errno == errno.ENOENT:
        return f"no such program: {prog}"
    if exc.errno == errno.EACCES:
        return f"permission denied: {prog}"
    if exc.errno == errno.ENOEXEC:
        return f"not an executable (a script needs a #! line): {prog}"
    return f"{exc.strerror or exc}: {prog}"


def send(sock, obj):
    with contextlib.suppress(OSError):  # orkeon has gone: nothing to tell
        sock.send(json.dumps(obj).encode())


INIT_FAILED = "the sandbox's init failed: "  # session.py makes a sandbox per command then


UNUSED = 3  # an init's exit code when orkeon let go of it before any command


def spare(link):
    """pid 1 of a new PID namespace, made ready before a command asks for it: its mount
    and IPC namespaces made, capabilities dropped; then it waits on `link` for one
    command from orkeon. Never returns. When the namespaces cannot be made, the command
    is answered INIT_FAILED and why."""
    code = 127
    failed = None
    try:
        check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "die with the server")
        check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
        own_namespace(UNDER_TMP)
        drop_capabilities()
    except OSError as exc:
        failed = str(exc)
    try:
        woken = rehearse()
        msg, fds, _flags, _addr = socket.recv_fds(link, MAX_MESSAGE, 3)
        if not msg:
            os._exit(UNUSED)  # orkeon let go of it, or the server is closing
        for got in fds:  # so that the command gets none but its 0, 1 and 2
            os.set_inheritable(got, False)
        if failed is not None:
            raise RuntimeError(failed)
        stdin = fds[2] if len(fds) > 2 else os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        code = run(json.loads(msg), link, [stdin, fds[0], fds[1]], woken)
    except BaseException as exc:  # an init must end, whatever went wrong
        send(link, {"error": INIT_FAILED + str(exc)})
    os._exit(code)


def rehearse():
    """What a command's start does that needs no command, done while the init waits for
    one: SIGCHLD's wake-up pipe (its read end returned), and a rehearsal of the rest. An
    init is a fork of the server, and the first touch of each page of the interpreter's
    memory copies it: 0.5 ms of a command's start, moved off its path."""
    woken, wake = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake)  # SIGCHLD wakes the command's poll
    signal.signal(signal.SIGCHLD, lambda _n, _frame: None)
    request = json.loads(json.dumps({"argv": ["true"], "cwd": "/", "env": {"PATH": os.defpath}}))
    with contextlib.suppress(OSError):
        os.chdir(request["cwd"])
        program(request["argv"][0], request["env"])
    select.poll().register(woken, select.POLLIN)
    return woken


def sweep():
    """Kill every other process of this namespace and reap them: none is left after."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while True:
            os.waitpid(-1, 0)


def run(request, link, stdio, woken):
    """Start the command, wait for it (passing on the signals orkeon sends on `link`),
    kill what it left, say how it ended."""
    env = request["env"]
    try:
        os.chdir(request["cwd"])
    except OSError as exc:
        send(link, {"error": f"cannot use the working directory {request['cwd']}: "
                             f"{exc.strerror}"})  # fmt: skip
        return 127
    actions = [(os.POSIX_SPAWN_DUP2, fd, n) for n, fd in enumerate(stdio)]
    try:
        child = os.posix_spawn(
            program(request["argv"][0], env), request["argv"], env,
            file_actions=actions, setsid=True, setsigdef=DEFAULTS, setsigmask=(),
        )  # fmt: skip
    except OSError as exc:
        send(link, {"error": could_not_run(request["argv"][0], exc)})
        return 127
    for fd in stdio:
        os.close(fd)
    poller = select.poll()
    poller.register(woken, select.POLLIN)
    poller.register(link, select.POLLIN)
    status = None
    while status is None:
        for fd, _ev in poller.poll():
            if fd == woken:
                with contextlib.suppress(BlockingIOError):
                    os.read(woken, 512)
            else:
                said = b""
                with contextlib.suppress(OSError):
                    said = link.recv(256)
                if not said:  # orkeon let go of the command: it goes, and all it started
                    sweep()
                    return 0
                with contextlib.suppress(ProcessLookupError):
                    os.kill(-1, int(json.loads(said)["signal"]))
        # Every process that ended, reaped (orphans come to pid 1), the command's status.
        with contextlib.suppress(ChildProcessError):
            while True:
                pid, got = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == child:
                    status = got
    # Whatever the command left goes before orkeon hears it ended: nothing of it is left
    # when its call returns.
    sweep()
    got = os.waitstatus_to_exitcode(status)
    send(link, {"exit": 128 - got if got < 0 else got})
    return 0


class Server:
    def __init__(self, fd):
        self.sock = socket.socket(fileno=fd)
        self.sock.set_inheritable(False)
        self.pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self.poller = select.poll()
        self.poller.register(self.sock, select.POLLIN)
        self.inits = {}  # pidfd -> pid, every init not reaped yet

    def make_spare(self):
        """Fork the next init and hand orkeon its socket."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            check(libc.unshare(CLONE_NEWPID), "unshare the PID namespace")
            try:
                pid = os.fork()
                if pid == 0:
                    keep = theirs.fileno()
                    os.closerange(3, keep)
                    os.closerange(keep + 1, 1 << 16)
                    spare(theirs)
            finally:
                check(libc.setns(self.pidns, CLONE_NEWPID), "setns")
            pidfd = os.pidfd_open(pid)
            self.inits[pidfd] = pid
            self.poller.register(pidfd, select.POLLIN)
            socket.send_fds(self.sock, [json.dumps({"spare": pid}).encode()], [ours.fileno()])
        finally:
            ours.close()
            theirs.close()

    def offer(self):
        """One more spare for orkeon; what went wrong said instead."""
        try:
            self.make_spare()
        except OSError as exc:
            send(self.sock, {"error": f"the sandbox's server failed: {exc}"})

    def serve(self):
        while True:
            for fd, _ev in self.poller.poll():
                if fd == self.sock.fileno():
                    try:
                        msg = self.sock.recv(256)
                    except OSError:
                        msg = b""
                    if not msg:
                        return  # orkeon closed the session
                    self.offer()  # {"spare": true}
                elif fd in self.inits:
                    pid = self.inits.pop(fd)
                    self.poller.unregister(fd)
                    os.close(fd)
                    _pid, status = os.waitpid(pid, 0)
                    if os.waitstatus_to_exitcode(status) != UNUSED:
                        self.offer()  # the next one, made once the last has ended


def main():
    fd = int(sys.argv[1])
    os.closerange(3, fd)
    os.closerange(fd + 1, 1 << 16)
    null = os.open("/dev/null", os.O_RDWR)
    for n in (0, 1, 2):
        os.dup2(null, n)
    os.close(null)
    server = Server(fd)
    try:
        check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "not dumpable")
        # No user namespace below this one: a command could map itself a root with every
        # capability in one (what bubblewrap's --disable-userns prevents for one command).
        with open("/proc/sys/user/max_user_namespaces", "w") as f:
            f.write("0")
        UNDER_TMP[:] = mounted_under("/tmp")
    except OSError as exc:
        send(server.sock, {"error": f"the sandbox's server could not start: {exc}"})
        return
    server.sock.send(json.dumps({"ready": os.getpid()}).encode())
    server.offer()
    server.serve()


if __name__ == "__main__":
    main()
