"""MCP servers as configured: the `mcp_servers` input and the `mcpServers` object of a
Claude Code `.mcp.json` or settings file, read into the same frozen models.

SERVER is Claude Code's shape:

- stdio: `{"command": "PROGRAM", "args": [...], "env": {...}}` (`"type": "stdio"` optional),
  or `{"command": [PROGRAM, ARG...]}`; `args`, when also given, follow the list.
- streamable HTTP: `{"type": "http", "url": URL, "headers": {...}}` (`type` optional when
  `url` is given).

orkeon's own keys, stdio only: `sandbox` (`"auto"`, the default: the server runs in the
calling role's sandbox; `"off"`: unconfined, as before, recorded in the result) and
`network` (default `false`: a confined server has no network) (docs/tools.md, "How
servers run").

Unknown keys are errors, as everywhere in the inputs: an option orkeon does not honour is
never silently dropped. `${VAR}` and `${VAR:-default}` in `command`, `args`, `env` values,
`url` and `headers` values are expanded as Claude Code expands them, from orkeon's own
environment, when the server starts (`expand`): the models keep the text as written, so
the inputs saved in a run directory never hold a secret the expansion brought in.

The run directory's `inputs.json` keeps an `env` or `headers` value only when it names a
variable (`${VAR}`); any other is saved as `[redacted]` (`REDACTED`), and a resumed or
repaired run that would start a server with it is an input error (`redacted_problems`).

This module imports only pydantic, so the inputs can use its models without loading the
MCP SDK.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import InputError
from ..policy.mcpnames import normalize, server_name_problem
from .defaults import empty_list
from .errorlines import error_lines
from .network import Network

Transport = Literal["stdio", "http"]


class McpServer(BaseModel):
    """An MCP server in Claude Code's shape: `command` (with `args`, `env`) for a stdio
    server, `url` (with `headers`) for a streamable-HTTP one (docs/tools.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Transport | None = None
    command: str | list[str] | None = None
    args: list[str] = Field(default_factory=empty_list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    # The server's tools commit, reset, check out or make branches: refused in a batch
    # unless the gate allows them (policy/mcpgit.py; `mcp-server-git` is known by its
    # command without it).
    git: bool = Field(default=False, strict=True)
    # orkeon's own key (Claude Code has none): what a stdio server run in a sandbox may
    # reach, as `shell.network` (config/network.py): false (none, the default), true, or
    # an allow-list.
    network: Network = False
    sandbox: Literal["auto", "off"] = "auto"

    @field_validator("sandbox", mode="before")
    @classmethod
    def _sandbox_value(cls, v: Any) -> Any:
        if v not in ("auto", "off"):
            raise ValueError('must be "auto" (in the role\'s sandbox) or "off" (unconfined)')
        return v

    @field_validator("type", mode="before")
    @classmethod
    def _known_type(cls, v: Any) -> Any:
        if v == "sse":
            raise ValueError(
                '"sse" (the old HTTP+SSE transport) is not supported; use "http" (streamable HTTP)'
            )
        if v is not None and v not in ("stdio", "http"):
            raise ValueError('must be "stdio" or "http"')
        return v

    @field_validator("command", mode="before")
    @classmethod
    def _program(cls, v: Any) -> Any:
        if isinstance(v, str):
            if not v:
                raise ValueError("is empty")
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            if not v or not v[0]:
                raise ValueError("an argv list needs a program")
        elif v is not None:
            raise ValueError("must be a program (a string) or an argv list of strings")
        return v

    @field_validator("command", "args")
    @classmethod
    def _no_nul(cls, v: str | list[str] | None) -> str | list[str] | None:
        if v is not None and any("\x00" in x for x in ([v] if isinstance(v, str) else v)):
            raise ValueError("a NUL character cannot be passed to a program")
        return v

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        for name, value in v.items():
            if not name or "=" in name or "\x00" in name:
                raise ValueError(f"{name!r} is not a variable name")
            if "\x00" in value:
                raise ValueError(f"{name}: a NUL character cannot be passed to a program")
        return v

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        given = self.model_fields_set
        if self.command is not None and self.url is not None:
            raise ValueError('give "command" (a stdio server) or "url" (an http server), not both')
        if self.command is None and self.url is None:
            raise ValueError('needs "command" (a stdio server) or "url" (an http server)')
        if self.url is not None:
            if self.type == "stdio":
                raise ValueError('"type": "stdio" needs "command", not "url"')
            extra = sorted(given & {"args", "env", "sandbox", "network"})
            if extra:
                raise ValueError(f'"{extra[0]}" is for a stdio server ("command"), not "url"')
            problem = url_problem(self.url)
            if problem and "${" not in self.url:
                raise ValueError(f"url: {problem}")
        else:
            if self.type == "http":
                raise ValueError('"type": "http" needs "url", not "command"')
            if "headers" in given:
                raise ValueError('"headers" is for an http server ("url"), not "command"')
        return self

    @property
    def transport(self) -> Transport:
        return "http" if self.url is not None else "stdio"

    @property
    def argv(self) -> list[str]:
        """The program and its arguments (stdio); [] for an http server."""
        if self.command is None:
            return []
        head = [self.command] if isinstance(self.command, str) else list(self.command)
        return head + list(self.args)

    def describe(self) -> str:
        """One line for `validate` and `hooks list`: `stdio: git-mcp --repo .`, `http: URL`.
        Header and env values, and the URL's query and user info, are left out: they often
        hold credentials."""
        if self.url is not None:
            return f"http: {shown_url(self.url)}"

        return "stdio: " + shlex.join(self.argv)


def shown_url(url: str) -> str:
    """`url` without user info and query: what may be printed and recorded."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "(a URL that does not parse)"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if port is not None:
        host = f"{host}:{port}"
    query = "…" if parts.query else ""
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def url_problem(url: str) -> str | None:
    """Why `url` cannot reach a streamable-HTTP server, or None."""
    m = re.match(r"^(https?)://([^/?#]+)", url)
    if m is None:
        return f"{url!r} must start with http:// or https:// and name a host"
    return None


def name_problems(names: Iterable[str]) -> list[str]:
    """Why these names cannot name the servers of one run: a name that gives `__` in tool
    names, two names that give the same tool names."""
    names = list(names)
    problems = [p for p in map(server_name_problem, names) if p]
    seen: dict[str, str] = {}
    for name in names:
        shown = normalize(name)
        if shown in seen:
            problems.append(
                f"servers {seen[shown]!r} and {name!r} both give tool names mcp__{shown}__…; "
                "rename one"
            )
        seen.setdefault(shown, name)
    return problems


def _check_names(servers: dict[str, McpServer]) -> dict[str, McpServer]:
    problems = name_problems(servers)
    if problems:
        raise ValueError("; ".join(problems))
    return servers


# The type of the `mcp_servers` input: server name -> server.
McpServers = Annotated[dict[str, McpServer], AfterValidator(_check_names)]


@cache
def _servers() -> TypeAdapter[dict[str, McpServer]]:
    # Built on first use, not at import: every run imports this module for the inputs'
    # models, and the adapter's own schema (0.5 ms) serves only a run with `mcp_servers`
    # or a `.mcp.json` (docs/performance.md, "Start-up, fourth pass").
    return TypeAdapter(McpServers)


def parse_servers(doc: Any, prefix: str = "mcp_servers") -> dict[str, McpServer]:
    """The `mcp_servers` input (an object of server name -> SERVER). InputError with one
    line per problem, each naming the field: `mcp_servers.git.command: is empty`."""
    try:
        return _servers().validate_python(doc)
    except ValidationError as exc:
        raise InputError(error_lines(exc, prefix=prefix, schema=_servers().json_schema)) from None


def servers_from_settings(doc: Mapping[str, Any], origin: str) -> dict[str, McpServer]:
    """The `mcpServers` object of a Claude Code `.mcp.json` or settings document (parsed
    JSON); {} when it has none. Every line of an InputError starts with `origin`."""
    raw = doc.get("mcpServers", {})
    if not isinstance(raw, dict):
        raise InputError(f"{origin}: mcpServers: must be an object of server names")
    try:
        return parse_servers(raw, prefix="mcpServers")
    except InputError as exc:
        raise InputError([f"{origin}: {p}" for p in exc.problems]) from None


# --- ${VAR} expansion ---------------------------------------------------------------

_VAR = re.compile(r"\$\{([^}]+)\}")

# What the run directory's inputs.json holds in place of a secret (run/rundir.py).
REDACTED = "[redacted]"


def has_variable(text: str) -> bool:
    """`text` names a variable (`${VAR}`): the saved inputs keep such an env or header
    value, since the secret is in the environment, not in the text."""
    return _VAR.search(text) is not None


def redacted_problems(servers: Mapping[str, McpServer], prefix: str = "mcp_servers") -> list[str]:
    """One line per `env` or `headers` value that holds `[redacted]`: inputs taken back
    from a run directory (`--resume`, a repair) where the value was written out."""
    problems = []
    for name, server in servers.items():
        for key, values in (("env", server.env), ("headers", server.headers)):
            for var, value in values.items():
                if REDACTED in value:
                    problems.append(
                        f"{prefix}.{name}.{key}.{var}: the saved inputs hold {REDACTED} here "
                        "(the value was written out, not as ${VAR}); give mcp_servers again "
                        "in --inputs"
                    )
    return problems


def _expand(text: str, environ: Mapping[str, str], missing: list[str]) -> str:
    """Claude Code's rule: `${NAME}` is NAME's value (an empty value counts as set),
    `${NAME:-default}` falls back to the default when NAME is unset; an unset NAME with no
    default is left as written and reported."""

    def one(m: re.Match[str]) -> str:
        name, sep, default = m.group(1).partition(":-")
        value = environ.get(name)
        if value is not None:
            return value
        if sep:
            return default
        missing.append(name)
        return m.group(0)

    return _VAR.sub(one, text)


def expand(server: McpServer, environ: Mapping[str, str]) -> tuple[McpServer, list[str]]:
    """`server` with `${VAR}` expanded from `environ`, and one line per variable that is
    not set (`env.TOKEN: ${TOKEN} is not set`); a server with such a line must not start."""
    problems: list[str] = []

    def text(where: str, value: str) -> str:
        missing: list[str] = []
        out = _expand(value, environ, missing)
        problems.extend(f"{where}: ${{{name}}} is not set" for name in missing)
        return out

    update: dict[str, Any] = {}
    if isinstance(server.command, str):
        update["command"] = text("command", server.command)
    elif server.command is not None:
        update["command"] = [text(f"command[{i}]", a) for i, a in enumerate(server.command)]
    update["args"] = [text(f"args[{i}]", a) for i, a in enumerate(server.args)]
    update["env"] = {k: text(f"env.{k}", v) for k, v in server.env.items()}
    if server.url is not None:
        update["url"] = text("url", server.url)
        problem = url_problem(update["url"])
        if problem and not problems:
            problems.append(f"url: {problem}")
    update["headers"] = {k: text(f"headers.{k}", v) for k, v in server.headers.items()}
    return server.model_copy(update=update), problems


__all__ = [
    "REDACTED",
    "McpServer",
    "McpServers",
    "Transport",
    "expand",
    "has_variable",
    "name_problems",
    "parse_servers",
    "redacted_problems",
    "servers_from_settings",
    "shown_url",
    "url_problem",
]
