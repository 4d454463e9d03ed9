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

from ..events import utf8_line
from .matchers import claude_name


def base(session_id: str, transcript_path: str, cwd: str, event: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": transcript_path,
        "cwd": cwd,
        "hook_event_name": event,
    }


def tool_fields(tool: str, input: dict[str, Any]) -> dict[str, Any]:
    return {"tool_name": claude_name(tool), "orkeon_tool_name": tool, "tool_input": input}


def _text(result: Any) -> str:
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)


def tool_response(tool: str, input: dict[str, Any], result: Any) -> Any:
    """The tool's result in Claude Code's shape for that tool.

    shell        {stdout, stderr, exit_code, interrupted}
    file_write   {filePath, content, output}
    file_edit    {filePath, oldString, newString, replaceAll, output}
    file_read    {type: "text", file: {filePath, content}}
    list_files   {filenames, numFiles}
    search_files {mode: "content", filenames, numFiles, content, numLines, matches}
    `output` is orkeon's own result text. Any other tool, or a result of an unexpected
    shape (an error text), gets the result as it is.
    """
    path = input.get("file_path")
    if tool == "shell" and isinstance(result, dict):
        return {
            "stdout": result.get("stdout", ""),
            "stderr": result.get("stderr", ""),
            "exit_code": result.get("exit_code"),
            # orkeon's shell gives exit_code null when the command ran out of time.
            "interrupted": result.get("exit_code") is None or bool(result.get("timed_out")),
        }
    if tool == "file_write":
        return {
            "filePath": path,
            "content": input.get("content"),
            "output": _text(result),
        }
    if tool == "file_edit":
        return {
            "filePath": path,
            "oldString": input.get("old_string"),
            "newString": input.get("new_string"),
            "replaceAll": bool(input.get("replace_all", False)),
            "output": _text(result),
        }
    if tool == "file_read" and isinstance(result, str):
        return {"type": "text", "file": {"filePath": path, "content": result}}
    if tool == "list_files" and isinstance(result, list):
        return {"filenames": result, "numFiles": len(result)}
    if tool == "search_files" and isinstance(result, list):
        hits = [h for h in result if isinstance(h, dict)]
        files = list(dict.fromkeys(str(h.get("file")) for h in hits))
        lines = [f"{h.get('file')}:{h.get('line')}:{h.get('text')}" for h in hits]
        return {
            "mode": "content",
            "filenames": files,
            "numFiles": len(files),
            "content": "\n".join(lines),
            "numLines": len(lines),
            "matches": result,
        }
    return result


def encode(payload: dict[str, Any]) -> bytes:
    """One compact JSON line, as Claude Code writes it."""
    line = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    # A lone surrogate in the call (a JSON "\\ud800" from the model) stays that escape.
    return utf8_line(line + "\n")


__all__ = ["base", "encode", "tool_fields", "tool_response"]
