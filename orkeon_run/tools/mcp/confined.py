"""How a stdio MCP server's process is started (docs/tools.md, "How servers run";
docs/security.md, "Guards"): the checks made before it starts, and its command line.

- `unpinned`: the pinned files of the server (the files its command names, and the
  workspace file its configuration came from, `.mcp.json` say) whose content changed
  since the run started: such a server is not started (fail closed), the reason names them.
- `egress`: the proxy's socket of a confined server whose `network` is an allow-list, the
  one the shell's commands get (`sandbox.egress_socket`), held open while it runs; its
  refused hosts are recorded under `MCP server NAME`.
- `command_line`: bubblewrap around the server's argv when it is confined.

`NotStarted` is a reason known before the program runs; server.py makes it the server's
`failed` reason, which its tools' refusal quotes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...config.pins import Pins
    from ..sandbox import SandboxPolicy


class NotStarted(Exception):
    """A server that cannot start for a reason known before it runs."""


def unpinned(pins: Pins | None, argv: Sequence[str], origins: Sequence[str]) -> list[str]:
    """The files `argv` names, and `origins` (workspace-relative), changed since the run
    started (config/pins.py); [] without pins."""
    if pins is None or not pins.digests:
        return []
    return pins.changed([*argv, *origins])


def check_pins(pins: Pins | None, argv: Sequence[str], origins: Sequence[str]) -> None:
    """Raise NotStarted naming the server's pinned files that changed."""
    changed = unpinned(pins, argv, origins)
    if changed:
        raise NotStarted(
            f"{', '.join(changed)} changed since the run started (pinned by content, "
            'docs/security.md "Guards"): the server is not started'
        )


@contextlib.contextmanager
def egress(policy: SandboxPolicy | None, server: str) -> Iterator[str | None]:
    """The proxy's socket for the server's process while the block runs; None when it has
    no allow-list (unconfined, or its network is true or false)."""
    if policy is None or policy.egress is None:
        yield None
        return
    from ..sandbox import NoProxy, egress_socket

    with contextlib.ExitStack() as stack:
        try:
            path = stack.enter_context(egress_socket(policy, f"MCP server {server}"))
        except NoProxy as exc:
            raise NotStarted(str(exc)) from None
        yield path


def command_line(
    policy: SandboxPolicy | None,
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    socket: str | None,
) -> list[str]:
    """The command line that starts the server: `argv` itself when unconfined, else in its
    sandbox (behind the forwarder with `socket`). Raises NotStarted when no sandbox can be
    made here or the program cannot start in it."""
    if policy is None:
        return argv
    from ..sandbox import probe, server_command

    avail = probe(policy.bwrap)
    if not avail.ok or avail.bwrap is None:
        raise NotStarted(f"the shell sandbox is not available here: {avail.reason}")
    command, why = server_command(policy, argv, cwd=cwd, env=env, bwrap=avail.bwrap, egress=socket)
    if why is not None:
        raise NotStarted(why)
    return command


__all__ = ["NotStarted", "check_pins", "command_line", "egress", "unpinned"]
