"""Which MCP tools a crew role is offered: the MCP entries of its `tools` list.

An entry is one of (SERVER as it appears in tool names, see `policy/mcpnames.py`):

- `mcp__SERVER__TOOL`  that one tool;
- `mcp__SERVER__*`     every tool the server lists;
- `mcp__SERVER`        the same, Claude Code's permission-rule form.

A role gets no MCP tool unless one of its entries names it. There is deliberately no form
for "every server": a server added to the inputs later must not reach a role unasked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from ...policy.mcpnames import normalize, split_pattern


class Listed(Protocol):
    """What selection needs of a tool (`hub.McpTool` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def server(self) -> str: ...


T = TypeVar("T", bound=Listed)


def pattern_problem(pattern: str, servers: Iterable[str]) -> str | None:
    """Why an MCP entry of a role's `tools` cannot work with the configured `servers`
    (their names as configured), or None. For crew validation and `orkeon validate`."""
    parts = split_pattern(pattern)
    if parts is None:
        return (
            f"{pattern!r} is not an MCP tool entry: write mcp__SERVER__TOOL, mcp__SERVER__* "
            "or mcp__SERVER (letters, digits, '_' and '-')"
        )
    known = {normalize(s) for s in servers}
    if parts[0] not in known:
        listed = ", ".join(sorted(known)) or "none is configured"
        return f"{pattern!r}: there is no MCP server {parts[0]!r} ({listed})"
    return None


def select_tools(patterns: Sequence[str], tools: Sequence[T]) -> list[T]:
    """The tools the MCP entries of `patterns` name, in the order of the entries and then
    of `tools`, each once. Entries that are not MCP entries (built-in tool names) are
    skipped; an entry that names nothing listed selects nothing (`unmatched` says which)."""
    chosen: dict[str, T] = {}
    for pattern in patterns:
        parts = split_pattern(pattern)
        if parts is None:
            continue
        server, tool = parts
        for t in tools:
            if normalize(t.server) != server:
                continue
            if tool is None or t.name == pattern:
                chosen.setdefault(t.name, t)
    return list(chosen.values())


def unmatched(patterns: Sequence[str], tools: Sequence[Listed]) -> list[str]:
    """The MCP entries of `patterns` that select no tool of `tools` (a server that did
    not start, or a tool it does not list): for a warning."""
    return [p for p in patterns if split_pattern(p) is not None and not select_tools([p], tools)]


__all__ = ["Listed", "pattern_problem", "select_tools", "split_pattern", "unmatched"]
