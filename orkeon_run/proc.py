"""The one helper that runs an external program: native hooks, settings-shape hooks, the
shell tool and the audit all go through `run` (or `arun` from async code).

Contract:
- argv only, never a shell; stdin is /dev/null unless bytes are given, and a child that
  does not read them neither hangs us nor raises BrokenPipe.
- The child starts a new session, so it and everything it forks share one process group.
- stdout and stderr are read through one poll loop in the calling thread, each kept up to
  `cap` bytes; the rest is counted and dropped, so a child printing 100 MB costs no memory.
- On time-out the whole group gets SIGTERM, then SIGKILL after `kill_grace` seconds.
- When the direct child has exited but something it forked still holds the pipes open,
  reading stops after `PIPE_GRACE` seconds and the group is killed: we never wait on a
  grandchild. After SIGTERM the wait lasts until SIGKILL is due instead: the grace belongs
  to the whole group, so a script under a wrapper shell that dies at once still gets it.
- A program that cannot run (missing, not executable, bad cwd) is a `ProcResult` with
  `error`, never an exception.
- `arun` runs `run` in a worker thread; cancelling its task stops the group the same way
  (SIGTERM, SIGKILL after `kill_grace`), so no child outlives a cancelled role.

The child's exit is watched through a pidfd (Linux >= 5.3) in the same poll set, which
tells us it exited without reaping it: the zombie keeps the process-group id reserved
until the last `killpg`, so a recycled pid can never be signalled by mistake.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

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

    def first_line(self) -> str:
        """The first non-blank line of stderr, else of stdout, else "" (stripped)."""
        for text in (self.stderr, self.stdout):
            for line in text.splitlines():
                line = line.strip()
                if line:
                    return line
        return ""


def _could_not_run(argv: list[str], cwd: Path, exc: OSError, started: float) -> ProcResult:
    prog = argv[0]
    if exc.filename is not None and os.fsdecode(exc.filename) == os.fsdecode(cwd):
        why = f"cannot use the working directory {cwd}: {exc.strerror}"
    elif exc.errno == errno.ENOENT:
        why = f"no such program: {prog}"
    elif exc.errno == errno.EACCES:
        why = f"permission denied: {prog}"
    elif exc.errno == errno.ENOEXEC:
        why = f"not an executable (a script needs a #! line): {prog}"
    else:
        why = f"{exc.strerror or exc}: {prog}"
    return ProcResult(None, "", "", 0, 0, time.monotonic() - started, False, why)


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _exit_code(status: int) -> int:
    return 128 - status if status < 0 else status


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
) -> ProcResult:
    """Run `argv` in `cwd` for at most `timeout` seconds. See the module docstring.

    `cancel_check`, when given, is called about every CANCEL_POLL seconds while the child
    runs; if it raises, the group is stopped as on a time-out (SIGTERM, then SIGKILL after
    `kill_grace`) and, once the child is reaped, the exception is raised again.

    `errors` is how bytes that are not UTF-8 are decoded: "surrogateescape" keeps file
    names exact (`os.fsencode` gives the bytes back). `env` None: orkeon's environment
    scrubbed (`environ.scrubbed`), never orkeon's own as it is."""
    started = time.monotonic()
    if env is None:
        from .environ import scrubbed

        env = scrubbed()
    if not argv or not argv[0]:
        return ProcResult(None, "", "", 0, 0, 0.0, False, "the command is empty")
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return _could_not_run(argv, cwd, exc, started)
    except ValueError as exc:  # an embedded NUL in argv or env
        return ProcResult(None, "", "", 0, 0, time.monotonic() - started, False, str(exc))
    child = _Child(proc, stdin, cap, started + max(timeout, 0.0), kill_grace, cancel_check)
    try:
        child.watch()
    finally:
        status = child.reap()
    if child.cancelled is not None:
        raise child.cancelled
    return ProcResult(
        exit_code=None if child.timed_out else _exit_code(status),
        stdout=child.bufs[child.out_fd].decode("utf-8", errors=errors),
        stderr=child.bufs[child.err_fd].decode("utf-8", errors=errors),
        stdout_dropped=child.dropped[child.out_fd],
        stderr_dropped=child.dropped[child.err_fd],
        seconds=time.monotonic() - started,
        timed_out=child.timed_out,
        error=None,
    )


class _Child:
    """One started child and the poll loop that watches it (`watch`): its pipes read into
    buffers of at most `cap` bytes, its stdin fed, its group stopped on the deadline or a
    cancellation, its exit seen through a pidfd (or by peeking, without one); then `reap`."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        stdin: bytes | None,
        cap: int,
        deadline: float,
        kill_grace: float,
        cancel_check: Callable[[], None] | None,
    ) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.cap = cap
        self.deadline = deadline
        self.kill_grace = kill_grace
        self.cancel_check = cancel_check
        assert proc.stdout is not None and proc.stderr is not None
        self.out_fd, self.err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        self.bufs: dict[int, bytearray] = {self.out_fd: bytearray(), self.err_fd: bytearray()}
        self.scratch = bytearray(_READ_SIZE)
        self.scratch_view = memoryview(self.scratch)
        self.dropped = {self.out_fd: 0, self.err_fd: 0}
        self.poller = select.poll()
        self.poller.register(self.out_fd, _POLLIN)
        self.poller.register(self.err_fd, _POLLIN)
        self.reading = 2
        self.in_fd = -1
        self.in_view = memoryview(b"")
        self.in_off = 0
        if proc.stdin is not None:
            self.in_view = memoryview(stdin or b"")
            if self.in_view:
                self.in_fd = proc.stdin.fileno()
                self.poller.register(self.in_fd, _POLLOUT)
            else:
                proc.stdin.close()
        self.pidfd = -1
        if _HAS_PIDFD:
            try:
                self.pidfd = os.pidfd_open(self.pid)
                self.poller.register(self.pidfd, select.POLLIN)
            except OSError:
                self.pidfd = -1
        self.exited = False  # the direct child has exited (not reaped when watched by pidfd)
        self.timed_out = False
        self.cancelled: BaseException | None = None  # what cancel_check raised
        self.term_sent = False  # SIGTERM went to the group (time-out or cancellation)
        self.killed = False  # SIGKILL went to the group
        self.kill_at = 0.0  # after SIGTERM: when SIGKILL follows
        self.stop_at = 0.0  # once the child has exited: when to stop waiting for the pipes

    def watch(self) -> None:
        """Until the child has exited and its pipes are closed (or PIPE_GRACE is over)."""
        while True:
            now = time.monotonic()
            self._stop_group(now)
            if self.exited and self._pipes_done(now):
                break
            try:
                events = self.poller.poll(self._wait(now) * 1000.0 + 0.5)
            except InterruptedError:
                continue
            for fd, ev in events:
                if fd == self.pidfd:
                    self.exited = True
                    self.poller.unregister(fd)
                elif fd == self.in_fd:
                    self._feed()
                else:
                    self._read(fd, ev)
            if self.cancel_check is not None and self.cancelled is None:
                try:
                    self.cancel_check()
                except BaseException as exc:  # the caller's cancellation, whatever its class
                    self.cancelled = exc
            if self.pidfd < 0 and not self.exited:
                # Peek at the child without reaping it, so its pgid stays reserved.
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                self.exited = info is not None and info.si_pid == self.pid

    def _stop_group(self, now: float) -> None:
        """SIGTERM to the group at the deadline or once cancelled; SIGKILL `kill_grace`
        seconds later."""
        due = now >= self.deadline or self.cancelled is not None
        if due and not self.term_sent and not self.exited:
            self.timed_out = self.cancelled is None
            self.term_sent = True
            self.kill_at = now + self.kill_grace
            _killpg(self.pid, signal.SIGTERM)
        if self.term_sent and not self.killed and now >= self.kill_at:
            self.killed = True
            _killpg(self.pid, signal.SIGKILL)

    def _pipes_done(self, now: float) -> bool:
        """Whether to stop reading, the direct child having exited."""
        if not self.reading and self.in_fd < 0:
            return True
        if not self.stop_at:
            # Once SIGTERM is out, the grace is the group's: a wrapper shell that dies at
            # once must not cut short the script it started (dash's `-c` does not exec its
            # last command).
            grace = self.kill_at if self.term_sent and not self.killed else 0.0
            self.stop_at = max(now + PIPE_GRACE, grace)
            return False
        return now >= self.stop_at  # something the child forked holds the pipes: it dies

    def _wait(self, now: float) -> float:
        """How long the next poll may wait, in seconds: until the next thing due."""
        if self.exited:
            wait = self.stop_at - now
        elif self.killed:
            wait = 0.05  # SIGKILL is on its way; the pidfd wakes us sooner
        elif self.term_sent:
            wait = self.kill_at - now
        else:
            wait = self.deadline - now
        if self.pidfd < 0 and not self.exited:
            wait = min(wait, 0.01)  # no pidfd: look at the child every 10 ms
        if self.cancel_check is not None and self.cancelled is None:
            wait = min(wait, CANCEL_POLL)
        return max(wait, 0.0)

    def _feed(self) -> None:
        """Write the next piece of stdin; close it once all is written or refused."""
        try:
            self.in_off += os.write(self.in_fd, self.in_view[self.in_off : self.in_off + _PIPE_BUF])
        except OSError:  # BrokenPipe: the child does not read its stdin
            self.in_off = len(self.in_view)
        if self.in_off >= len(self.in_view):
            self.poller.unregister(self.in_fd)
            self.in_fd = -1
            assert self.proc.stdin is not None
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def _read(self, fd: int, ev: int) -> None:
        """Into one buffer read after read: a child printing 100 MB in reads of whatever
        size the pipe gives makes no garbage, so orkeon's memory does not depend on how
        fast the child writes."""
        n = os.readv(fd, [self.scratch]) if ev & _POLLIN else 0
        if not n:
            self.poller.unregister(fd)
            self.reading -= 1
            return
        buf = self.bufs[fd]
        room = self.cap - len(buf)
        if room > 0:
            buf += self.scratch_view[: min(n, room)]
        if n > room:
            self.dropped[fd] += n - max(room, 0)

    def reap(self) -> int:
        """Kill what the child left in its group (finished or not: the child is not reaped
        yet, so the group id cannot belong to anyone else), close the pipes, reap it; its
        wait status."""
        if self.pidfd >= 0:
            os.close(self.pidfd)
        _killpg(self.pid, signal.SIGKILL)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()
        return self.proc.wait()


async def arun(
    argv: list[str],
    *,
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    cap: int = 1 << 20,
    kill_grace: float = 2.0,
) -> ProcResult:
    """`run` in a worker thread, so concurrent roles do not block each other's event loop.
    Cancelling the calling task stops the child's group (SIGTERM, SIGKILL after
    `kill_grace`) and waits for it, so nothing outlives the cancellation."""
    from anyio import from_thread, to_thread  # sync callers should not pay for anyio

    call = partial(
        run,
        argv,
        cwd=cwd,
        timeout=timeout,
        env=env,
        stdin=stdin,
        cap=cap,
        kill_grace=kill_grace,
        cancel_check=from_thread.check_cancelled,
    )
    return await to_thread.run_sync(call)
