"""MCP tool names as Claude Code spells them, `mcp__SERVER__TOOL`, and the entries that name
them in rules and crews (`split_pattern`).

Claude Code (`normalizeNameForMCP`) replaces every character outside `[A-Za-z0-9_-]` in the
server's name and in the tool's name with `_`, then joins them as `mcp__SERVER__TOOL`; so
rules (`mcp__git__*`), hook matchers (`mcp__.*`) and hook payloads written for Claude Code
name the same tools here. Its replacement is a JavaScript regex without the `u` flag, which
works on UTF-16 code units: a character outside the Basic Multilingual Plane (an emoji) is
two units and becomes `__`. `normalize` does the same.

Model APIs refuse tool names longer than 64 characters (OpenAI's limit; Anthropic's is
64 or 128 depending on the API version), so a longer name is reported and left out.

Here, below the configuration and the tools, because the rules (`rules.py`), the server
configuration (`config/mcp.py`), the crews and the hub (`tools/mcp/`) all read these names.
"""

from __future__ import annotations

import re

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_NAME_CHARS = 64

_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")


def _replace(m: re.Match[str]) -> str:
    return "__" if ord(m.group()) > 0xFFFF else "_"


def normalize(name: str) -> str:
    """`name` with each character outside `[A-Za-z0-9_-]` replaced as Claude Code does."""
    return _OUTSIDE.sub(_replace, name)


def server_prefix(server: str) -> str:
    """`mcp__SERVER__`: what every tool name of that server starts with."""
    return f"{PREFIX}{normalize(server)}{SEPARATOR}"


def tool_name(server: str, tool: str) -> str:
    """The name the model, the rules and the hooks see: `mcp__SERVER__TOOL`."""
    return f"{server_prefix(server)}{normalize(tool)}"


def is_mcp_name(name: str) -> bool:
    return name.startswith(PREFIX)


def server_name_problem(server: str) -> str | None:
    """Why `server` cannot name a server, or None.

    A name whose normalized form holds `__` is refused: `__` separates the server from the
    tool, and Claude Code's own parser splits such a name at the wrong place, so a rule
    written for one server could match another's tools."""
    if not server:
        return "a server name cannot be empty"
    shown = normalize(server)
    if SEPARATOR in shown:
        given = "" if shown == server else f" (it gives {shown!r} in tool names)"
        return (
            f"server name {server!r}{given} contains '__', which separates the server from "
            "the tool in mcp__SERVER__TOOL; rename it"
        )
    return None


def split_pattern(pattern: str) -> tuple[str, str | None] | None:
    """An MCP entry of a role's `tools` or a rule, split: `mcp__git__git_log` ->
    ("git", "git_log"); `mcp__git__*` and `mcp__git` (Claude Code's permission-rule form)
    -> ("git", None), every tool of the server; None when `pattern` is not an MCP entry of
    one of these forms. SERVER and TOOL are as they appear in tool names (`normalize`)."""
    if not is_mcp_name(pattern):
        return None
    rest = pattern[len(PREFIX) :]
    server, sep, tool = rest.partition(SEPARATOR)
    if not server or normalize(server) != server:
        return None
    if not sep:
        return server, None
    if tool == "*":
        return server, None
    if not tool or normalize(tool) != tool:
        return None
    return server, tool


__all__ = [
    "MAX_NAME_CHARS",
    "PREFIX",
    "is_mcp_name",
    "normalize",
    "server_name_problem",
    "server_prefix",
    "split_pattern",
    "tool_name",
]
