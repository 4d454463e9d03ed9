"""Progress on stderr while a step runs (docs/output.md, "Progress"), never on stdout.

`orkeon run --progress auto|live|plain|none`; `ORKEON_PROGRESS` sets the default, and
`auto` is `live` when stderr is a terminal, `plain` otherwise. Both views are event
listeners (`EventLog.listeners`): they see exactly the events the run records, follow the
run in a `Tracker`, and write only to stderr. A listener never raises into the run: a
view that cannot write any more (stderr closed) goes quiet.

- plain (progress_plain.py): one greppable line per notable event, the role's full name
  first; a heartbeat while a model answer or a call takes longer than a minute;
  `::group::` blocks per batch under GitHub Actions.
- live (progress_live.py): one line per role, updated in place (rich, imported only
  then), cleared to a final summary.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import InputError
from ..vocabulary import BUDGET_WORDS, error_message

MODES = ("auto", "live", "plain", "none")
MARKS = (50, 80, 100)  # budget use, in percent, that plain progress reports


class Listener(Protocol):
    def __call__(self, event: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def choose(
    flag: str | None,
    *,
    output: str,
    environ: Mapping[str, str] | None = None,
    stderr: Any = None,
    stdout: Any = None,
) -> str:
    """The progress mode to show: `live`, `plain` or `none`. `flag` wins over
    ORKEON_PROGRESS; a bad ORKEON_PROGRESS is an input error (exit 2). `auto` is live on a
    terminal, except when `stream-json` events go to that terminal too (a view redrawn in
    place would tear their lines): plain then."""
    env = os.environ if environ is None else environ
    value = flag or env.get("ORKEON_PROGRESS") or "auto"
    if value not in MODES:
        raise InputError(
            f"ORKEON_PROGRESS: must be auto, live, plain or none, not {clean(value)!r}"
        )
    if value != "auto":
        return value
    if not _tty(sys.stderr if stderr is None else stderr):
        return "plain"
    if output == "stream-json" and _tty(sys.stdout if stdout is None else stdout):
        return "plain"
    return "live"


def listeners(mode: str) -> list[Listener]:
    """The listener that shows `mode` on stderr ([] for none)."""
    if mode == "plain":
        from .progress_plain import PlainProgress

        return [PlainProgress(sys.stderr)]
    if mode == "live":
        from .progress_live import LiveProgress

        return [LiveProgress(sys.stderr)]
    return []


def gave_up(exc: Exception) -> None:
    """One warning when a view stops showing the run (a bug; or stderr is gone, and then
    nothing can be said)."""
    from .. import logs

    with contextlib.suppress(Exception):
        logs.warn(f"progress: stopped showing the run: {type(exc).__name__}: {exc}")


def _tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def clean(text: object, limit: int = 200) -> str:
    """`text` on one line and at most `limit` characters, its control characters escaped:
    model-written text (a refusal's line, a command) must not move the cursor, colour the
    terminal, or start a line GitHub Actions would read as a workflow command."""
    s = str(text)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


def first_line(text: object) -> str:
    """The first line of a tool's result as the model read it (text or JSON)."""
    if not isinstance(text, str):
        import json

        text = json.dumps(text, ensure_ascii=False)
    return clean(text.strip().partition("\n")[0])


def duration(seconds: float) -> str:
    """`4.2 s`, `2m 05s`, `1h 02m`."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def amount(which: str, value: float | None) -> str:
    """A budget quantity as people read it: `12.5 s`, `40 turns`, `1,200 tokens`, `$0.41`."""
    if value is None:
        return "unknown"
    if which == "seconds":
        return f"{value:.1f} s"
    if which == "usd":
        return money(value)
    return f"{int(value):,} {which}"


def money(usd: float) -> str:
    """`$0.0042` under a dollar, `$12.40` from one on."""
    return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"


@dataclass
class Call:
    seq: int
    tool: str
    target: str | None
    since: float  # the clock's time when it began


@dataclass
class Role:
    name: str
    batch: str | None
    status: str = "waiting"  # waiting, running, then the role's end status
    started: float | None = None  # event times (Unix seconds)
    ended: float | None = None
    turns: int = 0
    calls: int = 0
    refused: int = 0
    charged: float = 0.0  # seconds charged to the budget: model, tools, hooks
    tokens: int = 0
    usd: float | None = 0.0  # None once a turn's price was unknown
    call: Call | None = None  # the call running now
    last: Call | None = None  # the call that ended last
    since: float = 0.0  # the clock's time of the role's last event
    error: str | None = None


@dataclass
class Batch:
    name: str
    roles: list[str]
    status: str = "running"  # running, passed, failed, skipped, interrupted
    audit: dict[str, Any] | None = None


@dataclass
class Tracker:
    """The run as its events tell it: roles, batches, audits, budget use. `update` takes
    each event in order; `clock` is monotonic time (tests drive it)."""

    clock: Callable[[], float] = time.monotonic
    step: str = ""
    run_id: str = ""
    started: float | None = None
    limits: dict[str, float] = field(default_factory=dict)  # the limits set
    used: dict[str, float] = field(
        default_factory=lambda: {"seconds": 0.0, "turns": 0, "tokens": 0, "usd": 0.0}
    )
    marks: dict[str, int] = field(default_factory=dict)  # budget -> highest mark reached
    reached: list[tuple[str, int]] = field(default_factory=list)  # by the last event
    _next: dict[str, float] = field(default_factory=dict)  # budget -> use at its next mark
    roles: dict[str, Role] = field(default_factory=dict)
    batches: dict[str, Batch] = field(default_factory=dict)
    audits: list[dict[str, Any]] = field(default_factory=list)
    # A pipeline's steps as [name, status] ("running" until its step.end), in order: a
    # step may run twice (dev-batches resumed after a repair).
    steps: list[list[str]] = field(default_factory=list)
    result: dict[str, Any] | None = None

    def role(self, name: str, batch: str | None = None) -> Role:
        r = self.roles.get(name)
        if r is None:
            r = self.roles[name] = Role(name, batch)
        return r

    def update(self, event: dict[str, Any]) -> list[tuple[str, int]]:
        """Apply one event; the budget marks it made the run reach, as (budget, percent):
        at most one per budget, the highest. Called for every event of the run, so each
        kind has its own small method and a charge costs one comparison per budget."""
        self.reached = []
        name = event.get("role")
        if name is not None:
            r = self.roles.get(name)
            if r is None:
                r = self.role(name, event.get("batch"))
            r.since = self.clock()
            on_role = _ON_ROLE.get(event["type"])
            if on_role is not None:
                on_role(self, r, event)
        on_run = _ON_RUN.get(event["type"])
        if on_run is not None:
            on_run(self, event)
        return self.reached

    def _run_start(self, e: dict[str, Any]) -> None:
        self.step, self.run_id, self.started = e.get("step", ""), e.get("run_id", ""), e["ts"]
        self.limits = {k: v for k, v in (e.get("budget") or {}).items() if v}
        self._next = {k: v * MARKS[0] / 100 for k, v in self.limits.items()}

    def _step_start(self, e: dict[str, Any]) -> None:
        self.steps.append([str(e.get("name", "")), "running"])

    def _step_end(self, e: dict[str, Any]) -> None:
        for step in reversed(self.steps):
            if step[0] == e.get("name"):
                step[1] = str(e.get("status", ""))
                break

    def _batch_start(self, e: dict[str, Any]) -> None:
        roles = list(e.get("roles") or [])
        self.batches[e["batch"]] = Batch(e["batch"], roles)
        for full in roles:
            self.role(full, e["batch"])

    def _batch_skipped(self, e: dict[str, Any]) -> None:
        self.batches[e["batch"]] = Batch(e["batch"], [], status="skipped")

    def _batch_end(self, e: dict[str, Any]) -> None:
        b = self.batches.get(e["batch"])
        if b is not None:
            b.status = "passed" if e.get("passed") else "failed"

    def _audit(self, e: dict[str, Any]) -> None:
        self.audits.append(e)
        b = self.batches.get(e.get("batch") or "")
        if b is not None:
            b.audit = e

    def _result(self, e: dict[str, Any]) -> None:
        self.result = e
        for b in self.batches.values():
            if b.status == "running":
                b.status = "interrupted"

    def _role_start(self, r: Role, e: dict[str, Any]) -> None:
        r.status, r.started, r.ended = "running", e["ts"], None

    def _role_end(self, r: Role, e: dict[str, Any]) -> None:
        r.status, r.ended, r.error, r.call = e["status"], e["ts"], e.get("error"), None

    def _tool_start(self, r: Role, e: dict[str, Any]) -> None:
        r.call = Call(e["seq"], e["tool"], e.get("target"), r.since)

    def _tool_call(self, r: Role, e: dict[str, Any]) -> None:
        r.last, r.call = r.call, None
        r.calls += 1
        if e["outcome"] == "refused":
            r.refused += 1
        seconds = e["tool_seconds"] + e["hook_seconds"]
        r.charged += seconds
        self._add("seconds", seconds)

    def _model_turn(self, r: Role, e: dict[str, Any]) -> None:
        r.turns += 1
        r.charged += e["seconds"]
        tokens = e["tokens_in"] + e["tokens_out"]
        r.tokens += tokens
        usd = e["usd"]
        r.usd = None if usd is None or r.usd is None else r.usd + usd
        self._add("seconds", e["seconds"])
        self._add("turns", 1)
        self._add("tokens", tokens)
        if usd is not None:
            self._add("usd", usd)

    def _hook_run(self, r: Role, e: dict[str, Any]) -> None:
        r.charged += e["seconds"]
        self._add("seconds", e["seconds"])

    def _add(self, which: str, value: float) -> None:
        used = self.used[which] = self.used[which] + value
        if used < self._next.get(which, math.inf):
            return
        limit = self.limits[which]
        top = max(m for m in MARKS if used >= limit * m / 100)
        self.marks[which] = top
        later = [m for m in MARKS if m > top]
        self._next[which] = limit * later[0] / 100 if later else math.inf
        self.reached = [x for x in self.reached if x[0] != which] + [(which, top)]

    def mark_line(self, which: str, mark: int) -> str:
        """`budget: 80 % of the time budget used (1440.0 s of 1800.0 s)`."""
        word = BUDGET_WORDS.get(which, which)
        used = self.used_of(which)
        if mark >= 100:
            return f"budget: the {word} budget is spent ({used})"
        return f"budget: {mark} % of the {word} budget used ({used})"

    def used_of(self, which: str) -> str:
        """`900.0 s of 1800.0 s`, `4 of 8 turns`, `$2.50 of $5.00`."""
        used, limit = self.used[which], self.limits[which]
        if which in ("seconds", "usd"):
            return f"{amount(which, used)} of {amount(which, limit)}"
        return f"{int(used):,} of {amount(which, limit)}"

    def running(self) -> list[Role]:
        return [r for r in self.roles.values() if r.status == "running"]

    def totals(self) -> tuple[int, int]:
        """(calls, refused) over every role."""
        return (
            sum(r.calls for r in self.roles.values()),
            sum(r.refused for r in self.roles.values()),
        )

    def role_seconds(self, r: Role, now_ts: float | None = None) -> float:
        """The role's wall-clock time: from its start to its end (or `now_ts`)."""
        if r.started is None:
            return 0.0
        end = r.ended if r.ended is not None else (now_ts or time.time())
        return max(0.0, end - r.started)


_ON_RUN: dict[str, Callable[[Tracker, dict[str, Any]], None]] = {
    "run.start": Tracker._run_start,
    "step.start": Tracker._step_start,
    "step.end": Tracker._step_end,
    "batch.start": Tracker._batch_start,
    "batch.skipped": Tracker._batch_skipped,
    "batch.end": Tracker._batch_end,
    "audit": Tracker._audit,
    "result": Tracker._result,
}
_ON_ROLE: dict[str, Callable[[Tracker, Role, dict[str, Any]], None]] = {
    "role.start": Tracker._role_start,
    "role.end": Tracker._role_end,
    "tool.start": Tracker._tool_start,
    "tool.call": Tracker._tool_call,
    "model.turn": Tracker._model_turn,
    "hook.run": Tracker._hook_run,
}


def warning_line(e: dict[str, Any], paint: Callable[[str, str], str]) -> str:
    """A `warning` event: `b1: warning: no role changed any file`; a `network.refused`
    one: `network_line`."""
    if e.get("type") == "network.refused":
        return network_line(e, paint)
    who = clean(str(e.get("batch") or e.get("role") or e.get("step") or "orkeon"))
    return f"{who}: {paint('warning', 'yellow')}: {clean(str(e.get('message', '')))}"


def network_line(e: dict[str, Any], paint: Callable[..., str]) -> str:
    """A `network.refused` event: `dev-batches: network: refused evil.example:443 (curl
    https://evil.example/)`."""
    who, host = clean(str(e.get("step") or "orkeon")), clean(f"{e.get('host')}:{e.get('port')}")
    return f"{who}: network: {paint('refused')} {host} ({clean(str(e.get('command', '')), 120)})"


def step_line(e: dict[str, Any], paint: Callable[[str], str]) -> str:
    """A pipeline's step starts or ends (`step.start`, `step.end`): `dev-plan: step
    started`, `dev-batches: step failed (exit 1): WHY`."""
    if e["type"] == "step.start":
        return f"{clean(e['name'])}: step {'resumed' if e.get('resume') else 'started'}"
    why = error_message(e.get("error"))
    tail = f": {clean(first_line(str(why)), 300)}" if why else ""
    return f"{clean(e['name'])}: step {paint(str(e['status']))} (exit {e['exit_code']}){tail}"
