"""The run as a progress view follows it (docs/output.md, "Progress"): `Tracker` takes the
run's events in order and keeps its roles, batches, audits and budget use. The leaf of the
progress package: the views import it, it imports no view."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...pipeline import call_target
from ...units import spent_of
from ...vocabulary import BUDGET_WORDS

MARKS = (50, 80, 100)  # budget use, in percent, that plain progress reports


@dataclass
class Call:
    seq: int
    tool: str
    target: str | None
    since: float  # the clock's time when it began


@dataclass
class Refusal:
    """A refused call, for the views' list of the latest ones."""

    role: str
    seq: int
    tool: str
    target: str | None
    by: str | None  # the stage that refused it (gate, rules, roots, hook, …); None: invalid
    result: Any  # what the model read


REFUSALS_KEPT = 5  # the latest refused calls the live view lists


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
    refusals: deque[Refusal] = field(default_factory=lambda: deque(maxlen=REFUSALS_KEPT))

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
        # The summed budgets only: `idle_seconds` (the watchdog) is no use to add up.
        budget = e.get("budget") or {}
        self.limits = {k: v for k, v in budget.items() if v and k in self.used}
        self._next = {k: v * MARKS[0] / 100 for k, v in self.limits.items()}
        # A resumed run: the budget spans attempts, so its use starts from the earlier
        # attempts' (docs/inputs.md, "`budget`"); a mark they passed is not said again.
        for which, value in (e.get("earlier") or {}).items():
            if which in self.used and isinstance(value, (int, float)):
                self._add(which, value)
        self.reached = []

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
            target = r.last.target if r.last is not None and r.last.seq == e["seq"] else None
            if target is None:
                target = call_target(e["tool"], e.get("input"))
            self.refusals.append(
                Refusal(r.name, e["seq"], e["tool"], target, e.get("refused_by"), e["result"])
            )
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
        """`15 min 00 s of 30 min 00 s`, `4 of 8 turns`, `$2.50 of $5.00` (units.py)."""
        return spent_of(which, self.used[which], self.limits[which])

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
