"""Shared by the MCP tests: the test servers, the hub in a test, and what runs in /proc."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from orkeon_run.environ import scrubbed
from orkeon_run.tools.mcp import parse_servers
from orkeon_run.tools.mcp.hub import McpHub

FAKES = Path(__file__).parent / "fakes"
FAKE = {"command": [sys.executable, str(FAKES / "mcp_server.py"), "stdio"]}


def git_server(repo: Path) -> dict[str, Any]:
    return {"command": [sys.executable, "-m", "mcp_server_git", "--repository", str(repo)]}


class Events:
    """The hub's `mcp.server` events, and a way to await one."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self._waiters: list[tuple[Callable[[dict[str, Any]], bool], anyio.Event]] = []

    def __call__(self, type: str, **fields: Any) -> None:
        assert type == "mcp.server"
        self.seen.append(fields)
        for match, event in self._waiters:
            if match(fields):
                event.set()

    async def wait(self, **want: Any) -> dict[str, Any]:
        def match(e: dict[str, Any]) -> bool:
            return all(e.get(k) == v for k, v in want.items())

        event = anyio.Event()
        self._waiters.append((match, event))
        if not any(match(e) for e in self.seen):
            with anyio.fail_after(60):
                await event.wait()
        return next(e for e in self.seen if match(e))


def with_hub(
    servers: dict[str, Any], cwd: Path, body: Callable[[McpHub, Events], Awaitable[Any]], **kw: Any
) -> Any:
    events = Events()
    kw.setdefault("environ", scrubbed())
    kw.setdefault("start_timeout", 60.0)  # a loaded machine is slow, not broken

    async def go() -> Any:
        async with McpHub(parse_servers(servers), cwd=cwd, emit=events, **kw) as hub:
            return await body(hub, events)

    return anyio.run(go)


def state(pid: int) -> str | None:
    """A process's state letter (R, S, Z, ...), None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()[0].decode()


def running(pid: int) -> bool:
    return state(pid) not in (None, "Z", "X")


def group_running(pgid: int) -> list[int]:
    """The processes of a group that still run (zombies no one reaps do not count)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                found.append(int(entry))
    return found
