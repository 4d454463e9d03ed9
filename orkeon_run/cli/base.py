"""What the commands of the command line share (cli/app.py, cli/jobs.py): the options
that several take, the enums typer turns into choices, and `exit_with`, which runs a
command's module and exits with its code.

No `from __future__ import annotations` in the modules that declare commands: typer would
evaluate every command's annotations from strings (rebuilding each `typer.Option`) each
time the command line is built (docs/performance.md).
"""

from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, NoReturn

import typer

from ..run.steps import STEPS
from ..startup import resume

Step = StrEnum("Step", {s.replace("-", "_"): s for s in STEPS})  # type: ignore[misc]


class Output(StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class Progress(StrEnum):
    auto = "auto"
    live = "live"
    plain = "plain"
    none = "none"


InputsOpt = Annotated[
    str,
    typer.Option(
        "--inputs", metavar="SRC", help="JSON inline, @PATH for a file, or - for standard input."
    ),
]
WorkspaceOpt = Annotated[
    str | None,
    typer.Option(
        "--workspace", metavar="DIR", help="Folder the crew works in (default: inputs, then .)."
    ),
]
BareOpt = Annotated[
    bool,
    typer.Option(
        "--bare",
        help="Read no configuration the inputs do not name: no user folder, no workspace "
        "settings, .mcp.json, crews, review checks or instruction files, no trust records "
        "(or ORKEON_BARE=1).",
    ),
]


def exit_with(command: Callable[..., int], *args: Any, **kwargs: Any) -> NoReturn:
    """Run a command and exit with its code. Ctrl-C inside it is reported like any other
    interruption (typer would turn it into a silent exit 1). The collector paused for the
    start-up (startup.py) is back on before the command's work starts."""
    resume()
    try:
        code = command(*args, **kwargs)
    except KeyboardInterrupt:
        from ..errors import Interrupted

        raise Interrupted("interrupted") from None
    raise typer.Exit(code)


class ReportFormat(StrEnum):
    md = "md"
    html = "html"
    junit = "junit"
    json = "json"
    patch = "patch"


class MergeFormat(StrEnum):
    """`jobs merge --format`: a report's formats but `patch` (jobs are many workspaces)."""

    md = "md"
    html = "html"
    junit = "junit"
    json = "json"
