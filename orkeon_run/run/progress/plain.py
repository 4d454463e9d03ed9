"""`--progress plain`: one line per notable event on stderr, for CI logs and `grep`.

Each line starts with who it is about, then a colon: the role's full name (`b1/api: …`),
the batch (`b1: audit passed`), the step (`dev-batches: …`) or `budget:`. So
`grep '^b1/api:'` gives one role's story. The lines (docs/output.md, "Progress"):

    dev-batches: started run RUN_ID (budget: 1800.0 s)
    b1: batch started: b1/api, b1/tests
    b1/api: started
    b1/api: #1 file_read src/x.py: ran (0.0 s)
    b1/api: #2 file_write docs/x.md: refused by roots: [refused: docs/x.md is outside …]
    b1/api: #3 shell pytest -q: ran, exit 1 (2.1 s)
    b1/api: #3 hook post-tool #2 (fmt {path}) exited 1: LINE
    b1/api: waiting for the model's answer for 1m 00s (turn 4)
    b1/api: succeeded: 4 turns, 3 calls, 1 refused, 42.0 s
    budget: 50 % of the time budget used (900.0 s of 1800.0 s)
    b1: audit FAILED: changed outside the roots: docs/x.md
    dev-batches: network: refused evil.example:443 (curl https://evil.example/)
    b2: warning: no role changed any file
    dev-batches: failed (exit 1) in 2m 13s: 2 roles, 5 calls, 1 refused, $0.4100; the …

Under GitHub Actions (`GITHUB_ACTIONS=true`) a batch's lines sit inside a
`::group::`/`::endgroup::` block; its audit and outcome follow the block, so they show
when it is folded. Colours (the status words only, never the start of a line) follow
`logs.colors`: NO_COLOR and FORCE_COLOR.

Lines are written in batches: at most every FLUSH seconds (0.2), by a timer thread that
sleeps until the next write or heartbeat is due (a role's wait reaching `interval`,
2 × `interval`, …), not a busy loop; and at the end of the run. A call costs its line's
formatting, not a system call and a wake-up of whoever reads stderr (bench_progress.py).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from ... import logs
from .plain_lines import PlainLines
from .text import clean, duration, gave_up
from .tracker import Role, Tracker

HEARTBEAT = 60.0  # seconds of waiting before the first heartbeat line, then between them
FLUSH = 0.2  # seconds a line may wait to be written with the next ones
_PIPE_BUF = 4096  # POSIX: a write of at most this many bytes to a pipe is never split


class PlainProgress:
    """The plain view; an `EventLog` listener. Thread-safe: lines are made and written
    under one lock, whole."""

    def __init__(
        self,
        stream: IO[str],
        *,
        interval: float = HEARTBEAT,
        flush: float = FLUSH,
        github: bool | None = None,
        color: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.interval = interval
        self.flush = flush
        self.clock = clock
        self.tracker = Tracker(clock=clock)
        self.say = PlainLines(
            self.tracker,
            github=os.environ.get("GITHUB_ACTIONS") == "true" if github is None else github,
            color=logs.colors(stream) if color is None else color,
        )
        self._lock = threading.Lock()
        self._beats: dict[str, tuple[float, int]] = {}  # role -> (wait began, lines given)
        self._fd = _fileno(stream)
        self._encoding = getattr(stream, "encoding", None) or "utf-8"
        self._pending: list[str] = []  # lines not written yet
        self._written = clock()  # when lines were last written
        self._armed = False  # the timer knows lines are pending
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._quiet = False

    # --- the listener ------------------------------------------------------------------

    def __call__(self, event: dict[str, Any]) -> None:
        if self._quiet:
            return
        try:
            with self._lock:
                lines = self.say.lines(event)
                if lines:
                    self._pending += lines
                    if not self._armed:  # the timer writes them within `flush` seconds
                        self._armed = True
                        self._wake.set()
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._timer, name="orkeon-progress", daemon=True
                    )
                    self._thread.start()
        except Exception as exc:  # stderr went away, or a bug here: the run goes on
            self._quiet = True
            gave_up(exc)
            self._wake.set()

    def close(self) -> None:
        """Write what is pending (and close an open ::group::); stop the timer."""
        with self._lock:
            self._stop = True
            self._wake.set()
        if self._thread is not None:
            self._thread.join(5)
        if self._quiet:
            return
        with self._lock:
            self._pending += self.say.closing()
            try:
                self._write()
            except Exception:
                self._quiet = True

    # --- lines -------------------------------------------------------------------------

    def _write(self) -> None:
        """Write the pending lines (under the lock). To a real file, with `os.write`, whole
        lines at most PIPE_BUF bytes at a time: the timer thread writes while the run's
        thread may be logging, and a log line is printed in two writes to `sys.stderr`
        (its text, then its newline), which a write to the same text stream in between
        would join to our line. Written to the file descriptor, each piece lands whole,
        before or after a log line, never inside one."""
        self._written = self.clock()
        if not self._pending:
            return
        text = "\n".join(self._pending) + "\n"
        self._pending = []
        if self._fd is None:
            self.stream.write(text)
            self.stream.flush()
            return
        data = text.encode(self._encoding, "backslashreplace")
        while data:
            cut = len(data) if len(data) <= _PIPE_BUF else data.rfind(b"\n", 0, _PIPE_BUF) + 1
            if cut <= 0:  # one line longer than PIPE_BUF: written alone
                cut = data.index(b"\n") + 1
            piece, data = data[:cut], data[cut:]
            while piece:
                piece = piece[os.write(self._fd, piece) :]

    # --- the timer: batched writes and heartbeats ---------------------------------------

    def _timer(self) -> None:
        while True:
            self._wake.clear()
            with self._lock:
                if self._stop or self._quiet:
                    return
                now = self.clock()
                lines, due = self._due(now) if self.interval > 0 else ([], now + 3600.0)
                self._pending += lines
                if self._pending and now - self._written >= self.flush:
                    try:
                        self._write()
                    except Exception:
                        self._quiet = True
                        return
                self._armed = bool(self._pending)
                if self._pending:
                    due = min(due, self._written + self.flush)
            self._wake.wait(max(0.0, due - now))

    def heartbeats(self, now: float) -> list[str]:
        """The heartbeat lines due at `now` (by the view's clock), each said once."""
        with self._lock:
            return self._due(now)[0]

    def _due(self, now: float) -> tuple[list[str], float]:
        """The heartbeat lines due at `now`, and when the next one is."""
        lines = []
        due = now + self.interval
        for r in self.tracker.running():
            since = r.call.since if r.call is not None else r.since
            began, given = self._beats.get(r.name, (since, 0))
            if began != since:  # a new wait
                began, given = since, 0
            if now - began >= self.interval * (given + 1):
                given = int((now - began) // self.interval)
                lines.append(self._beat(r, now - began))
            self._beats[r.name] = (began, given)
            due = min(due, began + self.interval * (given + 1))
        return lines, due

    def _beat(self, r: Role, waited: float) -> str:
        if r.call is not None:
            target = f": {clean(r.call.target, 120)}" if r.call.target else ""
            return (
                f"{r.name}: #{r.call.seq} {clean(r.call.tool, 40)} still running after "
                f"{duration(waited)}{target}"
            )
        return (
            f"{r.name}: waiting for the model's answer for {duration(waited)} (turn {r.turns + 1})"
        )


def _fileno(stream: IO[str]) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # a StringIO, a closed or wrapped stream
        return None
