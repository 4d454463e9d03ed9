"""What a run's configuration makes orkeon's own (docs/security.md, "What orkeon keeps for
itself"), beyond the variables `environ.py` knows by name:

- the variables the configuration names as `${VAR}` in an MCP server's `env`, `headers`
  or `url`, and the model's key variable: kept from every program the run starts (the
  server they are for gets its expanded `env` all the same);
- the secrets it holds: each MCP server's `env` and `headers` values and the variables
  they name, the credentials inside its `url` and the model's `base_url` (user info, query
  values): redacted from the run's records, with the environment's (`environ.Redactor`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from ..environ import Redactor, header_secrets, url_secrets

if TYPE_CHECKING:
    from .prepare import RunConfig

_VAR = re.compile(r"\$\{([^}:]+)(?::-[^}]*)?\}")
# Names a configuration may pass on (`"env": {"PATH": "${PATH}"}`) that are no one's
# secret: keeping them from the other programs would only break those.
ORDINARY = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "PWD", "TMPDIR", "TZ"}
)


def _named(config: RunConfig) -> Iterator[str]:
    for server in config.mcp_servers.values():
        texts = [*server.env.values(), *server.headers.values(), server.url or ""]
        for text in texts:
            for m in _VAR.finditer(text):
                name = m.group(1).strip()
                if name and name not in ORDINARY and not name.startswith("LC_"):
                    yield name


def consumed_names(config: RunConfig) -> list[str]:
    """The variables the run's configuration consumes (see the module's docstring)."""
    names = dict.fromkeys(_named(config))
    if config.key_env:
        names[config.key_env] = None
    return list(names)


def config_secrets(config: RunConfig, environ: Mapping[str, str]) -> list[str]:
    """The secrets of the run's configuration, its `${VAR}`s expanded from `environ`."""
    from ..config.mcp import expand

    out: list[str] = []
    base_url = getattr(config.inputs.model, "base_url", None)
    if base_url:
        out += url_secrets(base_url)
    for server in config.mcp_servers.values():
        expanded, _ = expand(server, environ)
        out += expanded.env.values()
        for value in expanded.headers.values():
            out += header_secrets(value)
        if expanded.url:
            out += url_secrets(expanded.url)
    out += [environ[n] for n in _named(config) if environ.get(n)]
    return out


def run_redactor(config: RunConfig, environ: Mapping[str, str] | None) -> Redactor:
    """The run's redactor: the environment's secrets (None: orkeon's) and the
    configuration's."""
    env = os.environ if environ is None else environ
    return Redactor.from_environ(env, config.key_env, config_secrets(config, env))
