"""The six tools the model calls (INTERFACE section 3), registered by name.

`run_tool` is what the pipeline calls once the gate, rule sets, roots and pre-tool hooks
have let a call through. It checks the call's path again itself (a tool's inner calls
check their own paths) and acts only on the resolved path. Errors the model can act on
(missing file, bad pattern, ...) come back as a text result starting with `error: `;
`run_tool` does not raise for them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models.base import ToolSpec
from ..paths import PathOutside, resolve_in_workspace
from ..shellrules import ShellRules
from . import files, finding
from .shell import shell
from .specs import SPECS, check_input

if TYPE_CHECKING:
    from .sandbox import SandboxPolicy

__all__ = ["TOOLS", "Tool", "ToolEnv", "check_input", "path_arg", "run_tool"]


@dataclass(frozen=True)
class ToolEnv:
    workspace: Path  # resolved
    shell_rules: ShellRules
    # The shell tool's environment; None inherits orkeon's. The pipeline may pass one with
    # the provider's key variable removed.
    environ: Mapping[str, str] | None = None
    # The OS sandbox of the shell tool's commands, for the whole step (no roots); each
    # call gets it with the calling role's roots (`run_tool`'s `roots`). None: unconfined.
    sandbox: SandboxPolicy | None = None


@dataclass(frozen=True)
class Tool:
    name: str
    spec: ToolSpec
    writes: bool  # file_write, file_edit
    path_field: str | None  # "file_path" | "path" | None (shell): the call's path argument


_PATH_FIELD = {
    "file_read": "file_path",
    "file_write": "file_path",
    "file_edit": "file_path",
    "list_files": "path",
    "search_files": "path",
    "shell": None,
}

TOOLS: dict[str, Tool] = {
    name: Tool(
        name=name,
        spec=SPECS[name],
        writes=name in ("file_write", "file_edit"),
        path_field=_PATH_FIELD[name],
    )
    for name in SPECS
}


def path_arg(tool: str, input: Mapping[str, Any]) -> str | None:
    """The call's path argument as the model wrote it; None when the tool has none or the
    call leaves it out (list_files and search_files then work on the whole workspace)."""
    t = TOOLS.get(tool)
    if t is None or t.path_field is None:
        return None
    value = input.get(t.path_field)
    return value if isinstance(value, str) else None


async def run_tool(
    tool: str,
    input: Mapping[str, Any],
    env: ToolEnv,
    timeout: float,
    roots: Sequence[str] | None = None,
) -> str | list[Any] | dict[str, Any]:
    """Run one call. The result is text, or a JSON list (list_files, search_files) or
    object (shell) when the tool ran; errors are text starting with `error: `. `roots`
    are the calling role's (None: none): with `env.sandbox`, its shell commands may write
    only there. A shell call with no sandbox available answers `[refused: ...]`."""
    from anyio import to_thread

    problem = check_input(tool, input)
    if problem is not None:
        return f"error: {problem}"
    if tool == "shell":
        return await shell(
            input["command"],
            workspace=env.workspace,
            rules=env.shell_rules,
            timeout=timeout,
            environ=env.environ,
            sandbox=env.sandbox.with_roots(roots) if env.sandbox is not None else None,
        )

    ws = env.workspace
    if tool in ("file_read", "file_write", "file_edit"):
        raw: str = input["file_path"]
        try:
            path = resolve_in_workspace(ws, raw)
        except PathOutside:
            return f"error: {raw} is outside the workspace"
        if tool == "file_write":
            return files.write(path, raw, input["content"])
        if tool == "file_edit":
            replace_all = bool(input.get("replace_all") or False)
            return files.edit(path, raw, input["old_string"], input["new_string"], replace_all)
        offset, limit = input.get("offset"), input.get("limit")
        if offset is None and limit is None:
            text = files.read_small(path, raw)  # the common case stays on the event loop
            if text is not None:
                return text
        return await to_thread.run_sync(files.read_range, path, raw, offset, limit)

    shown = input.get("path") or "."  # omitted or empty: the whole workspace
    try:
        base = resolve_in_workspace(ws, shown)
    except PathOutside:
        return f"error: {shown} is outside the workspace"
    deadline = time.monotonic() + timeout
    work: partial[Any]
    if tool == "list_files":
        work = partial(finding.list_files, ws, base, shown, input.get("pattern"), deadline)
    else:
        glob = input.get("glob")
        work = partial(finding.search_files, ws, base, shown, input["pattern"], glob, deadline)
    return await to_thread.run_sync(work)
