"""Settings-shape hooks in the inputs and settings files (docs/hooks.md, "Configuration"
and "Handler types"): event name -> matcher groups -> handlers, each a `command`, `http` or
`prompt` handler. Claude Code's `agent` and `mcp_tool` types and its `asyncRewake` key are
refused with the reason."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
)

from .defaults import empty_list


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PluginRef(_Frozen):
    """The plugin a hook came from (sources.py): its name, folder and data folder."""

    name: str
    root: str
    data: str


class _Handler(_Frozen):
    """What every settings-shape hook handler has (docs/hooks.md, "Handler types")."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    timeout: float | None = Field(default=None, gt=0, strict=True)
    # Runs at most once per session (role), then is skipped.
    once: bool = Field(default=False, strict=True)
    # Set on a plugin's hooks when they are loaded (sources.py): the plugin's folder, name
    # and data folder; never read from a settings document.
    _plugin: PluginRef | None = PrivateAttr(default=None)

    @property
    def plugin(self) -> PluginRef | None:
        return self._plugin


class SettingsCommand(_Handler):
    type: Literal["command"]
    command: str = Field(min_length=1)
    background: bool = Field(default=False, alias="async", strict=True)

    @property
    def label(self) -> str:
        return self.command


def _http_url(v: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(v)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an http:// or https:// URL")
    return v


class SettingsHttp(_Handler):
    """POST the hook's JSON to `url`; `headers` values may name the variables listed in
    `allowedEnvVars` as `$NAME` or `${NAME}` (handlers.py)."""

    type: Literal["http"]
    url: Annotated[str, AfterValidator(_http_url)] = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    allowedEnvVars: list[str] = Field(default_factory=empty_list)
    background: bool = Field(default=False, alias="async", strict=True)

    @property
    def label(self) -> str:
        return f"POST {self.url}"


class SettingsPrompt(_Handler):
    """`prompt` (with `$ARGUMENTS` standing for the hook's JSON) asked of a model, which
    answers `{"ok": bool, "reason": "..."}` (handlers.py)."""

    type: Literal["prompt"]
    prompt: str = Field(min_length=1)
    model: str | None = Field(default=None, min_length=1)

    @property
    def label(self) -> str:
        first = self.prompt.strip().splitlines()[0] if self.prompt.strip() else ""
        return f"prompt: {first[:60]}"


# The union's tags are the classes' names, which error paths skip (errorlines.py).
HANDLER_TAGS = {"command": "SettingsCommand", "http": "SettingsHttp", "prompt": "SettingsPrompt"}


def _handler_tag(v: Any) -> str | None:
    kind = v.get("type") if isinstance(v, dict) else getattr(v, "type", None)
    return HANDLER_TAGS.get(kind) if isinstance(kind, str) else None


SettingsHandler = Annotated[
    Annotated[SettingsCommand, Tag("SettingsCommand")]
    | Annotated[SettingsHttp, Tag("SettingsHttp")]
    | Annotated[SettingsPrompt, Tag("SettingsPrompt")],
    Discriminator(_handler_tag),
]

HANDLER_TYPES = tuple(HANDLER_TAGS)
# Claude Code's handler types and keys orkeon refuses, and why (docs/hooks.md).
NOT_SUPPORTED = {
    "agent": "an agent handler is a second agent loop with tools of its own inside a hook; "
    "a headless run has no sound meaning for it: use a `prompt` handler or a `command`",
    "mcp_tool": "call the MCP tool from a `command` hook, or give the role the tool",
}
NOT_SUPPORTED_KEYS = {
    "asyncRewake": "an async hook never wakes the model in orkeon: its answer is recorded "
    "and never changes a decision",
}


def _handler_refusals(raw: Any) -> Any:
    """An unsupported `type` or key, named with why, before the union reports a tag."""
    if isinstance(raw, list):
        for i, h in enumerate(raw):
            if not isinstance(h, dict):
                continue
            kind = h.get("type")
            if isinstance(kind, str) and kind in NOT_SUPPORTED:
                raise ValueError(f"[{i}].type: {kind!r} is not supported: {NOT_SUPPORTED[kind]}")
            if kind is None:
                raise ValueError(f"[{i}].type: Field required")
            if not isinstance(kind, str) or kind not in HANDLER_TYPES:
                raise ValueError(
                    f"[{i}].type: {kind!r} is not a handler type (command, http, prompt)"
                )
            for key, why in NOT_SUPPORTED_KEYS.items():
                if key in h:
                    raise ValueError(f"[{i}].{key}: not supported: {why}")
            if h.get("type") == "prompt" and h.get("async"):
                raise ValueError(f"[{i}].async: a prompt hook decides; it cannot run async")
    return raw


class MatcherGroup(_Frozen):
    matcher: str | None = None
    hooks: Annotated[list[SettingsHandler], BeforeValidator(_handler_refusals)] = Field(
        default_factory=empty_list
    )


SETTINGS_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Notification",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
    "StopFailure",
    "PermissionDenied",
    "PostToolUseFailure",
)

# Settings shape: event name -> matcher groups. Unknown event names are kept here and
# ignored with a warning when the hooks are built (the page: "Unknown names are ignored").
SettingsHooks = dict[str, list[MatcherGroup]]
