"""Logging: records on stderr, never stdout (stdout carries only what --output promises).

JSON lines when stderr is not a terminal, written here with the standard library; the
readable form on a terminal (or with FORCE_COLOR), laid out by structlog's console
renderer. Level from ORKEON_LOG_LEVEL (debug, info, warning, error; default info).
Colours follow `colors()`: NO_COLOR turns them off, FORCE_COLOR on (and the readable form
with them, on any stderr). Every record is one line by escape.py's rule, whatever the form.

`get` hands out a small logger that compares a message's level with the configured one
before anything else. structlog is imported only for the readable form, and then only for
the first message that passes: `import structlog` loads rich when rich is installed (which
typer brings), 90-140 ms that a JSON line in CI never pays (docs/performance.md).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from . import escape

DEBUG, INFO, WARNING, ERROR, CRITICAL = 10, 20, 30, 40, 50
LEVELS = {"DEBUG": DEBUG, "INFO": INFO, "WARNING": WARNING, "WARN": WARNING, "ERROR": ERROR,
          "CRITICAL": CRITICAL, "FATAL": CRITICAL, "NOTSET": 0}  # fmt: skip
_configured = False
_readable = False
_LEVEL_NAMES = {"warn": "warning", "exception": "error", "fatal": "critical"}
# The secrets of the runs in this process (environ.Redactor), redacted from every line.
_secrets: set[str] = set()
_redactor: Any = None


def _threshold(level: str | None = None) -> int:
    """The level's number: any name the logging module knows (`warn` and `critical`
    too), in any case; info for anything else. (The logging module's numbers, without
    importing it: it is not otherwise needed, and costs a few milliseconds.)"""
    name = (level or os.environ.get("ORKEON_LOG_LEVEL") or "info").upper()
    return LEVELS.get(name, INFO)


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


def readable() -> bool:
    """Whether records are written in the readable form (on a terminal, or with
    FORCE_COLOR) rather than as JSON lines."""
    try:
        tty = bool(sys.stderr.isatty())
    except (AttributeError, ValueError):
        tty = False
    return tty or forced_color()


class _Stderr:
    """Where every record goes: `sys.stderr` as it is now (a test's capture, an embedding
    program's replacement), one line a record, by the escaping rule (escape.py). Has the
    methods structlog's loggers call (its `PrintLogger`'s)."""

    def msg(self, message: str) -> None:
        sys.stderr.write(escape.start(message) + "\n")
        sys.stderr.flush()

    log = debug = info = warn = warning = error = critical = exception = fatal = msg


_STDERR = _Stderr()


def configure(level: str | None = None) -> None:
    """Choose the renderer once: the readable form through structlog, or JSON lines
    written here (`_json_line`: structlog's `JSONRenderer` output, field for field,
    without importing structlog, which imports rich when rich is installed)."""
    global _configured, _readable
    _readable = readable()
    if _readable:
        import structlog

        structlog.configure(
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.dev.ConsoleRenderer(colors=colors()),
            ],
            wrapper_class=structlog.make_filtering_bound_logger(_threshold(level)),
            logger_factory=lambda *_: _STDERR,
            cache_logger_on_first_use=False,
        )
    _configured = True


def _json_line(method: str, event: str, fields: dict[str, Any]) -> str:
    """The JSON line structlog's `add_log_level`, `TimeStamper(fmt="iso", utc=True)`,
    `format_exc_info` and `JSONRenderer` make of a record: the fields, then `event`,
    `level`, `timestamp`, and an `exc_info` turned into the traceback's text."""
    import json
    from datetime import UTC, datetime

    record = dict(fields)
    exc_info = record.pop("exc_info", None)
    record["event"] = event
    record["level"] = _LEVEL_NAMES.get(method, method)
    record["timestamp"] = datetime.now(tz=UTC).isoformat().replace("+00:00", "Z")
    if exc_info:
        record["exception"] = _traceback(exc_info)
    return json.dumps(record, default=repr)


def _traceback(exc_info: Any) -> str:
    import traceback

    if isinstance(exc_info, BaseException):
        exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
    elif not isinstance(exc_info, tuple):
        exc_info = sys.exc_info()
    return "".join(traceback.format_exception(*exc_info)).rstrip("\n")


def _readable_fields(event: str, fields: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The record's text values escaped (escape.py) before the readable renderer lays
    them out; a traceback comes along as one escaped field, like the JSON line's."""
    out = {k: escape.text(v) if isinstance(v, str) else v for k, v in fields.items()}
    exc_info = out.pop("exc_info", None)
    if exc_info:
        out["traceback"] = escape.text(_traceback(exc_info))  # not `exception`: the
        # console renderer writes that one on lines of its own
    return escape.text(event), out


class Logger:
    """A named logger; see the module docstring. Fields are the record's; `exc_info` (an
    exception, or True for the one being handled) adds its traceback's text."""

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
        if not _configured:
            configure()
        if _readable:
            import structlog

            event, fields = _readable_fields(event, fields)
            getattr(structlog.get_logger(self.name), method)(event, **fields)
        else:
            _STDERR.msg(_json_line(method, event, fields))

    def debug(self, event: str, **fields: Any) -> None:
        self._emit(DEBUG, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit(INFO, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit(WARNING, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit(ERROR, "error", event, fields)


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
