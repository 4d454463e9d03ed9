"""`orkeon validate`: parse and check the inputs and every file they name; run nothing."""

from __future__ import annotations

import sys


def main(inputs: str, *, step: str | None = None, workspace: str | None = None) -> int:
    from ..config.inputs import load_document
    from ..run.prepare import prepare, stdin_tty

    config = prepare(
        load_document(inputs),
        step=step,
        workspace=workspace,
        stdin_is_tty=stdin_tty(),
        hook_files="error",  # a hook that cannot run would refuse every call
    )
    for line in config.warnings:
        sys.stderr.write(f"warning: {line}\n")
    sys.stdout.write("inputs are valid\n")
    return 0
