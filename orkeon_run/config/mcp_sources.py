"""Where a run's MCP servers come from, and which one counts (docs/tools.md, "Where servers
come from").

Sources, in this order; a server of a later source replaces one of the same name from an
earlier source whole, keys are never merged (half of one server's settings and half of
another's would start a program nobody wrote down):

1. the user file, `$ORKEON_CONFIG_DIR/settings.json` (default `~/.config/orkeon/`);
2. the workspace's `.orkeon/settings.json`, only when trusted (`trust.py`: its hash covers
   `mcpServers`);
3. the workspace's `.mcp.json` (Claude Code's project file), only when trusted (a hash of
   its own, recorded by `orkeon hooks trust`);
4. each file named in the `settings` input, in order (a `.mcp.json` or a settings file:
   the caller named it, so it is trusted);
5. the `mcp_servers` input.

A bare run reads only 4 and 5 (config/sources.py).

Only a file's `mcpServers` key is read. An untrusted workspace file starts nothing and is
not checked: a warning names the servers it would have started. A file that is used and
has a bad `mcpServers` is an InputError naming the file and the field. The hooks of the
same files are read by `hooks/claude/sources.py`, in the same order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError
from .inputs import Inputs
from .mcp import McpServer, name_problems, servers_from_settings
from .sources import Sources, run_sources
from .trust import (
    TRUST_ENV,
    doc_is_trusted,
    env_trusts,
    mcp_json_trusted,
    read_settings_doc,
)


def load_servers(
    inputs: Inputs,
    *,
    workspace: Path,
    config_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
    warn: Callable[[str], None],
    sources: Sources | None = None,
) -> dict[str, McpServer]:
    """Every MCP server of the run, by name, in the order first named (module docstring),
    from the files `sources` reads (default a normal run's: config/sources.py)."""
    env = os.environ if environ is None else environ
    src = sources or run_sources(workspace, env, config_dir=config_dir)
    folder = src.config_dir
    merged: dict[str, McpServer] = {}

    def add(servers: Mapping[str, McpServer]) -> None:
        merged.update(servers)

    user = src.user_settings
    if user is not None and user.exists():
        add(servers_from_settings(read_settings_doc(user), str(user)))

    def trusted_settings(doc: Mapping[str, Any]) -> bool:
        return doc_is_trusted(
            workspace, doc, config_dir=folder, environ=env, stdin_is_tty=stdin_is_tty
        )

    def trusted_mcp_json(doc: Mapping[str, Any]) -> bool:
        return mcp_json_trusted(
            workspace, doc, config_dir=folder, environ=env, stdin_is_tty=stdin_is_tty
        )

    for path, trusted in (
        (src.workspace_settings, trusted_settings),
        (src.mcp_json, trusted_mcp_json),
    ):
        if path is not None and path.exists():
            add(_workspace_file(path, workspace, trusted, env, stdin_is_tty, warn))

    problems: list[str] = []
    for i, name in enumerate(inputs.settings):
        # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user.
        path = Path(os.path.expanduser(name))
        if not path.is_absolute():
            path = workspace / path
        if not path.is_file():
            continue  # hooks/claude/sources.py reports it, once
        try:
            add(servers_from_settings(read_settings_doc(path), str(path)))
        except InputError as exc:
            problems.extend(f"settings[{i}]: {p}" for p in exc.problems)
    if problems:
        raise InputError(problems)

    add(inputs.mcp_servers)
    clashes = name_problems(merged)
    if clashes:
        raise InputError([f"MCP servers: {p}" for p in clashes])
    return merged


def _workspace_file(
    path: Path,
    workspace: Path,
    trusted: Callable[[Mapping[str, Any]], bool],
    env: Mapping[str, str],
    stdin_is_tty: bool | None,
    warn: Callable[[str], None],
) -> dict[str, McpServer]:
    """The servers of a workspace's own file: used, and so checked, only when trusted. A
    file that does not parse is an error only when the environment variable asks to trust
    it as it is (`hooks/claude/sources.py` warns about it otherwise)."""
    try:
        doc = read_settings_doc(path)
    except InputError:
        if env_trusts(env, stdin_is_tty):
            raise
        return {}
    raw = doc.get("mcpServers")
    if not raw:
        return {}
    if trusted(doc):
        return servers_from_settings(doc, str(path))
    names = ", ".join(map(str, raw)) if isinstance(raw, dict) else "(not an object)"
    warn(
        f"{path}: the workspace's MCP servers are not trusted and were not started "
        f"({names}); trust them as they are now with `orkeon hooks trust --workspace "
        f"{workspace}`, or set {TRUST_ENV}=1 (honoured only when stdin is not a terminal)"
    )
    return {}


def untrusted_servers(
    workspace: Path,
    *,
    config_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
    sources: Sources | None = None,
) -> dict[str, Path]:
    """Server name -> the workspace file that has it but is not trusted (never, or changed
    since): for the error of a crew that names such a server (run/mcp_checks.py). None of
    a file `sources` does not read."""
    env = os.environ if environ is None else environ
    src = sources or run_sources(workspace, env, config_dir=config_dir)
    folder = src.config_dir
    out: dict[str, Path] = {}
    checks = ((src.workspace_settings, doc_is_trusted), (src.mcp_json, mcp_json_trusted))
    for path, trusted in checks:
        if path is None or not path.is_file():
            continue
        try:
            doc = read_settings_doc(path)
        except InputError:
            continue
        raw = doc.get("mcpServers")
        if not isinstance(raw, dict) or not raw:
            continue
        if not trusted(workspace, doc, config_dir=folder, environ=env, stdin_is_tty=stdin_is_tty):
            out.update(dict.fromkeys(map(str, raw), path))
    return out


__all__ = ["load_servers", "untrusted_servers"]
