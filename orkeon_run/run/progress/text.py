"""The text the progress views show (docs/output.md, "Progress"): one-line, escaped
model-written text, and the lines both views share; durations, counts and budget amounts
are units.py's, as in the reports and the logs."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from ... import escape, logs
from ...units import amount, budget_tail, count, duration, money
from ...vocabulary import error_message

# Durations, counts and amounts as everything orkeon writes for people writes them.
__all__ = ["amount", "count", "duration", "money"]


def gave_up(exc: Exception) -> None:
    """One warning when a view stops showing the run (a bug; or stderr is gone, and then
    nothing can be said)."""
    with contextlib.suppress(Exception):
        logs.warn(f"progress: stopped showing the run: {type(exc).__name__}: {exc}")


def clean(text: object, limit: int = 200) -> str:
    """`text` on one line and at most `limit` characters, its control characters escaped:
    model-written text (a refusal's line, a command) must not move the cursor, colour the
    terminal, or start a line GitHub Actions would read as a workflow command."""
    s = str(text)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return escape.text(s)  # the one rule for what orkeon writes (escape.py)


def first_line(text: object) -> str:
    """The first line of a tool's result as the model read it (text or JSON)."""
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False)
    return clean(text.strip().partition("\n")[0])


def refusal_line(
    role: str,
    seq: int,
    tool: str,
    target: str | None,
    by: str | None,
    result: object,
    refused: str = "refused",
) -> str:
    """A refused call, as both views say it: `b1/api: #3 shell rm -rf /: refused by rules:
    [refused: …]` (`by` None: an invalid call); `refused` is the word, maybe painted."""
    head = f"{clean(role, 80)}: #{seq} {clean(tool, 40)}"
    if target:
        head = f"{head} {clean(target, 120)}"
    how = f"by {clean(by, 20)}" if by else "(invalid call)"
    return f"{head}: {refused} {how}: {first_line(result)}"


def budget_line(b: dict[str, Any]) -> str:
    """A result's `budget` in one line: `budget: 12.5 s charged, 8 turns, 1,200 tokens,
    $0.0042`, and after a `--resume` the last attempt's beside the whole run's."""
    line = (
        f"budget: {duration(b.get('used_seconds') or 0.0)} charged, "
        f"{count(int(b.get('turns') or 0), 'turn')}, "
        f"{count(int(b.get('tokens_in') or 0) + int(b.get('tokens_out') or 0), 'token')}, "
        f"{money(b.get('usd'))}"
    )
    return line + budget_tail(b)


def warning_line(e: dict[str, Any], paint: Callable[[str, str], str]) -> str:
    """A `warning` event: `b1: warning: no role changed any file`."""
    who = clean(str(e.get("batch") or e.get("role") or e.get("step") or "orkeon"))
    return f"{who}: {paint('warning', 'yellow')}: {clean(str(e.get('message', '')))}"


def network_line(e: dict[str, Any], paint: Callable[[str], str]) -> str:
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
