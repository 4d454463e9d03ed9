"""The stdio transport: one MCP server as a child in a process group of its own, speaking
newline-delimited JSON-RPC on its stdin and stdout.

The SDK's `stdio_client` does the talking well but keeps the process to itself, and orkeon
needs three things from it: the pid (to stop the whole group, and to say in an event which
process it was), how the server ended (exit code or signal, for the text the model reads),
and a stop that leaves nothing behind. The SDK kills the group only when the server itself
outlives its grace; a server that exits on end-of-input at once but left a child running
(a wrapper script, `npx` starting node) leaves that child alive. So this module spawns the
process and bridges the pipes the same way, and `ServerProcess.connect` is a transport the
SDK's `Client` accepts.

Contract:
- argv only, no shell; the environment is exactly `env` (the caller scrubs it); stderr goes
  to the file given (the caller keeps it for the reason of a failure).
- The child starts a new session, so it and everything it forks share one process group.
- Leaving `connect` stops the server: stdin is closed (the protocol's way to ask it to
  quit), then once the server exits or after `grace` seconds the whole group gets SIGTERM
  if anything in it still runs, and SIGKILL `grace` seconds later. This runs shielded from
  cancellation, so a cancelled run stops its servers too.
- When the server exits on its own, `on_exit(reason)` is called and the rest of its group
  is stopped the same way (an orphan holding the pipes would otherwise keep them open).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.abc
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from ...environ import traced

# How often a stop looks whether the group is gone.
_GROUP_POLL = 0.02


def exit_text(code: int | None) -> str:
    """How a process ended, as the model reads it: `it exited with code 1`, `it was killed
    by signal 9 (SIGKILL)`."""
    if code is None:
        return "it exited"
    if code < 0:
        try:
            name = f" ({signal.Signals(-code).name})"
        except ValueError:
            name = ""
        return f"it was killed by signal {-code}{name}"
    return f"it exited with code {code}"


def live_members(pgid: int) -> list[int]:
    """The processes of group `pgid` that still run (zombies left out: where nothing reaps
    orphans, as in some containers, a dead member stays a zombie and `killpg(pgid, 0)`
    keeps answering that the group exists)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    try:
        entries = os.listdir("/proc")
    except OSError:  # no /proc: trust killpg's answer
        return [pgid]
    found = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            found.append(int(entry))
    return found


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def stop_group(pgid: int, grace: float) -> None:
    """SIGTERM to every process of the group still running, SIGKILL to those left after
    `grace` seconds; returns once none runs (at once when none did), or `grace` seconds
    after the SIGKILL (a process in uninterruptible sleep dies only when it wakes)."""
    if not live_members(pgid):
        return
    _killpg(pgid, signal.SIGTERM)
    if await _gone(pgid, grace):
        return
    _killpg(pgid, signal.SIGKILL)
    await _gone(pgid, grace)  # a killed process still has to be scheduled to die


async def _gone(pgid: int, limit: float) -> bool:
    with anyio.move_on_after(limit):
        while live_members(pgid):
            await anyio.sleep(_GROUP_POLL)
        return True
    return False


class ServerProcess:
    """One stdio server. `connect()` is the transport; `pid` and `exit_reason` are set
    once it started and once it ended."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        stderr: IO[Any] | int = subprocess.DEVNULL,
        grace: float = 2.0,
        on_exit: Callable[[str], None] | None = None,
    ) -> None:
        self.argv = argv
        self.env = dict(env)
        self.cwd = cwd
        self.stderr = stderr
        self.grace = grace
        self.on_exit = on_exit
        self.pid: int | None = None
        self.exit_reason: str | None = None
        self._stopping = False
        self._stopped = False
        self._exited: anyio.Event | None = None

    @asynccontextmanager
    async def connect(
        self,
    ) -> AsyncIterator[
        tuple[
            MemoryObjectReceiveStream[SessionMessage | Exception],
            MemoryObjectSendStream[SessionMessage],
        ]
    ]:
        """Start the server and yield the (read, write) streams the SDK's session uses.
        OSError (or ValueError for a NUL in argv) when the program cannot start."""
        process = await anyio.open_process(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=self.cwd,
            env=traced(self.env),  # the span the server runs under (docs/output.md)
            start_new_session=True,
        )
        self.pid = process.pid
        self._exited = anyio.Event()
        sink, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, source = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read, process, sink)
                tg.start_soon(self._write, process, source, sink)
                tg.start_soon(self._watch, process)
                try:
                    yield read_stream, write_stream
                finally:
                    self._stopping = True
                    with anyio.CancelScope(shield=True):
                        # The reader stops delivering and drains stdout instead, so a
                        # server blocked writing its output can read its end of input.
                        read_stream.close()
                        write_stream.close()
                        await self._stop(process)
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._stop(process)  # again when the task group itself failed
                for stream in (read_stream, write_stream, sink, source):
                    await stream.aclose()

    async def _read(
        self,
        process: anyio.abc.Process,
        sink: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdout is not None
        buf = bytearray()
        quiet = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)
        with contextlib.suppress(*quiet):
            async with sink:
                async for chunk in process.stdout:
                    start = len(buf)
                    buf += chunk
                    while (end := buf.find(b"\n", start)) >= 0:
                        line = bytes(buf[:end])
                        del buf[: end + 1]
                        start = 0
                        if line.strip():
                            await sink.send(_parse(line))
        with contextlib.suppress(*quiet):
            async for _ in process.stdout:  # drained until the server closes it
                pass

    async def _write(
        self,
        process: anyio.abc.Process,
        source: MemoryObjectReceiveStream[SessionMessage],
        sink: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdin is not None
        try:
            async with source:
                async for message in source:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server no longer reads: end the session's reading too, so a request in
            # flight fails now instead of waiting out its time limit.
            await sink.aclose()

    async def _watch(self, process: anyio.abc.Process) -> None:
        code = await process.wait()
        self.exit_reason = exit_text(code)
        assert self._exited is not None
        self._exited.set()
        if not self._stopping:
            if self.on_exit is not None:
                self.on_exit(self.exit_reason)
            await stop_group(process.pid, self.grace)

    async def _stop(self, process: anyio.abc.Process) -> None:
        """Shielded by the caller; every wait is bounded; a second call returns at once."""
        self._stopping = True
        if self._stopped:
            return
        self._stopped = True
        if process.stdin is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.stdin.aclose()
        if process.returncode is None:
            with anyio.move_on_after(self.grace):
                await process.wait()
        await stop_group(process.pid, self.grace)
        with anyio.move_on_after(self.grace):
            await process.aclose()  # closes the pipes and reaps the server
        if self.exit_reason is None and process.returncode is not None:
            self.exit_reason = exit_text(process.returncode)
        if self._exited is not None:
            self._exited.set()

    async def wait_exited(self, limit: float) -> str | None:
        """How the server ended, waiting at most `limit` seconds for it; None while it runs."""
        if self._exited is not None and not self._exited.is_set():
            with anyio.move_on_after(limit):
                await self._exited.wait()
        return self.exit_reason


def _parse(line: bytes) -> SessionMessage | Exception:
    """One line of the server's stdout; a line that is not a JSON-RPC message is handed to
    the session as the exception it is (the SDK's own convention)."""
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        return exc
    return SessionMessage(message)


__all__ = ["ServerProcess", "exit_text", "live_members", "stop_group"]
