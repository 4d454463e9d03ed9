"""One way to write a duration, an amount of money and a count, wherever orkeon writes
one for people: the progress views, the reports, the text summary, the merged jobs
report, the logs' messages (docs/output.md, "How numbers are written")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def duration(seconds: float | None) -> str:
    """`0.13 s`, `12.5 s`, `2 min 05 s`, `1 h 02 min`; `—` for none."""
    if seconds is None:
        return "—"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def money(usd: float | None) -> str:
    """`$0.0042` under a dollar, `$12.40` from one on; `unknown` when a price is."""
    if usd is None:
        return "unknown"
    return f"${usd:.4f}" if abs(usd) < 1 else f"${usd:,.2f}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`1 role`, `2 roles`, `1,200 tokens` (`plural` when adding an s is wrong)."""
    word = noun if n == 1 else (plural or noun + "s")
    return f"{n:,} {word}"


NOUNS = {"turns": ("turn", "turns"), "tokens": ("token", "tokens")}


def amount(which: str, value: float | None) -> str:
    """A budget's quantity (`seconds`, `turns`, `tokens`, `usd`): `12.5 s`, `40 turns`,
    `1,200 tokens`, `$0.4100`; `unknown` for none."""
    if value is None:
        return "unknown"
    if which == "seconds":
        return duration(value)
    if which == "usd":
        return money(value)
    noun, plural = NOUNS.get(which, (which, which))
    return count(int(value), noun, plural)


def spent_of(which: str, used: float | None, limit: float | None) -> str:
    """What a budget has spent of its limit: `15.0 s of 5 min 00 s`, `4 of 8 turns`,
    `$2.50 of $5.00`."""
    if which in ("turns", "tokens") and used is not None:
        return f"{int(used):,} of {amount(which, limit)}"
    return f"{amount(which, used)} of {amount(which, limit)}"


def budget_tail(b: Mapping[str, Any]) -> str:
    """What a result's `budget` adds to its line after a `--resume` or past a limit:
    ` over 2 attempts (this one: 3 turns, $0.0040)`, `; past the limit by 1 turn, $0.2100`;
    "" for neither."""
    tail = ""
    attempts, last = b.get("attempts") or 1, b.get("attempt")
    if attempts > 1 and isinstance(last, dict):
        tail += (
            f" over {count(attempts, 'attempt')} (this one: {count(last['turns'], 'turn')}, "
            f"{money(last.get('usd'))})"
        )
    over = b.get("overshoot")
    if isinstance(over, dict):
        parts = [amount(k, over[k]) for k in ("turns", "tokens", "usd") if over.get(k)]
        tail += f"; past the limit by {', '.join(parts)}"
    return tail


BUDGET_KEYS = ("seconds", "turns", "tokens", "usd")


def limits_text(limits: Mapping[str, Any]) -> str:
    """A budget's limits that are set, in one line: `5 min 00 s, 8 turns, $5.00` ("" for
    none): the plain progress's first line and the `step started` log record say this."""
    return ", ".join(amount(k, limits[k]) for k in BUDGET_KEYS if limits.get(k))
