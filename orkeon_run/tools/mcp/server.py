"""One configured MCP server during one run: its task, its client, and why it is not
running when it is not (`hub.py` has the contract).

`ServerRun.run` is the task that owns the SDK's client of the server from start to stop,
so the client's cancel scopes are entered and left in one task. Its state is `starting`,
then `running` or `failed`, then `exited` (it ended mid-run) or `stopped` (at the end).

A confined stdio server (`confined`: the run has a sandbox policy and the server is not
`"sandbox": "off"`) runs in the sandbox of the roles it serves: writable under `roots`
(workspace-relative, None: none) and its private /tmp, the network as its `network` says
(docs/tools.md, "How servers run"): with an allow-list, a network namespace of its own
whose only way out is the run's proxy for that list (`Settings.egress`), its refused hosts
recorded under `MCP server NAME`. Every confined server is told those roots when it asks
(MCP `roots/list`, as `file://` URIs); an unconfined one is offered no roots, as before.

Before each start (the hub's, and each role's process started mid-run) a stdio server's
pinned files (`Settings.pins`: the files its command names, and the workspace file it was
configured in, `Settings.origins`) are checked: one changed since the run started fails
the start, naming the file (docs/security.md, "Guards"), and its tools are refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import math
import os
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio

from ... import __version__
from ...config.mcp import McpServer, expand
from ...policy.mcpnames import normalize
from . import sdk_problem
from .confined import NotStarted, check_pins, command_line, egress
from .results import seconds_text

if TYPE_CHECKING:
    from ...config.pins import Pins
    from ..sandbox import SandboxPolicy
    from ..sandbox.proxy import EgressProxy

Emit = Callable[..., object]
LIST_PAGES = 100  # a server whose tool list never ends cannot hang the start
STDERR_TAIL = 300  # characters of a server's last stderr line in a reason


@dataclass(frozen=True)
class Settings:
    """What every server of a run shares (see `McpHub`)."""

    environ: Mapping[str, str]
    cwd: Path
    expand_from: Mapping[str, str]
    emit: Emit | None
    log_dir: Path | None
    start_timeout: float
    grace: float
    # The step's sandbox for its roles (no roots); None: servers run unconfined.
    sandbox: SandboxPolicy | None = None
    # The run's proxy for a server's network allow-list (run/context.py `StepRun.egress`);
    # None, or None for a list: such a server gets no network (fail closed).
    egress: Callable[[tuple[str, ...]], EgressProxy | None] | None = None
    # The run's pinned files; a stdio server whose files changed is not started.
    pins: Pins | None = None
    # Server name -> the workspace files its configuration came from (`.mcp.json`).
    origins: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)


class ServerRun:
    def __init__(
        self,
        name: str,
        config: McpServer,
        settings: Settings,
        roots: tuple[str, ...] | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.settings = settings
        self.roots = roots
        self.state = "starting"
        self.reason: str | None = None
        self.client: Any = None  # the SDK's Client, while running
        self.tools: list[Any] = []  # the SDK's Tool objects, as listed
        self.process: Any = None  # stdio.ServerProcess
        self.watch: Any = None  # httpclient.WatchedTransport
        self.ready: anyio.Event | None = None  # made by the hub, in its event loop
        self._log: IO[bytes] | None = None
        self._log_start = 0
        self._started_at = 0.0

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def confined(self) -> bool:
        """Whether this stdio server runs in the roles' sandbox."""
        return (
            self.config.transport == "stdio"
            and self.config.sandbox != "off"
            and self.settings.sandbox is not None
        )

    def policy(self) -> SandboxPolicy | None:
        """The sandbox this server runs in (its roots, its network), None when unconfined."""
        base = self.settings.sandbox
        if not self.confined or base is None:
            return None
        net, find = self.config.network, self.settings.egress
        # An allow-list reaches the hosts through the run's proxy only; none: no network.
        proxy = None if isinstance(net, bool) or find is None else find(tuple(net))
        policy = base.with_roots(self.roots)
        return dataclasses.replace(policy, network=net is True, egress=proxy)

    def root_uris(self) -> list[tuple[str, str]]:
        """(file:// URI, name) of each root this server is told (a confined one's)."""
        policy = self.policy()
        if policy is None:
            return []
        ws = policy.workspace
        return [(p.as_uri(), os.path.relpath(p, ws)) for p in policy.writable]

    async def run(self, stop: anyio.Event) -> None:
        """Start, list the tools, set `ready` (also when the start failed), keep running
        until `stop` is set (or the task is cancelled), stop."""
        assert self.ready is not None
        self._started_at = anyio.current_time()
        scope = anyio.CancelScope(deadline=self._started_at + self.settings.start_timeout)
        try:
            with scope:
                async with self._client() as client:
                    self.tools = await _list_tools(client)
                    scope.deadline = math.inf
                    self.client, self.state = client, "running"
                    self._event("started", tools=len(self.tools), seconds=self._since())
                    self.ready.set()
                    await stop.wait()
                    # Bounds an http server's goodbye; a stdio stop is bounded on its own.
                    scope.deadline = anyio.current_time() + 3 * self.settings.grace
            if self.state == "starting":
                timeout = seconds_text(self.settings.start_timeout)
                self._fail(f"it did not answer within {timeout} of starting")
        except Exception as exc:
            if self.state == "starting":
                self._fail(await self._start_reason(exc))
        finally:
            self.ready.set()
            if self.state == "running":
                self.state = "stopped"
                self._event("stopped", seconds=self._since())
            if self._log is not None:
                self._log.close()

    async def gone(self, exc: BaseException | None) -> str:
        """The connection broke during a call: why. Marks the server gone (once)."""
        if self.state != "running":
            return self.reason or "it was stopped"
        if self.process is not None:
            how = await self.process.wait_exited(self.settings.grace)
            reason = self._with_stderr(how or "it closed its output")
        elif self.watch is not None and self.watch.problem:
            reason = self.watch.problem
        else:
            reason = "the connection broke" + (f": {_describe(exc)}" if exc else "")
        self._mark_gone(reason)
        return self.reason or reason

    # --- start ----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[Any]:
        missing = sdk_problem()
        if missing:
            raise NotStarted(missing)
        from mcp import Client
        from mcp_types import Implementation

        config, problems = expand(self.config, self.settings.expand_from)
        if problems:
            raise NotStarted("; ".join(problems))
        info = Implementation(name="orkeon", version=__version__)
        if config.url is None:
            from .stdio import ServerProcess  # the MCP SDK: imported when a server starts

            origins = self.settings.origins.get(self.name, ())
            check_pins(self.settings.pins, self.config.argv, origins)
            env, policy = {**self.settings.environ, **config.env}, self.policy()
            with egress(policy, self.name) as socket:
                cwd = self.settings.cwd
                argv = command_line(policy, config.argv, cwd=cwd, env=env, socket=socket)
                self._log = self._open_log()
                self.process = ServerProcess(
                    argv,
                    env=env,
                    cwd=self.settings.cwd,
                    stderr=self._log,
                    grace=self.settings.grace,
                    on_exit=partial(self._exited),
                )
                roots = self._list_roots if self.confined else None
                transport = self.process.connect()
                async with Client(transport, client_info=info, list_roots_callback=roots) as client:
                    yield client
            return
        from mcp.client.streamable_http import streamable_http_client

        from .httpclient import client as http_client  # httpx2, as the SDK above

        http, self.watch = http_client(config.headers)
        async with http:
            transport = streamable_http_client(config.url, http_client=http)
            async with Client(transport, client_info=info) as client:
                yield client

    async def _list_roots(self, context: Any) -> Any:
        from mcp_types import ListRootsResult, Root
        from pydantic import FileUrl

        roots = [Root(uri=FileUrl(u), name=n) for u, n in self.root_uris()]
        return ListRootsResult(roots=roots)

    async def _start_reason(self, exc: BaseException) -> str:
        exc = _leaf(exc)
        if isinstance(exc, NotStarted):
            return str(exc)
        if self.process is not None:
            if self.process.pid is None:  # the program did not start
                return _spawn_reason(self.process.argv[0], self.settings.cwd, exc)
            how = await self.process.wait_exited(self.settings.grace)
            if how is not None and _is_closed(exc):
                return self._with_stderr(f"{how} before it answered")
        if self.watch is not None and self.watch.problem:
            return str(self.watch.problem)
        if _is_closed(exc):
            return self._with_stderr("it closed the connection before it answered")
        return self._with_stderr(_describe(exc))

    # --- state and events -----------------------------------------------------------

    def _fail(self, reason: str) -> None:
        self.state, self.reason = "failed", reason
        self._event("failed", reason=reason, seconds=self._since())

    def _exited(self, how: str) -> None:
        """A stdio server ended on its own (called by its ServerProcess)."""
        if self.state == "running":
            self._mark_gone(self._with_stderr(how))

    def _mark_gone(self, reason: str) -> None:
        if self.state == "running":
            self.state, self.reason = "exited", reason
            self._event("exited", reason=reason)

    def _event(self, state: str, **fields: Any) -> None:
        emit = self.settings.emit
        if emit is None:
            return
        event: dict[str, Any] = {"tools": None, "reason": None, "seconds": None, **fields}
        if event["seconds"] is not None:
            event["seconds"] = round(event["seconds"], 6)
        transport = self.config.transport
        if transport == "stdio":
            event["sandbox"] = "on" if self.confined else "off"
            event["roots"] = list(self.roots) if self.roots is not None else None
        emit(
            "mcp.server", server=self.name, transport=transport, state=state, pid=self.pid, **event
        )

    def _since(self) -> float:
        return max(0.0, anyio.current_time() - self._started_at)

    # --- stderr ---------------------------------------------------------------------

    def _open_log(self) -> IO[bytes]:
        folder = self.settings.log_dir
        if folder is None:
            return tempfile.TemporaryFile()
        folder.mkdir(parents=True, exist_ok=True)
        log = open(folder / f"{normalize(self.name)}.stderr.log", "ab+")  # noqa: SIM115
        self._log_start = log.seek(0, os.SEEK_END)  # a resumed run appends
        return log

    def _with_stderr(self, how: str) -> str:
        line = self._stderr_line()
        return f"{how}; its stderr ends: {line}" if line else how

    def _stderr_line(self) -> str:
        """The last non-blank line the server wrote to stderr in this run, cut short."""
        log = self._log
        if log is None or log.closed:
            return ""
        try:
            end = log.seek(0, os.SEEK_END)
            log.seek(max(self._log_start, end - 8192))
            tail = log.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [x.strip() for x in tail.splitlines() if x.strip()]
        last = lines[-1] if lines else ""
        return last if len(last) <= STDERR_TAIL else last[: STDERR_TAIL - 1] + "…"


async def _list_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _leaf(exc: BaseException) -> BaseException:
    """The exception a task group wrapped."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _is_closed(exc: BaseException) -> bool:
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    closed = anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream
    return isinstance(exc, closed)


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _spawn_reason(program: str, cwd: Path, exc: BaseException) -> str:
    """Why a program did not start, in the words `proc.py` uses for hooks."""
    if isinstance(exc, OSError):
        if exc.filename is not None and os.fsdecode(exc.filename) == os.fsdecode(cwd):
            return f"cannot use the working directory {cwd}: {exc.strerror}"
        if exc.errno == errno.ENOENT:
            return f"no such program: {program}"
        if exc.errno == errno.EACCES:
            return f"permission denied: {program}"
        if exc.errno == errno.ENOEXEC:
            return f"not an executable (a script needs a #! line): {program}"
        return f"{exc.strerror or exc}: {program}"
    return f"cannot start {program}: {_describe(exc)}"


__all__ = ["Emit", "ServerRun", "Settings"]
