"""Trust of a workspace's `.orkeon/settings.json`, `.orkeon/crews/` and `.mcp.json` (seed
page "Security").

A project's settings ship inside a repository and could come from anyone, so its hooks
run, its `Orkeon` section widens what the model may run, and its MCP servers start, only
once trusted. Trust is bound to a hash of exactly that: the file's `hooks`, its `Orkeon`
section and its `mcpServers`. When any changes, the workspace is untrusted again until
`orkeon hooks trust` records the new hash. The workspace's `.mcp.json` (Claude Code's
project file of MCP servers) has a trust of its own, bound to its `mcpServers` the same way.

Headless runs cannot prompt. `ORKEON_TRUST_PROJECT_HOOKS=1` trusts the project for CI,
but only when stdin is not a TTY: a stray `export` in a shell rc file cannot silently open
the gate for an interactive session.

Recorded hashes live in `CONFIG_DIR/trusted.json` (`$ORKEON_CONFIG_DIR`, default
`~/.config/orkeon`), one entry per workspace real path.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..environ import config_dir
from ..errors import InputError

TRUST_ENV = "ORKEON_TRUST_PROJECT_HOOKS"
TRUST_FILE = "trusted.json"


default_config_dir = config_dir  # one definition, in environ.py


def project_settings_path(workspace: Path) -> Path:
    return Path(workspace) / ".orkeon" / "settings.json"


def read_settings_doc(path: Path) -> dict[str, Any]:
    """A settings file as a JSON object; InputError naming the file otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: must be a JSON object")
    return doc


def config_hash(project_settings_doc: Mapping[str, Any]) -> str:
    """SHA-256 over what trust covers: the `hooks` object, the `Orkeon` section and the
    `mcpServers` object.

    Canonical JSON (sorted keys, no spaces), so re-indenting the file keeps the trust and
    any change of a command, matcher, timeout, shell setting or server drops it. Other keys
    (a Claude Code file's `permissions`, say) do not change what orkeon runs and are left
    out. `mcpServers` is covered only when the file has it, so the hash of a file without
    servers, and the trust recorded for it, stay what they were before servers existed.
    """
    covered = {
        "hooks": project_settings_doc.get("hooks"),
        "Orkeon": {k: v for k, v in project_settings_doc.items() if k.lower() == "orkeon"},
    }
    if "mcpServers" in project_settings_doc:
        covered["mcpServers"] = project_settings_doc["mcpServers"]
    return _digest(covered)


def _digest(covered: Mapping[str, Any]) -> str:
    text = json.dumps(covered, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def workspace_key(workspace: Path) -> str:
    return os.path.realpath(workspace)


def read_store(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def env_trusts(environ: Mapping[str, str], stdin_is_tty: bool | None) -> bool:
    """`ORKEON_TRUST_PROJECT_HOOKS=1`, honoured only when stdin is not a TTY."""
    tty = _stdin_is_tty() if stdin_is_tty is None else stdin_is_tty
    return environ.get(TRUST_ENV) == "1" and not tty


def doc_is_trusted(
    workspace: Path,
    doc: Mapping[str, Any],
    *,
    config_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
) -> bool:
    """Whether this document (already read from the workspace's file) is trusted. Loading
    hooks uses this on the very document it then runs, so the file cannot change between
    the check and the use."""
    digest = config_hash(doc)
    return _trusted(workspace_key(workspace), digest, config_dir, environ, stdin_is_tty)


def _trusted(
    key: str,
    digest: str,
    config_dir: Path | None,
    environ: Mapping[str, str] | None,
    stdin_is_tty: bool | None,
) -> bool:
    """`ORKEON_TRUST_PROJECT_HOOKS=1` (stdin not a TTY), or `digest` recorded for `key`."""
    env = os.environ if environ is None else environ
    if env_trusts(env, stdin_is_tty):
        return True
    store = read_store((config_dir or default_config_dir(env)) / TRUST_FILE)
    return store.get(key) == digest


def is_trusted(
    workspace: Path,
    *,
    config_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
) -> bool:
    """The recorded hash matches the workspace's `.orkeon/settings.json` as it is now, or
    `ORKEON_TRUST_PROJECT_HOOKS=1` with stdin not a TTY. No file, or a file that is not a
    JSON object: not trusted (there is nothing to use)."""
    path = project_settings_path(workspace)
    if not path.is_file():
        return False
    try:
        doc = read_settings_doc(path)
    except InputError:
        return False
    return doc_is_trusted(
        workspace, doc, config_dir=config_dir, environ=environ, stdin_is_tty=stdin_is_tty
    )


def record_trust(workspace: Path, *, config_dir: Path | None = None) -> str:
    """Trust the workspace's `.orkeon/settings.json` as it is now (`orkeon hooks trust`).
    Returns the recorded hash. InputError when the file is missing or not a JSON object."""
    doc = read_settings_doc(project_settings_path(workspace))
    digest = config_hash(doc)
    store_put(workspace_key(workspace), digest, config_dir)
    return digest


# --- a workspace's own crews (.orkeon/crews/) ------------------------------------------
# A crew file sets a step's prompts, tools and rule sets: from a cloned repository it could
# widen what the model may do as much as a settings file could, so it needs the same trust.


def crews_dir(workspace: Path) -> Path:
    return Path(workspace) / ".orkeon" / "crews"


def crews_hash(workspace: Path) -> str | None:
    """SHA-256 over every file under `.orkeon/crews/` (path and bytes); None: no folder."""
    folder = crews_dir(workspace)
    if not folder.is_dir():
        return None
    return folder_hash(folder)


def folder_hash(folder: Path) -> str:
    """SHA-256 over every file under `folder`: its relative path and its bytes."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        h.update(path.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()


def crews_trusted(
    workspace: Path,
    *,
    config_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
) -> bool:
    env = os.environ if environ is None else environ
    if env_trusts(env, stdin_is_tty):
        return True
    digest = crews_hash(workspace)
    store = read_store((config_dir or default_config_dir(env)) / TRUST_FILE)
    return digest is not None and store.get(workspace_key(workspace) + "::crews") == digest


def record_crews_trust(workspace: Path, *, config_dir: Path | None = None) -> str:
    """Trust the workspace's `.orkeon/crews/` as it is now. InputError when it is missing."""
    digest = crews_hash(workspace)
    if digest is None:
        raise InputError(f"{crews_dir(workspace)}: no such folder")
    store_put(workspace_key(workspace) + "::crews", digest, config_dir)
    return digest


# --- a workspace's review checks (.orkeon/checks/*.md) ------------------------------------
# A check's instructions steer what a review reports and whether the job passes: from a
# cloned repository (a pull request may change them) they count only once trusted.


def checks_dir(workspace: Path) -> Path:
    return Path(workspace) / ".orkeon" / "checks"


def checks_hash(workspace: Path) -> str | None:
    """SHA-256 over every `*.md` file in `.orkeon/checks/` (name and bytes); None: none."""
    folder = checks_dir(workspace)
    files = sorted(p for p in folder.glob("*.md") if p.is_file()) if folder.is_dir() else []
    if not files:
        return None
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()


def checks_trusted(
    workspace: Path,
    *,
    config_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
) -> bool:
    """The check files as they are now were trusted (`orkeon hooks trust`), or
    `ORKEON_TRUST_PROJECT_HOOKS=1` with stdin not a TTY."""
    digest = checks_hash(workspace)
    if digest is None:
        return False
    key = workspace_key(workspace) + "::checks"
    return _trusted(key, digest, config_dir, environ, stdin_is_tty)


def record_checks_trust(workspace: Path, *, config_dir: Path | None = None) -> str:
    """Trust the workspace's `.orkeon/checks/*.md` as they are now. InputError: none."""
    digest = checks_hash(workspace)
    if digest is None:
        raise InputError(f"{checks_dir(workspace)}: no check file (*.md)")
    store_put(workspace_key(workspace) + "::checks", digest, config_dir)
    return digest


# --- a workspace's .mcp.json ---------------------------------------------------------------
# Claude Code's project file of MCP servers: each server is a program orkeon would start,
# with the run's environment, so a cloned repository's file starts nothing until trusted.


def mcp_json_path(workspace: Path) -> Path:
    return Path(workspace) / ".mcp.json"


def _mcp_key(workspace: Path) -> str:
    """The trust store's key for a workspace's `.mcp.json` (its settings' key is the path)."""
    return workspace_key(workspace) + "::mcp"


def mcp_json_hash(doc: Mapping[str, Any]) -> str:
    """SHA-256 over the file's `mcpServers` (canonical JSON, as `config_hash`)."""
    return _digest({"mcpServers": doc.get("mcpServers")})


def mcp_json_trusted(
    workspace: Path,
    doc: Mapping[str, Any],
    *,
    config_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
) -> bool:
    """Whether this document (already read from the workspace's `.mcp.json`) is trusted:
    its recorded hash matches, or `ORKEON_TRUST_PROJECT_HOOKS=1` with stdin not a TTY."""
    digest = mcp_json_hash(doc)
    return _trusted(_mcp_key(workspace), digest, config_dir, environ, stdin_is_tty)


def record_mcp_json_trust(workspace: Path, *, config_dir: Path | None = None) -> str:
    """Trust the workspace's `.mcp.json` as it is now. InputError when it is missing or not
    a JSON object."""
    digest = mcp_json_hash(read_settings_doc(mcp_json_path(workspace)))
    store_put(_mcp_key(workspace), digest, config_dir)
    return digest


# --- a Claude Code plugin inside the workspace ---------------------------------------------
# A plugin folder the inputs name but the workspace holds (a cloned repository's) runs its
# hooks' scripts: trusted as a folder, every file of it covered (path and bytes).

PLUGIN_MANIFEST = Path(".claude-plugin") / "plugin.json"


def _plugin_key(workspace: Path, plugin: Path) -> str:
    return workspace_key(workspace) + "::plugin:" + os.path.realpath(plugin)


def plugin_trusted(
    workspace: Path,
    plugin: Path,
    *,
    config_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
) -> bool:
    """Whether the plugin folder, as it is now, is trusted for this workspace (or
    `ORKEON_TRUST_PROJECT_HOOKS=1` with stdin not a TTY)."""
    return _trusted(
        _plugin_key(workspace, plugin), folder_hash(plugin), config_dir, environ, stdin_is_tty
    )


def workspace_plugins(workspace: Path) -> list[Path]:
    """The plugin folders of a workspace `orkeon hooks trust` records: the workspace itself
    and folders one or two levels down that hold `.claude-plugin/plugin.json`."""
    ws = Path(workspace)
    found = [ws] if (ws / PLUGIN_MANIFEST).is_file() else []
    for pattern in ("*/.claude-plugin/plugin.json", "*/*/.claude-plugin/plugin.json"):
        found += sorted(p.parent.parent for p in ws.glob(pattern))
    return [p for p in found if ".git" not in p.relative_to(ws).parts]


def record_plugin_trust(workspace: Path, plugin: Path, *, config_dir: Path | None = None) -> str:
    """Trust the plugin folder (inside the workspace) as it is now."""
    digest = folder_hash(plugin)
    store_put(_plugin_key(workspace, plugin), digest, config_dir)
    return digest


def store_put(key: str, digest: str, config_dir: Path | None) -> None:
    folder = config_dir or default_config_dir()
    folder.mkdir(parents=True, exist_ok=True)
    store_path = folder / TRUST_FILE
    store = read_store(store_path)
    store[key] = digest
    fd, tmp = tempfile.mkstemp(prefix=".trusted.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(store, f, indent=2, sort_keys=True)
            f.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, store_path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = [
    "TRUST_ENV",
    "checks_dir",
    "checks_hash",
    "checks_trusted",
    "config_hash",
    "crews_hash",
    "crews_trusted",
    "default_config_dir",
    "doc_is_trusted",
    "env_trusts",
    "folder_hash",
    "is_trusted",
    "mcp_json_hash",
    "mcp_json_path",
    "mcp_json_trusted",
    "plugin_trusted",
    "project_settings_path",
    "read_settings_doc",
    "read_store",
    "record_checks_trust",
    "record_crews_trust",
    "record_mcp_json_trust",
    "record_plugin_trust",
    "record_trust",
    "store_put",
    "workspace_key",
    "workspace_plugins",
]
