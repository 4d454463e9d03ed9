"""The tool catalog: every fact about every built-in tool, in one place.

A `Tool` holds the name the model calls, the names Claude Code and OrbCode give it (rules,
hook matchers and hook payloads accept and show them), the input model (the one check of a
call's input), the path field the pipeline resolves and checks (and whether it may name a
folder), the field holding a command line the pipeline splits into words, whether the tool
writes (a batch role's roots apply), what the model reads about it, where its implementation
lives (a `module:function` path, imported on first use, so this module stays a leaf that
rules, crews and hooks can read) and the shape Claude Code gives its result to hooks.

Adding a tool is one module under `tools/` and one entry in `TOOLS` (docs/architecture.md).

A run adds tools of its own (the tools of its MCP servers): `declared_tool` makes their
entries, and `calls.Catalog` holds the built-ins and one role's added entries. The layers
that add entries hand them in; this module imports none of their code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# Caps, named in the descriptions so the model knows them.
READ_LINES = 2000  # lines file_read returns when no limit is given and the file is large
READ_WHOLE_BYTES = 256 * 1024  # a file up to this size is returned whole when no range is given
READ_RESULT_CHARS = 256 * 1024  # the most one file_read returns, whatever the range
LIST_CAP = 2000
SEARCH_CAP = 500
SEARCH_TEXT_CHARS = 500
SHELL_CAP = 30_000  # bytes of stdout and of stderr the shell tool keeps


@dataclass(frozen=True)
class ToolSpec:
    """A tool as offered to the model: name, description, JSON Schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]


# --- inputs ------------------------------------------------------------------------------


class ToolInput(BaseModel):
    """A call's input. Strict: `"2"` is no line number. Fields a tool does not know are
    ignored (models add some), and a field given as null counts as left out."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


_PATH = "Path of the file, relative to the workspace."


class FileReadInput(ToolInput):
    file_path: str = Field(description=_PATH)
    offset: int | None = Field(None, ge=1, description="First line to read, counting from 1.")
    limit: int | None = Field(None, ge=1, description="Number of lines to read.")


class FileWriteInput(ToolInput):
    file_path: str = Field(description=_PATH)
    content: str = Field(description="The whole new content of the file.")


class FileEditInput(ToolInput):
    file_path: str = Field(description=_PATH)
    old_string: str = Field(description="The exact text to replace.")
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(False, description="Replace every occurrence (default false).")


class ListFilesInput(ToolInput):
    path: str | None = Field(
        None, description="Folder to list, relative to the workspace (default: the workspace)."
    )
    pattern: str | None = Field(
        None, description="Glob the paths must match, relative to the folder (`**/*.py`)."
    )


class SearchFilesInput(ToolInput):
    pattern: str = Field(description="Python regular expression searched for in each line.")
    path: str | None = Field(None, description="File or folder to search (default: the workspace).")
    glob: str | None = Field(
        None, description="Only files matching this glob (`*.py`, `src/**/*.ts`)."
    )


class ObjectInput(ToolInput):
    """Any JSON object: the input of a tool that checks its own (`declared_tool`); the tool
    gets the call's input as the model wrote it."""


class ShellInput(ToolInput):
    command: str = Field(
        description="One program and its arguments, split like a POSIX shell splits words."
    )


# What each kind of pydantic error says to the model, by the field's type.
_EXPECTED = {str: "a string", bool: "true or false", int: "an integer of at least 1"}


def _input_problem(tool: str, model: type[ToolInput], exc: ValidationError) -> str:
    """The first problem as one line: `file_read: the field 'offset' must be an integer of
    at least 1`."""
    err = exc.errors(include_url=False)[0]
    name = str(err["loc"][0]) if err["loc"] else "?"
    if err["type"] == "missing":
        return f"{tool}: the field {name!r} is required"
    annotation = model.model_fields[name].annotation if name in model.model_fields else str
    kind = next((t for t in _EXPECTED if t == annotation or t | None == annotation), str)
    return f"{tool}: the field {name!r} must be {_EXPECTED[kind]}"


# --- Claude Code's result shapes (what its hooks read in `tool_response`) ----------------


def _text(result: Any) -> str:
    if isinstance(result, str):
        return result
    import json

    return json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)


def _shell_response(input: Mapping[str, Any], result: Any) -> Any:
    if not isinstance(result, dict):
        return result
    stdout = result.get("stdout", "")
    return {
        # Claude Code's Bash gives its output without the trailing newline(s).
        "stdout": stdout.rstrip("\n") if isinstance(stdout, str) else stdout,
        "stderr": result.get("stderr", ""),
        "exit_code": result.get("exit_code"),
        # orkeon's shell gives exit_code null when the command ran out of time.
        "interrupted": result.get("exit_code") is None,
    }


def _write_response(input: Mapping[str, Any], result: Any) -> Any:
    text = _text(result)
    return {
        # Claude Code's `type`: the file was made (`create`) or replaced (`update`), as
        # orkeon's result text says (tools/files.py).
        "type": "create" if text.startswith("created ") else "update",
        "filePath": input.get("file_path"),
        "content": input.get("content"),
        "output": text,
    }


def _edit_response(input: Mapping[str, Any], result: Any) -> Any:
    return {
        "filePath": input.get("file_path"),
        "oldString": input.get("old_string"),
        "newString": input.get("new_string"),
        "replaceAll": bool(input.get("replace_all", False)),
        "output": _text(result),
    }


def _read_response(input: Mapping[str, Any], result: Any) -> Any:
    if not isinstance(result, str):
        return result
    return {"type": "text", "file": {"filePath": input.get("file_path"), "content": result}}


def _list_response(input: Mapping[str, Any], result: Any) -> Any:
    if not isinstance(result, list):
        return result
    return {"filenames": result, "numFiles": len(result)}


def _search_response(input: Mapping[str, Any], result: Any) -> Any:
    if not isinstance(result, list):
        return result
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


# --- the catalog -------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input: type[ToolInput]
    run: str  # "module:function" of the implementation: async (call, env, timeout) -> result
    claude_name: str  # Claude Code's name: `tool_name` in hook payloads, aliases in rules
    response: Callable[[Mapping[str, Any], Any], Any]  # Claude Code's `tool_response` shape
    path_field: str | None = None  # the call's path argument, resolved and checked
    writes: bool = False  # a batch role's roots confine it
    # The path may name a folder: a rule pattern matches it as `DIR` and as `DIR/`.
    folder: bool = False
    # The field that holds a command line (one program and its arguments): the check splits
    # it into words once, and the rules, the program checks and the tool all read those.
    command_field: str | None = None
    other_names: tuple[str, ...] = field(default=())  # OrbCode's, for hook matchers
    # The input's JSON Schema as the tool's server declares it (`declared_tool`); None: the
    # schema of `input`.
    schema: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the tool answers to in rules and matchers, orkeon's first."""
        return (self.name, self.claude_name, *self.other_names)

    @cached_property
    def spec(self) -> ToolSpec:
        schema = _schema(self.input) if self.schema is None else self.schema
        return ToolSpec(self.name, self.description, schema)

    def parse(self, input: Mapping[str, Any]) -> ToolInput | str:
        """The validated input, or one line naming the first problem."""
        if not isinstance(input, Mapping):
            return "the input must be a JSON object"
        given = {k: v for k, v in input.items() if v is not None}
        try:
            return self.input.model_validate(given)
        except ValidationError as exc:
            return _input_problem(self.name, self.input, exc)


def _schema(model: type[ToolInput]) -> dict[str, Any]:
    """The input schema the model reads: each field's type, bounds and description; an
    optional field is its type, not `anyOf [type, null]` (some servers' grammars choke on
    it), and pydantic's titles are left out."""
    full = model.model_json_schema()
    props = {}
    for name, prop in full["properties"].items():
        kinds = [p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"]
        out = {k: v for k, v in kinds[0].items() if k not in ("title", "default")}
        out["description"] = prop["description"]
        props[name] = out
    return {"type": "object", "properties": props, "required": full.get("required", [])}


_SHELL = (
    "Run one program with its arguments in the workspace: no shell, so no pipes, "
    "redirections, `;`, `&&` or variable expansion; put several steps in a script. Only "
    "some programs are allowed: cat cp cut diff echo false git grep head ls mkdir mv pwd "
    "sleep sort tail test touch tr true uniq wc, and whatever this run's settings add. "
    "Returns {exit_code, stdout, stderr}; exit_code is null when the command ran out of "
    f"time. Each stream keeps its first {SHELL_CAP} bytes."
)

TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            name="file_read",
            description=(
                "Read a text file of the workspace. Returns its text. Without offset and limit "
                f"a file up to {READ_WHOLE_BYTES // 1024} KiB comes back whole, a larger one as "
                f"its first {READ_LINES} lines; offset (first line, from 1) and limit (number "
                "of lines) read a range."
            ),
            input=FileReadInput,
            run="orkeon_run.tools.files:run_read",
            claude_name="Read",
            other_names=("read_file",),
            response=_read_response,
            path_field="file_path",
        ),
        Tool(
            name="file_write",
            description=(
                "Write a text file of the workspace, replacing it if it exists; missing parent "
                "folders are created."
            ),
            input=FileWriteInput,
            run="orkeon_run.tools.files:run_write",
            claude_name="Write",
            response=_write_response,
            path_field="file_path",
            writes=True,
        ),
        Tool(
            name="file_edit",
            description=(
                "Replace old_string with new_string in a file of the workspace. old_string must "
                "occur exactly once unless replace_all is true; include enough surrounding text "
                "to make it unique."
            ),
            input=FileEditInput,
            run="orkeon_run.tools.files:run_edit",
            claude_name="Edit",
            response=_edit_response,
            path_field="file_path",
            writes=True,
        ),
        Tool(
            name="list_files",
            description=(
                "List the files under a folder of the workspace (default: all of it), "
                "recursively, skipping .git. Returns a JSON list of paths relative to the "
                f"workspace, sorted, at most {LIST_CAP}. pattern is a glob relative to the "
                "folder: `*` within one folder, `**` across folders, `{a,b}` alternatives."
            ),
            input=ListFilesInput,
            run="orkeon_run.tools.finding:run_list",
            claude_name="Glob",
            response=_list_response,
            path_field="path",
            folder=True,
        ),
        Tool(
            name="search_files",
            description=(
                "Search the lines of the text files under a folder (or one file) of the "
                "workspace for a Python regular expression, skipping .git and binary files. "
                f"Returns a JSON list of {{file, line, text}}, at most {SEARCH_CAP}. glob limits "
                "the files: without a `/` it matches file names at any depth."
            ),
            input=SearchFilesInput,
            run="orkeon_run.tools.finding:run_search",
            claude_name="Grep",
            response=_search_response,
            path_field="path",
            folder=True,
        ),
        Tool(
            name="shell",
            description=_SHELL,
            input=ShellInput,
            run="orkeon_run.tools.shell:run_shell",
            claude_name="Bash",
            other_names=("execute_command",),
            response=_shell_response,
            command_field="command",
        ),
    )
}

# Claude Code's names (and OrbCode's) -> orkeon's.
_BY_NAME = {n: t.name for t in TOOLS.values() for n in t.names}


def canonical(name: str) -> str | None:
    """The orkeon tool name for `name` (orkeon's, Claude Code's or OrbCode's), or None."""
    return _BY_NAME.get(name)


def claude_name(tool: str) -> str:
    """Claude Code's name of a tool (`shell` -> `Bash`); any other tool keeps its own."""
    t = TOOLS.get(tool)
    return t.claude_name if t else tool


# --- tools a run adds ---------------------------------------------------------------------


def _mcp_response(input: Mapping[str, Any], result: Any) -> Any:
    """An MCP tool's result as Claude Code gives it to hooks: its structured content as a
    JSON string, else its content as a list of blocks (orkeon's result is the blocks' text,
    one text block; tools/mcp/results.py)."""
    import json

    if isinstance(result, dict | list):
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)
    return [{"type": "text", "text": result if isinstance(result, str) else str(result)}]


def declared_tool(name: str, description: str, schema: dict[str, Any], run: str) -> Tool:
    """The entry of a tool a run adds (a tool of an MCP server): its input any JSON object,
    which the tool checks itself, offered to the model with `schema` exactly as declared; no
    path field, so the path checks and a role's roots do not apply; no other name, so rules,
    matchers and hook payloads name it `name`; its result given to hooks in Claude Code's
    shape (`_mcp_response`)."""
    return Tool(
        name=name,
        description=description,
        input=ObjectInput,
        run=run,
        claude_name=name,
        response=_mcp_response,
        schema=schema,
    )
