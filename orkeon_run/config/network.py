"""The `network` setting of the shell (`shell.network`, which the audit's build and test
share) and of a stdio MCP server (`mcp_servers.NAME.network`): `true` (every host), `false`
(none) or an allow-list of host names (policy/hosts.py has the entries' grammar; docs/inputs.md,
"`sandbox` and `network`"). A bad entry is one error line naming it: `shell.network[1]: …`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, StrictBool


def _host_entry(entry: str) -> str:
    from ..policy.hosts import HostRule

    HostRule.parse(entry)  # ValueError names the problem
    return entry


def _network_shape(value: Any) -> Any:
    if not isinstance(value, bool | list):
        raise ValueError('must be true, false or a list of host names, like ["pypi.org"]')
    return value


Network = Annotated[
    StrictBool | list[Annotated[str, AfterValidator(_host_entry)]],
    BeforeValidator(_network_shape),
    Field(description="true, false, or the host names (host:port, *.domain) it may reach"),
]
