"""`orkeon validate`: parse and check the inputs and every file they name; run no step. The
MCP servers are started, their tools listed, and stopped (commands/mcp.py): a server that
does not start is an input error."""

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
    from .mcp import validate_lines

    lines, warnings = validate_lines(config)
    for line in warnings:
        sys.stderr.write(f"warning: {line}\n")
    for line in lines:
        sys.stdout.write(line + "\n")
    sys.stdout.write("inputs are valid\n")
    return 0
