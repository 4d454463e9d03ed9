"""The six tools as the model sees them: names, descriptions, input schemas (INTERFACE
section 3, with Claude Code's field names), and the input check that goes with them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..models.base import ToolSpec

# Caps, named in the descriptions so the model knows them.
READ_LINES = 2000  # lines file_read returns when no limit is given and the file is large
READ_WHOLE_BYTES = 256 * 1024  # a file up to this size is returned whole when no range is given
READ_RESULT_CHARS = 256 * 1024  # the most one file_read returns, whatever the range
LIST_CAP = 2000
SEARCH_CAP = 500
SEARCH_TEXT_CHARS = 500
SHELL_CAP = 30_000  # bytes of stdout and of stderr the shell tool keeps

_STR = {"type": "string"}
_POS = {"type": "integer", "minimum": 1}
_BOOL = {"type": "boolean"}

# name -> (field -> (kind, required)); kind is "str", "pos" (integer >= 1) or "bool".
FIELDS: dict[str, dict[str, tuple[str, bool]]] = {
    "file_read": {"file_path": ("str", True), "offset": ("pos", False), "limit": ("pos", False)},
    "file_write": {"file_path": ("str", True), "content": ("str", True)},
    "file_edit": {
        "file_path": ("str", True),
        "old_string": ("str", True),
        "new_string": ("str", True),
        "replace_all": ("bool", False),
    },
    "list_files": {"path": ("str", False), "pattern": ("str", False)},
    "search_files": {"pattern": ("str", True), "path": ("str", False), "glob": ("str", False)},
    "shell": {"command": ("str", True)},
}

_DESCRIBE_FIELD = {
    ("file_read", "file_path"): "Path of the file, relative to the workspace.",
    ("file_read", "offset"): "First line to read, counting from 1.",
    ("file_read", "limit"): "Number of lines to read.",
    ("file_write", "file_path"): "Path of the file, relative to the workspace.",
    ("file_write", "content"): "The whole new content of the file.",
    ("file_edit", "file_path"): "Path of the file, relative to the workspace.",
    ("file_edit", "old_string"): "The exact text to replace.",
    ("file_edit", "new_string"): "The text to put in its place.",
    ("file_edit", "replace_all"): "Replace every occurrence (default false).",
    ("list_files", "path"): "Folder to list, relative to the workspace (default: the workspace).",
    ("list_files", "pattern"): "Glob the paths must match, relative to the folder (`**/*.py`).",
    ("search_files", "pattern"): "Python regular expression searched for in each line.",
    ("search_files", "path"): "File or folder to search (default: the workspace).",
    ("search_files", "glob"): "Only files matching this glob (`*.py`, `src/**/*.ts`).",
    ("shell", "command"): "One program and its arguments, split like a POSIX shell splits words.",
}

DESCRIPTIONS = {
    "file_read": (
        "Read a text file of the workspace. Returns its text. Without offset and limit a file "
        f"up to {READ_WHOLE_BYTES // 1024} KiB comes back whole, a larger one as its first "
        f"{READ_LINES} lines; offset (first line, from 1) and limit (number of lines) read "
        "a range."
    ),
    "file_write": (
        "Write a text file of the workspace, replacing it if it exists; missing parent folders "
        "are created."
    ),
    "file_edit": (
        "Replace old_string with new_string in a file of the workspace. old_string must occur "
        "exactly once unless replace_all is true; include enough surrounding text to make it "
        "unique."
    ),
    "list_files": (
        "List the files under a folder of the workspace (default: all of it), recursively, "
        "skipping .git. Returns a JSON list of paths relative to the workspace, sorted, at most "
        f"{LIST_CAP}. pattern is a glob relative to the folder: `*` within one folder, `**` "
        "across folders, `{a,b}` alternatives."
    ),
    "search_files": (
        "Search the lines of the text files under a folder (or one file) of the workspace for "
        "a Python regular expression, skipping .git and binary files. Returns a JSON list of "
        f"{{file, line, text}}, at most {SEARCH_CAP}. glob limits the files: without a `/` it "
        "matches file names at any depth."
    ),
    "shell": (
        "Run one program with its arguments in the workspace: no shell, so no pipes, "
        "redirections, `;`, `&&` or variable expansion; put several steps in a script. Only "
        "some programs are allowed: cat cp cut diff echo false git grep head ls mkdir mv pwd "
        "sleep sort tail test touch tr true uniq wc, and whatever this run's settings add. "
        "Returns {exit_code, stdout, stderr}; exit_code is null when the command ran out of "
        f"time. Each stream keeps its first {SHELL_CAP} bytes."
    ),
}

_SCHEMA_KIND: dict[str, dict[str, Any]] = {"str": _STR, "pos": _POS, "bool": _BOOL}


def _schema(tool: str) -> dict[str, Any]:
    fields = FIELDS[tool]
    return {
        "type": "object",
        "properties": {
            name: {**_SCHEMA_KIND[kind], "description": _DESCRIBE_FIELD[(tool, name)]}
            for name, (kind, _) in fields.items()
        },
        "required": [name for name, (_, required) in fields.items() if required],
    }


SPECS: dict[str, ToolSpec] = {
    name: ToolSpec(name=name, description=DESCRIPTIONS[name], input_schema=_schema(name))
    for name in FIELDS
}


def check_input(tool: str, input: Mapping[str, Any]) -> str | None:
    """None when `input` has the tool's required fields with the right types, else one line
    naming the problem. Fields the tool does not know are ignored."""
    fields = FIELDS.get(tool)
    if fields is None:
        return f"there is no tool named {tool!r}"
    if not isinstance(input, Mapping):
        return "the input must be a JSON object"
    for name, (kind, required) in fields.items():
        if name not in input or input[name] is None:
            if required:
                return f"{tool}: the field {name!r} is required"
            continue
        value = input[name]
        if kind == "str" and not isinstance(value, str):
            return f"{tool}: the field {name!r} must be a string"
        if kind == "bool" and not isinstance(value, bool):
            return f"{tool}: the field {name!r} must be true or false"
        if kind == "pos" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            return f"{tool}: the field {name!r} must be an integer of at least 1"
    return None
