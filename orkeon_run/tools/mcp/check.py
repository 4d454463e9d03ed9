"""`orkeon validate`'s look at the MCP servers: start each, list its tools, stop it.

One line per server, for the command to print:

    mcp server git (stdio: python -m mcp_server_git): 12 tools: mcp__git__git_status, …
    mcp server tracker (http: https://tracker.example/mcp): not running: POST …: answered 401 Unauthorized

then one line per warning (a tool name too long for model APIs, two tools with one name).
A server that does not start is a failed check; what `validate` makes of it (an error, or
a warning since a run goes on without it) is the command's decision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ...config.mcp import McpServer
from .hub import McpHub

if TYPE_CHECKING:
    from ..sandbox import SandboxPolicy
    from ..sandbox.proxy import EgressProxy

Egress = Callable[[tuple[str, ...]], "EgressProxy | None"]


@dataclass(frozen=True)
class ServerCheck:
    server: str
    ok: bool
    line: str
    tools: tuple[str, ...] = ()
    reason: str | None = None  # why it is not running
    # False: not started at all (a confined server where no sandbox can be made here).
    started: bool = True


async def check_servers(
    servers: Mapping[str, McpServer],
    *,
    environ: Mapping[str, str],
    cwd: Path,
    expand_from: Mapping[str, str] | None = None,
    start_timeout: float = 30.0,
    sandbox: SandboxPolicy | None = None,
    egress: Egress | None = None,
) -> tuple[list[ServerCheck], list[str]]:
    """Start every server (in parallel), list its tools, stop them all. Returns one check
    per server in configuration order, and the warnings. Leaves no process behind. With
    `sandbox` (and `egress`), a stdio server not `"sandbox": "off"` starts confined as in a
    run (hub.py): no roots, its network through `egress`'s proxy for an allow-list."""
    if not servers:
        return [], []
    hub = McpHub(
        servers, environ=environ, cwd=cwd, expand_from=expand_from, start_timeout=start_timeout,
        sandbox=sandbox, egress=egress,
    )  # fmt: skip
    async with hub:
        checks = []
        for name, config in servers.items():
            where = f"mcp server {name} ({config.describe()})"
            state, reason = hub.state(name)
            if state != "running":
                line = f"{where}: not running: {reason}"
                checks.append(ServerCheck(name, False, line, reason=reason))
                continue
            names = tuple(t.name for t in hub.tools if t.server == name)
            listed = ": " + ", ".join(names) if names else ""
            count = f"{len(names)} tool" + ("" if len(names) == 1 else "s")
            checks.append(ServerCheck(name, True, f"{where}: {count}{listed}", names))
    return checks, list(hub.warnings)


def check_servers_sync(
    servers: Mapping[str, McpServer],
    *,
    environ: Mapping[str, str],
    cwd: Path,
    expand_from: Mapping[str, str] | None = None,
    start_timeout: float = 30.0,
    sandbox: SandboxPolicy | None = None,
    egress: Egress | None = None,
) -> tuple[list[ServerCheck], list[str]]:
    """`check_servers` for a command that has no event loop running."""

    async def main() -> tuple[list[ServerCheck], list[str]]:
        return await check_servers(
            servers, environ=environ, cwd=cwd, expand_from=expand_from,
            start_timeout=start_timeout, sandbox=sandbox, egress=egress,
        )  # fmt: skip

    return anyio.run(main)


__all__ = ["ServerCheck", "check_servers", "check_servers_sync"]
