"""The spawner inside the hooks' kept-up veil (docs/security.md, "Hooks"; veil.py starts it).

It runs under the veil's bubblewrap (a PID namespace with `/proc` mounted for it,
everything else as on the host), started as `python -I -S -c SOURCE FD` by veil.py: the
standard library only, nothing of orkeon imported. FD is its end of a SOCK_SEQPACKET
socket pair with orkeon.

One request a hook, on that socket: a JSON object `{"argv", "cwd", "env", "program"?}`
(program: the file argv[0] names, looked up by orkeon; else looked up here) with the
descriptors [reply socket, stdout, stderr, stdin?] attached (no stdin: /dev/null). The
server starts the program from `cwd` in a session of its own, as orkeon's `proc` starts
one, and answers on the reply socket `{"exit": STATUS}` once it exited (negative: the
signal that killed it) or `{"error": TEXT}` when it could not start. The exited program
is left a zombie (its process group id stays reserved) until orkeon closes the reply
socket: then its group gets SIGKILL and it is reaped, what `proc` does with a child of
its own. `{"signal": N}` on the reply socket sends N to the program's group.

When no hook runs, whatever a hook left outside its group (a daemon that called setsid)
is killed; the veil's namespace ends with orkeon (bubblewrap's `--die-with-parent`), and
everything in it. The server is not dumpable: a hook cannot read its memory.
"""

# No `from __future__` here: exec_words.py's text comes first in the spawner's source
# (veil.py), with `program` and the words for a program that cannot start.
import array
import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys

if __package__:  # orkeon's module (type checks); the spawner has the text itself
    from ...exec_words import bad_cwd, could_not_run, program

MAX_MESSAGE = 1 << 22
DEFAULTS = (signal.SIGPIPE, signal.SIGXFSZ)  # python's own dispositions, undone
PR_SET_DUMPABLE = 4


def send(sock, obj):
    with contextlib.suppress(OSError):  # orkeon let go of it: nothing to tell
        sock.send(json.dumps(obj).encode())


def killpg(pid, sig):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class Server:
    def __init__(self, fd):
        self.sock = socket.socket(fileno=fd)
        self.null = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        # One buffer for every request: socket.recv_fds makes a 4 MB one for each (an
        # mmap, a shrink and an munmap per hook, the munmap's TLB flush a cross-CPU call).
        self.buf = bytearray(MAX_MESSAGE)
        self.poller = select.poll()
        self.poller.register(self.sock, select.POLLIN)
        self.by_pidfd = {}  # pidfd -> pid, while the program runs
        self.by_reply = {}  # reply fd -> (pid, reply socket, pidfd or -1 once it exited)
        self.left = set()  # pids orkeon let go of while they still ran (SIGKILL sent)

    def start(self, msg, fds):
        reply = socket.socket(fileno=fds[0])
        stdio = [fds[3] if len(fds) > 3 else self.null, fds[1], fds[2]]
        try:
            request = json.loads(msg)
            argv, env = request["argv"], request["env"]
            try:
                os.chdir(request["cwd"])
            except OSError as exc:
                send(reply, {"error": bad_cwd(request["cwd"], exc.strerror)})
                return reply.close()
            actions = [(os.POSIX_SPAWN_DUP2, fd, n) for n, fd in enumerate(stdio)]
            try:
                pid = os.posix_spawn(request.get("program") or program(argv[0], env), argv, env, file_actions=actions,
                                     setsid=True, setsigdef=DEFAULTS, setsigmask=())  # fmt: skip
            except OSError as exc:
                send(reply, {"error": could_not_run(argv[0], exc)})
                return reply.close()
        finally:
            for fd in fds[1:]:
                os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.by_pidfd[pidfd] = pid
        self.by_reply[reply.fileno()] = (pid, reply, pidfd)
        self.poller.register(pidfd, select.POLLIN)
        self.poller.register(reply, select.POLLIN)

    def exited(self, pidfd):
        """The program ended: say how, keep it a zombie until orkeon lets go."""
        pid = self.by_pidfd.pop(pidfd)
        self.poller.unregister(pidfd)
        os.close(pidfd)
        if pid in self.left:
            self.left.discard(pid)
            return self.reap(pid)
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # its pidfd said it exited
        assert info is not None
        status = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        for fd, (got, reply, _pidfd) in self.by_reply.items():
            if got == pid:
                self.by_reply[fd] = (pid, reply, -1)
                send(reply, {"exit": status})
                break

    def said(self, fd):
        pid, reply, pidfd = self.by_reply[fd]
        try:
            got = reply.recv(256)
        except OSError:
            got = b""
        if got:
            killpg(pid, int(json.loads(got)["signal"]))
            return
        del self.by_reply[fd]
        self.poller.unregister(fd)
        reply.close()
        killpg(pid, signal.SIGKILL)  # the group goes with it, as proc's reap does
        if pidfd >= 0:  # still running: reaped once its exit is seen
            self.left.add(pid)
            return
        self.reap(pid)

    def reap(self, pid):
        os.waitpid(pid, 0)
        if not self.by_pidfd and not self.by_reply:
            # No hook runs: what one left outside its group goes too (not pid 1, not us).
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)

    def receive(self):
        """A request and its descriptors, these close-on-exec as they arrive: a hook gets
        none but its 0, 1 and 2 (socket.recv_fds drops its flags on Python 3.11)."""
        fds = array.array("i")
        n, ancillary, _flags, _addr = self.sock.recvmsg_into(
            [self.buf], socket.CMSG_LEN(4 * fds.itemsize), socket.MSG_CMSG_CLOEXEC
        )
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        return bytes(memoryview(self.buf)[:n]), list(fds)

    def serve(self):
        while True:
            for fd, _ev in self.poller.poll():
                if fd == self.sock.fileno():
                    msg, fds = self.receive()
                    if not msg:
                        return  # orkeon closed the veil
                    self.start(msg, fds)
                elif fd in self.by_pidfd:
                    self.exited(fd)
                elif fd in self.by_reply:
                    self.said(fd)


def main():
    fd = int(sys.argv[1])
    os.closerange(3, fd)
    os.closerange(fd + 1, 1 << 16)
    os.set_inheritable(fd, False)
    null = os.open("/dev/null", os.O_RDWR)
    for n in (0, 1, 2):
        os.dup2(null, n)
    os.close(null)
    server = Server(fd)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        send(server.sock, {"error": "the veil's server could not make itself undumpable"})
        return
    server.sock.send(json.dumps({"ready": os.getpid()}).encode())
    server.serve()


if __name__ == "__main__":
    main()
