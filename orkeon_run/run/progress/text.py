"""The text the progress views show (docs/output.md, "Progress"): one-line, escaped
model-written text, durations, budget amounts, and the lines both views share."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from ... import escape, logs
from ...vocabulary import error_message


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
