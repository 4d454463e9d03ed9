"""Run text as inert Markdown: inline code spans and fenced blocks no text can close."""

from __future__ import annotations

import re

from .fmt import clip, one_line

TEXT_CAP = 800
_TICKS = re.compile(r"`+")


def ticks_for(value: str, least: int = 3) -> str:
    """A fence of backticks longer than any run of them in `value`."""
    longest = max((len(m) for m in _TICKS.findall(value)), default=0)
    return "`" * max(least, longest + 1)


def code(value: str, *, table: bool = False, limit: int = 200) -> str:
    """`value` as one inline code span; in a table cell its `|` are escaped (GFM)."""
    value = one_line(value, limit).replace("\x00", "\ufffd")
    if not value.strip():
        return "—"
    ticks = "`" * (max((len(m) for m in _TICKS.findall(value)), default=0) + 1)
    if value[0] in "` " or value[-1] in "` ":
        value = f" {value} "
    if table:
        value = value.replace("|", "\\|")
    return f"{ticks}{value}{ticks}"


def fence(value: str, limit: int = TEXT_CAP) -> str:
    """`value` as a fenced block no line of it can close."""
    value = clip(value, limit).replace("\x00", "\ufffd")
    ticks = ticks_for(value)
    return f"{ticks}text\n{value}\n{ticks}"
