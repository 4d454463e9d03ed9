"""The JSON line a settings-shape hook reads on stdin (docs/hooks.md, "Input on stdin").

Base fields `session_id, transcript_path, cwd, hook_event_name`, then the event's own, in
Claude Code's key order. Tool events speak Claude Code:

- `tool_name` is Claude Code's name of the tool (`Bash`, `Write`, `Edit`, `Read`, `Glob`,
  `Grep`), because scripts written for it test `tool_name` (`if tool_name != "Bash": exit 0`)
  and would otherwise pass every call silently; `orkeon_tool_name` carries orkeon's name.
- `tool_input` is the call's input (the model's, or the rewrite that ran) with Claude
  Code's field names, and its path argument (`file_path`, `path`) absolute, `.` and `..`
  resolved as text (`claude_input`), as Claude Code gives it: scripts compare it with
  `"$CLAUDE_PROJECT_DIR"/…` or refuse any `..` in it. Symlinks are left as they are: the
  pipeline resolved them when it checked the call, and a hook sees the path it names.
- `tool_response` has the shape Claude Code gives that tool (`tool_response` below), its
  `filePath` absolute like `tool_input.file_path`.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from ...catalog import TOOLS, Tool, claude_name
from ...jsonio import utf8_line


def base(session_id: str, transcript_path: str, cwd: str, event: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": transcript_path,
        "cwd": cwd,
        "hook_event_name": event,
    }


def claude_input(tool: str, input: dict[str, Any], workspace: str) -> dict[str, Any]:
    """The call's input as Claude Code shows it to hooks: the tool's path argument absolute
    against `workspace` (resolved), `.` and `..` collapsed as text (`src/../src/a.py` ->
    `WS/src/a.py`), and Edit's `replace_all` (false) when the model left it out. A copy;
    the input itself (what the model wrote, what events record) is left alone."""
    entry = TOOLS.get(tool)
    if entry is None:
        return input
    out = input
    field = entry.path_field
    raw = input.get(field) if field else None
    if field and isinstance(raw, str) and raw:
        joined = posixpath.join(workspace, raw)
        # normpath keeps a leading "//" (POSIX leaves its meaning open); one "/" it is.
        path = "/" + posixpath.normpath(joined).lstrip("/")
        if path != raw:
            out = {**input, field: path}
    if tool == "file_edit" and out.get("replace_all") is None:
        out = {**out, "replace_all": False}
    return out


def tool_fields(tool: str, input: dict[str, Any]) -> dict[str, Any]:
    """`input` as `claude_input` gives it."""
    return {"tool_name": claude_name(tool), "orkeon_tool_name": tool, "tool_input": input}


def tool_response(entry: Tool, input: dict[str, Any], result: Any) -> Any:
    """The tool's result in the shape Claude Code gives that tool's hooks (the catalog
    entry's `response`, an MCP tool's too: catalog.py); a result of an unexpected shape
    (an error text) as it is."""
    return entry.response(input, result)


def encode(payload: dict[str, Any]) -> bytes:
    """One compact JSON line, as Claude Code writes it."""
    line = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    # A lone surrogate in the call (a JSON "\\ud800" from the model) stays that escape.
    return utf8_line(line + "\n")


__all__ = ["base", "claude_input", "encode", "tool_fields", "tool_response"]
