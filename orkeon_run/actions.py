"""What `orkeon run` and `orkeon validate` do once their arguments are parsed, and the one
mapping from exceptions to exit codes and stderr lines.

Both parsers call these: the typer app (`cli.py`, every command, help and usage errors)
and the fast path (`fastargs.py`), which spares the two hot commands typer's import and
parameter coercion when their command line is plain.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

from .errors import EXIT_USAGE, InputError, OrkeonError, exit_code_for


def run(
    step: str,
    inputs: str | None,
    *,
    workspace: str | None = None,
    run_dir: str | None = None,
    output: str | None = None,
    resume: str | None = None,
    progress: str | None = None,
) -> int:
    """Run one step; print the result as `output` asks; show `progress` on stderr; return
    the step's exit code."""
    from . import render, runner
    from .inputs import load_document
    from .run.progress import choose

    if inputs is None and resume is None:
        raise InputError("--inputs: required (or --resume RUN_DIR)")
    if resume is not None and run_dir is not None:
        raise InputError("--run-dir: not with --resume (the run continues in RUN_DIR)")
    doc = load_document(inputs) if inputs is not None else None
    mode = output or ("text" if sys.stdout.isatty() else "json")
    stream = sys.stdout if mode == "stream-json" else None
    shown = choose(progress, output=mode)
    result = runner.run(
        step,
        doc,
        workspace=workspace,
        run_dir=run_dir,
        resume_dir=resume,
        stream=stream,
        progress=shown,
    )
    if mode == "json":
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    elif mode == "text":
        sys.stdout.write(render.summary(result))
    return int(result["exit_code"])


def validate(inputs: str, *, step: str | None = None, workspace: str | None = None) -> int:
    """Parse and check the inputs and every file they name; run nothing."""
    from .inputs import load_document
    from .prepare import prepare, stdin_tty

    prep = prepare(load_document(inputs), step=step, workspace=workspace, stdin_is_tty=stdin_tty())
    for line in prep.warnings:
        sys.stderr.write(f"warning: {line}\n")
    sys.stdout.write("inputs are valid\n")
    return 0


def one_line(text: str) -> str:
    """`text` with its control characters escaped (`\\n`, `\\x00`, a lone `\\ud800`): a
    problem names fields and values from the document, and a key holding a newline split
    its `orkeon: FIELD: message` line in two."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def guarded(call: Callable[[], int], parser_error: Callable[[Exception], int | None]) -> int:
    """Run `call`; map every exception to the exit-code contract, one stderr line each.
    `parser_error` gets the exceptions orkeon does not define first, and returns an exit
    code for those it knows (the typer app's usage errors), else None."""
    try:
        return call()
    except InputError as exc:
        for line in exc.problems:
            sys.stderr.write(f"orkeon: {one_line(line)}\n")
        return EXIT_USAGE
    except OrkeonError as exc:
        sys.stderr.write(f"orkeon: {one_line(str(exc))}\n")
        return exit_code_for(exc)
    except KeyboardInterrupt:
        sys.stderr.write("orkeon: interrupted\n")
        return 130
    except BrokenPipeError:  # the reader of our output went away (`| head`): say nothing
        return 1
    except Exception as exc:
        code = parser_error(exc)
        if code is not None:
            return code
        if os.environ.get("ORKEON_DEBUG"):
            raise
        sys.stderr.write(
            f"orkeon: internal error: {type(exc).__name__}: {one_line(str(exc))} "
            "(set ORKEON_DEBUG=1 for a traceback)\n"
        )
        return 1
