"""`arun`: `proc.run` for async code, with the same contract (proc.py's docstring).

On asyncio with pidfds (Linux >= 5.3), the event loop itself watches the child: its
pipes and its pidfd are readers of the loop (its stdin, when it is given bytes, a
writer), the time-out and the grace are timers of the loop, and no thread is involved (a
hand-off to a worker thread and back costs about as much as starting `true`: a native
hook runs once or twice on every tool call, a settings hook reads its event on stdin).
Elsewhere `proc.run` runs in a worker thread.

Cancelling the calling task stops the group as a time-out does (SIGTERM, SIGKILL after
`kill_grace`) and waits, shielded, until the child is reaped; then the cancellation goes
on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

from anyio import CancelScope, from_thread, to_thread

from . import proc
from .proc import PIPE_GRACE, Pipes, ProcResult

# How a command starts: `proc.spawn`'s signature and contract (hooks/spawn.py passes the
# hooks' kept-up veil's, tools/sandbox/veil.py).
Starter = Callable[..., "proc.Child | ProcResult"]


async def arun(
    argv: list[str],
    *,
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    cap: int = 1 << 20,
    kill_grace: float = 2.0,
    idle: float | None = None,
    start: Starter = proc.spawn,
) -> ProcResult:
    """`proc.run` without blocking the event loop, so concurrent roles do not block each
    other. Cancelling the calling task stops the child's group (SIGTERM, SIGKILL after
    `kill_grace`) and waits for it, so nothing outlives the cancellation. `idle`: the
    no-progress watchdog, as `proc.run`'s. `start(argv, cwd=, env=, pipes=, started=)`
    starts the command, as `proc.spawn` (the default) does."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another event loop than asyncio's (trio)
        loop = None
    if start is proc.spawn and (not proc._HAS_PIDFD or loop is None):
        call = partial(
            proc.run, argv, cwd=cwd, timeout=timeout, env=env, stdin=stdin, cap=cap,
            kill_grace=kill_grace, cancel_check=from_thread.check_cancelled, idle=idle,
        )  # fmt: skip
        return await to_thread.run_sync(call)
    started = time.monotonic()
    pipes = Pipes(stdin)
    child = start(argv, cwd=cwd, env=env, pipes=pipes, started=started)
    if isinstance(child, ProcResult):
        return child
    if child.exit_fd < 0 or loop is None:
        # No pidfd for this child: the thread's loop watches it.
        return await to_thread.run_sync(partial(
            proc.collect, child, pipes, started=started, timeout=timeout, cap=cap,
            kill_grace=kill_grace, cancel_check=from_thread.check_cancelled, errors="replace",
            idle=idle,
        ))  # fmt: skip
    out, err = pipes.out, pipes.err  # pipes.close() forgets them
    watch = _Watch(child, pipes, cap, kill_grace, loop)
    watch.deadline = watch.loop.call_later(max(timeout, 0.0), watch.time_out)
    if idle is not None:
        watch.idle = idle
        watch.timers.append(watch.loop.call_later(idle, watch.check_idle))
    try:
        await asyncio.shield(watch.done)
    except BaseException:  # cancelled: stop the group, and wait for it whatever comes
        watch.stop()
        with CancelScope(shield=True):
            await asyncio.shield(watch.done)
        raise
    finally:
        watch.close()
        status = child.reap()
    return ProcResult(
        exit_code=None if watch.timed_out else proc._exit_code(status),
        stdout=watch.bufs[out].decode("utf-8", errors="replace"),
        stderr=watch.bufs[err].decode("utf-8", errors="replace"),
        stdout_dropped=watch.dropped[out],
        stderr_dropped=watch.dropped[err],
        seconds=time.monotonic() - started,
        timed_out=watch.timed_out,
        error=None,
        idle=watch.silent,
    )


class _Watch:
    """The child's pipes and exit as callbacks of the loop; `done` is set once both pipes
    are closed and the child has exited, or PIPE_GRACE after it exited (something it
    forked holds the pipes: the group dies in `reap`)."""

    def __init__(
        self,
        child: proc.Child,
        pipes: Pipes,
        cap: int,
        kill_grace: float,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.child, self.pipes, self.cap, self.kill_grace, self.loop = (
            child, pipes, cap, kill_grace, loop
        )  # fmt: skip
        self.bufs = {pipes.out: bytearray(), pipes.err: bytearray()}
        self.dropped = {pipes.out: 0, pipes.err: 0}
        self.scratch = bytearray(1 << 16)
        self.reading = 2
        self.exited = self.timed_out = self.term_sent = self.killed = False
        self.done: asyncio.Future[None] = loop.create_future()
        self.timers: list[asyncio.TimerHandle] = []
        self.deadline: asyncio.TimerHandle | None = None
        self.kill_at = 0.0
        self.idle: float | None = None  # the watchdog: at most this long with no output
        self.heard = time.monotonic()  # when the child last printed something
        self.silent = False
        for fd in (pipes.out, pipes.err):
            loop.add_reader(fd, self.read, fd)
        loop.add_reader(child.exit_fd, self.exit)
        self.watched = {pipes.out, pipes.err, child.exit_fd}  # what `close` still removes
        # stdin, as proc.collect writes it: at most PIPE_BUF bytes each time the pipe has
        # room (so a write never blocks), until all is written or the child stops reading.
        self.input = memoryview(pipes.input or b"")
        self.writing = pipes.to_in >= 0
        if self.writing and not self.input:
            self.end_input()
        elif self.writing:
            loop.add_writer(pipes.to_in, self.write)

    def read(self, fd: int) -> None:
        n = os.readv(fd, [self.scratch])
        if not n:
            self.loop.remove_reader(fd)
            self.watched.discard(fd)
            self.reading -= 1
            if self.exited and not self.reading and not self.writing:
                self.finish()
            return
        self.heard = time.monotonic()
        buf = self.bufs[fd]
        room = self.cap - len(buf)
        if room > 0:
            buf += memoryview(self.scratch)[: min(n, room)]
        if n > room:
            self.dropped[fd] += n - max(room, 0)

    def write(self) -> None:
        try:
            n = os.write(self.pipes.to_in, self.input[: proc._PIPE_BUF])
        except OSError:  # BrokenPipe: the child does not read its stdin
            n = len(self.input)
        self.input = self.input[n:]
        if not self.input:
            self.loop.remove_writer(self.pipes.to_in)
            self.end_input()
            if self.exited and not self.reading:
                self.finish()

    def end_input(self) -> None:
        """All of stdin is written (or refused): the child reads its end of file."""
        self.writing = False
        with contextlib.suppress(OSError):
            os.close(self.pipes.to_in)
        self.pipes.to_in = -1

    def exit(self) -> None:
        if not self.child.exited():  # a command of a kept-up veil reads its word here
            return
        self.loop.remove_reader(self.child.exit_fd)
        self.watched.discard(self.child.exit_fd)
        self.exited = True
        if not self.reading and not self.writing:
            self.finish()
            return
        # Once SIGTERM is out, the grace is the group's (as in proc.collect).
        now = time.monotonic()
        wait = max(PIPE_GRACE, self.kill_at - now if self.term_sent and not self.killed else 0.0)
        self.timers.append(self.loop.call_later(wait, self.finish))

    def time_out(self) -> None:
        if not self.exited and not self.term_sent:
            self.timed_out = True
            self.stop()

    def check_idle(self) -> None:
        """The watchdog's timer: stop a child silent for `idle` seconds, else look again
        when it would be (one timer, moved on by output, not one per read)."""
        assert self.idle is not None
        left = self.heard + self.idle - time.monotonic()
        if left > 0:
            self.timers.append(self.loop.call_later(left, self.check_idle))
        elif not self.exited and not self.term_sent:
            self.timed_out = self.silent = True
            self.stop()

    def stop(self) -> None:
        """SIGTERM to the group, SIGKILL after the grace."""
        if self.exited or self.term_sent:
            return
        self.term_sent = True
        self.kill_at = time.monotonic() + self.kill_grace
        self.child.signal(signal.SIGTERM)
        self.timers.append(self.loop.call_later(self.kill_grace, self.kill))

    def kill(self) -> None:
        self.killed = True
        self.child.signal(signal.SIGKILL)

    def finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def close(self) -> None:
        for fd in self.watched:
            self.loop.remove_reader(fd)
        if self.writing:
            self.loop.remove_writer(self.pipes.to_in)
        for timer in [*self.timers, *([self.deadline] if self.deadline else [])]:
            timer.cancel()
        self.pipes.close()
