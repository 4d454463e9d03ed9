"""The checks of a run's MCP servers made when it is prepared (docs/tools.md): which servers
the run has (`servers_of`), that each MCP entry of a crew names one (`check_entries`), and
the rules that name none (`rule_warnings`), the allow-lists that cannot hold
(`network_warnings`). The servers themselves start at run time
(run/mcp.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.inputs import Inputs
from ..config.mcp import McpServer, redacted_problems
from ..config.mcp_sources import load_servers
from ..errors import InputError
from ..policy.mcpnames import is_mcp_name, normalize, split_pattern

if TYPE_CHECKING:
    from ..config.crews import Crew
    from ..config.sources import Sources


def servers_of(
    inputs: Inputs,
    ws: Path,
    env: Mapping[str, str],
    stdin_is_tty: bool | None,
    warn: Callable[[str], None],
    sources: Sources | None = None,
) -> dict[str, McpServer]:
    redacted = redacted_problems(inputs.mcp_servers)
    if redacted:
        raise InputError(redacted)
    return load_servers(
        inputs, workspace=ws, environ=env, stdin_is_tty=stdin_is_tty, warn=warn, sources=sources
    )


def check_entries(
    crew: Crew, servers: Mapping[str, McpServer], untrusted: Mapping[str, Path] | None = None
) -> None:
    """Each MCP entry of a role's tools names a configured server. `untrusted`: servers
    only a workspace file that is not trusted has (config/mcp_sources.py), named in the
    error with the fix."""
    problems = []
    hidden = {normalize(n): (n, p) for n, p in (untrusted or {}).items()}
    for i, role in enumerate(crew.roles):
        for j, entry in enumerate(role.tools):
            problem = _mcp_problem(entry, servers) if is_mcp_name(entry) else None
            if problem:
                parts = split_pattern(entry)
                if parts is not None and parts[0] in hidden:
                    name, path = hidden[parts[0]]
                    problem += (
                        f"; {path} has {name!r} but is not trusted (never, or changed since "
                        f"it was): run `orkeon hooks trust --workspace {path.parent}`"
                    )
                problems.append(f"{crew.source}: roles[{i}].tools[{j}]: {problem}")
    if problems:
        raise InputError(problems)


def _mcp_problem(entry: str, servers: Mapping[str, McpServer]) -> str | None:
    # Only a crew that names an MCP tool loads the MCP tools' package (tools/mcp/).
    from ..tools.mcp.select import pattern_problem

    return pattern_problem(entry, servers)


def rule_warnings(inputs: Inputs, crew: Crew | None, servers: Mapping[str, McpServer]) -> list[str]:
    """An MCP rule naming a server the run does not have: most likely a typo, which in a
    deny rule would let the calls it meant to stop through."""
    known = {normalize(n) for n in servers}
    listed = ", ".join(sorted(known)) or "none is configured"
    found = [
        (f"gate.{k}[{i}]", r)
        for k in ("allow", "deny")
        for i, r in enumerate(getattr(inputs.gate, k))
    ]
    if crew is not None:
        for rs in crew.rule_sets:
            for kind in ("allow", "deny"):
                found += [
                    (f"{crew.source}: rule set {rs.name} {kind}[{i}]", r)
                    for i, r in enumerate(getattr(rs, kind))
                ]
    out = []
    for where, rule in found:
        parts = split_pattern(rule.strip())
        if parts is not None and parts[0] not in known:
            out.append(f"{where}: {rule!r} names no MCP server of this run ({listed})")
    return out


def network_warnings(servers: Mapping[str, McpServer]) -> list[str]:
    """A stdio server with a `network` allow-list and `"sandbox": "off"`: the list holds only
    in the sandbox (docs/tools.md, "How servers run"); unconfined, it reaches every host."""
    return [
        f"MCP server {name}: its network allow-list holds only in the sandbox; with "
        '"sandbox": "off" it runs unconfined and can reach every host'
        for name, s in servers.items()
        if s.transport == "stdio" and s.sandbox == "off" and not isinstance(s.network, bool)
    ]
