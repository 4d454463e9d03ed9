"""Progress on stderr while a step runs (docs/output.md, "Progress"), never on stdout.

`orkeon run --progress auto|live|plain|none`; `ORKEON_PROGRESS` sets the default, and
`auto` is `live` when stderr is a terminal, `plain` otherwise. Both views are event
listeners (`EventLog.listeners`): they see exactly the events the run records, follow the
run in a `Tracker`, and write only to stderr. A listener never raises into the run: a
view that cannot write any more (stderr closed) goes quiet.

- plain (plain.py, its lines in plain_lines.py): one greppable line per notable event, the role's full name
  first; a heartbeat while a model answer or a call takes longer than a minute;
  `::group::` blocks per batch under GitHub Actions.
- live (live.py): one line per role, updated in place (rich, imported only
  then), cleared to a final summary.

Each view follows the run in a `Tracker` (tracker.py, the package's leaf: it imports no
view), and writes lines made with text.py's helpers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, Protocol

from ...errors import InputError
from .text import clean

MODES = ("auto", "live", "plain", "none")


class Listener(Protocol):
    def __call__(self, event: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def choose(
    flag: str | None,
    *,
    output: str,
    environ: Mapping[str, str] | None = None,
    stderr: Any = None,
    stdout: Any = None,
) -> str:
    """The progress mode to show: `live`, `plain` or `none`. `flag` wins over
    ORKEON_PROGRESS; a bad ORKEON_PROGRESS is an input error (exit 2). `auto` is live on a
    terminal, except when `stream-json` events go to that terminal too (a view redrawn in
    place would tear their lines): plain then."""
    env = os.environ if environ is None else environ
    value = flag or env.get("ORKEON_PROGRESS") or "auto"
    if value not in MODES:
        raise InputError(
            f"ORKEON_PROGRESS: must be auto, live, plain or none, not {clean(value)!r}"
        )
    if value != "auto":
        return value
    if not _tty(sys.stderr if stderr is None else stderr):
        return "plain"
    if output == "stream-json" and _tty(sys.stdout if stdout is None else stdout):
        return "plain"
    return "live"


def listeners(mode: str) -> list[Listener]:
    """The listener that shows `mode` on stderr ([] for none)."""
    if mode == "plain":
        from .plain import PlainProgress  # a view and its tracker only for a run that shows one

        return [PlainProgress(sys.stderr)]
    if mode == "live":
        from .live import LiveProgress  # rich: imported only for a live view

        return [LiveProgress(sys.stderr)]
    return []


def _tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
