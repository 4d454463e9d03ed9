"""Logging: structlog to stderr, never stdout (stdout carries only what --output promises).

Human-readable on a terminal, JSON lines otherwise. Level from ORKEON_LOG_LEVEL
(debug, info, warning, error; default info).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

_configured = False


def _structlog() -> Any:
    """structlog, imported without `rich`: structlog.dev imports it when it is installed
    (typer brings it), for pretty tracebacks orkeon never prints, and that import costs
    ~70 ms of every command's start. It is hidden for the length of that import only."""
    if "structlog" in sys.modules or "rich" in sys.modules:
        import structlog

        return structlog
    sys.modules["rich"] = None  # type: ignore[assignment]
    try:
        import structlog
    finally:
        del sys.modules["rich"]
    return structlog


def configure(level: str | None = None) -> None:
    global _configured
    structlog = _structlog()

    name = (level or os.environ.get("ORKEON_LOG_LEVEL") or "info").upper()
    numeric = getattr(logging, name, logging.INFO)
    tail: list[Any]
    if sys.stderr.isatty():
        tail = [structlog.dev.ConsoleRenderer(colors=True)]
    else:
        # format_exc_info: a JSON line carries the traceback as text, not `exc_info: true`.
        tail = [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *tail,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        # sys.stderr looked up per logger, not once: whoever replaced it since (a test's
        # capture, an embedding program) gets the lines.
        logger_factory=lambda *_: structlog.PrintLogger(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    _configured = True


def get(name: str = "orkeon") -> Any:
    structlog = _structlog()
    if not _configured:
        configure()
    return structlog.get_logger(name)


def warn(message: str, **fields: Any) -> None:
    """A warning for the person running orkeon (stderr)."""
    get().warning(message, **fields)
