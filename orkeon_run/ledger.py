"""The step's ledger: what a step has spent of its budget (docs/inputs.md, "`budget`").

Every model turn, tool run and hook run is charged here, at the moment it ends. When the
ledger reaches a limit no new turn or call starts: callers ask `check()` (raises) or
`refuse()` (returns which budget) before starting one, and `remaining_seconds()` to cap a
hook's or a tool's own time limit. Roles of one batch share one ledger, so charges are
summed, not wall-clock time.

A budget is `exhausted` (the result's `budget.exhausted`, exit 3) only when it stopped
work that wanted to start: a step whose last turn lands exactly on its turn limit and
needs no other has finished within its budget.

`budget.per_role` gives each role limits of its own, on the same keys: the role's agent
and its calls charge a `RoleLedger`, which charges the step's ledger as well and stops
its role alone when the role's limit is reached (its siblings go on); the step's limits
still hold over all of them.

`budget.idle_seconds` is the no-progress watchdog (docs/inputs.md, "The no-progress
watchdog"): no budget that is spent, but the longest a role's model may send no bytes, or
its tool, hook or MCP call print nothing without ending. Whoever waits on one of those
asks `idle_seconds` and, when the silence lasts that long, raises errors.Idle; the agent
ends the role and calls `went_idle`: the step records `exhausted: "idle"` and what was
silent, and the role's siblings go on.

A budget spans a run's attempts: a `--resume` seeds the ledger with what the earlier
attempts spent (`seed`, from the last result's `budget`), so its limits hold over the
whole run, and `snapshot()` gives the whole run's figures beside the last attempt's
(`attempt`, `attempts`). `turns`, `tokens` and `usd` are checked before an answer starts,
so roles running at once pass a limit by at most one answer in flight per role:
`overshoot` says by how much (docs/inputs.md, "`budget`").
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Literal

from .errors import BudgetExhausted
from .limits import BudgetLimits, RoleLimits
from .vocabulary import BudgetName, spent_text

Kind = Literal["model", "tool", "hook"]
__all__ = ["Kind", "Ledger", "RoleLedger"]


class Ledger:
    def __init__(self, limits: BudgetLimits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self.model_seconds = 0.0
        self.tool_seconds = 0.0
        self.hook_seconds = 0.0
        self.turns = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.cache_read_tokens = 0  # parts of tokens_in read from / written to a prompt cache
        self.cache_write_tokens = 0
        self.usd = 0.0
        self.usd_known = True
        self.reached: BudgetName | None = None  # a limit was reached: nothing new may start
        self.exhausted: BudgetName | None = None  # ... and something that wanted to was stopped
        self.silent: list[dict[str, object]] = []  # what the watchdog found silent, per role
        # What earlier attempts of the run spent (`seed`), and how many there were.
        self.earlier: dict[str, float] = dict.fromkeys(_SUMS, 0.0)
        self.attempts = 1
        self.attempt_usd_known = True  # this attempt's answers all had a price

    @property
    def used_seconds(self) -> float:
        return self.model_seconds + self.tool_seconds + self.hook_seconds

    def charge(self, kind: Kind, seconds: float) -> None:
        with self._lock:
            if kind == "model":
                self.model_seconds += seconds
            elif kind == "tool":
                self.tool_seconds += seconds
            else:
                self.hook_seconds += seconds
            self._update()

    def add_turn(
        self,
        tokens_in: int = 0,
        tokens_out: int = 0,
        usd: float | None = 0.0,
        cache_read: int = 0,
        cache_write: int = 0,
    ) -> None:
        """Count one model answer; `usd=None` means its price is unknown (not counted)."""
        with self._lock:
            self.turns += 1
            self.tokens_in += tokens_in
            self.tokens_out += tokens_out
            self.cache_read_tokens += cache_read
            self.cache_write_tokens += cache_write
            if usd is None:
                self.usd_known = self.attempt_usd_known = False
            else:
                self.usd += usd
            self._update()

    def _update(self) -> None:
        if self.reached:
            return
        lim = self.limits
        if lim.seconds is not None and self.used_seconds >= lim.seconds:
            self.reached = "seconds"
        elif lim.turns is not None and self.turns >= lim.turns:
            self.reached = "turns"
        elif lim.tokens is not None and self.tokens_in + self.tokens_out >= lim.tokens:
            self.reached = "tokens"
        elif lim.usd is not None and self.usd >= lim.usd:
            self.reached = "usd"

    def add_spent(self, block: Mapping[str, Any]) -> None:
        """Add what another ledger spent (its `snapshot()`, a result's `budget`): each step
        of a pipeline runs on a ledger of its own, on what is left of the pipeline's."""
        with self._lock:
            self._add_block(block)
            if block.get("usd") is None:
                self.attempt_usd_known = False
            self._update()
            if block.get("exhausted"):
                self.reached = self.reached or block["exhausted"]
                self.exhausted = self.exhausted or block["exhausted"]

    def seed(self, block: Mapping[str, Any]) -> None:
        """Start a resumed run's ledger from what its earlier attempts spent: the last
        result's `budget` (which counts every attempt before it). Its `exhausted` is not
        taken: a limit the earlier attempts reached is `reached` again (nothing new
        starts), and exhausted only when it stops work of this attempt."""
        with self._lock:
            self._add_block(block)
            self.earlier = {
                "seconds": self.used_seconds,
                "turns": self.turns,
                "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out,
                "usd": self.usd,
            }
            self.attempts = int(block.get("attempts") or 1) + 1
            self._update()

    def _add_block(self, block: Mapping[str, Any]) -> None:
        self.model_seconds += float(block.get("model_seconds") or 0.0)
        self.tool_seconds += float(block.get("tool_seconds") or 0.0)
        self.hook_seconds += float(block.get("hook_seconds") or 0.0)
        self.turns += int(block.get("turns") or 0)
        self.tokens_in += int(block.get("tokens_in") or 0)
        self.tokens_out += int(block.get("tokens_out") or 0)
        self.cache_read_tokens += int(block.get("cache_read_tokens") or 0)
        self.cache_write_tokens += int(block.get("cache_write_tokens") or 0)
        usd = block.get("usd")
        if usd is None:
            self.usd_known = False
        else:
            self.usd += float(usd)

    def earlier_spent(self) -> dict[str, float] | None:
        """What the earlier attempts spent, on the budget's keys (`run.start`'s
        `earlier`), or None on a run's first attempt."""
        if self.attempts == 1:
            return None
        e = self.earlier
        tokens = e["tokens_in"] + e["tokens_out"]
        return {"seconds": e["seconds"], "turns": e["turns"], "tokens": tokens, "usd": e["usd"]}

    def left(self) -> BudgetLimits:
        """The limits less what is spent: a pipeline's next step runs on these. Call it
        only when `spent()` is None (every limit then has something left)."""
        lim = self.limits

        def less(limit: float | None, used: float) -> float | None:
            return None if limit is None else limit - used

        return lim.model_copy(
            update={
                "seconds": less(lim.seconds, self.used_seconds),
                "turns": less(lim.turns, self.turns),
                "tokens": less(lim.tokens, self.tokens_in + self.tokens_out),
                "usd": less(lim.usd, self.usd),
            }
        )

    def spent(self) -> BudgetName | None:
        """Which budget has reached its limit, or None. Asks; records nothing."""
        return self.reached

    def refuse(self) -> BudgetName | None:
        """Which budget stops the work about to start (recorded as exhausted), or None."""
        with self._lock:
            if self.reached and not self.exhausted:
                self.exhausted = self.reached
            return self.reached

    def check(self) -> None:
        """Raise BudgetExhausted when no new turn or call may start."""
        which = self.refuse()
        if which:
            raise BudgetExhausted(which)

    def refusal_text(self) -> str:
        """What a call the budget stops reads (after `refuse()`): whose budget, which."""
        return spent_text(self.reached or "seconds")

    def time_spent_text(self) -> str:
        """Why work that `cap` left no time for cannot run: `the step's time budget is
        spent` (a RoleLedger: the role's, unless the step's ran out)."""
        return spent_text("seconds")

    def role(self) -> Ledger:
        """The ledger one role charges: this one, or with `per_role` limits a RoleLedger
        of its own over it."""
        per = self.limits.per_role
        return RoleLedger(self, per) if per is not None and per.any() else self

    def exhaust(self, which: BudgetName) -> None:
        """Work was cut at a limit (a model turn stopped at the time budget): record it
        and raise BudgetExhausted."""
        with self._lock:
            self.reached = self.reached or which
            self.exhausted = self.exhausted or which
        raise BudgetExhausted(which)

    @property
    def idle_seconds(self) -> float | None:
        """How long a role's model, tool, hook or MCP call may stay silent (None: no
        watchdog)."""
        return self.limits.idle_seconds

    def went_idle(self, silent: dict[str, object]) -> None:
        """The watchdog ended a role: record `exhausted: "idle"` and what was silent.
        Nothing else is stopped: `reached` stays as it was."""
        with self._lock:
            self.exhausted = self.exhausted or "idle"
            self.silent.append(dict(silent))

    def remaining_seconds(self) -> float | None:
        if self.limits.seconds is None:
            return None
        return max(0.0, self.limits.seconds - self.used_seconds)

    def cap(self, own_limit: float) -> float:
        """A hook's or tool's time limit: the smaller of its own and what is left."""
        left = self.remaining_seconds()
        return own_limit if left is None else min(own_limit, left)

    def snapshot(self) -> dict[str, object]:
        """The result document's `budget` block."""
        return {
            "limit_seconds": self.limits.seconds,
            "used_seconds": round(self.used_seconds, 6),
            "model_seconds": round(self.model_seconds, 6),
            "tool_seconds": round(self.tool_seconds, 6),
            "hook_seconds": round(self.hook_seconds, 6),
            "turns": self.turns,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "usd": round(self.usd, 6) if self.usd_known else None,
            "exhausted": self.exhausted,
            "attempts": self.attempts,
            "attempt": self._attempt(),
            "overshoot": self._overshoot(),
        }

    def _attempt(self) -> dict[str, object]:
        """The last attempt's own figures: the whole run's less the earlier attempts'."""
        e = self.earlier
        usd = self.usd - e["usd"]
        return {
            "used_seconds": round(self.used_seconds - e["seconds"], 6),
            "turns": self.turns - int(e["turns"]),
            "tokens_in": self.tokens_in - int(e["tokens_in"]),
            "tokens_out": self.tokens_out - int(e["tokens_out"]),
            "usd": round(usd, 6) if self.attempt_usd_known else None,
        }

    def _overshoot(self) -> dict[str, object] | None:
        """How far answers in flight when a limit was reached took the run past it
        (`turns`, `tokens`, `usd`; 0 where none), or None when no limit was passed."""
        lim = self.limits
        over: dict[str, object] = {
            "turns": max(0, self.turns - lim.turns) if lim.turns is not None else 0,
            "tokens": max(0, self.tokens_in + self.tokens_out - lim.tokens)
            if lim.tokens is not None
            else 0,
            "usd": round(max(0.0, self.usd - lim.usd), 6) if lim.usd is not None else 0.0,
        }
        return over if any(over.values()) else None


_SUMS = ("seconds", "turns", "tokens_in", "tokens_out", "usd")


class RoleLedger(Ledger):
    """One role's ledger (`budget.per_role`): every charge goes to it and to the step's
    ledger (`parent`). Work stops when either has reached a limit; the step's is asked
    first, so a step whose budget is spent says so rather than the role's."""

    def __init__(self, parent: Ledger, limits: RoleLimits) -> None:
        own = BudgetLimits(**{k: getattr(limits, k) for k in ("seconds", "turns", "tokens", "usd")})
        super().__init__(own.model_copy(update={"stop_blocks": parent.limits.stop_blocks}))
        self.parent = parent

    def charge(self, kind: Kind, seconds: float) -> None:
        super().charge(kind, seconds)
        self.parent.charge(kind, seconds)

    def add_turn(
        self,
        tokens_in: int = 0,
        tokens_out: int = 0,
        usd: float | None = 0.0,
        cache_read: int = 0,
        cache_write: int = 0,
    ) -> None:
        super().add_turn(tokens_in, tokens_out, usd, cache_read, cache_write)
        self.parent.add_turn(tokens_in, tokens_out, usd, cache_read, cache_write)

    def spent(self) -> BudgetName | None:
        return self.parent.spent() or self.reached

    def refuse(self) -> BudgetName | None:
        return self.parent.refuse() or super().refuse()

    def check(self) -> None:
        which = self.parent.refuse()
        if which:
            raise BudgetExhausted(which)
        which = super().refuse()
        if which:
            raise BudgetExhausted(which, "role")

    def refusal_text(self) -> str:
        if self.parent.spent():
            return self.parent.refusal_text()
        return spent_text(self.reached or "seconds", "role")

    def time_spent_text(self) -> str:
        if self.parent.remaining_seconds() == 0:
            return self.parent.time_spent_text()
        return spent_text("seconds", "role")

    def exhaust(self, which: BudgetName) -> None:
        # Cut at the smaller of the two time limits: the step's when it has none left.
        if self.parent.spent() or self.parent.remaining_seconds() == 0:
            self.parent.exhaust(which)
        with self._lock:
            self.reached = self.reached or which
            self.exhausted = self.exhausted or which
        raise BudgetExhausted(which, "role")

    @property
    def idle_seconds(self) -> float | None:
        return self.parent.idle_seconds

    def went_idle(self, silent: dict[str, object]) -> None:
        with self._lock:
            self.exhausted = self.exhausted or "idle"
        self.parent.went_idle(silent)

    def remaining_seconds(self) -> float | None:
        mine, step = super().remaining_seconds(), self.parent.remaining_seconds()
        if mine is None or step is None:
            return step if mine is None else mine
        return min(mine, step)

    def role(self) -> Ledger:
        return self

    def use(self) -> dict[str, object]:
        """The role's record's `budget`: what it spent, and its own limit that stopped it."""
        return {
            "used_seconds": round(self.used_seconds, 6),
            "turns": self.turns,
            "tokens": self.tokens_in + self.tokens_out,
            "usd": round(self.usd, 6) if self.usd_known else None,
            "exhausted": self.exhausted,
        }
