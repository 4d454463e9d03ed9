"""`orkeon run STEP`: run one step; print the result as `--output` asks; the step's exit
code (docs/output.md)."""

from __future__ import annotations

import json
import os
import shlex
import sys

import anyio

from ..config.inputs import load_document
from ..config.run_settings import flag_values
from ..errors import InputError
from ..escape import write_line
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
    github_comment: bool = False,
    dry_run: bool = False,
    patch: str | None = None,
    bare: bool = False,
) -> int:
    """Run one step; print the result as `output` asks; show `progress` on stderr; return
    the step's exit code. `knobs` are the flags `--model`, `--max-usd`, ... by their
    parameter names (`max_usd`), as text. `github_comment`: keep one comment on the pull
    request up to date (report/pr_comment.py; what it needs is checked before anything
    runs). `patch`: `--patch FILE` (relative: to the current folder), the inputs' `patch`
    (run/patch_out.py). `bare`: read no configuration the inputs do not name
    (config/sources.py)."""
    if dry_run:
        if resume is not None or run_dir is not None:
            raise InputError("--dry-run: not with --resume or --run-dir (nothing is written)")
        from .dryrun import main as dry

        return dry(step, inputs, workspace=workspace, output=output, knobs=knobs, bare=bare)
    if inputs is None and resume is None:
        raise InputError("--inputs: required (or --resume RUN_DIR)")
    if resume is not None and run_dir is not None:
        raise InputError("--run-dir: not with --resume (the run continues in RUN_DIR)")
    where = None
    if github_comment:
        from ..report import pr_comment  # only a run that comments pays for it

        where = pr_comment.target(os.environ)
    doc = load_document(inputs) if inputs is not None else None
    if patch is not None:
        if not isinstance(doc, dict):  # a resumed run writes the patch its inputs name
            raise InputError("--patch: not with --resume (the saved inputs keep their patch)")
        doc = {**doc, "patch": os.path.abspath(os.path.expanduser(patch))}
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
        bare=bare,
    )
    live = None
    if where is not None:
        live = pr_comment.LiveComment(where, opened.run_id, step)
        opened.events.listeners.append(live)
    try:
        result = anyio.run(execute, opened)
    except BaseException:
        if live is not None:  # the comment does not stay "running" for ever
            live.finish(f"### orkeon `{step}`: stopped before its result\n")
        raise
    if live is not None:
        live.finish(pr_comment.final_report(opened.run_dir, result))
    if mode == "json":
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    elif mode == "text":
        sys.stdout.write(summary(result))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        from ..report.github import publish  # the reports load under GitHub Actions only

        publish(opened.run_dir, result, os.environ, sys.stderr)
    if result.get("status") == "interrupted":  # what finished is kept: say how to go on
        again = shlex.join(["orkeon", "run", step, "--resume", str(opened.run_dir)])
        write_line(sys.stderr, f"orkeon: interrupted; to go on: {again}")
    return int(result["exit_code"])
