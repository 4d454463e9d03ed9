"""Tools from MCP (Model Context Protocol) servers: selection (`select`), the hub that runs
the servers of one run (`hub`; `server`, one server's task and its sessions, with
`settings`, `stdio`, `httpclient`, `confined`; `send`, one call and how it failed;
`results` and `reasons`, the texts), the tools as
tools of a run (`tool`: catalog entries, a role's selection, the implementation the
pipeline calls) and `validate`'s check (`check`). The servers' configuration is in
`config/mcp.py` and the tool names in `policy/mcpnames.py`, below, where the inputs, rules
and crews read them; this package re-exports the names used most.

Importing this package (or `select`, `results`, `tool`) does not import the MCP SDK, which
costs over half a second; `hub`, `stdio` and `check` import it when a server is started,
so a run without servers never loads it.
"""

from __future__ import annotations

import importlib.util

from ...config.mcp import McpServer, McpServers, expand, parse_servers, servers_from_settings
from ...policy.mcpnames import is_mcp_name, normalize, split_pattern, tool_name
from .select import pattern_problem, select_tools, unmatched

SDK_MISSING = "the MCP SDK is not installed: pip install 'orkeon[mcp]'"


def sdk_problem() -> str | None:
    """SDK_MISSING when the SDK cannot be imported, else None; does not import it."""
    return SDK_MISSING if importlib.util.find_spec("mcp") is None else None


__all__ = [
    "SDK_MISSING",
    "McpServer",
    "McpServers",
    "expand",
    "is_mcp_name",
    "normalize",
    "parse_servers",
    "pattern_problem",
    "sdk_problem",
    "select_tools",
    "servers_from_settings",
    "split_pattern",
    "tool_name",
    "unmatched",
]
