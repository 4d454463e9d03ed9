"""`orkeon run STEP`: run one step; print the result as `--output` asks; the step's exit
code (docs/output.md)."""

from __future__ import annotations

import json
import os
import sys

import anyio

from ..config.inputs import load_document
from ..config.run_settings import flag_values
from ..errors import InputError
from ..run.opening import open_run
from ..run.progress import choose
from ..run.runner import execute
from .summary import summary


def main(
    step: str,
    inputs: str | None,
    *,
    workspace: str | None = None,
    run_dir: str | None = None,
    output: str | None = None,
    resume: str | None = None,
    progress: str | None = None,
    knobs: dict[str, str | None] | None = None,
    dry_run: bool = False,
) -> int:
    """Run one step; print the result as `output` asks; show `progress` on stderr; return
    the step's exit code. `knobs` are the flags `--model`, `--max-usd`, ... by their
    parameter names (`max_usd`), as text."""
    if dry_run:
        if resume is not None or run_dir is not None:
            raise InputError("--dry-run: not with --resume or --run-dir (nothing is written)")
        from .dryrun import main as dry

        return dry(step, inputs, workspace=workspace, output=output, knobs=knobs)
    if inputs is None and resume is None:
        raise InputError("--inputs: required (or --resume RUN_DIR)")
    if resume is not None and run_dir is not None:
        raise InputError("--run-dir: not with --resume (the run continues in RUN_DIR)")
    doc = load_document(inputs) if inputs is not None else None
    mode = output or ("text" if sys.stdout.isatty() else "json")
    stream = sys.stdout if mode == "stream-json" else None
    opened = open_run(
        step,
        doc,
        workspace=workspace,
        run_dir=run_dir,
        resume_dir=resume,
        stream=stream,
        progress=choose(progress, output=mode),
        flags=flag_values(**(knobs or {})),
    )
    result = anyio.run(execute, opened)
    if mode == "json":
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    elif mode == "text":
        sys.stdout.write(summary(result))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        from ..report.github import publish  # the reports load under GitHub Actions only

        publish(opened.run_dir, result, os.environ, sys.stderr)
    return int(result["exit_code"])
