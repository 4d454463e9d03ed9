"""The lines of `--progress plain` (docs/output.md, "Progress"; the list is in plain.py):
what each event says, the role's full name first, colours on the status words only, and
GitHub Actions' `::group::` blocks around a batch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...pipeline import call_target
from ...units import limits_text
from ...vocabulary import error_message
from .text import (
    clean,
    count,
    duration,
    first_line,
    money,
    network_line,
    refusal_line,
    step_line,
    warning_line,
)
from .tracker import Tracker

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


class PlainLines:
    """The lines the events of one run make, in order: `lines(event)` (the tracker takes
    the event first). Not thread-safe: the view calls it under its lock."""

    def __init__(self, tracker: Tracker, *, github: bool, color: bool) -> None:
        self.tracker = tracker
        self.github = github
        self.color = color
        self._group: str | None = None  # the batch whose ::group:: is open

    def lines(self, event: dict[str, Any]) -> list[str]:
        """What `event` says, then the budget marks it made the run reach."""
        reached = self.tracker.update(event)
        say = _SAY.get(event["type"])
        lines = say(self, event) if say is not None else []
        for which, mark in reached:
            lines.append(self.tracker.mark_line(which, mark))
        return lines

    def closing(self) -> list[str]:
        """What ends the view's output: the open ::group::'s end."""
        return self._end_group() if self._group is not None else []

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
        limits = limits_text(t.limits)
        budget = f" (budget: {limits})" if limits else ""
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
            f"{e['role']}: {status}: {count(e['turns'], 'turn')}, {count(e['calls'], 'call')}, "
            f"{e['refused']:,} refused, {duration(self.tracker.role_seconds(r, e['ts']))}{error}"
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
        if e["outcome"] == "ran":
            head = f"{role}: #{seq} {clean(e['tool'], 40)}"
            if target:
                head = f"{head} {clean(target, 120)}"
            result = e["result"]
            code = result.get("exit_code") if type(result) is dict else None
            exit_note = f", exit {code}" if type(code) is int else ""
            took = duration(e["tool_seconds"] + e["hook_seconds"])
            line = f"{head}: {self._paint('ran')}{exit_note} ({took})"
        else:
            paint = self._paint("refused")
            line = refusal_line(role, seq, e["tool"], target, e["refused_by"], e["result"], paint)
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
            f"{count(len(e.get('roles') or []), 'role')}, {count(calls, 'call')}, "
            f"{refused:,} refused{usd}{error}"
        )


_SAY: dict[str, Callable[[PlainLines, dict[str, Any]], list[str]]] = {
    "run.start": PlainLines._run_start,
    "step.start": lambda self, e: [step_line(e, self._paint)],
    "step.end": lambda self, e: [step_line(e, self._paint)],
    "batch.start": PlainLines._batch_start,
    "batch.skipped": PlainLines._batch_skipped,
    "role.start": PlainLines._role_start,
    "role.end": PlainLines._role_end,
    "tool.call": PlainLines._call,
    "hook.run": PlainLines._hook_run,
    "compact": PlainLines._compact,
    "plan.invalid": PlainLines._plan_invalid,
    "repair.start": PlainLines._repair_start,
    "audit": PlainLines._audit_done,
    "warning": lambda self, e: [warning_line(e, self._paint)],
    "network.refused": lambda self, e: [network_line(e, self._paint)],
    "batch.end": PlainLines._batch_end,
    "result": PlainLines._result_line,
}
