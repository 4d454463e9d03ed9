"""A run's MCP servers (docs/tools.md, "How servers run"): the servers a role of the step's
crew names, started once before the first role and stopped after the last.

    async with run_servers(sr, environ):   # in the run's task group (runner.py)
        outcome = await module.run(sr)

Inside, `sr.mcp` is the hub and `sr.catalog` holds every tool the servers listed, so
`sr.role_tools` gives each role the ones its entries select. A server that fails to start
is an `mcp.server` event (the hub's) and a warning here; calls of its tools are refused
with the hub's text. Leaving stops every server, also when the run is cancelled by
SIGINT/SIGTERM (the hub stops a stdio server's whole process group, shielded).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from .. import logs
from ..policy.mcpnames import normalize, split_pattern
from ..tools.mcp.hub import McpHub
from ..tools.mcp.select import unmatched
from ..tools.mcp.tool import run_catalog
from .context import StepRun, child_environ

START_TIMEOUT = 30.0  # seconds a server has to start and list its tools


@asynccontextmanager
async def run_servers(
    sr: StepRun, environ: Mapping[str, str] | None = None
) -> AsyncIterator[McpHub | None]:
    """The run's services while the body runs: its MCP servers' hub (`_hub`), and the
    network allow-list's proxy (started by the first sandbox that needs it), stopped
    once the body ended however it ended."""
    try:
        async with _hub(sr, environ) as hub:
            yield hub
    finally:
        sr.close_network()


@asynccontextmanager
async def _hub(sr: StepRun, environ: Mapping[str, str] | None) -> AsyncIterator[McpHub | None]:
    """The run's hub while the body runs; None (and nothing started) when no role of the
    step's crew names a server. `${VAR}` in the servers' configuration is expanded from
    `environ` (orkeon's environment as the run was given it; None: the process's)."""
    servers = sr.config.mcp_needed
    if not servers:
        yield None
        return
    hub = McpHub(
        servers,
        environ=child_environ(sr.config, credentials=True),
        cwd=sr.workspace,
        expand_from=os.environ if environ is None else environ,
        emit=sr.events.emit,
        log_dir=sr.run_dir / "mcp",
        start_timeout=START_TIMEOUT,
        sandbox=sr.role_sandbox(),  # confined servers run in the roles' sandbox
        egress=sr.egress,  # an allow-list's proxy, the shell's for the same list
        pins=sr.config.pins,  # a server whose pinned files changed is not started
        origins=origins(sr, servers),
    )
    async with hub:
        sr.mcp = hub
        sr.catalog = run_catalog(hub)
        for line in start_warnings(sr, hub):
            logs.warn(line)
        try:
            yield hub
        finally:
            sr.mcp = None


def origins(sr: StepRun, servers: Mapping[str, object]) -> dict[str, tuple[str, ...]]:
    """Server name -> the workspace's own files that configure a server of that name (its
    `.orkeon/settings.json`, `.mcp.json`, a `settings` input file inside the workspace), read
    as the run starts: a change to one of them since then keeps the server from starting
    (docs/security.md, "Guards"). A name several files hold gets them all (fail closed).
    The workspace's own files only where the run reads them (not bare: config/sources.py)."""
    from ..config.sources import run_sources
    from ..config.trust import read_settings_doc
    from ..errors import InputError

    ws = sr.workspace
    src = sr.config.sources or run_sources(ws, sr.environ or os.environ)
    files = [p for p in (src.workspace_settings, src.mcp_json) if p is not None]
    files += [Path(os.path.expanduser(f)) for f in sr.inputs.settings]
    out: dict[str, tuple[str, ...]] = {}
    for path in dict.fromkeys(p if p.is_absolute() else ws / p for p in files):
        real = os.path.realpath(path)
        if not real.startswith(os.path.realpath(ws) + os.sep) or not os.path.isfile(real):
            continue
        try:
            named = read_settings_doc(Path(real)).get("mcpServers")
        except InputError:
            continue  # prepare reported it, or the file is not used
        rel = os.path.relpath(real, os.path.realpath(ws))
        for name in named if isinstance(named, dict) else ():
            if name in servers:
                out[name] = (*out.get(name, ()), rel)
    return out


def start_warnings(sr: StepRun, hub: McpHub) -> list[str]:
    """What the operator should know once the servers started: each that did not, each
    tool left out, each crew entry that selects nothing from a server that runs."""
    failed = hub.failed()
    out = [
        f"MCP server {name} did not start: {reason}; calls of its tools are refused"
        for name, reason in failed.items()
    ]
    out += hub.warnings
    down = set(failed)
    crew = sr.config.crew
    for role in crew.roles if crew is not None else ():
        for entry in unmatched(role.tools, hub.tools):
            parts = split_pattern(entry)
            if parts is not None and not any(_same(parts[0], n) for n in down):
                out.append(
                    f"crew role {role.name}: {entry} selects no tool of MCP server {parts[0]}"
                )
    return out


def _same(shown: str, name: str) -> bool:
    return normalize(name) == shown


__all__ = ["START_TIMEOUT", "origins", "run_servers", "start_warnings"]
