"""`orkeon validate`: parse and check the inputs and every file they name; run no step. The
MCP servers are started, their tools listed, and stopped (commands/mcp.py): a server that
does not start is an input error. Where the shell sandbox cannot be made here it says so on
stderr, with the reason and the fix (a run would refuse every shell call, but the inputs
are valid: exit 0); so does a sandbox turned off. Where it can, stderr stays quiet."""

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
    confinement = config.confinement  # where the sandbox can be made, nothing to say
    if confinement.state == "off":
        hosts = "" if isinstance(confinement.network, bool) else ", every host reachable"
        sys.stderr.write(
            'warning: shell sandbox: off ("shell": {"sandbox": "off"}): the model\'s shell '
            f"commands and the audit's build and test would run unconfined{hosts}\n"
        )
    elif confinement.state == "unavailable":
        sys.stderr.write(
            f"warning: shell sandbox: not available here: {confinement.reason}; every shell "
            "call would be refused and the audit's build and test would not run\n"
            f"fix: {confinement.fix}\n"
        )
    from .mcp import validate_lines

    lines, warnings = validate_lines(config)
    for line in warnings:
        sys.stderr.write(f"warning: {line}\n")
    for line in lines:
        sys.stdout.write(line + "\n")
    sys.stdout.write("inputs are valid\n")
    return 0
