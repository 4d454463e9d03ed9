"""What every MCP server of one run shares (`McpHub` makes it, each `ServerRun` reads it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...config.pins import Pins
    from ..sandbox import SandboxPolicy
    from ..sandbox.proxy import EgressProxy

Emit = Callable[..., object]


@dataclass(frozen=True)
class Settings:
    """What every server of a run shares (see `McpHub`)."""

    environ: Mapping[str, str]
    cwd: Path
    expand_from: Mapping[str, str]
    emit: Emit | None
    log_dir: Path | None
    start_timeout: float
    grace: float
    # The step's sandbox for its roles (no roots); None: servers run unconfined.
    sandbox: SandboxPolicy | None = None
    # The run's proxy for a server's network allow-list (run/context.py `StepRun.egress`);
    # None, or None for a list: such a server gets no network (fail closed).
    egress: Callable[[tuple[str, ...]], EgressProxy | None] | None = None
    # The run's pinned files; a stdio server whose files changed is not started.
    pins: Pins | None = None
    # Server name -> the workspace files its configuration came from (`.mcp.json`).
    origins: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)


__all__ = ["Emit", "Settings"]
