"""The one map from exceptions to exit codes and stderr lines (docs/output.md, "Exit
codes"): every exception a command raises becomes one stderr line and an exit code here,
in `guarded`, and nowhere else."""

import os
import sys
from collections.abc import Callable

import typer

from ..errors import EXIT_INTERRUPTED, EXIT_USAGE, InputError, OrkeonError, exit_code_for, one_line
from .app import app


def _parser_error(exc: Exception) -> int | None:
    """The exit code of typer's own exceptions (usage errors, abort), else None."""
    from typer.exceptions import Abort, TyperException

    if isinstance(exc, Abort):
        sys.stderr.write("orkeon: interrupted\n")
        return EXIT_INTERRUPTED
    if type(exc).__name__ == "NoArgsIsHelpError" and getattr(exc, "ctx", None) is not None:
        # `orkeon` (or `orkeon hooks`, `orkeon jobs`) alone: the help, whole and readable,
        # as --help prints it; exit 2, as the parser's, since nothing ran (a CI script
        # whose command word came out empty must not pass).
        sys.stdout.write(exc.ctx.get_help() + "\n")  # type: ignore[attr-defined]
        return EXIT_USAGE
    if isinstance(exc, TyperException):
        # Usage errors from the parser: one line, like every other bad input.
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        sys.stderr.write(f"orkeon: {' '.join(message.split())} (see orkeon --help)\n")
        return int(getattr(exc, "exit_code", EXIT_USAGE))
    return None


def guarded(call: Callable[[], int]) -> int:
    """Run `call`; map every exception to the exit-code contract, one stderr line each."""
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
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of our output went away (`| head`): say nothing
        return 1
    except Exception as exc:
        code = _parser_error(exc)
        if code is not None:
            return code
        if os.environ.get("ORKEON_DEBUG"):
            raise
        sys.stderr.write(
            f"orkeon: internal error: {type(exc).__name__}: {one_line(str(exc))} "
            "(set ORKEON_DEBUG=1 for a traceback)\n"
        )
        return 1


def _invoke(argv: list[str]) -> int:
    try:
        # Without standalone mode, typer returns the code of `typer.Exit` instead of raising.
        rc = app(args=argv, prog_name="orkeon", standalone_mode=False)
        return rc if isinstance(rc, int) else 0
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:  # shell completion answers, then exits (click's way)
        return exc.code if isinstance(exc.code, int) else 0


def run_cli(argv: list[str]) -> int:
    """Run the typer app on `argv`; the exit code, every error mapped by `guarded`."""
    return guarded(lambda: _invoke(argv))
