"""Git-shaped MCP servers (docs/tools.md, "Git-shaped servers"; docs/security.md, "The
audit"): servers whose tools commit, reset, check out or make branches. The batch rule
set's git allow-list covers their tools as it covers `git` in the shell: in a step whose
rule sets read git as read-only (`git-read-only`), a tool of such a server is refused
unless it only reads (for a server orkeon knows) or the operator's rules (the `gate`'s
`allow`) name it.

- a server orkeon knows by its command: `mcp-server-git` (the reference server, run as
  `uvx mcp-server-git`, `python -m mcp_server_git`, …): its reading tools are allowed;
- any other server with `"git": true` in its configuration: every tool is refused.

The refusal reads `[refused by rule set batch: mcp__SERVER__TOOL]`, refused_by "rules".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from .mcpnames import normalize, server_prefix
from .rules import Rule, RuleSet

NAME = "batch"
CHECK = "git-read-only"  # the program check that makes a rule set read git as read-only
# Known servers, by the program or module their command runs: the tools that only read.
# git_branch lists branches; git_create_branch makes one.
_GIT_READS = ("git_status", "git_diff_unstaged", "git_diff_staged", "git_diff", "git_log",
              "git_show", "git_branch")  # fmt: skip
KNOWN: dict[str, frozenset[str]] = {"mcp-server-git": frozenset(_GIT_READS)}


def known_server(argv: Sequence[str]) -> str | None:
    """The known git-shaped server `argv` runs (its program or an argument naming it:
    `uvx mcp-server-git`, `python -m mcp_server_git`), or None."""
    for word in argv:
        base = os.path.basename(word).replace("_", "-")
        for name in KNOWN:
            if base == name or base.startswith(name + "@") or base.startswith(name + "=="):
                return name
    return None


def is_git_shaped(argv: Sequence[str], flagged: bool) -> bool:
    return flagged or known_server(argv) is not None


def git_tool_rules(
    servers: Mapping[str, tuple[Sequence[str], bool]],
    tools: Iterable[str],
    allowed: Callable[[str], bool],
) -> RuleSet | None:
    """The rule set that refuses the git-shaped servers' tools in a batch: `servers` maps a
    server's name to (its argv, its `git` flag); `tools` are the run's MCP tool names;
    `allowed(tool)`: whether the operator's rules allow it. None when nothing is refused."""
    shaped = {}
    for name, (argv, flagged) in servers.items():
        if is_git_shaped(argv, flagged):
            known = known_server(argv)
            shaped[server_prefix(normalize(name))] = KNOWN[known] if known else frozenset()
    deny = []
    for tool in tools:
        for prefix, reading in shaped.items():
            reads = tool.startswith(prefix) and tool[len(prefix) :] in reading
            if tool.startswith(prefix) and not reads and not allowed(tool):
                deny.append(Rule(text=tool, tool=tool))
    return RuleSet(name=NAME, deny=tuple(deny)) if deny else None
