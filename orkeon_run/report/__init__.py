"""`orkeon report RUN_DIR`: one run directory read into a plain view (`load.py`), then
written as Markdown, a self-contained HTML page, JUnit XML, JSON, or the run's change as a
patch (docs/output.md, "Reports"). `github.py` publishes the Markdown and the outcome to GitHub Actions at the
end of `orkeon run`.

Everything a run directory holds came from the model, its tools or the workspace: each
format treats it as hostile text (escaped, fenced, never interpreted).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..errors import InputError
from .load import load

FORMATS = ("md", "html", "junit", "json", "patch")


def render(run_dir: str | Path, fmt: str) -> str:
    """The report of the run in `run_dir` in `fmt`. A folder that holds no run raises
    InputError (exit 2)."""
    if fmt not in FORMATS:
        raise InputError(f"--format: unknown format {fmt!r} (one of: {', '.join(FORMATS)})")
    view = load(Path(os.path.expanduser(str(run_dir))))
    # Each format's module on first use: a command pays only for the format it renders.
    if fmt == "md":
        from .markdown import markdown

        return markdown(view)
    if fmt == "html":
        from .html import html

        return html(view)
    if fmt == "junit":
        from .junit import junit

        return junit(view)
    if fmt == "patch":
        from .changes import run_patch

        text, missing = run_patch(view.changes)
        for path in missing:
            print(
                f"orkeon report: {path}: left out of the patch (its content was not kept)",
                file=sys.stderr,
            )
        return text

    return json.dumps(view.to_json(), ensure_ascii=False, indent=2) + "\n"


def write_report(run_dir: str, fmt: str, out: str | None) -> int:
    """`orkeon report`: write the report to `out` (a file; None or `-`: stdout)."""
    text = render(run_dir, fmt)
    # A patch carries the files' own bytes (surrogateescape); a report, text.
    errors = "surrogateescape" if fmt == "patch" else "backslashreplace"
    if out is None or out == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8", errors))
        sys.stdout.buffer.flush()
        return 0
    target = Path(os.path.expanduser(out))
    try:
        # newline="": the report's own line ends, whatever the platform.
        target.write_text(text, encoding="utf-8", errors=errors, newline="")
    except OSError as exc:
        raise InputError(f"-o: cannot write {target}: {exc.strerror or exc}") from None
    return 0
