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

from .. import logs
from ..pipeline import call_target
from ..vocabulary import error_message
from .progress import Role, Tracker, amount, clean, duration, first_line, gave_up, money
from .progress import step_line as _step_line
from .progress import warning_line as _warning_line

HEARTBEAT = 60.0  # seconds of waiting before the first heartbeat line, then between them
FLUSH = 0.2  # seconds a line may wait to be written with the next ones
_PIPE_BUF = 4096  # POSIX: a write of at most this many bytes to a pipe is never split

_COLOURS = {"green": "32", "red": "31", "yellow": "33", "dim": "2"}
_STATUS_COLOUR = {
    "succeeded": "green",
    "passed": "green",
    "ran": "green",
    "failed": "red",
    "FAILED": "red",
    "error": "red",
    "stopped": "yellow",
    "refused": "yellow",
    "budget_exhausted": "yellow",
    "interrupted": "yellow",
}


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
        self.github = os.environ.get("GITHUB_ACTIONS") == "true" if github is None else github
        self.color = logs.colors(stream) if color is None else color
        self.clock = clock
        self.tracker = Tracker(clock=clock)
        self._lock = threading.Lock()
        self._group: str | None = None  # the batch whose ::group:: is open
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
                reached = self.tracker.update(event)
                say = _SAY.get(event["type"])
                lines = say(self, event) if say is not None else []
                for which, mark in reached:
                    lines.append(self.tracker.mark_line(which, mark))
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
            if self._group is not None:
                self._pending += self._end_group()
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

    def _paint(self, word: str, colour: str | None = None) -> str:
        if not self.color:
            return word
        code = _COLOURS.get(colour or _STATUS_COLOUR.get(word, ""), "")
        return f"\x1b[{code}m{word}\x1b[0m" if code else word

    def _end_group(self) -> list[str]:
        self._group = None
        return ["::endgroup::"] if self.github else []

    def _run_start(self, e: dict[str, Any]) -> list[str]:
        t = self.tracker
        limits = [amount(k, v) for k, v in t.limits.items()]
        budget = f" (budget: {', '.join(limits)})" if limits else ""
        again = "resumed" if e.get("resume") else "started"
        return [f"{t.step}: {again} run {clean(t.run_id)}{budget}"]

    def _batch_start(self, e: dict[str, Any]) -> list[str]:
        head = f"{e['batch']}: batch started: {', '.join(e.get('roles') or [])}"
        if not self.github:
            return [head]
        lines = self._end_group() if self._group is not None else []
        self._group = e["batch"]
        return [*lines, f"::group::{head}"]

    def _batch_skipped(self, e: dict[str, Any]) -> list[str]:
        return [f"{e['batch']}: batch skipped ({clean(e.get('reason', ''))})"]

    def _role_start(self, e: dict[str, Any]) -> list[str]:
        return [f"{e['role']}: started"]

    def _role_end(self, e: dict[str, Any]) -> list[str]:
        r = self.tracker.role(e["role"])
        status = self._paint(e["status"])
        error = f"; {clean(e['error'])}" if e.get("error") else ""
        return [
            f"{e['role']}: {status}: {e['turns']} turns, {e['calls']} calls, "
            f"{e['refused']} refused, {duration(self.tracker.role_seconds(r, e['ts']))}{error}"
        ]

    def _hook_run(self, e: dict[str, Any]) -> list[str]:
        line = self._hook_failure(e)
        return [f"{e['role']}: {line}"] if line else []

    def _compact(self, e: dict[str, Any]) -> list[str]:
        return [
            f"{e['role']}: conversation compacted ({e['messages_compacted']} messages "
            f"shortened, {e['messages_removed']} removed)"
        ]

    def _plan_invalid(self, e: dict[str, Any]) -> list[str]:
        problems = e.get("problems") or []
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        first = clean(problems[0]) if problems else ""
        return [f"planner: the plan is not valid (check {e['attempt']}): {first}{more}"]

    def _repair_start(self, e: dict[str, Any]) -> list[str]:
        return [f"{e['role']}: repairing, from run {clean(e.get('run', ''))}"]

    def _audit_done(self, e: dict[str, Any]) -> list[str]:
        lines = self._end_group() if self._group == e.get("batch") else []
        return [*lines, f"{e['batch']}: audit {self._audit(e)}"]

    def _batch_end(self, e: dict[str, Any]) -> list[str]:
        lines = self._end_group() if self._group == e["batch"] else []
        verdict = self._paint("passed" if e.get("passed") else "failed")
        return [*lines, f"{e['batch']}: batch {verdict}"]

    def _result_line(self, e: dict[str, Any]) -> list[str]:
        lines = self._end_group() if self._group is not None else []
        return [*lines, self._result(e)]

    def _call(self, e: dict[str, Any]) -> list[str]:
        """The hottest line: one per call."""
        role, seq = e["role"], e["seq"]
        last = self.tracker.roles[role].last
        target = (
            last.target
            if last is not None and last.seq == seq
            else call_target(e["tool"], e.get("input"))
        )
        head = f"{role}: #{seq} {clean(e['tool'], 40)}"
        if target:
            head = f"{head} {clean(target, 120)}"
        if e["outcome"] == "ran":
            result = e["result"]
            code = result.get("exit_code") if type(result) is dict else None
            exit_note = f", exit {code}" if type(code) is int else ""
            took = duration(e["tool_seconds"] + e["hook_seconds"])
            line = f"{head}: {self._paint('ran')}{exit_note} ({took})"
        else:
            by = f"by {e['refused_by']}" if e["refused_by"] else "(invalid call)"
            line = f"{head}: {self._paint('refused')} {by}: {first_line(e['result'])}"
        hooks = e["hooks"]
        if not hooks:
            return [line]
        lines = [line]
        for h in hooks:
            # A hook that refused the call is the refusal above: said once.
            if e["refused_by"] == "hook" and h["event"] in ("pre-tool", "PreToolUse"):
                continue
            failure = self._hook_failure(h)
            if failure:
                lines.append(f"{role}: #{seq} {failure}")
        return lines

    def _hook_failure(self, h: dict[str, Any]) -> str | None:
        """`hook pre-tool #1 (CMD) exited 1: LINE` for a hook that failed: timed out,
        could not run, or exited non-zero (exit 2 of a settings-shape hook is its way to
        block or to keep a role going, not a failure)."""
        code = h.get("exit_code")
        native = h.get("n") is not None
        if not h.get("timed_out") and code == 0:
            return None
        if not h.get("timed_out") and code == 2 and not native:
            return None
        name = f"{h['event']} #{h['n']}" if native else h["event"]
        what = (
            "timed out"
            if h.get("timed_out")
            else "could not run"
            if code is None
            else f"exited {code}"
        )
        said = f": {clean(h['first_line'])}" if h.get("first_line") else ""
        return f"hook {name} ({clean(h['command'], 80)}) {self._paint(what, 'red')}{said}"

    def _audit(self, e: dict[str, Any]) -> str:
        if e.get("passed"):
            return self._paint("passed")
        if e.get("outside_roots"):
            why = "changed outside the roots: " + clean(", ".join(e["outside_roots"]))
        elif e.get("failed_command"):
            tail = (e.get("output_tail") or "").rstrip().rpartition("\n")[2]
            why = clean(tail or " ".join(e["failed_command"]))
        else:
            why = first_line(e.get("output_tail") or "")
        return f"{self._paint('FAILED')}: {why}"

    def _result(self, e: dict[str, Any]) -> str:
        calls, refused = self.tracker.totals()
        took = duration(max(0.0, e["ts"] - (self.tracker.started or e["ts"])))
        b = e.get("budget") or {}
        usd = "" if b.get("usd") is None else f", {money(b['usd'])}"
        error = f"; {first_line(why)}" if (why := error_message(e.get("error"))) else ""
        return (
            f"{e['step']}: {self._paint(e['status'])} (exit {e['exit_code']}) in {took}: "
            f"{len(e.get('roles') or [])} roles, {calls} calls, {refused} refused{usd}{error}"
        )

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


_SAY: dict[str, Callable[[PlainProgress, dict[str, Any]], list[str]]] = {
    "run.start": PlainProgress._run_start,
    **dict.fromkeys(("step.start", "step.end"), lambda self, e: [_step_line(e, self._paint)]),
    "batch.start": PlainProgress._batch_start,
    "batch.skipped": PlainProgress._batch_skipped,
    "role.start": PlainProgress._role_start,
    "role.end": PlainProgress._role_end,
    "tool.call": PlainProgress._call,
    "hook.run": PlainProgress._hook_run,
    "compact": PlainProgress._compact,
    "plan.invalid": PlainProgress._plan_invalid,
    "repair.start": PlainProgress._repair_start,
    "audit": PlainProgress._audit_done,
    "warning": lambda self, e: [_warning_line(e, self._paint)],
    "network.refused": lambda self, e: [_warning_line(e, self._paint)],
    "batch.end": PlainProgress._batch_end,
    "result": PlainProgress._result_line,
}
