"""The built-in tools' implementations, and the MCP hub (`mcp/`). Every fact about a tool
(its names, input, path field, whether it writes, its description) is in the catalog
(`orkeon_run/catalog.py`); each entry names its implementation here as `module:function`
(an MCP tool's entry names `mcp/tool.py`'s `run_mcp`).

An implementation is `async def run_x(call: CheckedCall, env: ToolEnv, timeout: float)`.
It gets the call after the pipeline checked it: its validated input (`call.args`) and, for
a tool with a path, the path the gate, rule sets and roots checked (`call.path`, resolved
inside the workspace), which is the one it acts on. Errors the model can act on (missing
file, bad pattern, ...) come back as a text result starting with `error: `, never as an
exception.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..catalog import Tool
from ..policy.programs import ShellRules

if TYPE_CHECKING:
    # Not at import: `orkeon validate` loads this package (the sandbox's) and runs no call.
    from ..calls import CheckedCall
    from .mcp.hub import McpHub
    from .sandbox import SandboxPolicy

__all__ = ["ToolEnv", "run_tool"]

Implementation = Callable[["CheckedCall", "ToolEnv", float], Awaitable[Any]]


@dataclass(frozen=True)
class ToolEnv:
    workspace: Path  # resolved
    shell_rules: ShellRules
    # The shell tool's environment; None inherits orkeon's. The pipeline passes one with
    # the provider's key and credential-like variables removed.
    environ: Mapping[str, str] | None = None
    # The OS sandbox of the shell tool's commands, for the whole step (no roots); a call
    # gets it with the calling role's `roots`. None: unconfined (`"sandbox": "off"`).
    sandbox: SandboxPolicy | None = None
    # The calling role's roots (None: a role without roots); the pipeline sets them per call.
    roots: tuple[str, ...] | None = None
    # The run's MCP servers (tools/mcp/): the MCP tools' implementation calls them here.
    mcp: McpHub | None = None
    # The no-progress watchdog (`budget.idle_seconds`; the pipeline sets it per call): a
    # tool that waits on a program or a server raises errors.Idle when it stays silent.
    idle: float | None = None


_loaded: dict[str, Implementation] = {}


def implementation(tool: Tool) -> Implementation:
    """The function the catalog entry names, imported on first use."""
    found = _loaded.get(tool.run)
    if found is None:
        module, _, name = tool.run.partition(":")
        found = _loaded[tool.run] = getattr(importlib.import_module(module), name)
    return found


async def run_tool(call: CheckedCall, env: ToolEnv, timeout: float) -> Any:
    """Run one checked call. The result is text, or a JSON list (list_files, search_files)
    or object (shell) when the tool ran; errors are text starting with `error: `."""
    return await implementation(call.tool)(call, env, timeout)
