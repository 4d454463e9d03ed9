"""`--progress live`: the run on stderr as a view updated in place (rich), for a person at
a terminal; cleared to a final summary when the run ends.

    dev-batches · run 20261130-074134-afde71 · 1m 12s · budget 312.4 s of 1800.0 s (17 %)
    batch b1          running     audit: pending
      b1/api          running     3 turns  12 calls  1 refused  2m 03s  41.2 s  #13 shell pytest -q (8.1 s)
      b1/tests        succeeded   2 turns   8 calls  0 refused  1m 40s  30.0 s
    batch b2          waiting

Per role: status, model turns, calls, refused calls, time since it started, seconds
charged to the budget (model, tools, hooks), cost when known, and what runs now: the call
(with its time) or the wait for the model. rich is imported only here, and only for a
live view. Its refresh thread redraws four times a second; events that change the shape
of the view (a role or batch starting or ending, an audit) redraw at once. stdout is never
touched (the result, or stream-json events, go there); other stderr output (log lines)
is printed above the view. Colours follow rich's own reading of NO_COLOR and FORCE_COLOR.
"""

from __future__ import annotations

import threading
import time
from typing import IO, Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ...vocabulary import error_message
from .text import budget_line, clean, count, duration, gave_up, money, refusal_line
from .tracker import Role, Tracker

_STYLES = {
    "succeeded": "green",
    "passed": "green",
    "running": "cyan",
    "failed": "red",
    "FAILED": "red",
    "error": "red",
    "stopped": "yellow",
    "budget_exhausted": "yellow",
    "interrupted": "yellow",
    "waiting": "dim",
    "skipped": "dim",
}
# Events after which the view is redrawn at once rather than at the next tick.
_REDRAW = {"run.start", "batch.start", "batch.skipped", "role.start", "role.end", "audit",
           "batch.end"}  # fmt: skip


class LiveProgress:
    """The live view; an `EventLog` listener. Never holds its lock while asking rich to
    draw (rich's refresh thread takes rich's lock, then asks this view for its rows)."""

    def __init__(self, stream: IO[str]) -> None:
        self.console = Console(file=stream, highlight=False, soft_wrap=False)
        self.tracker = Tracker()
        self._lock = threading.Lock()
        self._live: Live | None = None
        self._quiet = False

    def __call__(self, event: dict[str, Any]) -> None:
        if self._quiet:
            return
        try:
            with self._lock:
                self.tracker.update(event)
            if self._live is None and event["type"] == "run.start":
                self._live = Live(
                    self,
                    console=self.console,
                    refresh_per_second=4,
                    transient=True,
                    redirect_stdout=False,  # stdout carries the result: never the view's
                    redirect_stderr=True,
                )
                self._live.start()
            elif self._live is not None and event["type"] in _REDRAW:
                self._live.refresh()
        except Exception as exc:  # stderr went away, or a bug here: the run goes on
            self._quiet = True
            gave_up(exc)

    def close(self) -> None:
        if self._live is not None:
            try:
                self._live.stop()
            except Exception:
                self._quiet = True
        if self._quiet or self._live is None:
            return
        try:
            self.console.print(self._summary())
        except Exception:
            self._quiet = True

    # --- the view ----------------------------------------------------------------------

    def __rich__(self) -> RenderableType:
        with self._lock:
            return self._view(time.time())

    def _view(self, now_ts: float) -> RenderableType:
        t = self.tracker
        head = Text(f"{t.step} · run {clean(t.run_id)}", style="bold")
        if t.started is not None:
            head.append(f" · {duration(max(0.0, now_ts - t.started))}")
        budget = self._budget()
        if budget:
            head.append(f" · budget {budget}")
        lines: list[RenderableType] = [head]
        if t.steps:
            lines.append(_steps(t.steps))
        table = _table(now=True)
        listed: set[str] = set()
        for b in t.batches.values():
            audit = ""
            if b.audit is not None:
                audit = "audit: passed" if b.audit.get("passed") else "audit: FAILED"
            elif b.status == "running" and b.roles:
                audit = "audit: pending"
            audit_style = _STYLES.get(audit.rpartition(" ")[2], "")
            table.add_row(Text(f"batch {b.name}", style="bold"), _status(b.status),
                          *[Text("")] * 6, Text(audit, style=audit_style, no_wrap=True, overflow="ellipsis"))  # fmt: skip
            for name in b.roles:
                listed.add(name)
                table.add_row(*self._role_row(t.role(name), now_ts, indent=True))
        for r in t.roles.values():
            if r.name not in listed:
                table.add_row(*self._role_row(r, now_ts, indent=False))
        return Group(*lines, table, *_refusals(t))

    def _role_row(self, r: Role, now_ts: float, *, indent: bool) -> list[RenderableType]:
        t = self.tracker
        now = ""
        if r.status == "running":
            waited = t.clock() - (r.call.since if r.call is not None else r.since)
            if r.call is not None:
                target = f" {clean(r.call.target, 60)}" if r.call.target else ""
                now = f"#{r.call.seq} {clean(r.call.tool, 30)}{target} ({duration(waited)})"
            else:
                now = f"model, turn {r.turns + 1} ({duration(waited)})"
        elif r.error:
            now = clean(r.error, 100)
        started = r.started is not None
        cells = (
            [f"{r.turns:,}", f"{r.calls:,}", f"{r.refused:,}", duration(t.role_seconds(r, now_ts)),
             duration(r.charged), money(r.usd)]
            if started
            else [""] * 6
        )  # fmt: skip
        return [
            Text(("  " if indent else "") + r.name),
            _status(r.status),
            *(Text(c, style="yellow" if i == 2 and r.refused else "") for i, c in enumerate(cells)),
            # The one column that gives way on a narrow terminal: cut, never wrapped.
            Text(now, style="" if r.status == "running" else "dim", no_wrap=True,
                 overflow="ellipsis"),
        ]  # fmt: skip

    def _budget(self) -> str:
        t = self.tracker
        parts = []
        for which, limit in t.limits.items():
            if limit:
                parts.append(f"{t.used_of(which)} ({100 * t.used[which] / limit:.0f} %)")
        return ", ".join(parts)

    def _summary(self) -> RenderableType:
        t = self.tracker
        e = t.result
        if e is None:
            return Text(f"{t.step}: ended without a result", style="yellow")
        took = duration(max(0.0, e["ts"] - (t.started or e["ts"])))
        head = Text(f"{e['step']} ", style="bold")
        head.append_text(_status(e["status"]))
        head.append(f" (exit {e['exit_code']}) in {took} · run {clean(e.get('run_id', ''))}")
        lines: list[RenderableType] = [head]
        if t.steps:
            lines.append(_steps(t.steps))
        table = _table(now=False)
        for r in t.roles.values():
            if r.started is not None:
                table.add_row(*self._role_row(r, e["ts"], indent=True)[:8])
        for a in t.audits:
            verdict = _status("passed" if a["passed"] else "FAILED")
            if a.get("changed") == 0:
                verdict.append(" (no file changed)", style="yellow")
            table.add_row(Text(f"  audit {a.get('batch')}"), verdict)
        tail: list[RenderableType] = [Text(f"  {budget_line(e.get('budget') or {})}")]
        why = error_message(e.get("error"))
        if why:
            tail.append(Text(f"  error: {clean(why, 300)}", style="red"))
        return Group(*lines, table, *tail, *_refusals(t))


def _table(*, now: bool) -> Table:
    """Role rows under a header: name, status, turns, calls, refused, time, seconds
    charged, cost, and (`now`) what runs now."""
    names = ["", "status", "turns", "calls", "refused", "time", "charged", "cost"]
    table = Table.grid(padding=(0, 2))
    for i, _ in enumerate(names):
        table.add_column(no_wrap=True, justify="right" if i >= 2 else "left")
    if now:
        table.add_column(no_wrap=False)  # see _role_row
    table.add_row(*(Text(n, style="dim") for n in names), *([Text("now", style="dim")] * now))
    return table


def _refusals(t: Tracker) -> list[RenderableType]:
    """The latest refused calls, one line each as the plain view says them (escaped)."""
    if not t.refusals:
        return []
    calls, refused = t.totals()
    head = Text(f"refused: {refused:,} of {count(calls, 'call')}; the latest:", style="dim")
    lines: list[RenderableType] = [head]
    for x in t.refusals:
        line = refusal_line(x.role, x.seq, x.tool, x.target, x.by, x.result)
        lines.append(Text(f"  {line}", style="yellow", no_wrap=True, overflow="ellipsis"))
    return lines


def _steps(steps: list[list[str]]) -> Text:
    """A pipeline's steps on one line: `steps: dev-spec succeeded · dev-plan running`."""
    line = Text("steps: ", style="dim")
    for i, (name, status) in enumerate(steps):
        if i:
            line.append(" · ", style="dim")
        line.append(f"{clean(name, 40)} ")
        line.append_text(_status(status))
    return line


def _status(word: str) -> Text:
    return Text(word, style=_STYLES.get(word, ""))
