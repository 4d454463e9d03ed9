"""Tools from MCP (Model Context Protocol) servers: configuration, names, selection, and
the hub that runs the servers of one run.

Importing this package (or `config`, `names`, `select`, `results`) does not import the MCP
SDK, which costs over half a second; `hub`, `stdio` and `check` import it when a server is
started, so a run without servers never loads it.
"""

from __future__ import annotations

from .config import McpServer, McpServers, expand, parse_servers, servers_from_settings
from .names import is_mcp_name, normalize, tool_name
from .select import pattern_problem, select_tools, split_pattern, unmatched

__all__ = [
    "McpServer",
    "McpServers",
    "expand",
    "is_mcp_name",
    "normalize",
    "parse_servers",
    "pattern_problem",
    "select_tools",
    "servers_from_settings",
    "split_pattern",
    "tool_name",
    "unmatched",
]
