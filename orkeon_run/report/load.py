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
from .changes import load_changes, turn_texts
from .model import BatchView, BudgetPoint, RoleView, RunView, num, text
from .records import audit_view, call_view, error_of, hook_view, step_view

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
        scan = _Scan(RunView(run_dir=str(self.run_dir.resolve())))
        for ev in self.events():
            scan.add(ev)
        v = scan.view
        v.attempts = len(scan.results)
        v.batches = list(scan.batches.values())
        final = scan.results[-1] if scan.results else None
        if not scan.results and result is not None:
            final = result  # a result.json without events: the events file was lost
        self.settle(
            v,
            final,
            result,
            inputs if isinstance(inputs, dict) else {},
            state if isinstance(state, dict) else {},
            scan.roles,
            scan.running,
        )
        step_dirs = [s.run_dir for s in v.steps if s.run_dir]
        v.changes = load_changes(self.run_dir, step_dirs)
        v.texts = turn_texts(self.run_dir, step_dirs)
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
            checks = final.get("checks")
            if isinstance(checks, list):
                v.checks = [c for c in checks if isinstance(c, dict)]
            steps = final.get("steps")
            if isinstance(steps, list):
                v.steps = [step_view(s) for s in steps if isinstance(s, dict)]
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


@dataclass
class _Scan:
    """One pass over the events: each event type adds to the view, the roles, the
    batches and the attempt's running budget."""

    view: RunView
    roles: dict[str, RoleView] = field(default_factory=dict)
    batches: dict[tuple[int, str], BatchView] = field(default_factory=dict)
    results: list[dict[str, Any] | None] = field(default_factory=list)  # per attempt
    running: _Budget = field(default_factory=lambda: _Budget())

    def add(self, ev: dict[str, Any]) -> None:
        kind, ts = ev["type"], num(ev.get("ts"))
        if kind == "run.start" or not self.results:  # a new attempt begins
            self.results.append(None)
            self.running = _Budget()
            self.view.budget_points = []
        v = self.view
        v.started = ts if v.started is None else min(v.started, ts)
        v.ended = ts if v.ended is None else max(v.ended, ts)
        handler = getattr(self, "on_" + kind.replace(".", "_"), None)
        if handler is not None:
            handler(ev, ts)

    @property
    def attempt(self) -> int:
        return len(self.results)

    def on_run_start(self, ev: dict[str, Any], ts: float) -> None:
        v = self.view
        v.run_id = text(ev.get("run_id")) or v.run_id
        v.step = text(ev.get("step")) or v.step
        v.workspace = text(ev.get("workspace")) or v.workspace

    def on_result(self, ev: dict[str, Any], ts: float) -> None:
        self.results[-1] = ev

    def on_model_turn(self, ev: dict[str, Any], ts: float) -> None:
        role = self.role(ev)
        seconds = num(ev.get("seconds"))
        role.turns_seen += 1
        role.tokens_in += int(num(ev.get("tokens_in")))
        role.tokens_out += int(num(ev.get("tokens_out")))
        role.model_seconds += seconds
        usd = ev.get("usd")
        role.usd = role.usd + usd if isinstance(usd, int | float) and role.usd is not None else None
        role.span(ts - seconds, ts)
        role.answered = role.answered or num(ev.get("tool_calls")) == 0
        self.running.turn(ev, seconds)
        self.view.budget_points.append(self.running.point(ts))

    def on_tool_call(self, ev: dict[str, Any], ts: float) -> None:
        call = call_view(ev, self.attempt, len(self.view.calls) + 1)
        self.view.calls.append(call)
        role = self.role(ev)
        role.calls_seen += 1
        role.tool_seconds += call.tool_seconds
        role.hook_seconds += call.hook_seconds
        if call.stage:
            role.refused_seen += 1
            role.refused_by[call.stage] = role.refused_by.get(call.stage, 0) + 1
        role.span(call.started, ts)
        self.running.seconds += call.tool_seconds + call.hook_seconds
        self.view.budget_points.append(self.running.point(ts))

    def on_hook_run(self, ev: dict[str, Any], ts: float) -> None:
        hook = hook_view(ev, ts, role=text(ev.get("role")), call=None, refusal=None)
        self.view.hooks.append(hook)
        self.role(ev).hook_seconds += hook.seconds
        self.running.seconds += hook.seconds

    def on_batch_start(self, ev: dict[str, Any], ts: float) -> None:
        name = text(ev.get("batch"))
        names = [r for r in ev.get("roles") or [] if isinstance(r, str)]
        self.batches[(self.attempt, name)] = BatchView(name, self.attempt, names, started=ts)
        for r in names:  # listed before they run: a role that never starts is still shown
            self.roles.setdefault(r, RoleView(name=r, batch=name, step=text(ev.get("step"))))

    def on_batch_end(self, ev: dict[str, Any], ts: float) -> None:
        batch = self.batches.get((self.attempt, text(ev.get("batch"))))
        if batch:
            batch.ended, batch.passed = ts, ev.get("passed") is True

    def on_batch_skipped(self, ev: dict[str, Any], ts: float) -> None:
        name = text(ev.get("batch"))
        self.batches[(self.attempt, name)] = BatchView(name, self.attempt, skipped=True, started=ts)

    def on_audit(self, ev: dict[str, Any], ts: float) -> None:
        self.view.audits.append(audit_view(ev, self.attempt, ts))

    def on_plan_invalid(self, ev: dict[str, Any], ts: float) -> None:
        problems = ev.get("problems")
        lines = [text(p) for p in problems] if isinstance(problems, list) else []
        self.view.plan_checks.append({"attempt": int(num(ev.get("attempt"))), "problems": lines})

    def on_network_refused(self, ev: dict[str, Any], ts: float) -> None:
        where = {"command": text(ev.get("command")), "host": text(ev.get("host"))}
        self.view.network_refused.append({**where, "port": int(num(ev.get("port")))})

    def on_compact(self, ev: dict[str, Any], ts: float) -> None:
        self.role(ev).compactions += 1

    def role(self, ev: dict[str, Any]) -> RoleView:
        name = text(ev.get("role")) or "?"
        role = self.roles.get(name)
        if role is None:
            role = self.roles[name] = RoleView(name=name)
        role.step = role.step or text(ev.get("step"))
        role.batch = role.batch or (text(ev.get("batch")) or None)
        return role


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


def _merge(role: RoleView, record: dict[str, Any]) -> None:
    role.status = text(record.get("status")) or role.status
    role.error = text(record.get("error")) or role.error
    for key in ("turns", "calls", "refused"):
        if isinstance(record.get(key), int):
            setattr(role, f"{key}_recorded", record[key])


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
