"""A sandbox kept up per role (docs/security.md, "The kept-up sandbox"): one bubblewrap
sandbox for all of a policy's commands, made from the same command line a single
command gets (bwrap.py), with the exec server of server.py inside; each command in
namespaces of its own (PID, mount, IPC), with a fresh /tmp, its processes killed when it
ends. The client side is here:

    box = kept_up(policy, bwrap)      # started on first use; None: use a sandbox a command
    res = box.run(argv, ...) if box else None   # None: it could not take this command

`run` is `proc.collect` over the command's own pipes: time-outs, output caps, the grace,
cancellation and the kill of everything the command started are proc's. The sandbox is
reused only while the mounts a command starting now would get are those it was made with
(a root made since, a hidden path that appeared, a root swapped for a link): otherwise it
is made again, so a command never runs under an older view of the policy.

A kept-up sandbox cannot be made when the policy puts /tmp on disk (`temp_root`), when the
sandbox would hide this Python, or when the kernel refuses the server what it needs (said
once, at debug level): `kept_up` then answers None and the caller makes a sandbox per
command, as before. `ENABLED` switches it off for a whole process (the tests run every
policy test both ways).
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ... import proc
from ...exec_words import server_source
from ...startup import at_leave
from .bwrap import command, mounts, unseen
from .policy import SandboxPolicy
from .spawner import start_server, stop_server

ENABLED = True
# What server.py answers when a command's namespaces cannot be made (server_init.INIT_FAILED;
# not imported: the server's module loads ctypes, which orkeon itself does not need).
INIT_FAILED = "the sandbox's init failed: "
START_TIMEOUT = 20.0  # a loaded CI machine; the server is ready in tens of milliseconds
_REAP_TIMEOUT = 30.0  # the server reaps a command's namespace in microseconds


# What a start the server could not take gives proc_loop (then: a sandbox of its own).
_NOT_TAKEN = proc.ProcResult(None, "", "", 0, 0, 0.0, False, "not taken")


class SessionError(Exception):
    """The kept-up sandbox could not be made, or has gone."""


@cache
def _source() -> str:
    """The server's source (one `-c`, the server imports nothing of orkeon): exec_words.py's
    text, then server_init.py's, then server.py's."""
    here = Path(__file__).parent
    return server_source(here / "server_init.py", here / "server.py")


class _Command:
    """One command of a session, as `proc.collect` watches it: its init's socket is
    readable once it exited (`{"exit": CODE}`), could not start (`{"error": TEXT}`) or
    was killed (the init ended without a word)."""

    __slots__ = ("code", "ended", "error", "exit_fd", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.exit_fd = sock.fileno()
        self.code = -9  # killed, until the init says otherwise
        self.error: str | None = None
        self.ended = False  # the init has ended: nothing of the command is left

    def exited(self) -> bool:
        try:
            got = self.sock.recv(4096)
        except OSError:
            got = b""
        if not got:
            self.ended = True
            return True
        said = json.loads(got)
        if "exit" in said:
            self.code = said["exit"]
        else:
            self.error = said.get("error", "the sandbox's server failed")
        return True

    def signal(self, sig: int) -> None:
        with contextlib.suppress(OSError):
            self.sock.send(json.dumps({"signal": int(sig)}).encode())

    def reap(self) -> int:
        """Wait until the server has reaped the command's namespace (then every process
        of it is gone), killing it first if it still runs."""
        try:
            if not self.ended and self.error is None and self.code == -9:
                # No word from the init: kill it, and wait until its namespace is gone
                # (an init that answered killed what the command left first).
                self.signal(9)
                ready = select.select([self.sock], [], [], _REAP_TIMEOUT)[0]
                while ready and self.sock.recv(4096):
                    ready = select.select([self.sock], [], [], _REAP_TIMEOUT)[0]
        except OSError:
            pass
        finally:
            self.sock.close()
        return self.code


class Session:
    """One kept-up sandbox for `policy`; `run` a command in it. Commands may run at the
    same time, each in its own namespaces."""

    def __init__(self, policy: SandboxPolicy, bwrap: Path) -> None:
        self.policy = policy
        self.view = mounts(policy, None)
        python = os.path.realpath(sys.executable)

        def argv(fd: int) -> list[str]:
            server = [python, "-I", "-S", "-c", _source(), str(fd)]
            return command(policy, server, cwd=policy.workspace, tmp=None, bwrap=bwrap,
                           server=True)  # fmt: skip

        try:
            self.popen, self.sock, answer = start_server(
                argv, cwd=str(policy.workspace), timeout=START_TIMEOUT, stderr=True
            )
        except OSError as exc:
            raise SessionError(f"bubblewrap could not start: {exc}") from None
        if "ready" not in answer:
            self.close()
            assert self.popen.stderr is not None
            said = self.popen.stderr.read().decode(errors="replace").strip().splitlines()
            why = answer.get("error") or (said[-1] if said else "the server did not start")
            raise SessionError(why)
        assert self.popen.stderr is not None
        self.popen.stderr.close()  # the server writes nothing more; bubblewrap only dying

    def current(self) -> bool:
        """Whether a command starting now would see what this sandbox shows: the server
        is up and the policy's mounts are those it was made with."""
        return self.popen.poll() is None and mounts(self.policy, None) == self.view

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout: float,
        env: Mapping[str, str],
        stdin: bytes | None = None,
        cap: int = 1 << 20,
        kill_grace: float = 2.0,
        cancel_check: Callable[[], None] | None = None,
        errors: str = "replace",
        idle: float | None = None,
    ) -> proc.ProcResult | None:
        """`proc.run` of `argv` in this sandbox; None when the server cannot take it (a
        request too large for one message, a server gone): run it in one of its own."""
        started = time.monotonic()
        pipes = proc.Pipes(stdin)
        child = self.start(argv, cwd=cwd, env=env, pipes=pipes)
        if child is None:
            return None
        res = proc.collect(
            child, pipes, started=started, timeout=timeout, cap=cap, kill_grace=kill_grace,
            cancel_check=cancel_check, errors=errors, idle=idle,
        )  # fmt: skip
        return self._said(child, res)

    async def arun(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout: float,
        env: Mapping[str, str],
        cap: int = 1 << 20,
        kill_grace: float = 2.0,
        idle: float | None = None,
    ) -> proc.ProcResult | None:
        """`run` watched by the event loop (`proc_loop.arun`: no worker thread), stdin
        /dev/null, output decoded with "replace"; None as `run`, or when no spare init is
        at hand (asking the server for one would block the loop)."""
        from ... import proc_loop

        made: list[_Command] = []

        def start(argv: list[str], *, pipes: proc.Pipes, **_how: Any) -> Any:
            child = self.start(argv, cwd=cwd, env=env, pipes=pipes, wait=False)
            if child is None:
                return _NOT_TAKEN
            made.append(child)
            return child

        res = await proc_loop.arun(
            list(argv), cwd=cwd, timeout=timeout, cap=cap, kill_grace=kill_grace, idle=idle,
            start=start,
        )  # fmt: skip
        return self._said(made[0], res) if made else None

    def start(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        pipes: proc.Pipes,
        wait: bool = True,
    ) -> _Command | None:
        """Hand `argv` to a spare init on `pipes` (their child ends closed once sent); None
        when it cannot take it (no spare at hand and not `wait`, a server gone, a request
        too large)."""
        # What bubblewrap sets for a command of its own (bwrap.command), set here.
        env = {**env, "TMPDIR": "/tmp", "TMP": "/tmp", "TEMP": "/tmp", "PWD": os.fspath(cwd)}
        request = json.dumps({"argv": list(argv), "cwd": os.fspath(cwd), "env": env})
        link = self._spare(wait)
        if link is None:
            pipes.close()
            return None
        try:
            socket.send_fds(link, [request.encode()], pipes.child_fds())
        except OSError:
            pipes.close()
            link.close()
            return None
        pipes.started()
        return _Command(link)

    def _spare(self, wait: bool) -> socket.socket | None:
        """A spare init's socket: one the server handed over already, else (`wait`) one
        asked for now (commands at the same time); None: the server could not give one."""
        try:
            try:
                fd = self._handed()
            except BlockingIOError:
                if not wait:
                    return None
                self.sock.send(b'{"spare": true}')
                while True:  # another thread may take the one that comes: the next, then
                    if not select.select([self.sock], [], [], START_TIMEOUT)[0]:
                        return None
                    with contextlib.suppress(BlockingIOError):
                        fd = self._handed()
                        break
        except OSError:
            return None
        return socket.socket(fileno=fd) if fd >= 0 else None  # none: {"error"}, or gone

    def _handed(self) -> int:
        """The socket of the next spare the server handed over (-1: it said an error, or
        has gone); BlockingIOError when none is there. (`socket.recv_fds` takes no flags
        on Python 3.11.)"""
        _msg, ancillary, _flags, _addr = self.sock.recvmsg(
            4096, socket.CMSG_LEN(4), socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC
        )
        fds = array.array("i")
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        return fds[0] if fds else -1

    def _said(self, child: _Command, res: proc.ProcResult) -> proc.ProcResult | None:
        """`res`, or what the server said instead: it could not start the command (None
        when the kernel refused the init its namespaces: a sandbox of its own then)."""
        if child.error is not None:
            if child.error.startswith(INIT_FAILED):  # the command never started
                _refuse(self, child.error)
                return None
            return proc.ProcResult(None, "", "", 0, 0, res.seconds, False, child.error)
        return res

    def close(self) -> None:
        """End the sandbox: the server exits when its socket closes, and everything in the
        sandbox with it."""
        stop_server(self.popen, self.sock)


_lock = threading.Lock()
_sessions: dict[SandboxPolicy, Session] = {}
_starting: dict[SandboxPolicy, threading.Lock] = {}
_refused: list[str] = []  # why no kept-up sandbox can be made here, once known


def kept_up(policy: SandboxPolicy, bwrap: Path) -> Session | None:
    """The kept-up sandbox of `policy`, started on its first command; None where none can
    be made (see the module docstring)."""
    if not ENABLED or _refused or policy.temp_root is not None:
        return None
    with _lock:
        found = _sessions.get(policy)
        starting = _starting.setdefault(policy, threading.Lock())
    if found is not None and found.current():
        return found
    with starting:  # one start per policy; others wait for it
        with _lock:
            found = _sessions.get(policy)
        if found is not None:
            if found.current():
                return found
            _drop(policy, found)
        python = os.path.realpath(sys.executable)
        if unseen(policy, python) or unseen(policy, os.path.realpath(sys.base_prefix)):
            return None
        try:
            made = Session(policy, bwrap)
        except SessionError as exc:
            from ... import logs

            _refused.append(str(exc))
            logs.get().debug("no kept-up sandbox here: a sandbox per command", why=str(exc))
            return None
        with _lock:
            _sessions[policy] = made
        return made


def ready(policy: SandboxPolicy) -> Session | None:
    """`policy`'s kept-up sandbox if it is up and current now (never starts one)."""
    if not ENABLED or _refused:
        return None
    with _lock:
        found = _sessions.get(policy)
    return found if found is not None and found.current() else None


def refused() -> str | None:
    """Why no kept-up sandbox can be made here (None: none refused so far)."""
    return _refused[0] if _refused else None


def _refuse(session: Session, why: str) -> None:
    """The kernel refused a command's namespaces: no kept-up sandbox for this process."""
    from ... import logs

    _refused.append(why)
    logs.get().debug("no kept-up sandbox here: a sandbox per command", why=why)
    _drop(session.policy, session)


def _drop(policy: SandboxPolicy, session: Session) -> None:
    with _lock:
        if _sessions.get(policy) is session:
            del _sessions[policy]
    session.close()


def release(policy: SandboxPolicy) -> None:
    """End `policy`'s kept-up sandbox (its role has ended); a later command starts one
    again. A command still running in it is killed."""
    with _lock:
        found = _sessions.pop(policy, None)
    if found is not None:
        found.close()


def release_workspace(workspace: Path) -> None:
    """End every kept-up sandbox of `workspace` (its run has ended: the audit's git keeps
    one for the run), so none outlives the run in a process that runs many
    (`orkeon jobs run`)."""
    with _lock:
        found = [p for p in _sessions if Path(p.workspace) == Path(workspace)]
        sessions = [_sessions.pop(p) for p in found]
    for session in sessions:
        session.close()


@at_leave
def close_all() -> None:
    """End every kept-up sandbox (they would die with orkeon anyway)."""
    with _lock:
        found = list(_sessions.values())
        _sessions.clear()
    for session in found:
        session.close()
