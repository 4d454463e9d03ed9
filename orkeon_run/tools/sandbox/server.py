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

The init's part (its namespaces, the command's start and end, the messages) is
server_init.py.
"""

import _socket
import os
import select
import sys

# As orkeon's module (tests, type checks) these names are imported; as the server,
# exec_words.py's and server_init.py's texts come first in the same source (session.py).
if __package__:
    from ...exec_words import program
    from .server_init import (
        CLONE_NEWPID,
        PR_SET_DUMPABLE,
        REHEARSAL,
        UNUSED,
        _prctl,
        _setns,
        _unshare,
        check,
        make_plan,
        message,
        parse,
        send,
        send_fds,
        spare,
    )  # fmt: skip


class Server:
    def __init__(self, fd):
        self.sock = _socket.socket(fileno=fd)
        os.set_inheritable(fd, False)
        self.pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self.poller = select.poll()
        self.poller.register(self.sock, select.POLLIN)
        self.inits = {}  # pidfd -> pid, every init not reaped yet

    def make_spare(self):
        """Fork the next init and hand orkeon its socket."""
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        try:
            check(_unshare(CLONE_NEWPID), "unshare the PID namespace")
            try:
                pid = os.fork()
                if pid == 0:
                    keep = theirs.fileno()
                    os.closerange(3, keep)
                    os.closerange(keep + 1, 1 << 16)
                    spare(theirs)
            finally:
                check(_setns(self.pidns, CLONE_NEWPID), "setns")
            pidfd = os.pidfd_open(pid)
            self.inits[pidfd] = pid
            self.poller.register(pidfd, select.POLLIN)
            send_fds(self.sock, message("spare", pid), [ours.fileno()])
        finally:
            ours.close()
            theirs.close()

    def offer(self):
        """One more spare for orkeon; what went wrong said instead."""
        try:
            self.make_spare()
        except OSError as exc:
            send(self.sock, "error", f"the sandbox's server failed: {exc}")

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
        check(_prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "not dumpable")
        # No user namespace below this one: a command could map itself a root with every
        # capability in one (what bubblewrap's --disable-userns prevents for one command).
        with open("/proc/sys/user/max_user_namespaces", "w") as f:
            f.write("0")
        make_plan()
    except OSError as exc:
        send(server.sock, "error", f"the sandbox's server could not start: {exc}")
        return
    # What each init does first, done once before any fork: what it makes is then shared.
    try:  # noqa: SIM105  (contextlib is not imported: server_init.py says why)
        program("true", parse(REHEARSAL)["env"])
    except OSError:  # no `true` on the default PATH: nothing to warm
        pass
    server.sock.send(message("ready", os.getpid()))
    server.offer()
    server.serve()


if __name__ == "__main__":
    main()
