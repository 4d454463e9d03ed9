"""Numbers and texts as every report format writes them."""

from __future__ import annotations

import time

from .. import escape

# Durations and amounts as everything orkeon writes for people writes them (units.py).
from ..units import duration as seconds  # noqa: F401 (the reports' name for it)
from ..units import money as money

# The mark before a status word (the word is always written too).
MARKS = {
    "succeeded": "✅",
    "passed": "✅",
    "failed": "❌",
    "error": "❌",
    "stopped": "❌",
    "budget_exhausted": "⏱️",
    "interrupted": "⏹️",
    "unfinished": "⚠️",
    "not_started": "⏸️",
}


def mark(status: str) -> str:
    return MARKS.get(status, "❔")


def count(n: int) -> str:
    return f"{n:,}"


def clip(value: str, limit: int) -> str:
    """`value` cut to `limit` characters, saying how much was cut."""
    if len(value) <= limit:
        return value
    return value[:limit] + f"\n… ({len(value) - limit:,} more characters in events.jsonl)"


def one_line(value: str, limit: int = 200) -> str:
    """`value` on one line (line breaks and control characters shown escaped), cut to
    `limit` characters."""
    value = escape.text(value)  # the one rule for what orkeon writes (escape.py)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def utc(ts: float | None) -> str:
    if ts is None:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def stages(refused_by: dict[str, int]) -> str:
    """`{"gate": 2, "hook": 1}` -> `gate 2, hook 1`."""
    return ", ".join(f"{k} {n}" for k, n in sorted(refused_by.items()))


def refusal(stage: str | None) -> str:
    """How a call ended, in words: `ran`, `refused by gate`, `invalid (refused)`."""
    if stage is None:
        return "ran"
    return "invalid (refused)" if stage == "invalid" else f"refused by {stage}"
