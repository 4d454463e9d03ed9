"""One configured MCP server during one run: its task, its client, and why it is not
running when it is not (`hub.py` has the contract).

`ServerRun.run` is the task that owns the SDK's client of the server from start to stop,
so the client's cancel scopes are entered and left in one task. Its state is `starting`,
then `running` or `failed`, then `exited` (a stdio server ended mid-run) or `stopped` (at
the end). An http server's session that broke is `dropped` until a call has a new one made
(`reconnect`: the task ends the old session and makes a new one), `running` again.

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
import math
import os
import tempfile
from collections.abc import AsyncIterator
from functools import partial
from typing import IO, TYPE_CHECKING, Any

import anyio

from ... import __version__
from ...config.mcp import McpServer, expand
from ...policy.mcpnames import normalize
from . import sdk_problem
from .confined import NotStarted, check_pins, command_line, egress
from .reasons import describe, is_closed, leaf, spawn_reason, stderr_line
from .results import seconds_text
from .settings import Settings

if TYPE_CHECKING:
    from ..sandbox import SandboxPolicy

LIST_PAGES = 100  # a server whose tool list never ends cannot hang the start
STDERR_TAIL = 300  # characters of a server's last stderr line in a reason


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
        self.generation = 0  # counts the sessions made (a call knows which one it used)
        self.flights: set[Any] = set()  # the calls under way (send.py)
        # Made in `run`, in its event loop: the session's scope (its start, its goodbye),
        # the event that ends it (the run stops, or a call asks for a new one), the stop.
        self._scope: anyio.CancelScope
        self._wake: anyio.Event
        self._stop: anyio.Event
        self._attempt: anyio.Event | None = None  # a new session under way, for calls

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

    @property
    def reconnectable(self) -> bool:
        """An http server: a call that finds its session broken asks for a new one."""
        return self.config.transport == "http"

    async def run(self, stop: anyio.Event) -> None:
        """Start, list the tools, set `ready` (also when the start failed), keep running
        until `stop` is set (or the task is cancelled), stop. An http server whose session
        broke (`dropped`) gets a new one each time a call asks (`reconnect`)."""
        assert self.ready is not None
        self._started_at = anyio.current_time()
        self._stop, self._wake = stop, anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._on_stop, stop)
                await self._session(again=False)
                while self.reconnectable and self.state == "dropped" and not stop.is_set():
                    if self._attempt is None:  # no call waits: wait for one (or the end)
                        self._wake = anyio.Event()
                        if not stop.is_set():
                            await self._wake.wait()
                    if not stop.is_set():
                        await self._session(again=True)
                tg.cancel_scope.cancel()
        finally:
            self.ready.set()
            self._settle()
            if self.state == "running":
                self.state = "stopped"
                self._event("stopped", seconds=self._since())
            if self._log is not None:
                self._log.close()

    async def reconnect(self, generation: int, why: str | None) -> str | None:
        """A call found session `generation` broken (`why`, None: it was found dropped):
        have a new session made, once for every call that asks while it is made; wait for
        it. None: running again; else why not (the caller bounds the wait)."""
        if self.state == "running" and self.generation != generation:
            return None  # another call re-made it since
        if self.state == "running":
            self._mark_gone(why or "the connection broke")
        if self.state != "dropped":
            return self.reason or "it was stopped"
        if self._attempt is None:
            self._attempt = anyio.Event()
        attempt = self._attempt
        self._wake.set()
        await attempt.wait()
        return None if self.state == "running" else (self.reason or "it was stopped")

    async def gone(
        self, exc: BaseException | None, generation: int | None = None, problem: str | None = None
    ) -> str:
        """The connection broke during a call on session `generation` (None: the current
        one; `problem`: what the http transport saw): why. Marks the server gone, once,
        while that session is the current one."""
        if self.state != "running" or generation not in (None, self.generation):
            return problem or self.reason or "it was stopped"
        if self.process is not None:
            how = await self.process.wait_exited(self.settings.grace)
            reason = self._with_stderr(how or "it closed its output")
        elif problem or (self.watch is not None and self.watch.problem):
            reason = problem or self.watch.problem
        else:
            reason = "the connection broke" + (f": {describe(exc)}" if exc else "")
        self._mark_gone(reason)
        return self.reason or reason

    async def _session(self, *, again: bool) -> None:
        """One session: made (the first also lists the tools), held until `_wake` (the
        run stops, or a call found it broken), ended. Its failures set the state."""
        began, ran = anyio.current_time(), False
        self._scope = anyio.CancelScope(deadline=began + self.settings.start_timeout)
        try:
            with self._scope:
                async with self._client() as client:
                    if not again:
                        self.tools = await _list_tools(client)
                    self._scope.deadline = math.inf
                    self.client, self.state, self.reason = client, "running", None
                    self.generation += 1
                    ran = True
                    if again:
                        self._event("reconnected", seconds=anyio.current_time() - began)
                    else:
                        self._event("started", tools=len(self.tools), seconds=self._since())
                    assert self.ready is not None
                    self.ready.set()
                    self._settle()
                    self._wake = anyio.Event()  # the last one may have ended the last session
                    if not self._stop.is_set():
                        await self._wake.wait()
            if not ran:
                timeout = seconds_text(self.settings.start_timeout)
                self._not_made(f"it did not answer within {timeout} of starting", again, began)
        except Exception as exc:
            if not ran:
                self._not_made(await self._start_reason(exc), again, began)
            elif self.reconnectable and self.state == "running":  # it broke by itself
                reason = self.watch.problem if self.watch and self.watch.problem else None
                self._mark_gone(reason or f"the connection broke: {describe(leaf(exc))}")
        finally:
            if again:
                self._settle()

    async def _on_stop(self, stop: anyio.Event) -> None:
        await stop.wait()
        self._wake.set()
        # Bounds an http session's goodbye (or its making); a stdio stop has its own bound.
        end = anyio.current_time() + 3 * self.settings.grace
        self._scope.deadline = min(self._scope.deadline, end)

    def _not_made(self, reason: str, again: bool, began: float) -> None:
        if not again:
            self._fail(reason)
        elif self.state == "dropped":
            self.reason = reason
            self._event("unreachable", reason=reason, seconds=anyio.current_time() - began)

    def _settle(self) -> None:
        """Wake the calls waiting for the new session being made."""
        if self._attempt is not None:
            self._attempt.set()
            self._attempt = None

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
        exc = leaf(exc)
        if isinstance(exc, NotStarted):
            return str(exc)
        if self.process is not None:
            if self.process.pid is None:  # the program did not start
                return spawn_reason(self.process.argv[0], self.settings.cwd, exc)
            how = await self.process.wait_exited(self.settings.grace)
            if how is not None and is_closed(exc):
                return self._with_stderr(f"{how} before it answered")
        if self.watch is not None and self.watch.problem:
            return str(self.watch.problem)
        if is_closed(exc):
            return self._with_stderr("it closed the connection before it answered")
        return self._with_stderr(describe(exc))

    # --- state and events -----------------------------------------------------------

    def _fail(self, reason: str) -> None:
        self.state, self.reason = "failed", reason
        self._event("failed", reason=reason, seconds=self._since())

    def _exited(self, how: str) -> None:
        """A stdio server ended on its own (called by its ServerProcess)."""
        if self.state == "running":
            self._mark_gone(self._with_stderr(how))

    def _mark_gone(self, reason: str) -> None:
        """A stdio server `exited`; an http server's session `dropped` (a call asks for a
        new one)."""
        if self.state == "running":
            state = "dropped" if self.reconnectable else "exited"
            self.state, self.reason, self.client = state, reason, None
            self._event(state, reason=reason)

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
        line = stderr_line(self._log, self._log_start, STDERR_TAIL)
        return f"{how}; its stderr ends: {line}" if line else how


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


__all__ = ["ServerRun"]
