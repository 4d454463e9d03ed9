"""`--output text`: a short summary of the result document for a person at a terminal;
a task's answer (`output`) follows it, as indented JSON, and a review's checks are listed
with their findings."""

from __future__ import annotations

import json
from typing import Any

from ..escape import line
from ..units import budget_tail, count, duration, money
from ..vocabulary import error_message


def summary(result: dict[str, Any]) -> str:
    b = result["budget"]
    lines = [
        f"{result['step']}: {result['status']} (exit {result['exit_code']})  run {result['run_id']}",
    ]
    for step in result.get("steps") or []:  # a pipeline's steps, in the order they ran
        why = f": {_line(step['error'])}" if step.get("error") else ""
        lines.append(
            f"  step {step['name']}: {step['status']} (exit {step['exit_code']}){why}"
            f"  ({step['run_dir']})"
        )
    for role in result["roles"]:
        extra = f"  error: {role['error']}" if role.get("error") else ""
        lines.append(
            f"  role {role['name']}: {role['status']}, {count(role['turns'], 'turn')}, "
            f"{count(role['calls'], 'call')}, {role['refused']} refused{extra}"
        )
        if role.get("all_refused"):
            first = role["all_refused"]
            lines.append(
                f"    every call was refused, the first by {first['stage']}: {first['text']}"
            )
    for audit in result["audits"]:
        verdict = "passed" if audit["passed"] else "FAILED"
        if audit.get("changed") == 0:
            verdict += " (no file changed)"
        lines.append(f"  audit {audit['batch']}: {verdict}")
        if audit["outside_roots"]:
            lines.append(f"    changed outside the roots: {', '.join(audit['outside_roots'])}")
        if audit["failed_command"]:
            lines.append(f"    failed: {' '.join(audit['failed_command'])}")
    for name, path in result["artifacts"].items():
        lines.append(f"  {name}: {path}")
    limit = "no limit" if b["limit_seconds"] is None else duration(b["limit_seconds"])
    lines.append(
        f"  budget: {duration(b['used_seconds'])} of {limit} (model "
        f"{duration(b['model_seconds'])}, tools {duration(b['tool_seconds'])}, hooks "
        f"{duration(b['hook_seconds'])}), {count(b['turns'], 'turn')}, "
        f"{count(b['tokens_in'] + b['tokens_out'], 'token')}, {money(b['usd'])}"
        + budget_tail(b)
        + (f"; {b['exhausted']} budget spent" if b["exhausted"] else "")
    )
    error = result.get("error")
    if error:
        if isinstance(error, dict):  # {"kind", "message"}
            lines.append(f"  error ({error.get('kind')}): {error.get('message')}")
        else:
            lines.append(f"  error: {error}")
    for check in result.get("checks") or []:
        lines.append(f"  check {check['name']}: {check['verdict']}: {_line(check['summary'])}")
        for f in check["findings"]:
            lines.append(f"    {f['path']}:{f['line']}: {f['severity']}: {_line(f['message'])}")
    # Paths, refusals and error messages come from the run: each line by the one rule
    # for what orkeon writes (escape.py; a file name may hold a line break).
    text = "".join(line(one) + "\n" for one in lines)
    if result.get("output") is not None:  # a task's answer: JSON, escaped by its encoder
        text += "output:\n" + json.dumps(result["output"], ensure_ascii=False, indent=2) + "\n"
    return text


def _line(error: Any) -> str:
    """A step's error in one line (an object: its message)."""
    return " ".join((error_message(error) or "").split())
