"""The one helper that runs an external program: native hooks, settings-shape hooks, the
shell tool and the audit all go through `run` (or `proc_loop.arun` from async code).

Contract:
- argv only, never a shell; stdin is /dev/null unless bytes are given, and a child that
  does not read them neither hangs us nor raises BrokenPipe.
- The child starts a new session, so it and everything it forks share one process group.
- stdout and stderr are read through one poll loop in the calling thread, each kept up to
  `cap` bytes; the rest is counted and dropped, so a child printing 100 MB costs no memory.
- On time-out the whole group gets SIGTERM, then SIGKILL after `kill_grace` seconds. With
  `idle`, so it does when the child has printed nothing (on stdout or stderr) for `idle`
  seconds and not ended: the no-progress watchdog (`ProcResult.idle`).
- When the direct child has exited but something it forked still holds the pipes open,
  reading stops after `PIPE_GRACE` seconds and the group is killed: we never wait on a
  grandchild. After SIGTERM the wait lasts until SIGKILL is due instead: the grace belongs
  to the whole group, so a script under a wrapper shell that dies at once still gets it.
- A program that cannot run (missing, not executable, bad cwd) is a `ProcResult` with
  `error`, never an exception.
- The child's environment is `env` with the trace context of the span the calling task
  runs under (`environ.traced`: TRACEPARENT, TRACESTATE) when the run records a trace.
- `proc_loop.arun` is `run` for async code (the event loop watches the child); cancelling
  its task stops the group the same way (SIGTERM, SIGKILL after `kill_grace`), so no
  child outlives a cancelled role.

The child's exit is watched through a pidfd (Linux >= 5.3) in the same poll set, which
tells us it exited without reaping it: the zombie keeps the process-group id reserved
until the last `killpg`, so a recycled pid can never be signalled by mistake.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .environ import traced
from .exec_words import bad_cwd, could_not_run

# How long to keep reading once the direct child has exited but the pipes are still open.
PIPE_GRACE = 0.08
# How often a run with a cancel_check asks whether its caller was cancelled.
CANCEL_POLL = 0.1
_READ_SIZE = 1 << 16
_PIPE_BUF = getattr(select, "PIPE_BUF", 512)
_HAS_PIDFD = hasattr(os, "pidfd_open")
_POLLIN = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
_POLLOUT = select.POLLOUT | select.POLLHUP | select.POLLERR


@dataclass(frozen=True)
class ProcResult:
    """What one run gave. `exit_code` is None when the program could not run (`error` says
    why) or was killed on time-out (`timed_out`). A child killed by a signal we did not
    send reads as a shell shows it: 128 + the signal number."""

    exit_code: int | None
    stdout: str
    stderr: str
    stdout_dropped: int
    stderr_dropped: int
    seconds: float
    timed_out: bool
    error: str | None
    # Stopped by the watchdog: no output for `idle` seconds (timed_out is then True too).
    idle: bool = False

    def first_line(self) -> str:
        """The first non-blank line of stderr, else of stdout, else "" (stripped)."""
        for text in (self.stderr, self.stdout):
            for line in text.splitlines():
                line = line.strip()
                if line:
                    return line
        return ""


def could_not_start(prog: str, cwd: Path, exc: OSError) -> str:
    """Why `prog` did not start from `cwd` (exec_words.py: the one wording of it)."""
    if exc.filename is not None and os.fsdecode(exc.filename) == os.fsdecode(cwd):
        return bad_cwd(cwd, exc.strerror or str(exc))
    return could_not_run(prog, exc)


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _exit_code(status: int) -> int:
    return 128 - status if status < 0 else status


class Child(Protocol):
    """A started command as `collect` watches it: a process orkeon spawned (`_Spawned`),
    or a command of a kept-up sandbox (tools/sandbox/session.py)."""

    exit_fd: int  # readable once the command may have exited; -1: ask `exited` every 10 ms

    def exited(self) -> bool:
        """Whether the command has exited (called when `exit_fd` is readable, or often)."""

    def signal(self, sig: int) -> None:
        """Send `sig` to the command and everything it started."""

    def reap(self) -> int:
        """Kill whatever is left of the command, wait for it, and give its wait status
        (negative: the signal that killed it)."""


class _Spawned:
    """A child of this process in a session of its own, watched through a pidfd."""

    __slots__ = ("exit_fd", "pid", "popen")

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.exit_fd = -1
        if _HAS_PIDFD:
            with contextlib.suppress(OSError):
                self.exit_fd = os.pidfd_open(self.pid)

    def exited(self) -> bool:
        if self.exit_fd >= 0:
            return True
        # Peek at the child without reaping it, so its pgid stays reserved.
        info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return info is not None and info.si_pid == self.pid

    def signal(self, sig: int) -> None:
        _killpg(self.pid, sig)

    def reap(self) -> int:
        if self.exit_fd >= 0:
            os.close(self.exit_fd)
        # Whatever the child left in its group (finished or not) goes with it. The child is
        # not reaped yet, so the group id cannot belong to anyone else.
        _killpg(self.pid, signal.SIGKILL)
        return self.popen.wait()


def run(
    argv: list[str],
    *,
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    cap: int = 1 << 20,
    kill_grace: float = 2.0,
    cancel_check: Callable[[], None] | None = None,
    errors: str = "replace",
    idle: float | None = None,
) -> ProcResult:
    """Run `argv` in `cwd` for at most `timeout` seconds. See the module docstring.

    `cancel_check`, when given, is called about every CANCEL_POLL seconds while the child
    runs; if it raises, the group is stopped as on a time-out (SIGTERM, then SIGKILL after
    `kill_grace`) and, once the child is reaped, the exception is raised again.

    `errors` is how bytes that are not UTF-8 are decoded: "surrogateescape" keeps file
    names exact (`os.fsencode` gives the bytes back). `env` None: orkeon's environment
    scrubbed (`environ.scrubbed`), never orkeon's own as it is."""
    started = time.monotonic()
    pipes = Pipes(stdin)
    child = spawn(argv, cwd=cwd, env=env, pipes=pipes, started=started)
    if isinstance(child, ProcResult):
        return child
    return collect(
        child, pipes, started=started, timeout=timeout, cap=cap, kill_grace=kill_grace,
        cancel_check=cancel_check, errors=errors, idle=idle,
    )  # fmt: skip


def spawn(
    argv: list[str], *, cwd: Path, env: Mapping[str, str] | None, pipes: Pipes, started: float
) -> _Spawned | ProcResult:
    """Start `argv` on `pipes`, in a session of its own (`env` None: orkeon's environment
    scrubbed); a program that cannot run is a ProcResult with `error` (and `pipes` closed)."""
    if env is None:
        from .environ import scrubbed

        env = scrubbed()
    env = traced(env)  # in the starting task (or its thread): the span it runs under
    try:
        if not argv or not argv[0]:
            raise ValueError("the command is empty")
        popen = subprocess.Popen(
            argv, cwd=cwd, env=env, start_new_session=True,
            stdin=subprocess.DEVNULL if pipes.child_in < 0 else pipes.child_in,
            stdout=pipes.child_out, stderr=pipes.child_err,
        )  # fmt: skip
    except OSError as exc:
        pipes.close()
        why = could_not_start(argv[0], cwd, exc)
        return ProcResult(None, "", "", 0, 0, time.monotonic() - started, False, why)
    except ValueError as exc:  # that, or an embedded NUL in argv or env
        pipes.close()
        return ProcResult(None, "", "", 0, 0, time.monotonic() - started, False, str(exc))
    pipes.started()
    return _Spawned(popen)


class Pipes:
    """The pipes of one command: stdout, stderr and, when `stdin` is bytes, stdin. The
    child's ends (`child_*`) are closed by `started()` once it has them."""

    __slots__ = ("child_err", "child_in", "child_out", "err", "input", "out", "to_in")

    def __init__(self, stdin: bytes | None) -> None:
        self.out, self.child_out = os.pipe()
        self.err, self.child_err = os.pipe()
        self.child_in = self.to_in = -1
        self.input = stdin
        if stdin is not None:
            self.child_in, self.to_in = os.pipe()

    def child_fds(self) -> list[int]:
        """The child's ends, stdout, stderr (and stdin when given)."""
        return [self.child_out, self.child_err, *([self.child_in] if self.child_in >= 0 else [])]

    def started(self) -> None:
        for fd in self.child_fds():
            if fd >= 0:
                os.close(fd)
        self.child_out = self.child_err = self.child_in = -1

    def close(self) -> None:
        self.started()
        for fd in (self.out, self.err, self.to_in):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.out = self.err = self.to_in = -1


def collect(
    child: Child,
    pipes: Pipes,
    *,
    started: float,
    timeout: float,
    cap: int,
    kill_grace: float,
    cancel_check: Callable[[], None] | None,
    errors: str,
    idle: float | None = None,
) -> ProcResult:
    """Read a started command's output until it exited, and reap it: the time-out, the
    grace, the caps, the watchdog (`idle`) and the cancellation of `run` (module
    docstring). Closes `pipes`."""
    deadline = started + max(timeout, 0.0)
    heard = started  # when the child last printed something (the watchdog's clock)
    silent = False  # stopped by the watchdog
    out_fd, err_fd = pipes.out, pipes.err
    bufs: dict[int, bytearray] = {out_fd: bytearray(), err_fd: bytearray()}
    scratch = bytearray(_READ_SIZE)
    scratch_view = memoryview(scratch)
    dropped = {out_fd: 0, err_fd: 0}
    poller = select.poll()
    poller.register(out_fd, _POLLIN)
    poller.register(err_fd, _POLLIN)
    reading = 2

    in_fd = -1
    in_view = memoryview(pipes.input or b"")
    in_off = 0
    if pipes.to_in >= 0:
        if in_view:
            in_fd = pipes.to_in
            poller.register(in_fd, _POLLOUT)
        else:
            os.close(pipes.to_in)
            pipes.to_in = -1
    exit_fd = child.exit_fd
    if exit_fd >= 0:
        poller.register(exit_fd, select.POLLIN)

    exited = False  # the direct child has exited (not yet reaped)
    timed_out = False
    cancelled: BaseException | None = None  # what cancel_check raised
    term_sent = False  # SIGTERM went to the group (time-out or cancellation)
    killed = False  # SIGKILL went to the group
    kill_at = 0.0  # after SIGTERM: when SIGKILL follows
    stop_at = 0.0  # once the child has exited: when to stop waiting for the pipes

    try:
        while True:
            now = time.monotonic()
            quiet = idle is not None and now >= heard + idle
            if not term_sent and not exited and (now >= deadline or cancelled is not None or quiet):
                timed_out = cancelled is None
                silent = quiet and cancelled is None and now < deadline
                term_sent = True
                kill_at = now + kill_grace
                child.signal(signal.SIGTERM)
            if term_sent and not killed and now >= kill_at:
                killed = True
                child.signal(signal.SIGKILL)
            if exited:
                if not reading and in_fd < 0:
                    break
                if not stop_at:
                    # Once SIGTERM is out, the grace is the group's: a wrapper shell that
                    # dies at once must not cut short the script it started (dash's `-c`
                    # does not exec its last command).
                    stop_at = max(now + PIPE_GRACE, kill_at if term_sent and not killed else 0.0)
                elif now >= stop_at:
                    break  # something the child forked holds the pipes: the group dies below

            if exited:
                wait = stop_at - now
            elif killed:
                wait = 0.05  # SIGKILL is on its way; the exit fd wakes us sooner
            elif term_sent:
                wait = kill_at - now
            else:
                wait = deadline - now if idle is None else min(deadline, heard + idle) - now
            if exit_fd < 0 and not exited:
                wait = min(wait, 0.01)  # no exit fd: look at the child every 10 ms
            if cancel_check is not None and cancelled is None:
                wait = min(wait, CANCEL_POLL)
            try:
                events = poller.poll(max(wait, 0.0) * 1000.0 + 0.5)
            except InterruptedError:
                continue

            for fd, ev in events:
                if fd == exit_fd:
                    if child.exited():
                        exited = True
                        poller.unregister(exit_fd)
                        exit_fd = -2  # watched no more (and not "poll the child")
                elif fd == in_fd:
                    try:
                        in_off += os.write(in_fd, in_view[in_off : in_off + _PIPE_BUF])
                    except OSError:  # BrokenPipe: the child does not read its stdin
                        in_off = len(in_view)
                    if in_off >= len(in_view):
                        poller.unregister(in_fd)
                        in_fd = -1
                        with contextlib.suppress(OSError):
                            os.close(pipes.to_in)
                        pipes.to_in = -1
                else:
                    # Into one buffer read after read: a child printing 100 MB in
                    # reads of whatever size the pipe gives makes no garbage, so orkeon's
                    # memory does not depend on how fast the child writes.
                    n = os.readv(fd, [scratch]) if ev & _POLLIN else 0
                    if not n:
                        poller.unregister(fd)
                        reading -= 1
                        continue
                    heard = time.monotonic()
                    buf = bufs[fd]
                    room = cap - len(buf)
                    if room > 0:
                        buf += scratch_view[: min(n, room)]
                    if n > room:
                        dropped[fd] += n - max(room, 0)

            if cancel_check is not None and cancelled is None:
                try:
                    cancel_check()
                except BaseException as exc:  # the caller's cancellation, whatever its class
                    cancelled = exc
            if exit_fd == -1 and not exited:
                exited = child.exited()
    finally:
        pipes.close()
        status = child.reap()
    if cancelled is not None:
        raise cancelled

    return ProcResult(
        exit_code=None if timed_out else _exit_code(status),
        stdout=bufs[out_fd].decode("utf-8", errors=errors),
        stderr=bufs[err_fd].decode("utf-8", errors=errors),
        stdout_dropped=dropped[out_fd],
        stderr_dropped=dropped[err_fd],
        seconds=time.monotonic() - started,
        timed_out=timed_out,
        error=None,
        idle=silent,
    )
