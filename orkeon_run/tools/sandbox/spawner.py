"""The thread that starts every kept-up bubblewrap (session.py's sandboxes, veil.py's veil),
and how such a server is started and greeted."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
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


def start_server(
    argv_for: Callable[[int], list[str]], *, cwd: str, timeout: float, stderr: bool
) -> tuple[subprocess.Popen[bytes], socket.socket, dict[str, Any]]:
    """Start a server that speaks on a SOCK_SEQPACKET socket pair (`argv_for(fd)`: its
    command line, told its end's descriptor), from the spawner's thread, in a session of
    its own, and wait up to `timeout` s for its first message: (process, orkeon's end of
    the socket, that message; {} when none came). `stderr`: a pipe the caller reads when
    the greeting is missing, else /dev/null. OSError when it cannot be started."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    argv = argv_for(theirs.fileno())
    try:
        popen: subprocess.Popen[bytes] = spawner.call(lambda: subprocess.Popen(
            argv, cwd=cwd, env={"PATH": os.defpath}, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE if stderr else subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),), start_new_session=True,
        ))  # fmt: skip
    except OSError:
        ours.close()
        raise
    finally:
        theirs.close()
    try:
        ready = select.select([ours], [], [], timeout)[0] and ours.recv(4096)
        greeting = json.loads(ready) if ready else {}
    except (OSError, ValueError):
        greeting = {}
    return popen, ours, greeting if isinstance(greeting, dict) else {}


def stop_server(popen: subprocess.Popen[bytes], sock: socket.socket) -> None:
    """End a server `start_server` started: it exits when its socket closes (bubblewrap,
    and everything in its namespace, with it); killed if it has not within 2 s."""
    sock.close()
    try:
        popen.wait(2.0)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait()


__all__ = ["spawner", "start_server", "stop_server"]
