"""Logging: structlog to stderr, never stdout (stdout carries only what --output promises).

Human-readable on a terminal, JSON lines otherwise. Level from ORKEON_LOG_LEVEL
(debug, info, warning, error; default info). Colours follow `colors()`: NO_COLOR turns
them off, FORCE_COLOR on (and the human-readable form with them, on any stderr).

`get` hands out a small logger that compares a message's level with the configured one
before anything else, and imports and configures structlog only for the first message
that passes: a run at `warning` that has nothing to warn about never pays structlog's
import (with the `rich` it loads when rich is installed: tens of milliseconds).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

_configured = False
# The secrets of the runs in this process (environ.Redactor), redacted from every line.
_secrets: set[str] = set()
_redactor: Any = None


def _threshold(level: str | None = None) -> int:
    """The level's number: any name the logging module knows (`warn` and `critical`
    too), in any case; info for anything else."""
    name = (level or os.environ.get("ORKEON_LOG_LEVEL") or "info").upper()
    number = logging.getLevelName(name)
    return number if isinstance(number, int) else logging.INFO


def colors(stream: Any = None) -> bool:
    """Whether text for `stream` (default: stderr) is coloured: never when NO_COLOR is set
    (not empty), always when FORCE_COLOR is (not empty), else when it is a terminal. The
    rules of no-color.org and force-color.org, as rich applies them."""
    if os.environ.get("NO_COLOR", "") != "":
        return False
    if forced_color():
        return True
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def forced_color() -> bool:
    return os.environ.get("FORCE_COLOR", "") != ""


def configure(level: str | None = None) -> None:
    global _configured
    import structlog

    numeric = _threshold(level)
    tail: list[Any]
    if sys.stderr.isatty() or forced_color():
        tail = [structlog.dev.ConsoleRenderer(colors=colors())]
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


class Logger:
    """A named logger; see the module docstring. `exc_info` and any other field pass
    through to structlog."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _emit(self, level: int, method: str, event: str, fields: dict[str, Any]) -> None:
        if level < _threshold():
            return
        if _redactor is not None:
            event = _redactor.text(event)
            fields = {
                k: _redactor.value(v) if isinstance(v, (str, list, dict)) else v
                for k, v in fields.items()
            }
        import structlog

        if not _configured:
            configure()
        getattr(structlog.get_logger(self.name), method)(event, **fields)

    def debug(self, event: str, **fields: Any) -> None:
        self._emit(logging.DEBUG, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit(logging.INFO, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit(logging.WARNING, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit(logging.ERROR, "error", event, fields)


def redact(secrets: Any) -> None:
    """From now on, log lines have these values (a run's secrets, environ.Redactor's
    `secrets`) replaced by `[redacted]`, with those of the runs before in this process."""
    global _redactor
    new = set(secrets) - _secrets
    if new:
        from .environ import Redactor

        _secrets.update(new)
        _redactor = Redactor(_secrets)


def get(name: str = "orkeon") -> Logger:
    return Logger(name)


def warn(message: str, **fields: Any) -> None:
    """A warning for the person running orkeon (stderr)."""
    get().warning(message, **fields)
