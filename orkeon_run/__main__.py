"""`orkeon` and `python -m orkeon_run`.

`--version` answers before anything heavy is imported: CI scripts call it to probe the tool,
and a cold start should cost little more than the interpreter's own.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        from . import __version__

        sys.stdout.write(f"orkeon {__version__}\n")
        return 0
    from .cli import run_cli

    return run_cli(args)


if __name__ == "__main__":
    sys.exit(main())
