"""Claude Code plugins' hooks (docs/hooks.md, "Plugins").

A plugin is a folder in Claude Code's layout: `.claude-plugin/plugin.json` (its `name`;
optional: without it the folder's name) and `hooks/hooks.json` (`{"hooks": {EVENT:
[groups]}}`, the settings shape). The inputs' `plugins` names the folders; their hooks are
added after every settings source's (sources.py), plugin by plugin in the order given.

In each command, `${CLAUDE_PLUGIN_ROOT}` / `$CLAUDE_PLUGIN_ROOT` become the plugin's
folder and `${CLAUDE_PLUGIN_DATA}` / `$CLAUDE_PLUGIN_DATA` its data folder, and both
variables are set in the command's environment. The data folder lasts across runs and is
outside the workspace: `CONFIG_DIR/plugins/data/NAME-HASH/` (HASH: of the plugin folder's
real path, so two plugins of one name keep apart), made when the plugin is loaded; a bare
run's is a new empty folder, removed when orkeon exits (config/sources.py). A
substituted path names the script, so a plugin's script inside the workspace is pinned by
content as any hook script (config/pins.py).

A plugin folder inside the workspace is used only once trusted (config/trust.py: a digest
of every file in it, recorded by `orkeon hooks trust`); an untrusted one is skipped with a
warning naming the fix (a bare run reads no trust records: there only
`ORKEON_TRUST_PROJECT_HOOKS=1` trusts it). A folder that is missing, lacks `hooks/hooks.json`, or whose
files are not JSON of the right shape is an InputError naming `plugins[I]` and the file.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...config.inputs import MatcherGroup, PluginRef
from ...config.sources import Sources
from ...config.trust import (
    PLUGIN_MANIFEST,
    TRUST_ENV,
    env_trusts,
    plugin_trusted,
    read_settings_doc,
)
from ...errors import InputError

PLUGIN_ROOT = "CLAUDE_PLUGIN_ROOT"
PLUGIN_DATA = "CLAUDE_PLUGIN_DATA"
HOOKS_FILE = Path("hooks") / "hooks.json"

Config = dict[str, list[MatcherGroup]]


def data_folder(data_root: Path, name: str, root: Path) -> Path:
    """The plugin's data folder in `data_root` (`Sources.plugin_data()`)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "-", name) or "plugin"
    tag = hashlib.sha256(os.path.realpath(root).encode("utf-8")).hexdigest()[:8]
    return data_root / f"{safe}-{tag}"


def substitute(text: str, values: Mapping[str, str]) -> str:
    for name, value in values.items():
        text = text.replace("${" + name + "}", value)
        # Escaped: a path's backslashes stay as they are in the replacement.
        text = re.sub(r"\$" + name + r"(?![A-Za-z0-9_])", value.replace("\\", "\\\\"), text)
    return text


def _name(root: Path, where: str) -> str:
    manifest = root / PLUGIN_MANIFEST
    if not manifest.exists():
        return root.name
    try:
        doc = read_settings_doc(manifest)
    except InputError as exc:
        raise InputError(f"{where}: {exc.problems[0]}") from None
    name = doc.get("name", root.name)
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{where}: {manifest}: name: must be a non-empty string")
    return name


def _with_plugin(groups: list[MatcherGroup], ref: PluginRef) -> list[MatcherGroup]:
    values = {PLUGIN_ROOT: ref.root, PLUGIN_DATA: ref.data}
    out = []
    for group in groups:
        hooks = []
        for h in group.hooks:
            if h.type == "command":
                h = h.model_copy(update={"command": substitute(h.command, values)})
            else:
                h = h.model_copy()
            h._plugin = ref
            hooks.append(h)
        out.append(group.model_copy(update={"hooks": hooks}))
    return out


def load_plugin(
    i: int,
    name: str,
    *,
    workspace: Path,
    sources: Sources,
    environ: Mapping[str, str],
    stdin_is_tty: bool | None,
    parse: Callable[[Mapping[str, Any], str], Config],
    warn: Callable[[str], None],
) -> Config:
    """The hooks of the inputs' `plugins[i]` (module docstring); {} when it is skipped."""
    path = Path(os.path.expanduser(name))
    root = (path if path.is_absolute() else workspace / path).resolve()
    where = f"plugins[{i}]"
    if not root.is_dir():
        raise InputError(f"{where}: no such folder: {root}")
    hooks_file = root / HOOKS_FILE
    if not hooks_file.is_file():
        raise InputError(f"{where}: {hooks_file}: no such file (a plugin's hooks live there)")
    try:
        doc = read_settings_doc(hooks_file)
    except InputError as exc:
        raise InputError(f"{where}: {exc.problems[0]}") from None
    config = {e: g for e, g in parse(doc, f"{where}: {hooks_file}").items()}
    plugin = _name(root, where)
    ws = Path(os.path.realpath(workspace))
    inside = root == ws or ws in root.parents
    if inside and not _trusted(ws, root, sources, environ, stdin_is_tty):
        warn(
            f"{where}: {root}: a plugin inside the workspace is not trusted and its hooks "
            f"were skipped; trust it as it is now with `orkeon hooks trust --workspace "
            f"{ws}`, or set {TRUST_ENV}=1 (honoured only when stdin is not a terminal)"
        )
        return {}
    data = data_folder(sources.plugin_data(), plugin, root)
    data.mkdir(parents=True, exist_ok=True)
    ref = PluginRef(name=plugin, root=str(root), data=str(data))
    return {event: _with_plugin(groups, ref) for event, groups in config.items()}


def _trusted(
    ws: Path, root: Path, sources: Sources, environ: Mapping[str, str], tty: bool | None
) -> bool:
    if not sources.trust_records:  # a bare run: only the variable trusts
        return env_trusts(environ, tty)
    return plugin_trusted(
        ws, root, config_dir=sources.config_dir, environ=environ, stdin_is_tty=tty
    )


__all__ = ["HOOKS_FILE", "PLUGIN_DATA", "PLUGIN_ROOT", "data_folder", "load_plugin", "substitute"]
