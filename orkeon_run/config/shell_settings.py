"""Where the shell tool's two program-rule settings come from (the rules themselves are
`programs.ShellRules`; docs/inputs.md, "Where the two settings come from").

The settings, highest precedence first:
  1. `--inputs` `shell` fields that are given (not None);
  2. environment: `Orkeon__Tools__Shell__AllowInterpreters=true`,
     `Orkeon__Tools__Shell__ExtraAllowedCommands='["bash"]'` (or, .NET style,
     `Orkeon__Tools__Shell__ExtraAllowedCommands__0=bash`, `__1=...`);
  3. the workspace's `.orkeon/settings.json`, only when the workspace is trusted (a cloned
     repository must not widen what the model may run);
  4. the user's `$ORKEON_CONFIG_DIR/settings.json` (default `~/.config/orkeon/`).
A bare run reads neither file (config/sources.py).
In the files the keys nest: `{"Orkeon": {"Tools": {"Shell": {"AllowInterpreters": true}}}}`.
Key names match case-insensitively, as in .NET configuration; other keys are ignored.

pydantic-settings (imported only when settings are resolved, to keep this module cheap)
merges the sources in that order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..environ import config_dir
from ..errors import InputError
from ..policy.programs import ShellRules
from .layered import layered_base
from .sources import Sources, run_sources
from .trust import read_settings_doc

if TYPE_CHECKING:
    from .inputs import ShellInputs

__all__ = ["ShellRules", "resolve_shell_rules", "user_config_dir"]

SECTION = ("Orkeon", "Tools", "Shell")
KEYS = {"allowinterpreters": "AllowInterpreters", "extraallowedcommands": "ExtraAllowedCommands"}
ENV_PREFIX = "orkeon__tools__shell__"


user_config_dir = config_dir  # one definition, in environ.py


def resolve_shell_rules(
    inputs_shell: ShellInputs,
    *,
    workspace: Path,
    workspace_trusted: bool,
    environ: Mapping[str, str] | None = None,
    config_dir: Path | None = None,
    sources: Sources | None = None,
) -> ShellRules:
    """The step's ShellRules from --inputs, the environment and the two settings files
    (those `sources` reads: default a normal run's, config/sources.py). A bad value raises
    InputError naming where it came from (file and key, or variable); a missing file is
    fine."""
    env = os.environ if environ is None else environ
    src = sources or run_sources(workspace, env, config_dir=config_dir)
    user_file = src.user_settings
    ws_file = src.workspace_settings if workspace_trusted else None

    given: dict[str, Any] = {}
    if inputs_shell.allow_interpreters is not None:
        given["AllowInterpreters"] = inputs_shell.allow_interpreters
    if inputs_shell.extra_allowed_commands is not None:
        given["ExtraAllowedCommands"] = tuple(inputs_shell.extra_allowed_commands)

    if not _anything_to_read(env, user_file, ws_file):
        # The common case: no Orkeon__ variable and no settings file. pydantic-settings
        # costs ~40 ms to import, and there is nothing for it to merge.
        return ShellRules(
            allow_interpreters=bool(inputs_shell.allow_interpreters),
            extra_allowed_commands=tuple(inputs_shell.extra_allowed_commands or ()),
        )
    settings_cls = _settings_class()
    merged = settings_cls(
        _env=env,
        _user_file=user_file,
        _ws_file=ws_file,
        **({"Orkeon": {"Tools": {"Shell": given}}} if given else {}),
    )
    shell = merged.Orkeon.Tools.Shell
    return ShellRules(
        allow_interpreters=shell.AllowInterpreters,
        extra_allowed_commands=tuple(shell.ExtraAllowedCommands),
    )


def _anything_to_read(env: Mapping[str, str], *files: Path | None) -> bool:
    if any(name.lower().startswith("orkeon__") for name in env):
        return True
    return any(f is not None and f.exists() for f in files)


def _child(node: Mapping[str, Any], name: str) -> Any:
    for key, value in node.items():
        if key.lower() == name.lower():
            return value
    return None


def _file_values(path: Path) -> dict[str, Any]:
    """The Shell section of one settings file, keys made canonical; {} when it is missing."""
    if not path.exists():
        return {}
    node: Any = read_settings_doc(path)
    trail: list[str] = []
    for name in SECTION:
        if not isinstance(node, Mapping):
            where = ":".join(trail) or "the document"
            raise InputError(f"{path}: {where}: must be an object")
        node = _child(node, name)
        trail.append(name)
        if node is None:
            return {}
    if not isinstance(node, Mapping):
        raise InputError(f"{path}: {':'.join(SECTION)}: must be an object")
    return {KEYS[k.lower()]: v for k, v in node.items() if k.lower() in KEYS}


def _env_values(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The Shell settings in the environment, with the variable each came from."""
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    indexed: dict[int, str] = {}
    indexed_var = ""
    for var, raw in environ.items():
        low = var.lower()
        if not low.startswith(ENV_PREFIX) or raw == "":
            continue
        rest = low[len(ENV_PREFIX) :]
        if rest == "allowinterpreters":
            values["AllowInterpreters"] = raw
            origin["AllowInterpreters"] = var
        elif rest == "extraallowedcommands":
            try:
                values["ExtraAllowedCommands"] = json.loads(raw)
            except json.JSONDecodeError:
                raise InputError(
                    f"environment variable {var}: must be a JSON list of program names, "
                    f'like ["bash"]'
                ) from None
            origin["ExtraAllowedCommands"] = var
        elif rest.startswith("extraallowedcommands__") and rest[22:].isdigit():
            indexed[int(rest[22:])] = raw
            indexed_var = var
    if indexed and "ExtraAllowedCommands" not in values:
        values["ExtraAllowedCommands"] = [indexed[i] for i in sorted(indexed)]
        origin["ExtraAllowedCommands"] = indexed_var
    return values, origin


@cache
def _settings_class() -> Any:
    """Built on first use so that importing this module does not import pydantic-settings."""
    # Nor pydantic: the shell's settings module is imported where no model is built yet.
    from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
    from pydantic_settings import SettingsConfigDict

    class ShellSection(BaseModel):
        model_config = ConfigDict(extra="ignore", frozen=True)
        AllowInterpreters: bool = False
        ExtraAllowedCommands: tuple[str, ...] = ()

        @field_validator("ExtraAllowedCommands")
        @classmethod
        def _names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
            if any(not name.strip() for name in v):
                raise ValueError("a program name is empty")
            return v

    class ToolsSection(BaseModel):
        model_config = ConfigDict(extra="ignore", frozen=True)
        Shell: ShellSection = Field(default_factory=ShellSection)

    class OrkeonSection(BaseModel):
        model_config = ConfigDict(extra="ignore", frozen=True)
        Tools: ToolsSection = Field(default_factory=ToolsSection)

    def checked(values: dict[str, Any], where: Mapping[str, str]) -> dict[str, Any]:
        """Validate each value alone, so an error names the one file/variable it came from."""
        for key, value in values.items():
            try:
                ShellSection.model_validate({key: value})
            except ValidationError as exc:
                msg = exc.errors()[0]["msg"]
                raise InputError(f"{where[key]}: {msg}") from None
        return {"Orkeon": {"Tools": {"Shell": values}}} if values else {}

    def file_source(path: Path | None) -> Any:
        def load() -> dict[str, Any]:
            if path is None:
                return {}
            values = _file_values(path)
            return checked(values, {k: f"{path}: {':'.join((*SECTION, k))}" for k in values})

        return load

    def env_source(environ: Mapping[str, str]) -> Any:
        def load() -> dict[str, Any]:
            values, origin = _env_values(environ)
            return checked(values, {k: f"environment variable {v}" for k, v in origin.items()})

        return load

    class Settings(layered_base()):  # type: ignore[misc]
        model_config = SettingsConfigDict(extra="ignore", frozen=True)
        Orkeon: OrkeonSection = Field(default_factory=OrkeonSection)

    def build(
        *, _env: Mapping[str, str], _user_file: Path | None, _ws_file: Path | None, **given: Any
    ) -> Any:
        # Highest precedence first: `given` (--inputs), the environment, the workspace's
        # file, the user's.
        loaders = (env_source(_env), file_source(_ws_file), file_source(_user_file))
        return Settings(_loaders=loaders, **given)

    return build
