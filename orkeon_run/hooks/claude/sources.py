"""Where settings-shape hooks come from, and how they merge (docs/hooks.md, "Sources").

Sources, merged per event and never overwritten, in this order:

1. the user file, `$ORKEON_CONFIG_DIR/settings.json` (default `~/.config/orkeon/`);
2. the workspace's `.orkeon/settings.json`, only when trusted (`trust.py`); otherwise its
   hooks are skipped with a warning, unchecked (a file that is not used is not checked);
3. each file named in the `settings` input, in order (the caller named them: trusted);
4. the `hooks` object of `--inputs` when it has the settings shape (trusted);
5. each plugin the `plugins` input names, in order (plugins.py; one inside the workspace
   only when trusted), as Claude Code adds plugins' hooks after its settings files'.

A bare run reads only 3-5 (config/sources.py: `--bare`).

A file that is missing (when named), not JSON, or of the wrong shape is an InputError
naming the file and the field, before anything runs. Only a file's `hooks` key is read;
the rest of a `.claude/settings.json` (permissions, env, ...) is left alone. Unknown event
names are ignored with a warning, as are matchers that can never match (no built-in tool,
and no tool an MCP server of the run could list).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ...catalog import TOOLS
from ...config.errorlines import error_lines
from ...config.inputs import SETTINGS_EVENTS, Inputs, MatcherGroup
from ...config.sources import Sources, run_sources
from ...config.trust import (
    TRUST_ENV,
    doc_is_trusted,
    env_trusts,
    read_settings_doc,
)
from ...errors import InputError
from ...policy.mcpnames import server_prefix
from .matchers import MATCH_FIELDS, Matcher, matches_all, tool_names

Config = dict[str, list[MatcherGroup]]


@cache
def _hooks() -> TypeAdapter[Config]:
    # Built on first use: only a settings file's `hooks` needs it (the inputs' own are
    # checked by the inputs' model).
    return TypeAdapter(Config)


def parse_hooks(doc: Mapping[str, Any], origin: str) -> Config:
    """The `hooks` object of one settings document, validated strictly (a timeout must be
    a JSON number, `type` one of command, http, prompt, each with what it needs)."""
    raw = doc.get("hooks", {})
    if not isinstance(raw, dict):
        raise InputError(f"{origin}: hooks: must be an object of event names")
    try:
        return _hooks().validate_python(raw, strict=True)
    except ValidationError as exc:
        raise InputError(
            [f"{origin}: {line}" for line in error_lines(exc, prefix="hooks")]
        ) from None


# Keys of Claude Code's settings that mean something to Claude Code only; orkeon reads a
# settings file for its `hooks`, and says so once for the keys a user may expect it to honour.
_NOT_READ = {
    "permissions": "orkeon's gate rules are the inputs' `gate` (docs/inputs.md)",
    "env": "give the variables to orkeon's own environment",
}


def ignored_keys(doc: Mapping[str, Any], origin: str) -> list[str]:
    """A warning for each key of a settings document orkeon does not honour (an empty one
    asks for nothing)."""
    return [f"{origin}: {key}: ignored: {why}" for key, why in _NOT_READ.items() if doc.get(key)]


def _matcher_warnings(
    origin: str, event: str, groups: list[MatcherGroup], mcp_prefixes: Sequence[str]
) -> list[str]:
    """A tool matcher that matches no built-in tool and no tool the run's MCP servers could
    list (`mcp_prefixes`: `mcp__SERVER__` of each)."""
    out = []
    for i, group in enumerate(groups):
        if matches_all(group.matcher):
            continue
        where = f"{origin}: hooks.{event}[{i}].matcher {group.matcher!r}"
        if event not in MATCH_FIELDS:
            out.append(f"{where}: {event} has no match field, so this group never runs")
        elif MATCH_FIELDS[event] == "tool_name":
            m = Matcher(group.matcher)
            if not any(m.matches_tool(t) for t in TOOLS) and not any(
                m.may_match_after(p) for p in mcp_prefixes
            ):
                names = [n for t in TOOLS for n in tool_names(t)]
                names += [f"{p}*" for p in mcp_prefixes]
                out.append(f"{where} matches no tool ({', '.join(names)})")
    return out


def _raw_commands(node: Any) -> list[str]:
    """Every `command` string in an unchecked `hooks` value (for a warning)."""
    if isinstance(node, dict):
        found = [node["command"]] if isinstance(node.get("command"), str) else []
        return found + [c for v in node.values() for c in _raw_commands(v)]
    if isinstance(node, list):
        return [c for v in node for c in _raw_commands(v)]
    return []


def _add_project(
    project: Path,
    workspace: Path,
    folder: Path | None,
    env: Mapping[str, str],
    stdin_is_tty: bool | None,
    add: Callable[[str, Config], None],
    warn: Callable[[str], None],
) -> None:
    """The workspace's file: used, and so checked, only when trusted. A file that does not
    parse cannot match a recorded hash; it is an error only when the environment variable
    asks to trust it as it is."""
    try:
        doc = read_settings_doc(project)
    except InputError as exc:
        if env_trusts(env, stdin_is_tty):
            raise
        warn(f"{exc.problems[0]}; it is not trusted, so its hooks, if any, were skipped")
        return
    if not doc.get("hooks"):
        return
    if doc_is_trusted(workspace, doc, config_dir=folder, environ=env, stdin_is_tty=stdin_is_tty):
        for line in ignored_keys(doc, str(project)):
            warn(line)
        add(str(project), parse_hooks(doc, str(project)))
        return
    listed = "; ".join(_raw_commands(doc.get("hooks"))) or "nothing runnable"
    warn(
        f"{project}: project hooks are not trusted and were skipped "
        f"(they would run: {listed}); trust them as they are now with "
        f"`orkeon hooks trust --workspace {workspace}`, or set {TRUST_ENV}=1 "
        "(honoured only when stdin is not a terminal)"
    )


def load_settings_hooks(
    inputs: Inputs,
    *,
    workspace: Path,
    config_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
    warn: Callable[[str], None],
    mcp_servers: Iterable[str] = (),
    sources: Sources | None = None,
) -> Config:
    """Every settings-shape hook of the run, merged in source order (module docstring),
    from the files `sources` reads (default a normal run's: config/sources.py).
    `mcp_servers`: the names of the run's MCP servers, whose tools a matcher may name."""
    env = os.environ if environ is None else environ
    src = sources or run_sources(workspace, env, config_dir=config_dir)
    merged: Config = {}
    mcp_prefixes = [server_prefix(s) for s in mcp_servers]

    def add(origin: str, config: Config) -> None:
        for event, groups in config.items():
            if event not in SETTINGS_EVENTS:
                warn(f"{origin}: hooks.{event}: unknown event, ignored")
                continue
            for line in _matcher_warnings(origin, event, groups, mcp_prefixes):
                warn(line)
            merged.setdefault(event, []).extend(groups)

    def add_file(path: Path) -> None:
        doc = read_settings_doc(path)
        for line in ignored_keys(doc, str(path)):
            warn(line)
        add(str(path), parse_hooks(doc, str(path)))

    user = src.user_settings
    if user is not None and user.exists():
        add_file(user)

    project = src.workspace_settings
    if project is not None and project.exists():
        _add_project(project, workspace, src.config_dir, env, stdin_is_tty, add, warn)

    problems: list[str] = []
    for i, name in enumerate(inputs.settings):
        # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
        # internal error, exit 1); the shell's way is to keep the text as it is.
        path = Path(os.path.expanduser(name))
        if not path.is_absolute():
            path = workspace / path
        if not path.is_file():
            problems.append(f"settings[{i}]: no such file: {path}")
            continue
        try:
            add_file(path)
        except InputError as exc:
            problems.extend(f"settings[{i}]: {p}" for p in exc.problems)
    if problems:
        raise InputError(problems)

    if isinstance(inputs.hooks, dict):
        add("inputs", inputs.hooks)

    for i, name in enumerate(inputs.plugins):
        from .plugins import load_plugin  # only for the plugins the inputs name

        config = load_plugin(
            i,
            name,
            workspace=workspace,
            sources=src,
            environ=env,
            stdin_is_tty=stdin_is_tty,
            parse=parse_hooks,
            warn=warn,
        )
        add(f"plugins[{i}]", config)
    return merged


__all__ = ["Config", "load_settings_hooks", "parse_hooks"]
