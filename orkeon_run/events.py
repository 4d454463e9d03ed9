"""Events (docs/output.md, "Events"): one JSON object per line, each with `type`, `ts` and
`schema_version` (vocabulary.SCHEMA_VERSION).

`EventLog` appends each event to `events.jsonl` and flushes it before returning, so a run
killed at any point leaves every finished line whole. With `--output stream-json` the
same line also goes to stdout. Roles emit from several tasks and worker threads; a lock
keeps lines whole.

Secrets are redacted from each line before it is written or handed to a listener (the
run's `environ.Redactor`). A line the disk cannot take (full, read-only, over a size
limit) is taken back whole (`jsonio.append_line`) and `emit` raises `RecordsError`; from
then on the log is broken: every `emit` raises that error at once, writing nothing, so the
run stops at its next event instead of going on unrecorded. `emit_final` (the `result`)
never raises and always reaches the stream.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .environ import Redactor
from .errors import RecordsError
from .jsonio import append_line, dumps, utf8_line
from .vocabulary import SCHEMA_VERSION


def _event(type: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": type, "ts": round(time.time(), 6), "schema_version": SCHEMA_VERSION, **fields}


class EventLog:
    def __init__(
        self,
        path: Path | None,
        stream: IO[str] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        """Raises RecordsError when `path` cannot be opened for appending."""
        self._lock = threading.Lock()
        self._fd: int | None = None
        self.path = path
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                # O_APPEND: each write lands whole at the end, even after a resume.
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            except OSError as exc:
                raise RecordsError.writing(path, exc) from None
        self._stream = stream
        self.redactor = redactor if redactor else None
        self.failure: RecordsError | None = None
        self.listeners: list[Callable[[dict[str, Any]], None]] = []

    def _line(self, event: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        text = dumps(event)
        if self.redactor is not None:
            redacted = self.redactor.json_text(text)
            if redacted is not text:  # listeners see what the file holds
                text, event = redacted, json.loads(redacted)
        return event, utf8_line(text + "\n")

    def emit(self, type: str, **fields: Any) -> dict[str, Any]:
        """Write one event; raises RecordsError when it cannot be written (see above)."""
        return self.write(_event(type, fields))

    def write(self, event: dict[str, Any]) -> dict[str, Any]:
        """Log an event made elsewhere, its `ts` kept (a pipeline's log takes each of its
        steps' events as they happen). Raises RecordsError as `emit` does."""
        if self.failure is not None:
            raise self.failure
        if self._fd is None and self._stream is None and not self.listeners:
            return event if self.redactor is None else self._line(event)[0]  # nothing to write
        event, data = self._line(event)
        with self._lock:
            if self.failure is not None:
                raise self.failure
            if self._fd is not None:
                try:
                    # One line at a time, whole or not at all (jsonio.append_line).
                    append_line(self._fd, data)
                except OSError as exc:
                    self.failure = RecordsError.writing(self.path, exc)
                    raise self.failure from None
            self._write_stream(data)
        for listener in self.listeners:
            listener(event)
        return event

    def emit_final(self, type: str, **fields: Any) -> dict[str, Any]:
        """The run's last event: written to the file when it still can be, always to the
        stream and the listeners. Never raises for the file."""
        event, data = self._line(_event(type, fields))
        with self._lock:
            if self._fd is not None and self.failure is None:
                try:
                    append_line(self._fd, data)
                except OSError as exc:
                    self.failure = RecordsError.writing(self.path, exc)
            self._write_stream(data)
        for listener in self.listeners:
            listener(event)
        return event

    def _write_stream(self, data: bytes) -> None:
        if self._stream is not None:
            # The escaped text, so a strict stdout cannot raise on a lone surrogate.
            self._stream.write(data.decode("utf-8"))
            self._stream.flush()

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class NullLog(EventLog):
    """Events for commands that write no run directory (`hooks check`, tests)."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__(None, redactor=redactor)
