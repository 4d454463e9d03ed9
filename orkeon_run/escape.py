"""The one escaping rule for everything orkeon writes to stderr and stdout (docs/security.md,
"What orkeon writes"), whatever the renderer: JSON lines, the readable form on a terminal,
with FORCE_COLOR or NO_COLOR.

- `text(value)`: a value on one line. Every character that is not printable (a line break,
  a carriage return, ESC, NUL, a lone surrogate) is written escaped, as Python writes it in
  a string literal (`\\n`, `\\r`, `\\x1b`). No record then spans two lines, no value moves
  the cursor or colours a terminal, and no GitLab section marker (`section_start:…` needs
  a raw `\\r` and ESC) can be made from data.
- `line(value)`: `text`, and a line that would start a GitHub Actions workflow command
  (`::` after leading blanks; `##[` the old form) starts with its first character escaped
  instead (`\\x3a:error`). A workflow command is written only by orkeon's own GitHub code
  (report/github.py), which does not go through here.

Callers escape each value they put into a line with `text`, and the line as written with
`line` where its start can come from data (a log record, a progress line); `start` is
`line` for a line a renderer laid out from escaped values (its colour codes kept).
"""

from __future__ import annotations

from typing import IO

_COMMAND_STARTS = ("::", "##[")


def text(value: object) -> str:
    """`value` as one line, its unprintable characters escaped."""
    s = value if isinstance(value, str) else str(value)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


def line(value: object) -> str:
    """`text(value)`, and never the start of a workflow command."""
    return start(text(value))


def start(rendered: str) -> str:
    """A line already laid out from escaped values (it may hold a renderer's own colour
    codes): one line still, and never the start of a workflow command."""
    s = rendered
    if "\n" in s or "\r" in s:
        s = s.replace("\r", "\\r").replace("\n", "\\n")
    body = s.lstrip(" \t")
    if body.startswith(_COMMAND_STARTS):
        cut = len(s) - len(body)
        s = f"{s[:cut]}\\x{ord(body[0]):02x}{body[1:]}"
    return s


def write_line(stream: IO[str], value: object) -> None:
    """Write `line(value)` and a line break to `stream`: a line for people on stderr, or
    a line of text a command prints on stdout."""
    stream.write(line(value) + "\n")


__all__ = ["line", "start", "text", "write_line"]
