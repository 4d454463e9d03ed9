"""`orkeon validate`: parse and check the inputs and every file they name; run no step. The
MCP servers are started, their tools listed, and stopped (commands/mcp.py): a server that
does not start is an input error. Where the shell sandbox cannot be made here it says so on
stderr, with the reason and the fix (a run would refuse every shell call, but the inputs
are valid: exit 0); so does a sandbox turned off. Where it can, stderr stays quiet. A hook
or stdio MCP server whose program PATH finds inside the workspace (`.venv/bin`,
`node_modules/.bin`) is named with a warning: the model's work can replace that program
(docs/security.md, "Guards"). Where the inputs name hooks and the veil that hides orkeon's
processes from them cannot be made here, it says so too (the hooks would run as they
are). Each instruction file found (config/instructions.py) gets a line on stdout: trusted
and given, untrusted or changed since trusted and not given, or not read and why. A bare
check (`--bare`, ORKEON_BARE=1: config/sources.py) lists what a normal run would also have
read (each file, whether it exists and is trusted); `--output json` prints one object
instead of the lines (docs/inputs.md, "Hermetic runs")."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from ..config.inputs import load_document
from ..config.instructions import describe
from ..config.sources import listing
from ..escape import write_line
from ..run.prepare import RunConfig, prepare, stdin_tty
from .mcp import validate_lines


def main(
    inputs: str,
    *,
    step: str | None = None,
    workspace: str | None = None,
    bare: bool = False,
    output: str = "text",
) -> int:
    tty = stdin_tty()
    config = prepare(
        load_document(inputs),
        step=step,
        workspace=workspace,
        stdin_is_tty=tty,
        hook_files="error",  # a hook that cannot run would refuse every call
        bare=bare,
    )
    try:
        return _report(config, tty, output)
    finally:
        if config.sources is not None:
            config.sources.release()  # a bare check's plugin data folder


def _report(config: RunConfig, tty: bool, output: str) -> int:
    for line in config.warnings:
        write_line(sys.stderr, f"warning: {line}")
    from ..config.pins import hook_commands, in_workspace_programs

    path = os.environ.get("PATH", os.defpath)
    named = [("hooks", hook_commands(config.inputs.native_hooks, config.settings_hooks))]
    named += [(f"mcp_servers.{n}", [s.argv]) for n, s in config.mcp_servers.items() if s.argv]
    for field, commands in named:
        for program, where in in_workspace_programs(config.workspace, commands, path):
            write_line(
                sys.stderr,
                f"warning: {field}: {program} is found on PATH inside the workspace ({where}), "
                "where the model's work can replace it: name a program outside the workspace",
            )
    confinement = config.confinement  # where the sandbox can be made, nothing to say
    if confinement.state == "off":
        hosts = "" if isinstance(confinement.network, bool) else ", every host reachable"
        sys.stderr.write(
            'warning: shell sandbox: off ("shell": {"sandbox": "off"}): the model\'s shell '
            f"commands and the audit's build and test would run unconfined{hosts}\n"
        )
    elif confinement.state == "unavailable":
        write_line(
            sys.stderr,
            f"warning: shell sandbox: not available here: {confinement.reason}; every shell "
            "call would be refused and the audit's build and test would not run",
        )
        write_line(sys.stderr, f"fix: {confinement.fix}")
    if config.inputs.native_hooks or config.settings_hooks:
        from ..tools.sandbox.veil import veil_status

        bwrap, why = veil_status()
        if bwrap is None:
            write_line(
                sys.stderr,
                f"warning: hooks: orkeon's processes cannot be hidden from them here: {why}; "
                "they would run as they are, able to read orkeon's /proc (its environment, "
                "the model key)",
            )
    lines, warnings = validate_lines(config)
    lines += [describe(f) for f in config.instructions.files]
    for line in warnings:
        write_line(sys.stderr, f"warning: {line}")
    unread = None
    if config.bare:
        names = config.inputs.instructions.files
        unread = listing(config.workspace, os.environ, tty, instruction_files=names)
    if output == "json":
        doc: dict[str, Any] = {"valid": True, "bare": config.bare, "lines": lines}
        if unread is not None:
            doc["not_read"] = unread
        sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
        return 0
    for line in lines:
        write_line(sys.stdout, line)
    if unread is not None:
        write_line(
            sys.stdout, "bare: only what the inputs name is read; a normal run would also read:"
        )
        for entry in unread:
            write_line(sys.stdout, f"  {entry['kind']}: {entry['path']} ({_state(entry)})")
    sys.stdout.write("inputs are valid\n")
    return 0


def _state(entry: dict[str, Any]) -> str:
    if not entry["exists"]:
        return "missing"
    trusted = entry["trusted"]
    return "exists" if trusted is None else f"exists, {'trusted' if trusted else 'not trusted'}"
