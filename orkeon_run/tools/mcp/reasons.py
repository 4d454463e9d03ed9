"""Why a server or a call failed, in words an operator can act on (server.py, hub.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

import anyio

from ...proc import could_not_start


def leaf(exc: BaseException) -> BaseException:
    """The exception a task group wrapped."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def is_closed(exc: BaseException) -> bool:
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    closed = anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream
    return isinstance(exc, closed)


def describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def spawn_reason(program: str, cwd: Path, exc: BaseException) -> str:
    """Why a program did not start, in the words `proc.py` uses for hooks."""
    if isinstance(exc, OSError):
        return could_not_start(program, cwd, exc)
    return f"cannot start {program}: {describe(exc)}"


def stderr_line(log: IO[bytes] | None, start: int, limit: int) -> str:
    """The last non-blank line a server wrote to its stderr `log` since offset `start`
    (this run's part), cut to `limit` characters."""
    if log is None or log.closed:
        return ""
    try:
        end = log.seek(0, os.SEEK_END)
        log.seek(max(start, end - 8192))
        tail = log.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [x.strip() for x in tail.splitlines() if x.strip()]
    last = lines[-1] if lines else ""
    return last if len(last) <= limit else last[: limit - 1] + "…"


__all__ = ["describe", "is_closed", "leaf", "spawn_reason", "stderr_line"]
