"""A run directory read into one plain view: `load(RUN_DIR) -> RunView`.

Reads `result.json`, `events.jsonl`, `inputs.json` and `state.json` (docs/output.md).
Tolerant by contract: a run killed before its result (no `result.json`, or a `--resume`
attempt with no `result` event after its `run.start`) is reported as `unfinished`; an
unreadable file or line becomes a line in `problems`, never an exception. Only a folder
that holds none of the four files raises InputError.

Counts (turns, calls, refusals, tokens, cost, time) come from the events, so they cover
every attempt the run directory recorded; a role with no events keeps the result's
counts. Status comes from the last result, else from `state.json`, else from the events.
Nothing here trusts the files' shapes: every field is checked for its type.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .model import BatchView, BudgetPoint, RoleView, RunView, num, text
from .records import audit_view, call_view, error_of, hook_view

FILES = ("result.json", "events.jsonl", "inputs.json", "state.json")


def load(run_dir: Path) -> RunView:
    if not run_dir.is_dir():
        raise InputError(f"RUN_DIR: not a directory: {run_dir}")
    if not any((run_dir / name).is_file() for name in FILES):
        raise InputError(
            f"RUN_DIR: not a run directory (no result.json, events.jsonl or state.json): {run_dir}"
        )
    reader = _Reader(run_dir)
    return reader.view()


@dataclass
class _Attempt:
    start: float | None = None
    result: dict[str, Any] | None = None


@dataclass
class _Reader:
    run_dir: Path
    problems: list[str] = field(default_factory=list)

    def json_file(self, name: str) -> Any:
        path = self.run_dir / name
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError) as exc:
            self.problems.append(f"{name}: unreadable ({type(exc).__name__}: {exc})")
            return None

    def events(self) -> Iterator[dict[str, Any]]:
        path = self.run_dir / "events.jsonl"
        if not path.is_file():
            return
        try:
            f = path.open(encoding="utf-8", errors="replace")
        except OSError as exc:
            self.problems.append(f"events.jsonl: unreadable ({exc.strerror or exc})")
            return
        with f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    self.problems.append(f"events.jsonl line {n}: not JSON (a torn line?)")
                    continue
                if isinstance(event, dict) and isinstance(event.get("type"), str):
                    yield event
                else:
                    self.problems.append(f"events.jsonl line {n}: not an event")

    def view(self) -> RunView:
        result = self.json_file("result.json")
        inputs = self.json_file("inputs.json")
        state = self.json_file("state.json")
        result = result if isinstance(result, dict) else None
        inputs = inputs if isinstance(inputs, dict) else {}
        state = state if isinstance(state, dict) else {}
        v = RunView(run_dir=str(self.run_dir.resolve()))
        attempts: list[_Attempt] = []
        roles: dict[str, RoleView] = {}
        batches: dict[tuple[int, str], BatchView] = {}
        attempt_points: list[BudgetPoint] = []
        running = _Budget()
        for ev in self.events():
            kind = ev["type"]
            ts = num(ev.get("ts"))
            if kind == "run.start" or not attempts:
                attempts.append(_Attempt(start=ts if kind == "run.start" else None))
                attempt_points, running = [], _Budget()
                v.budget_points = attempt_points
            n = len(attempts)
            if v.started is None or (ts and ts < v.started):
                v.started = ts
            v.ended = max(v.ended or ts, ts)
            if kind == "run.start":
                v.run_id = text(ev.get("run_id")) or v.run_id
                v.step = text(ev.get("step")) or v.step
                v.workspace = text(ev.get("workspace")) or v.workspace
            elif kind == "result":
                attempts[-1].result = ev
            elif kind == "model.turn":
                role = _role(roles, ev)
                seconds = num(ev.get("seconds"))
                role.turns_seen += 1
                role.tokens_in += int(num(ev.get("tokens_in")))
                role.tokens_out += int(num(ev.get("tokens_out")))
                role.model_seconds += seconds
                usd = ev.get("usd")
                if isinstance(usd, int | float) and role.usd is not None:
                    role.usd += usd
                else:
                    role.usd = None
                role.first = min(role.first or ts, ts - seconds)
                role.last = max(role.last or ts, ts)
                if num(ev.get("tool_calls")) == 0:
                    role.answered = True
                running.turn(ev, seconds)
                attempt_points.append(running.point(ts))
            elif kind == "tool.call":
                call = call_view(ev, n, len(v.calls) + 1)
                v.calls.append(call)
                role = _role(roles, ev)
                role.calls_seen += 1
                role.tool_seconds += call.tool_seconds
                role.hook_seconds += call.hook_seconds
                if call.outcome == "refused":
                    role.refused_seen += 1
                    stage = call.refused_by or "invalid"
                    role.refused_by[stage] = role.refused_by.get(stage, 0) + 1
                role.first = min(role.first or ts, call.started)
                role.last = max(role.last or ts, ts)
                running.seconds += call.tool_seconds + call.hook_seconds
                attempt_points.append(running.point(ts))
            elif kind == "hook.run":
                hook = hook_view(ev, ts, role=text(ev.get("role")), call=None, refusal=None)
                v.hooks.append(hook)
                _role(roles, ev).hook_seconds += hook.seconds
                running.seconds += hook.seconds
            elif kind == "batch.start":
                name = text(ev.get("batch"))
                names = [text(r) for r in ev.get("roles") or [] if isinstance(r, str)]
                batches[(n, name)] = BatchView(name=name, attempt=n, roles=names, started=ts)
                for r in names:
                    roles.setdefault(r, RoleView(name=r, batch=name, step=text(ev.get("step"))))
            elif kind == "batch.end":
                batch = batches.get((n, text(ev.get("batch"))))
                if batch:
                    batch.ended, batch.passed = ts, ev.get("passed") is True
            elif kind == "batch.skipped":
                name = text(ev.get("batch"))
                batches[(n, name)] = BatchView(name=name, attempt=n, skipped=True, started=ts)
            elif kind == "audit":
                v.audits.append(audit_view(ev, n, ts))
            elif kind == "plan.invalid":
                problems = ev.get("problems")
                lines = [text(p) for p in problems] if isinstance(problems, list) else []
                v.plan_checks.append({"attempt": int(num(ev.get("attempt"))), "problems": lines})
            elif kind == "compact":
                _role(roles, ev).compactions += 1
        v.attempts = len(attempts)
        v.batches = list(batches.values())
        last = attempts[-1] if attempts else None
        final = last.result if last and last.result else None
        if final is None and result is not None and not attempts:
            final = result  # a result.json without events: the events file was lost
        self.settle(v, final, result, inputs, state, roles, running)
        v.problems = self.problems
        return v

    def settle(
        self,
        v: RunView,
        final: dict[str, Any] | None,
        result_file: dict[str, Any] | None,
        inputs: dict[str, Any],
        state: dict[str, Any],
        roles: dict[str, RoleView],
        running: _Budget,
    ) -> None:
        """Status, error, budget and roles' statuses from the last result (or, for an
        unfinished run, from state.json and the events)."""
        v.run_id = v.run_id or text(state.get("run_id")) or Path(v.run_dir).name
        v.step = v.step or text(state.get("step"))
        v.workspace = v.workspace or text(inputs.get("workspace"))
        limits = inputs.get("budget")
        if isinstance(limits, dict):
            v.limits = {k: float(val) for k, val in limits.items() if _is_num(val)}
        for name, record in state_roles(state).items():
            _merge(roles.setdefault(name, RoleView(name=name)), record)
        if final is not None:
            v.finished = True
            v.status = text(final.get("status")) or "unknown"
            code = final.get("exit_code")
            v.exit_code = code if isinstance(code, int) else None
            v.step = text(final.get("step")) or v.step
            v.error, v.error_kind = error_of(final.get("error"))
            budget = final.get("budget")
            v.budget = dict(budget) if isinstance(budget, dict) else running.block()
            if _is_num(v.budget.get("limit_seconds")):
                v.limits.setdefault("seconds", float(v.budget["limit_seconds"]))
            arts = final.get("artifacts")
            v.artifacts = (
                {text(k): text(p) for k, p in arts.items()} if isinstance(arts, dict) else {}
            )
            for record in final.get("roles") or []:
                if isinstance(record, dict) and isinstance(record.get("name"), str):
                    _merge(roles.setdefault(record["name"], RoleView(name=record["name"])), record)
            if not v.audits:  # the events were lost: the result's audits are all there is
                v.audits = [
                    audit_view(a, 1, None) for a in final.get("audits") or [] if isinstance(a, dict)
                ]
        else:
            v.status, v.exit_code, v.budget = "unfinished", None, running.block()
            if result_file is not None:
                previous = text(result_file.get("status"))
                self.problems.append(
                    f"the last attempt has no result; result.json is an earlier attempt's ({previous})"
                )
            for role in roles.values():
                if not role.status and (role.turns_seen or role.calls_seen):
                    role.status = "succeeded" if role.answered else "unfinished"
        for role in roles.values():
            role.finish()
        v.roles = sorted(roles.values(), key=lambda r: (r.first is None, r.first or 0.0))


def state_roles(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Role records dev-batches saved in state.json (passed batches and the current one)."""
    found: dict[str, dict[str, Any]] = {}
    batches = state.get("batches")
    groups = list(batches.values()) if isinstance(batches, dict) else []
    if isinstance(state.get("current"), dict):
        groups.append(state["current"])
    for group in groups:
        for record in (group.get("roles") if isinstance(group, dict) else None) or []:
            if isinstance(record, dict) and isinstance(record.get("name"), str):
                found[record["name"]] = record
    return found


@dataclass
class _Budget:
    """The charged time, turns, tokens and cost of one attempt, as the events add up."""

    seconds: float = 0.0
    turns: int = 0
    tokens: int = 0
    usd: float | None = 0.0

    def turn(self, ev: dict[str, Any], seconds: float) -> None:
        self.seconds += seconds
        self.turns += 1
        self.tokens += int(num(ev.get("tokens_in")) + num(ev.get("tokens_out")))
        usd = ev.get("usd")
        self.usd = self.usd + usd if isinstance(usd, int | float) and self.usd is not None else None

    def point(self, ts: float) -> BudgetPoint:
        return BudgetPoint(
            ts=ts, seconds=self.seconds, turns=self.turns, tokens=self.tokens, usd=self.usd
        )

    def block(self) -> dict[str, Any]:
        """A result-shaped `budget` for a run with no result (counted from the events)."""
        return {"used_seconds": self.seconds, "turns": self.turns, "tokens": self.tokens,
                "usd": self.usd, "exhausted": None, "from_events": True}  # fmt: skip


def _role(roles: dict[str, RoleView], ev: dict[str, Any]) -> RoleView:
    name = text(ev.get("role")) or "?"
    role = roles.get(name)
    if role is None:
        role = roles[name] = RoleView(name=name)
    role.step = role.step or text(ev.get("step"))
    role.batch = role.batch or (text(ev.get("batch")) or None)
    return role


def _merge(role: RoleView, record: dict[str, Any]) -> None:
    role.status = text(record.get("status")) or role.status
    role.error = text(record.get("error")) or role.error
    for key in ("turns", "calls", "refused"):
        if isinstance(record.get(key), int):
            setattr(role, f"{key}_recorded", record[key])


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
