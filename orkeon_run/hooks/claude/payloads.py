"""The JSON line a settings-shape hook reads on stdin (seed page "How a hook receives input").

Base fields `session_id, transcript_path, cwd, hook_event_name`, then the event's own, in
Claude Code's key order. Tool events speak Claude Code:

- `tool_name` is Claude Code's name of the tool (`Bash`, `Write`, `Edit`, `Read`, `Glob`,
  `Grep`), because scripts written for it test `tool_name` (`if tool_name != "Bash": exit 0`)
  and would otherwise pass every call silently; `orkeon_tool_name` carries orkeon's name.
- `tool_input` is the call's input as the model wrote it (field names are Claude Code's;
  paths are relative to the workspace, which is the hook's cwd).
- `tool_response` has the shape Claude Code gives that tool (`tool_response` below).
"""

from __future__ import annotations

import json
from typing import Any

from ...catalog import TOOLS, claude_name
from ...jsonio import utf8_line


def base(session_id: str, transcript_path: str, cwd: str, event: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": transcript_path,
        "cwd": cwd,
        "hook_event_name": event,
    }


def tool_fields(tool: str, input: dict[str, Any]) -> dict[str, Any]:
    return {"tool_name": claude_name(tool), "orkeon_tool_name": tool, "tool_input": input}


def tool_response(tool: str, input: dict[str, Any], result: Any) -> Any:
    """The tool's result in the shape Claude Code gives that tool's hooks (the catalog's
    `response`); a tool the catalog does not hold, or a result of an unexpected shape (an
    error text), as it is."""
    entry = TOOLS.get(tool)
    return entry.response(input, result) if entry else result


def encode(payload: dict[str, Any]) -> bytes:
    """One compact JSON line, as Claude Code writes it."""
    line = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    # A lone surrogate in the call (a JSON "\\ud800" from the model) stays that escape.
    return utf8_line(line + "\n")


__all__ = ["base", "encode", "tool_fields", "tool_response"]
