"""The MCP tools as tools of a run: their catalog entries, a role's selection, and the
implementation the pipeline runs (`run_mcp`, named by each entry like a built-in's).

    catalog = run_catalog(hub)                      # once the hub's servers started
    names, role_catalog = role_tools(crew_role.tools, catalog, hub)

An MCP tool's entry (`catalog.declared_tool`) offers the model the tool's description and
input schema exactly as its server declares them; its input is any JSON object (the server
checks it); it has no path field and no alias. A call of a tool whose server is not running
is refused at the pipeline's stage 2 with the hub's text (`McpHub.unavailable`); one of an
http server whose session dropped goes on to the hub, which makes a new session for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...calls import Catalog, CheckedCall
from ...catalog import TOOLS, declared_tool
from ...policy.mcpnames import server_prefix, split_pattern
from .select import select_tools

if TYPE_CHECKING:
    from .. import ToolEnv
    from .hub import McpHub

RUN = "orkeon_run.tools.mcp.tool:run_mcp"


def run_catalog(hub: McpHub) -> Catalog:
    """The built-ins and every tool the hub's servers listed, with the hub's check."""
    added = [declared_tool(t.name, t.description, t.input_schema, RUN) for t in hub.tools]
    return Catalog(added, [hub.unavailable])


def role_tools(
    entries: Sequence[str], catalog: Catalog, hub: McpHub
) -> tuple[tuple[str, ...], Catalog]:
    """A role's tools from its crew entries: the names it is offered, in the order of the
    entries (an MCP entry giving each tool of the hub it selects, in the server's order,
    once), and its catalog: the built-ins and the MCP tools selected, out of the run's
    `catalog`, with the hub's check for the servers its entries name (a call of one of their
    tools while the server is not running reads why, whether or not the server listed it;
    other servers' tools do not exist for the role). An entry that selects no tool gives
    nothing (`select.unmatched` says which, for a warning)."""
    names: dict[str, None] = {}
    servers: set[str] = set()
    for entry in entries:
        if entry in TOOLS:
            names[entry] = None
            continue
        parts = split_pattern(entry)
        if parts is not None:
            servers.add(server_prefix(parts[0]))
            names.update((t.name, None) for t in select_tools([entry], hub.tools))
    chosen = tuple(n for n in names if catalog.get(n) is not None)
    prefixes = tuple(servers)

    def check(name: str) -> str | None:
        return hub.unavailable(name) if name.startswith(prefixes) else None

    return chosen, catalog.only(chosen, [check] if prefixes else [])


async def run_mcp(call: CheckedCall, env: ToolEnv, timeout: float) -> Any:
    """Call the MCP tool `call` names with its input as the model wrote it; what the server
    answered, or the hub's text for a call that got no answer (`results.py`)."""
    if env.mcp is None:
        return f"error: {call.name}: no MCP server runs in this step"
    reply = await env.mcp.call(call.name, call.input, timeout, idle=env.idle, roots=env.roots)
    return reply.result


__all__ = ["RUN", "role_tools", "run_catalog", "run_mcp"]
