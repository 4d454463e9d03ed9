"""The network allow-list's grammar (docs/inputs.md, "`sandbox` and `network`": `shell.network`).

An entry is a host name (`registry.npmjs.org`), a wildcard for its subdomains
(`*.example.org`: `a.example.org`, `a.b.example.org`, not `example.org` itself), either with
an optional port (`host.example:8443`); without a port every port of the host is allowed.
Names match case-insensitively, a trailing dot ignored. Anything else (a URL, a path, an IP
address, a bare `*`) is refused with a reason: `HostRule.parse` raises ValueError.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def _host_problem(host: str) -> str | None:
    if not host or len(host) > 253:
        return "a host name of 1 to 253 characters"
    labels = host.split(".")
    if not all(_LABEL.match(label) for label in labels):
        return "letters, digits and hyphens in dot-separated labels"
    if labels[-1].isdigit():
        return "a host name, not an IP address"
    return None


def normal_host(host: str) -> str:
    """`host` as the allow-list compares it: lower case, no trailing dot, no brackets."""
    return host.strip().strip("[]").rstrip(".").lower()


@dataclass(frozen=True)
class HostRule:
    """One allow-list entry: `host` (without `*.`), whether it is a `wildcard`, and its
    `port` (None: any)."""

    host: str
    wildcard: bool = False
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> HostRule:
        """The entry `text`; ValueError saying what an entry must be."""
        if not isinstance(text, str):
            raise ValueError("must be a host name or host:port")
        raw = text.strip()
        name, sep, port_text = raw.rpartition(":") if ":" in raw else (raw, "", "")
        problem = None
        port = None
        if any(c in raw for c in "/@?#[] "):
            problem = "no scheme, path, user or query: only the host and an optional port"
        elif sep and not (port_text.isdigit() and 0 < int(port_text) < 65536):
            problem = "a port from 1 to 65535 after the ':'"
        elif sep:
            port = int(port_text)
        wildcard = name.startswith("*.")
        host = normal_host(name[2:] if wildcard else name)
        if problem is None:
            problem = _host_problem(host) if "*" not in host else "a '*' only as '*.' in front"
        if problem is not None:
            raise ValueError(
                f'{text!r} is not a host name or host:port (like "registry.npmjs.org", '
                f'"*.example.org:443"): it needs {problem}'
            )
        return cls(host, wildcard, port)

    def matches(self, host: str, port: int) -> bool:
        """Whether a connection to `host` (normalised: `normal_host`) and `port` is let
        through by this entry."""
        if self.port is not None and port != self.port:
            return False
        if self.wildcard:
            return host.endswith("." + self.host)
        return host == self.host

    def __str__(self) -> str:
        name = f"*.{self.host}" if self.wildcard else self.host
        return name if self.port is None else f"{name}:{self.port}"


@dataclass(frozen=True)
class AllowList:
    """The hosts a sandboxed command may reach through orkeon's proxy (none: no host)."""

    rules: tuple[HostRule, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        return cls(tuple(HostRule.parse(e) for e in entries))

    def allows(self, host: str, port: int) -> bool:
        target = normal_host(host)
        return any(rule.matches(target, port) for rule in self.rules)

    def __str__(self) -> str:
        return ", ".join(map(str, self.rules)) or "no host"
