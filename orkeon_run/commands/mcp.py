"""What `orkeon validate` and `orkeon hooks list` say about MCP servers (docs/tools.md,
"Checking servers").

`validate` starts each configured server, lists its tools and stops it: one line per
server that runs; a server that does not start is an input error (exit 2), since a run
could not give the crew what it asks for. Each starts confined as a run would start it
(a stdio server in the roles' sandbox unless `"sandbox": "off"`); where no sandbox can be
made here, such a server is not started, and a warning says so. `hooks list` shows which MCP tools each role of
each step's crew gets, starting the servers the crews name to learn their tools.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InputError
from ..policy.mcpnames import is_mcp_name, normalize, split_pattern
from ..run.steps import STEPS, step_module
from ..tools.mcp.select import select_tools, unmatched

if TYPE_CHECKING:
    from ..config.crews import Crew
    from ..config.mcp import McpServer
    from ..run.prepare import RunConfig
    from ..tools.mcp.check import ServerCheck
    from ..tools.sandbox.proxy import EgressProxy


@dataclass(frozen=True)
class Listed:
    """One tool a server listed (`select.Listed`)."""

    name: str
    server: str


def check(
    config: RunConfig, servers: Mapping[str, McpServer]
) -> tuple[list[ServerCheck], list[str]]:
    """Start `servers` as a run would (the run's environment, in the workspace, each stdio
    one confined as a run confines it: in the roles' sandbox with no roots, its network
    allow-list through a proxy of orkeon's), list their tools, stop them: one check per
    server, and the hub's warnings (a host a proxy refused among them). Where no sandbox
    can be made here, a server a run would confine is not started (`started` False):
    nothing orkeon starts runs with more rights than a run would give it."""
    # The hub and the run's pieces (anyio, the hooks) load only when servers are started:
    # `orkeon validate` imports this module for its lines and starts none.
    from ..run.context import child_environ
    from ..run.mcp import START_TIMEOUT
    from ..tools.mcp.check import ServerCheck, check_servers_sync

    confinement = config.confinement
    held: dict[str, ServerCheck] = {}
    if confinement.state == "unavailable":
        why = (
            f"not started: it would run in the shell sandbox, which is not available here: "
            f"{confinement.reason}; a run would refuse its tools"
        )
        held = {
            n: ServerCheck(
                n, False, f"mcp server {n} ({s.describe()}): {why}", reason=why, started=False
            )
            for n, s in servers.items()
            if s.transport == "stdio" and s.sandbox != "off"
        }
    sandbox = None
    if confinement.state == "on":
        # No run directory yet: every run's records (`.orkeon/runs/`) stay hidden.
        runs = config.workspace / ".orkeon" / "runs"
        sandbox = confinement.role_policy(config.workspace, runs)
    proxies = _Proxies()
    try:
        checks, warnings = check_servers_sync(
            {n: s for n, s in servers.items() if n not in held},
            environ=child_environ(config, credentials=True),
            cwd=config.workspace,
            start_timeout=START_TIMEOUT,
            sandbox=sandbox,
            egress=proxies.get if sandbox is not None else None,
        )
    finally:
        proxies.close()
    by_name = {c.server: c for c in checks} | held
    return [by_name[n] for n in servers], warnings + proxies.refusals()


class _Proxies:
    """The network allow-lists' proxies of `validate`'s servers, one per list; what they
    refused, as warnings."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, ...], EgressProxy] = {}
        self._refused: list[dict[str, object]] = []

    def get(self, hosts: tuple[str, ...]) -> EgressProxy:
        from ..policy.hosts import AllowList
        from ..tools.sandbox.proxy import EgressProxy

        if hosts not in self._made:
            self._made[hosts] = EgressProxy(AllowList.parse(hosts), on_refused=self._refused.append)
        return self._made[hosts]

    def refusals(self) -> list[str]:
        return [
            f"{r['command']}: network: refused {r['host']}:{r['port']} as it started "
            "(not on its network allow-list)"
            for r in self._refused
        ]

    def close(self) -> None:
        for proxy in self._made.values():
            proxy.close()


def validate_lines(config: RunConfig) -> tuple[list[str], list[str]]:
    """`validate`'s look at the servers: the lines to print and the warnings. InputError
    with one line per server that did not start."""
    if not config.mcp_servers:
        return [], []
    checks, warnings = check(config, config.mcp_servers)
    failed = [c.line for c in checks if not c.ok and c.started]
    if failed:
        raise InputError(failed)
    warnings = [c.line for c in checks if not c.started] + warnings
    listed = _listed(checks)
    if config.crew is not None:
        held = {normalize(c.server) for c in checks if not c.started}
        warnings += unmatched_warnings(config.crew, listed, held)
    return [c.line for c in checks if c.started], warnings


def unmatched_warnings(
    crew: Crew, listed: Sequence[Listed], held: Collection[str] = ()
) -> list[str]:
    """A crew entry that selects no tool its server lists; `held`: the (normalized) servers
    not started here, whose entries cannot be judged."""
    return [
        f"{crew.source}: role {role.name}: {entry} selects no tool the server lists"
        for role in crew.roles
        for entry in unmatched(role.tools, listed)
        if (split_pattern(entry) or ("",))[0] not in held
    ]


def role_lines(config: RunConfig) -> list[str]:
    """`hooks list`'s lines on MCP tools, one per role of a step's crew that lists MCP
    entries: `mcp STEP ROLE: TOOL, TOOL…`. The servers the crews name are started to list
    their tools; a server that does not start gives `(not running: REASON)`."""
    # The crews (TOML, their rules) load for `hooks list` only: `orkeon validate` imports
    # this module for its lines and starts without them (bench_startup.py).
    from ..config.crews import load_crew

    crews = []
    for step in STEPS:
        try:
            where = config.sources.crews if config.sources else config.workspace
            crews.append(load_crew(step, where, roles=step_module(step).ROLES))
        except InputError:
            continue  # `validate --step` reports a broken crew
    wanted = {
        p[0]
        for crew in crews
        for role in crew.roles
        for entry in role.tools
        if (p := split_pattern(entry)) is not None
    }
    servers = {n: s for n, s in config.mcp_servers.items() if normalize(n) in wanted}
    checks, _ = check(config, servers) if servers else ([], [])
    down = {normalize(c.server): c.reason for c in checks if not c.ok}
    listed = _listed(checks)
    lines = []
    for crew in crews:
        for role in crew.roles:
            entries = [e for e in role.tools if is_mcp_name(e)]
            if not entries:
                continue
            names = [t.name for t in select_tools(entries, listed)]
            for entry in entries:
                parts = split_pattern(entry)
                if parts is None:
                    continue
                if parts[0] in down:
                    names.append(f"{entry} (not running: {down[parts[0]]})")
                elif parts[0] not in {normalize(n) for n in config.mcp_servers}:
                    names.append(f"{entry} (no MCP server {parts[0]} is configured)")
            shown = ", ".join(names) or "none (" + ", ".join(entries) + " select no tool)"
            lines.append(f"mcp {crew.step} {role.name}: {shown}")
    return lines


def _listed(checks: Sequence[ServerCheck]) -> list[Listed]:
    return [Listed(name, c.server) for c in checks for name in c.tools]


__all__ = ["check", "role_lines", "unmatched_warnings", "validate_lines"]
