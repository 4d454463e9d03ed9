"""`orkeon` and `python -m orkeon_run`.

`--version` answers before anything heavy is imported: CI scripts call it to probe the tool,
and a cold start should cost little more than the interpreter's own.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit code (for embedding and tests)."""
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        from . import __version__

        sys.stdout.write(f"orkeon {__version__}\n")
        return 0
    try:
        from .environ import set_for_this_process

        # orkeon uses no pydantic plugin, and the search for them (every installed
        # distribution's entry points) costs 30-40 ms of every command's start.
        set_for_this_process("PYDANTIC_DISABLE_PLUGINS", "__all__")
        from .cli import run_cli
    except KeyboardInterrupt:  # Ctrl-C while the command line is still being loaded
        sys.stderr.write("orkeon: interrupted\n")
        return 130
    return run_cli(args)


def entry() -> None:
    """The console script: run, flush, and leave without the interpreter's teardown.

    By the time a command returns, everything it promised is on disk (result.json written
    and fsynced, events.jsonl closed) or in the flushed streams; tearing down thousands of
    module objects would only add 60-140 ms to every CI step. What must end first (the
    processes orkeon keeps up) is ended by `startup.leave`.
    """
    from .startup import leave, pause

    pause()  # the collector, off while the command line and the command load (startup.py)
    try:
        code = main()
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (`| head`): nothing more can be said
        code = 1
    except KeyboardInterrupt:
        sys.stderr.write("orkeon: interrupted\n")
        code = 130
    leave()  # the kept-up sandboxes and the veil end, and are waited for (startup.py)
    os._exit(code)


if __name__ == "__main__":
    entry()
