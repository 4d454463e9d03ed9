"""Events (INTERFACE section 7): one JSON object per line, each with `type` and `ts`.

`EventLog` appends each event to `events.jsonl` and flushes it before returning, so a run
killed at any point leaves every finished line whole. With `--output stream-json` the
same line also goes to stdout. Roles emit from several tasks and worker threads; a lock
keeps lines whole.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .jsonio import dumps, utf8_line


class EventLog:
    def __init__(self, path: Path | None, stream: IO[str] | None = None) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            # O_APPEND: each write lands whole at the end, even after a resume.
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._stream = stream
        self.listeners: list[Callable[[dict[str, Any]], None]] = []

    def emit(self, type: str, **fields: Any) -> dict[str, Any]:
        return self.write({"type": type, "ts": round(time.time(), 6), **fields})

    def write(self, event: dict[str, Any]) -> dict[str, Any]:
        """Log an event made elsewhere, its `ts` kept (a pipeline's log takes each of its
        steps' events as they happen)."""
        data = utf8_line(dumps(event) + "\n")
        with self._lock:
            if self._fd is not None:
                # One write() per line: a kill between writes leaves only whole lines.
                os.write(self._fd, data)
            if self._stream is not None:
                # The escaped text, so a strict stdout cannot raise on a lone surrogate.
                self._stream.write(data.decode("utf-8"))
                self._stream.flush()
        for listener in self.listeners:
            listener(event)
        return event

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class NullLog(EventLog):
    """Events for commands that write no run directory (`hooks check`, tests)."""

    def __init__(self) -> None:
        super().__init__(None)
