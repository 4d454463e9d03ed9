"""The forwarder that runs first inside a sandbox with an allow-list (docs/security.md,
"Network"): the sandbox has a network namespace of its own, with nothing but its own
loopback, and orkeon's proxy is a Unix socket bind-mounted into it (`SOCKET`).

The forwarder listens on 127.0.0.1 of the sandbox's loopback (a free port), starts the
command with `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and their lower-case forms) naming
that port, and copies each connection to the proxy's socket and back. It waits for the
command, passes on the signals orkeon sends (SIGTERM, SIGINT, SIGHUP), and ends as the
command ended (its exit code, or the same signal), so the sandbox's exit status is the
command's.

It is run as `python -I -S -c CODE SOCKET -- ARGV...` with the interpreter orkeon runs on:
no file of orkeon's needs to be visible in the sandbox, and no site-packages are read. It
imports only C modules (`_socket`, `_thread`, `_signal`, `select`): `socket` and
`threading` would add tens of milliseconds to every command.
"""

from __future__ import annotations

import os
import sys

# Where the proxy's socket is mounted in the sandbox: /dev is the sandbox's own folder
# (bubblewrap's --dev), so the mount needs no folder of the host.
SOCKET = "/dev/orkeon-egress.sock"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
# The sandbox's own loopback is not the proxy's business.
NO_PROXY = "localhost,127.0.0.1,::1"

CODE = r"""
import os, sys, select, _signal as signal, _socket as socket, _thread
sock_path, argv = sys.argv[1], sys.argv[3:]
lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lst.bind(("127.0.0.1", 0))
lst.listen(64)
url = "http://127.0.0.1:" + str(lst.getsockname()[1])
env = dict(os.environ)
for name in @VARS@:
    env[name] = url
env["NO_PROXY"] = env["no_proxy"] = @NO_PROXY@
pid = os.fork()
if pid == 0:
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        os.write(2, (argv[0] + ": " + str(exc.strerror or exc) + "\n").encode())
        os._exit(127)
def relay(sig, frame):
    try:
        os.kill(pid, sig)
    except OSError:
        pass
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, relay)
def pump(a):
    try:
        b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        b.connect(sock_path)
    except OSError:
        a.close()
        return
    peer = {a: b, b: a}
    try:
        while peer:
            ready, _, _ = select.select(list(peer), [], [])
            for r in ready:
                data = r.recv(65536)
                if data:
                    peer[r].sendall(data)
                else:
                    other = peer.pop(r)
                    try:
                        other.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
    except OSError:
        pass
    finally:
        a.close()
        b.close()
def serve():
    while True:
        fd, _ = lst._accept()
        _thread.start_new_thread(pump, (socket.socket(fileno=fd),))
_thread.start_new_thread(serve, ())
while True:
    try:
        _, status = os.waitpid(pid, 0)
        break
    except InterruptedError:
        continue
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
""".replace("@VARS@", repr(PROXY_VARS)).replace("@NO_PROXY@", repr(NO_PROXY))


def interpreter() -> str:
    """The Python the forwarder runs on: orkeon's own, by its real path."""
    return os.path.realpath(sys.executable)


def wrapped(argv: list[str] | tuple[str, ...]) -> list[str]:
    """`argv` run behind the forwarder, inside the sandbox."""
    return [interpreter(), "-I", "-S", "-c", CODE, SOCKET, "--", *argv]
