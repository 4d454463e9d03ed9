"""The thread that starts every kept-up bubblewrap (session.py's sandboxes, veil.py's veil)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class _Spawner:
    """Starts every server's bubblewrap from one thread that lives as long as orkeon:
    `--die-with-parent` is the kernel's parent-death signal, sent when the *thread* that
    started bubblewrap ends, and a pool's worker thread ends when it has idled."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: list[tuple[Callable[[], Any], list[Any], threading.Event]] = []
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def call(self, fn: Callable[[], Any]) -> Any:
        done, box = threading.Event(), list[Any]()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="orkeon-sandboxes",
                                                daemon=True)  # fmt: skip
                self._thread.start()
            self._jobs.append((fn, box, done))
            self._wake.notify()
        done.wait()
        ok, value = box
        if not ok:
            raise value
        return value

    def _serve(self) -> None:
        while True:
            with self._lock:
                while not self._jobs:
                    self._wake.wait()
                fn, box, done = self._jobs.pop(0)
            try:
                box += [True, fn()]
            except BaseException as exc:  # handed to the caller
                box += [False, exc]
            done.set()


spawner = _Spawner()


__all__ = ["spawner"]
