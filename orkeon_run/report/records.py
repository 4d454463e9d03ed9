"""One event's records as the report's views: a `tool.call` (with its hooks), a hook run,
an audit, a result's `error`, a pipeline's step. Each field is checked for its type: the files are the run's,
and the run is hostile."""

from __future__ import annotations

import json
from typing import Any

from ..calls import result_text
from .model import (
    PRE_EVENTS,
    AuditView,
    CallView,
    HookView,
    StepView,
    call_target,
    hook_decision,
    num,
    text,
)


def call_view(ev: dict[str, Any], attempt: int, index: int) -> CallView:
    ts = num(ev.get("ts"))
    tool_s, hook_s = num(ev.get("tool_seconds")), num(ev.get("hook_seconds"))
    raw_input = ev.get("input")
    inp: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    refused_by = ev.get("refused_by") if isinstance(ev.get("refused_by"), str) else None
    outcome = "refused" if ev.get("outcome") == "refused" else "ran"
    read = result_text(ev.get("result"))
    call = CallView(
        index=index,
        attempt=attempt,
        ts=ts,
        started=ts - tool_s - hook_s,
        step=text(ev.get("step")),
        batch=text(ev.get("batch")) or None,
        role=text(ev.get("role")) or "?",
        seq=int(num(ev.get("seq"))),
        tool=text(ev.get("tool")),
        input=inp,
        target=call_target(inp),
        outcome=outcome,
        refused_by=refused_by,
        result=read,
        tool_seconds=tool_s,
        hook_seconds=hook_s,
    )
    refusal = read if refused_by == "hook" else None
    for raw in ev.get("hooks") or []:
        if isinstance(raw, dict):
            call.hooks.append(hook_view(raw, ts, role=call.role, call=index, refusal=refusal))
    if refusal is not None and not any(h.decision == "refused" for h in call.hooks):
        # A text that names no hook (`a PreToolUse hook stopped the role`): the last
        # pre-tool hook that failed refused it, else the last one that ran.
        pre = [h for h in call.hooks if h.event in PRE_EVENTS]
        failed = [h for h in pre if h.decision == "failed"]
        if failed or pre:
            (failed or pre)[-1].decision = "refused"
    return call


def hook_view(
    raw: dict[str, Any], ts: float, *, role: str, call: int | None, refusal: str | None
) -> HookView:
    code = raw.get("exit_code")
    hook = HookView(
        role=role,
        call=call,
        ts=ts,
        n=raw["n"] if isinstance(raw.get("n"), int) else None,
        event=text(raw.get("event")),
        command=text(raw.get("command")),
        exit_code=code if isinstance(code, int) else None,
        seconds=num(raw.get("seconds")),
        timed_out=raw.get("timed_out") is True,
        first_line=text(raw.get("first_line")),
    )
    hook.decision = hook_decision(hook, refusal)
    return hook


def audit_view(ev: dict[str, Any], attempt: int, ts: float | None) -> AuditView:
    outside = ev.get("outside_roots")
    failed = ev.get("failed_command")
    return AuditView(
        batch=text(ev.get("batch")),
        attempt=attempt,
        ts=ts,
        passed=ev.get("passed") is True,
        outside_roots=[text(p) for p in outside] if isinstance(outside, list) else [],
        failed_command=[text(a) for a in failed] if isinstance(failed, list) else None,
        output_tail=text(ev.get("output_tail")),
    )


def error_of(value: Any) -> tuple[str | None, str | None]:
    """The result's `error`: a line, or (a later schema) an object with `kind`."""
    if isinstance(value, dict):
        message = value.get("message")
        kind = value.get("kind")
        return (text(message) if message is not None else json.dumps(value)), (
            text(kind) if kind is not None else None
        )
    return (text(value) if value is not None else None), None


def step_view(record: dict[str, Any]) -> StepView:
    """A pipeline's record of one step (a result document with `name` and `run_dir`)."""
    roles = [r for r in record.get("roles") or [] if isinstance(r, dict)]
    budget = record.get("budget")
    code = record.get("exit_code")
    return StepView(
        name=text(record.get("name")) or text(record.get("step")),
        status=text(record.get("status")) or "unknown",
        exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        run_dir=text(record.get("run_dir")),
        error=error_of(record.get("error"))[0],
        roles=len(roles),
        calls=int(sum(num(r.get("calls")) for r in roles)),
        refused=int(sum(num(r.get("refused")) for r in roles)),
        seconds=num(budget.get("used_seconds")) if isinstance(budget, dict) else 0.0,
    )
